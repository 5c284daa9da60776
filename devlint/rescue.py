"""Rescuing PyTorch 0.3 code that no longer parses: `x.cuda(async=True)` (DL017).

`async` is a keyword since Python 3.7, so a file with an `async=` call argument is a syntax error and
no rule can read it; PyTorch 0.4 renamed the argument `non_blocking`. The standard tokenizer still
reads such a file (`async` is a NAME token to it), so the arguments are found here, token by token,
reported as DL017 findings beside the syntax error, and with `--fix` renamed before the file is
parsed and checked like any other. A file that still does not parse once they are renamed is left
as it is (devlint.engine reports the error that remains).
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from dataclasses import dataclass, replace

from devlint.model import Applicability, Finding, Fix, Position
from devlint.prefilter import parse_quietly
from devlint.suppressions import Suppressions
from devlint.suppressions import parse as parse_suppressions

RENAMED = "non_blocking"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # as LibCST and the tokenizer count lines
# `async` then `=` (not `==`), perhaps across lines or comments: only such a file is tokenized.
_MAYBE = re.compile(r"\basync\b[\s\\]*(?:#[^\r\n]*[\s\\]*)*=(?!=)")
_SKIPPED = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)


@dataclass(frozen=True)
class AsyncArgument:
    """`async=<value>` given to a call: where `async` and the value end, and what was called."""

    start: Position  # of `async`
    end: Position  # of the argument's value
    callee: str | None  # the name just before the `(`: `cuda` for `x.cuda(...)`, `f` for `f(...)`
    method: bool  # the callee is an attribute (`<expr>.cuda(...)`), not a plain name
    last_line: int  # of the statement the call is in (where a `# noqa` may also be)


def async_arguments(text: str) -> list[AsyncArgument]:
    """Every `async=` argument of a call, at the depth of that call's own arguments.

    A `(` opens a call when it follows a name that is not a keyword, a `)` or a `]`; the parameter
    lists of `def` and `class` are not calls. Tokenizing stops quietly where the tokenizer gives up
    (an unterminated string further on): the arguments before that point are still found.
    """
    found: list[AsyncArgument] = []
    brackets: list[tuple[str | None, bool, bool]] = []  # per open bracket: (callee, method, is a call)
    significant: list[tokenize.TokenInfo] = []  # the last three tokens that are not layout
    after_async: tuple[int, Position, str | None, bool] | None = None  # an `async` that may start one
    arguments: list[tuple[int, Position, str | None, bool]] = []  # (depth, start, callee, method)
    ended: list[tuple[Position, Position, str | None, bool]] = []  # awaiting the statement's end
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type in _SKIPPED:
                continue
            if after_async is not None and token.string == "=":
                arguments.append(after_async)
            after_async = None
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                found += [AsyncArgument(s, e, c, m, token.start[0]) for s, e, c, m in ended]
                ended.clear()
            elif token.type == tokenize.OP and token.string in "([{":
                brackets.append((*_callee(significant), _opens_call(token.string, significant)))
            elif token.type == tokenize.OP and token.string in (")", "]", "}", ","):
                while arguments and arguments[-1][0] == len(brackets):
                    _, start, callee, method = arguments.pop()
                    ended.append((start, Position(*significant[-1].end), callee, method))
                if token.string != "," and brackets:
                    brackets.pop()
            elif (token.type == tokenize.NAME and token.string == "async" and brackets and brackets[-1][2]
                  and significant and significant[-1].string in ("(", ",")):
                after_async = (len(brackets), Position(*token.start), *brackets[-1][:2])
            significant = (significant + [token])[-3:]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return sorted(found, key=lambda argument: argument.start)


def _callee(before: list[tokenize.TokenInfo]) -> tuple[str | None, bool]:
    if before and before[-1].type == tokenize.NAME:
        return before[-1].string, len(before) > 1 and before[-2].string == "."
    return None, False


def _opens_call(bracket: str, before: list[tokenize.TokenInfo]) -> bool:
    if bracket != "(" or not before:
        return False
    last = before[-1]
    if last.type == tokenize.NAME:
        return not keyword.iskeyword(last.string) and not (len(before) > 1 and before[-2].string in ("def", "class"))
    return last.string in (")", "]")


def findings(text: str, config, rules, suppressions: Suppressions | None = None) -> list[Finding]:
    """DL017's findings in `text` when it is among `rules`, less those a `# noqa` silences."""
    rule = next((r for r in rules if r.code == "DL017"), None)
    if rule is None or not _MAYBE.search(text):
        return []
    found = rule.findings_in(text)
    if found and not config.ignore_noqa:
        suppressions = suppressions or parse_suppressions(text)
        found = [f for f in found if not suppressions.silences(f)]
    return found


