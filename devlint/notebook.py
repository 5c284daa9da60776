"""Jupyter notebooks: check and fix the code cells of an `.ipynb` as one Python module.

Code cells are joined with a marker comment between them; IPython magics (`%time`, `!pip`, `x = !ls`,
`%%bash` cells, `?` help) are masked by a placeholder of the same line count, so the code parses.
Findings are mapped back to the cell and the line within it. A fix rewrites only the `source` of the
code cells it changes and keeps everything else byte for byte: the notebook is written back with the
JSON layout it had, and only when re-serialising the untouched notebook reproduces its bytes exactly.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from devlint.model import FileError, FileResult, Finding, Position

_MARKER = "# devlint-cell {index}"
_MARKER_LINE = re.compile(r"^# devlint-cell (\d+)$")
_MAGIC_LINE = re.compile(r"^\s*([%!?]|\w+\s*=\s*[%!])|.*\?\s*$")
_PLACEHOLDER = "pass  # devlint-magic {index}"
_PLACEHOLDER_LINE = re.compile(r"^(\s*)pass  # devlint-magic (\d+)$")


def check_notebook(path: str, data: bytes, config) -> FileResult:
    from devlint.engine import fix_text, lint_text

    try:
        text = data.decode("utf-8")
        notebook = json.loads(text)
        cells = notebook["cells"]
        if not isinstance(cells, list):
            raise TypeError("'cells' is not a list")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        return FileResult(path, error=FileError(f"invalid notebook JSON: {exc}"))
    code_cells = [i for i, cell in enumerate(cells) if isinstance(cell, dict) and cell.get("cell_type") == "code"]
    joined, lines, magics = _join(cells, code_cells)
    rules = config.rules_for(path)
    result = FileResult(path, original_source=text)
    if config.fix:
        fixed, applied, findings = fix_text(joined, config, rules)
        result.applied = [_to_cell(f, lines) for f in applied]
        if fixed != joined:
            rewritten = _rewrite(text, notebook, code_cells, fixed, magics)
            if rewritten is None:
                result.error = FileError("cannot write fixes: the notebook's JSON layout is not reproducible")
            else:
                result.fixed_source = rewritten
    else:
        findings = lint_text(joined, config, rules)
    result.findings = [_to_cell(f, lines) for f in findings]
    return result


def _source_lines(cell: dict) -> list[str]:
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else str(source)
    return text.split("\n")


def _join(cells: list, code_cells: list[int]) -> tuple[str, list[tuple[int, int] | None], dict[int, str]]:
    """The Python text, each of its lines' (cell number, line in cell), and the masked magic lines."""
    out: list[str] = []
    where: list[tuple[int, int] | None] = []
    magics: dict[int, str] = {}
    for index in code_cells:
        out.append(_MARKER.format(index=index))
        where.append(None)
        source = _source_lines(cells[index])
        cell_magic = bool(source) and source[0].lstrip().startswith("%%")
        for number, line in enumerate(source, start=1):
            if cell_magic or _MAGIC_LINE.match(line):
                magics[len(magics)] = line
                indent = "" if cell_magic else line[: len(line) - len(line.lstrip())]
                line = f"{indent}{_PLACEHOLDER.format(index=len(magics) - 1)}"
            out.append(line)
            where.append((index + 1, number))
    return "\n".join(out) + "\n", where, magics


def _to_cell(finding: Finding, lines: list[tuple[int, int] | None]) -> Finding:
    start = lines[finding.start.line - 1] if finding.start.line <= len(lines) else None
    end = lines[finding.end.line - 1] if finding.end.line <= len(lines) else None
    if start is None:
        return finding
    end = end if end is not None and end[0] == start[0] else start
    return replace(finding, cell=start[0], start=Position(start[1], finding.start.column),
                   end=Position(end[1], finding.end.column if end is not start else finding.end.column),
                   suppress_lines=(), fix=None if finding.fix is None else replace(finding.fix, edits=()))


def _rewrite(text: str, notebook: dict, code_cells: list[int], fixed: str, magics: dict[int, str]) -> str | None:
    layout = _layout(text, notebook)
    if layout is None:
        return None
    sources: dict[int, list[str]] = {}
    current = None
    for line in fixed.split("\n"):
        marker = _MARKER_LINE.match(line)
        if marker:
            current = int(marker.group(1))
            sources[current] = []
            continue
        if current is None:  # anything the fixer put before the first marker belongs to the first cell
            current = code_cells[0]
            sources[current] = []
        placeholder = _PLACEHOLDER_LINE.match(line)
        if placeholder:
            line = magics[int(placeholder.group(2))]
        sources[current].append(line)
    for index in code_cells:
        lines = sources.get(index, [])
        if lines and lines[-1] == "" and index != code_cells[-1] or (index == code_cells[-1] and lines[-1:] == [""]):
            lines = lines[:-1]  # the newline the join added after each cell
        new_text = "\n".join(lines)
        cell = notebook["cells"][index]
        if new_text != "\n".join(_source_lines(cell)):
            cell["source"] = new_text.splitlines(keepends=True) if isinstance(cell.get("source"), list) else new_text
    return layout(notebook)


def _layout(text: str, notebook: dict):
    """A serialiser that reproduces `text` exactly from the loaded notebook, or None."""
    for indent in (1, 2, 4, None):
        for ensure_ascii in (False, True):
            for sort_keys in (False, True):
                def dump(nb, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys):
                    body = json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)
                    return body + ("\n" if text.endswith("\n") else "")
                if dump(notebook) == text:
                    return dump
    return None
