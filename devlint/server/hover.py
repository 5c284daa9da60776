"""Hover: a rule's documentation (`devlint rule CODE`) over a code in `# noqa: DL001, DL004`, or over
a finding. Run on the analysis thread."""

from __future__ import annotations

import re

from lsprotocol import types

from devlint.server import lint
from devlint.server.positions import Lines

_CODE = re.compile(r"[A-Za-z]+[0-9]+")


def hover(text: str, findings: list[lint.Finding], position: types.Position, encoding: str,
          cell: int | None = None) -> types.Hover | None:
    lines = Lines(text, encoding)
    line, column = lines.from_client(position)
    span = lint.noqa_span(text, line)
    if span is not None and span[0] <= column < span[1]:
        directive = lines.lines[line - 1][span[0]:span[1]]
        for match in _CODE.finditer(directive):
            start, end = span[0] + match.start(), span[0] + match.end()
            if start <= column <= end:
                where = types.Range(lines.to_client(line, start), lines.to_client(line, end))
                return _documentation(match.group(), where)
        return None
    for finding in findings:
        if finding.cell == cell and (finding.start.line, finding.start.column) <= (line, column) \
                <= (finding.end.line, finding.end.column):
            found = types.Range(lines.to_client(finding.start.line, finding.start.column),
                                lines.to_client(finding.end.line, finding.end.column))
            return _documentation(finding.code, found)
    return None


def _documentation(code: str, where: types.Range) -> types.Hover | None:
    text = lint.rule_documentation(code)
    if text is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=where)