def rescue(text: str, config, rules, suppressions: Suppressions | None = None) -> tuple[str, list[Finding]]:
    """The text with its fixable `async=` arguments renamed, and the findings so fixed; (text, [])
    when there is nothing to rename."""
    chosen = [f for f in findings(text, config, rules, suppressions)
              if f.fix is not None and f.fix.edits and f.fix.applicability is Applicability.SAFE]
    if not chosen:
        return text, []
    try:
        parse_quietly(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return rename(text, chosen), chosen
    return text, []  # it parses as it is (an interpreter older than 3.7): nothing to rescue


def rename(text: str, chosen: list[Finding]) -> str:
    """`async` -> `non_blocking` at the start of each finding (the only edit DL017 makes)."""
    lines = _LINE.findall(text)
    for finding in sorted(chosen, key=lambda f: f.start, reverse=True):
        line, column = finding.start.line - 1, finding.start.column
        lines[line] = lines[line][:column] + RENAMED + lines[line][column + len("async"):]
    return "".join(lines)


def original_column(line: int, column: int, renamed: list[Finding]) -> int:
    """A (1-based) column of the renamed text as a column of the text as written."""
    grown = len(RENAMED) - len("async")
    return column - grown * sum(1 for f in renamed if f.start.line == line and f.start.column < column - 1)


def not_applied(finding: Finding) -> Finding:
    """A renamed argument that did not make the code parse: its fix was not written, and `--fix`
    cannot write it until the other syntax error is fixed."""
    if finding.fix is None or not finding.fix.edits:
        return finding
    return replace(finding, fix=Fix(f"{finding.fix.title} (not applied: the code does not parse even then)",
                                    Applicability.DISPLAY_ONLY))


def in_cell(finding: Finding, cell: int) -> Finding:
    """The finding of a notebook cell's own text, with its cell set (1-based among all cells)."""
    return replace(finding, cell=cell)


@dataclass
class RescuedCells:
    """A notebook's cells with their `async=` arguments renamed where `--fix` may."""

    cells: list  # the notebook's cells; a renamed one is a copy with its new source
    renamed: dict[int, str]  # cell index (among all cells) -> its source once renamed
    applied: list[Finding]  # the findings so fixed, lines counted in their cell
    findings: list[Finding]  # the others


def rescue_cells(cells: list, config, rules, keep=frozenset()) -> RescuedCells:
    """As `rescue`, cell by cell (a cell that does not parse is left out of the notebook's module);
    the cells in `keep` are only reported (their rename did not make them parse)."""
    from devlint.notebook_json import source_text

    out = RescuedCells(list(cells), {}, [], [])
    code = [(i, source_text(c)) for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    if not any(r.code == "DL017" for r in rules) or not any("async" in text for _, text in code):
        return out
    # A `# devlint: noqa` in any cell is about the whole notebook.
    everywhere = parse_suppressions("\n".join(text for _, text in code)).file_codes
    fixing = config.fix and not config.add_noqa
    for index, text in code:
        suppressions = parse_suppressions(text)
        if everywhere is not None:
            suppressions.file_codes = everywhere
        renamed, applied = rescue(text, config, rules, suppressions) if fixing and index not in keep else (text, [])
        if applied:
            out.cells[index] = {**cells[index], "source": renamed}
            out.renamed[index] = renamed
        fixed = {f.start for f in applied}
        out.applied += [in_cell(f, index + 1) for f in applied]
        for finding in findings(text, config, rules, suppressions):
            if finding.start not in fixed:
                out.findings.append(in_cell(not_applied(finding) if index in keep else finding, index + 1))
    return out
