"""`# noqa` comments: which findings the author silenced, which silence nothing, and adding them.

Per line: `# noqa` (everything) or `# noqa: DL001, DL003`, on the line a finding starts on or on the
last line of its statement (as ruff does). Per file: a comment line `# devlint: noqa` (everything) or
`# devlint: noqa: DL002`.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from devlint.model import Finding

_CODES = r"[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*"
NOQA = re.compile(rf"#\s*noqa(?::[\s]?(?P<codes>{_CODES}))?", re.IGNORECASE)
FILE_NOQA = re.compile(rf"#\s*devlint:\s*noqa(?::\s*(?P<codes>{_CODES}))?\s*$", re.IGNORECASE)


@dataclass
class Directive:
    """A `# noqa` comment: where it is (0-based columns of the directive in its line) and its codes."""

    line: int
    start: int
    end: int
    codes: tuple[str, ...] | None  # None: a bare `# noqa`
    used: set[str]


@dataclass
class Suppressions:
    lines: dict[int, Directive]
    file_codes: set[str] | None  # None: no file-level directive; empty set: everything

    def silences_file(self, finding: Finding) -> bool:
        return self.file_codes is not None and (not self.file_codes or finding.code in self.file_codes)

    def silences(self, finding: Finding) -> bool:
        if self.silences_file(finding):
            return True
        for line in (finding.start.line, *finding.suppress_lines):
            directive = self.lines.get(line)
            if directive is not None and (directive.codes is None or finding.code in directive.codes):
                directive.used.add(finding.code)
                return True
        return False


def parse(text: str) -> Suppressions:
    found = Suppressions({}, None)
    if "noqa" not in text.lower():
        return found
    for line, column, comment, own_line in _comments(text):
        match = FILE_NOQA.match(comment)
        if match is not None and own_line:
            codes = _split(match.group("codes"))
            found.file_codes = set() if codes is None or found.file_codes == set() else (found.file_codes or set()) | set(codes)
            continue
        match = NOQA.search(comment)
        if match is not None:
            found.lines[line] = Directive(line, column + match.start(), column + match.end(),
                                          _split(match.group("codes")), set())
    return found


def _split(codes: str | None) -> tuple[str, ...] | None:
    return tuple(c.upper() for c in re.split(r"[,\s]+", codes) if c) if codes else None


def _comments(text: str):
    """(line, column, comment text, whether the comment is alone on its line)."""
    try:
        # newline=None: a lone CR ends a line for LibCST and the interpreter, so it must here too.
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.start[1], token.string, not token.line[: token.start[1]].strip()
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Newer syntax than this interpreter tokenizes: fall back to a line scan.
        for number, line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
            if "#" in line:
                column = line.index("#")
                yield number, column, line[column:], not line[:column].strip()


def noqa_comment(codes: list[str], existing: Directive | None) -> str:
    merged = sorted(set(codes) | set(existing.codes or ())) if existing else sorted(set(codes))
    return f"# noqa: {', '.join(merged)}"
