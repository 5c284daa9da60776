"""`# noqa` comments: which findings the author silenced, line by line."""

from __future__ import annotations

import io
import re
import tokenize

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
ALL = "*"


def noqa_lines(text: str) -> dict[int, set[str]]:
    """Line number -> codes silenced on it ({'*'} for a bare `# noqa`)."""
    if "noqa" not in text.lower():
        return {}
    found: dict[int, set[str]] = {}
    for line, comment in _comments(text):
        match = NOQA.search(comment)
        if match is None:
            continue
        codes = match.group("codes")
        found.setdefault(line, set()).update(
            {c.upper() for c in re.split(r"[,\s]+", codes) if c} if codes else {ALL}
        )
    return found


def is_suppressed(noqa: dict[int, set[str]], code: str, lines: tuple[int, ...]) -> bool:
    return any(ALL in noqa.get(line, ()) or code in noqa.get(line, ()) for line in lines)


def _comments(text: str):
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Newer syntax than this interpreter tokenizes: fall back to a line scan.
        for number, line in enumerate(text.splitlines(), start=1):
            if "#" in line:
                yield number, line[line.index("#"):]
