"""Jupyter notebooks: check and fix the code cells of an `.ipynb` as one Python module.

The code cells are joined into one text, each after a marker comment, with every IPython-only line
(`%time f()`, `!pip install x`, `files = !ls`, `obj?`, automagic `pip install x`, the first line of a
`%%time` cell) replaced by a placeholder of the same line count, so that the code parses and no rule
sees the magic. Findings are mapped back to the cell (its 1-based index among *all* cells, as ruff
counts) and the line within it. A cell whose cell magic does not run Python (`%%bash`, `%%html`,
`%%writefile`) is left out. A notebook whose kernel is not Python is skipped with a notice.

A fix rewrites only the `source` of the code cells it changes: the new value is spliced into the
original text in place of the old one, in the layout the other sources have (indent, ASCII escapes,
line endings), so outputs, metadata, key order and everything else keep their bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

import libcst as cst

from devlint.complexity import cannot_parse
from devlint.notebook_json import InvalidNotebook, cell_source, load, source_text  # noqa: F401 (re-exported)
from devlint.engine import FixDidNotConverge, TooDeeplyNested, add_noqa_text, fix_text, lint_text
from devlint.model import Edit, FileError, FileResult, Finding, Position
from devlint.prefilter import TooComplex, parse_quietly

# Cell magics whose body is Python run by the kernel: the body is checked, the `%%` line masked.
# Any other cell magic (%%bash, %%html, %%writefile, %%sql, ...) leaves its cell out.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
# Line magics IPython runs without the `%` (automagic), as listed by ruff; a line starting with one
# of these words is a magic only when it is not Python (`pip install x`, but not `time = 3`).
AUTOMAGICS = frozenset("""
    alias alias_magic autoawait autocall automagic bookmark cd code_wrap colors conda config debug dhist
    dirs doctest_mode edit env gui history killbgscripts load load_ext loadpy logoff logon logstart
    logstate logstop lsmagic macro magic mamba matplotlib micromamba notebook page pastebin pdb pdef
    pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch psource pushd pwd pycat pylab
    quickref recall rehashx reload_ext rerun reset reset_selective run save sc set_env sx system tb
    time timeit unalias unload_ext who who_ls whos xdel xmode
""".split())

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # a line with its newline (the last may have none)
_ESCAPES = "%!?/,;"  # magic, shell, help, and the autocall escapes `/f x`, `,f a b`, `;f a b`
_ASSIGN_MAGIC = re.compile(r"[ \t]*([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)[ \t]*=[ \t]*[%!]")
_WORD = re.compile(r"[ \t]*([A-Za-z_]\w*)(?:[ \t]|$)")
_CELL_MAGIC = re.compile(r"[ \t]*%%(\w*)")
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class _Unwritable(Exception):
    pass


@dataclass
class _Cell:
    index: int  # among all cells, 0-based
    text: str  # the source as one string
    lines: list[str]  # with their newlines
    placeholders: dict[int, str] = field(default_factory=dict)  # line index -> placeholder (no newline)


@dataclass
class _Joined:
    text: str
    where: list[tuple[int, int] | None]  # per line of `text`: (cell index, 1-based line in the cell)
    cells: list[_Cell]
    tag: str
    originals: dict[int, tuple[str, str]]  # placeholder serial -> (placeholder, original line), no newlines
    newline: str  # of the marker lines and after a cell's last line: the cells' own, so the fixer uses it


# -- entry point ---------------------------------------------------------------------------------------
def check_notebook(path: str, data: bytes, config) -> FileResult:
    """Check (and with config.fix or config.add_noqa, rewrite) one notebook. Errors are returned."""
    result = FileResult(path)
    try:
        text, notebook = load(data)
    except InvalidNotebook as exc:
        result.error = FileError(f"invalid notebook JSON: {exc}")
        return result
    result.original_source = text
    language = _language(notebook)
    if language is not None and language.lower() not in ("python", "python3", "ipython", "ipython3"):
        result.notice = f"skipped: not a Python notebook (language: {language})"
        return result
    joined = join_cells(notebook["cells"])
    rules = config.rules_for(path)
    applied: list[Finding] = []
    try:
        if config.add_noqa:
            fixed, result.added_noqa = add_noqa_text(joined.text, config, rules)
            findings = []
        elif config.fix:
            fixed, applied, findings = fix_text(joined.text, config, rules)
        else:
            fixed, findings = joined.text, lint_text(joined.text, config, rules)
    except cst.ParserSyntaxError as exc:
        result.error = _syntax_error(joined, exc)
        return result
    except RecursionError:
        result.error = FileError("too deeply nested to analyse (recursion limit reached)")
        return result
    except (TooDeeplyNested, TooComplex) as exc:
        result.error = FileError(str(exc))
        return result
    except FixDidNotConverge as exc:
        result.error = FileError(f"internal error: {exc}; the file was left unchanged", internal=True)
        return result
    where = joined.where
    if fixed != joined.text:
        try:
            sources, where = split_cells(joined, fixed)
            rewritten = splice_sources(text, notebook, sources)
        except _Unwritable as exc:
            result.error = FileError(f"cannot write fixes: {exc}; the notebook was left unchanged", internal=True)
            return result
        if rewritten != text:
            result.fixed_source = rewritten
    result.applied = [to_cell(f, joined.where) for f in applied]  # found in the text before the fix
    result.findings = [to_cell(f, where) for f in findings]
    return result


def _language(notebook: dict) -> str | None:
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return None
    for key, name in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(name), str) and value[name]:
            return value[name]
    return None


# -- joining the code cells, magics masked ---------------------------------------------------------
def join_cells(cells: list) -> _Joined:
    code = [_Cell(i, source_text(c), _LINE.findall(source_text(c)))
            for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    everything = "\n".join(c.text for c in code)
    tag = "devlint-nb"
    while tag in everything:
        tag += "-"
    originals: dict[int, tuple[str, str]] = {}
    checked = []
    for cell in code:
        if _mask(cell, tag, originals):
            checked.append(cell)
    endings = [_newline(line) for cell in checked for line in cell.lines if _newline(line)]
    newline = max(("\n", "\r\n", "\r"), key=endings.count) if endings else "\n"
    out: list[str] = []
    where: list[tuple[int, int] | None] = []
    for cell in checked:
        out.append(f"# {tag} cell {cell.index}{newline}")
        where.append(None)
        for number, line in enumerate(cell.lines):
            if number in cell.placeholders:
                line = cell.placeholders[number] + _newline(line)
            out.append(line)
            where.append((cell.index, number + 1))
        if not _newline(out[-1]):
            out[-1] += newline
    return _Joined("".join(out), where, checked, tag, originals, newline)


def _newline(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def _mask(cell: _Cell, tag: str, originals: dict[int, tuple[str, str]]) -> bool:
    """Fill cell.placeholders; False when the cell is not Python at all (a non-Python cell magic)."""
    lines = [_content(line) for line in cell.lines]
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start < len(lines):
        magic = _CELL_MAGIC.match(lines[start])
        if magic:
            if magic.group(1) not in PYTHON_CELL_MAGICS:
                return False
            start = _mask_span(cell, lines, start, _continued(lines, start), tag, originals, top_level=True)
    index = start
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            index += 1
            continue
        end, question = _logical_line(lines, index)
        if stripped[0] in _ESCAPES or _ASSIGN_MAGIC.match(line):
            # IPython takes a magic's logical line: `%timeit f(a,` goes on below, as does a trailing `\`
            index = _mask_span(cell, lines, index, max(end, _continued(lines, index)), tag, originals)
            continue
        if _is_automagic(lines, index, end):
            index = _mask_span(cell, lines, index, end, tag, originals)
            continue
        if question:  # `obj?`, `obj??`, `%magic?`: IPython's help, anywhere outside strings and comments
            index = _mask_span(cell, lines, index, end, tag, originals)
        else:
            index = end + 1
    return True


def _continued(lines: list[str], index: int) -> int:
    """The last line of a magic: IPython joins lines ending in a backslash."""
    while index + 1 < len(lines) and lines[index].endswith("\\"):
        index += 1
    return index


def _is_automagic(lines: list[str], index: int, end: int) -> bool:
    word = _WORD.match(lines[index])
    if word is None or word.group(1) not in AUTOMAGICS:
        return False
    rest = lines[index][word.end():].lstrip(" \t")
    if rest and rest[0] in "=([{,:;+*/%&|^<>!@~":
        return False  # `colors = cycler(...`, `time +1`: an operator follows, so Python (IPython agrees)
    try:
        parse_quietly("\n".join(lines[index:end + 1]).strip())
    except SyntaxError:
        return True  # `pip install x`, `cd ..`: not Python
    except (ValueError, RecursionError, MemoryError):
        return False
    return False  # `time = 3`, `env` alone: Python, and checked as such


def _mask_span(cell: _Cell, lines: list[str], start: int, end: int, tag: str,
               originals: dict[int, tuple[str, str]], top_level: bool = False) -> int:
    """Replace lines start..end by placeholders that keep the block structure; the next line index."""
    first = lines[start]
    indent = "" if top_level else first[: len(first) - len(first.lstrip(" \t"))]
    for number in range(start, end + 1):
        serial = len(originals)
        note = f"# {tag} {serial}"
        if number > start:
            placeholder = f"{indent}{note}"  # a comment fits any indentation
        elif (assign := _ASSIGN_MAGIC.match(first)) and not top_level:
            placeholder = f"{indent}{assign.group(1)} = ...  {note}"  # keeps the name bound (to no device)
        elif indent:
            placeholder = f"{indent}pass  {note}"  # a statement: the magic may be a block's only one
        else:
            placeholder = note  # at the top level a comment, so the imports around it stay one block
        originals[serial] = (placeholder, lines[number])
        cell.placeholders[number] = placeholder
    return end + 1


def _logical_line(lines: list[str], start: int) -> tuple[int, bool]:
    """The last line of the logical line starting at `start`, and whether `?` occurs in its code."""
    depth = 0
    quote = None
    question = False
    index = start
    while index < len(lines):
        line = lines[index]
        position, size = 0, len(line)
        continued = escaped_newline = False
        while position < size:
            char = line[position]
            if quote is not None:
                if char == "\\":
                    escaped_newline = position == size - 1
                    position += 2
                elif line.startswith(quote, position):
                    position += len(quote)
                    quote = None
                else:
                    position += 1
                continue
            if char == "#":
                break
            if char in "\"'":
                quote = line[position:position + 3] if line[position:position + 3] in ('"""', "'''") else char
                position += len(quote)
                continue
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth = max(0, depth - 1)
            elif char == "?":
                question = True
            elif char == "\\" and position == size - 1:
                continued = True
            position += 1
        if quote is not None and len(quote) == 1 and not escaped_newline:
            quote = None  # an unterminated string: the parser will say so
        if quote is None and depth == 0 and not continued:
            return index, question
        index += 1
    return len(lines) - 1, question


# -- mapping back --------------------------------------------------------------------------------------
def _locate(position: Position, where: list[tuple[int, int] | None]) -> tuple[int, Position] | None:
    """(cell index, position in the cell); the start of the line after a cell's last is still in it."""
    if 1 <= position.line <= len(where) and where[position.line - 1] is not None:
        cell, line = where[position.line - 1]
        return cell, Position(line, position.column)
    if position.column == 0 and 2 <= position.line <= len(where) + 1 and where[position.line - 2] is not None:
        cell, line = where[position.line - 2]
        return cell, Position(line + 1, 0)
    return None


def to_cell(finding: Finding, where: list[tuple[int, int] | None]) -> Finding:
    """The finding with lines counted in its cell (and `cell` set, 1-based among all cells)."""
    start = _locate(finding.start, where)
    if start is None:
        return finding
    cell, start_position = start
    end = _locate(finding.end, where)
    end_position = end[1] if end is not None and end[0] == cell else start_position
    fix = finding.fix
    if fix is not None and fix.edits:
        edits = []
        for edit in fix.edits:
            edit_start, edit_end = _locate(edit.start, where), _locate(edit.end, where)
            if edit_start is None or edit_end is None or edit_start[0] != cell or edit_end[0] != cell:
                edits = []  # cannot be shown within the cell; the fix itself is applied on the joined text
                break
            edits.append(Edit(edit_start[1], edit_end[1], edit.content))
        fix = replace(fix, edits=tuple(edits))
    suppress = tuple(p[1].line for line in finding.suppress_lines
                     if (p := _locate(Position(line, 0), where)) is not None and p[0] == cell)
    return replace(finding, start=start_position, end=end_position, fix=fix, suppress_lines=suppress, cell=cell + 1)


def _syntax_error(joined: _Joined, exc: cst.ParserSyntaxError) -> FileError:
    """Where the interpreter says the code is broken, as `cell N:line:column`."""
    for cell in joined.cells:
        masked = "".join(cell.placeholders[i] + _newline(line) if i in cell.placeholders else line
                         for i, line in enumerate(cell.lines))
        try:
            parse_quietly(masked)
        except SyntaxError as error:
            line = min(max(error.lineno or 1, 1), max(len(cell.lines), 1))
            return FileError(f"cell {cell.index + 1}:{line}:{error.offset or 1}: SyntaxError: {error.msg}")
        except (ValueError, RecursionError, MemoryError):
            continue
    # Every cell is valid Python for the interpreter: the limitation is LibCST's, not the user's error.
    raise cannot_parse(exc.message)


# -- splitting the fixed text back into cells ------------------------------------------------------
def split_cells(joined: _Joined, fixed: str) -> tuple[dict[int, str], list[tuple[int, int] | None]]:
    """The new source of every checked cell, and where each line of `fixed` is."""
    marker = re.compile(rf"# {re.escape(joined.tag)} cell (\d+)$")
    placeholder = re.compile(rf"# {re.escape(joined.tag)} (\d+)$")
    pieces: dict[int, list[str]] = {cell.index: [] for cell in joined.cells}
    where: list[tuple[int, int] | None] = []
    order: list[int] = []
    current = None
    before: list[str] = []  # what the fixer put above the first marker goes to the top of the first cell
    restored: set[int] = set()
    for line in _LINE.findall(fixed):
        content = _content(line)
        found = marker.fullmatch(content)
        if found:
            current = int(found.group(1))
            if current not in pieces or current in order:
                raise _Unwritable("the cell boundaries were lost")
            order.append(current)
            where.append(None)
            if len(order) == 1:
                pieces[current].extend(before)
                where[:len(before)] = [(current, n) for n in range(1, len(before) + 1)]
            continue
        masked = placeholder.search(content)
        if masked:
            serial = int(masked.group(1))
            if serial not in joined.originals or joined.originals[serial][0] != content or serial in restored:
                raise _Unwritable("a fix touched a masked IPython line")
            restored.add(serial)
            line = joined.originals[serial][1] + _newline(line)
        if current is None:
            before.append(line)
            where.append(None)
            continue
        pieces[current].append(line)
        where.append((current, len(pieces[current])))
    if order != [cell.index for cell in joined.cells]:
        raise _Unwritable("the cell boundaries were lost")
    if restored != set(joined.originals):
        raise _Unwritable("a masked IPython line was lost")
    sources = {}
    for cell in joined.cells:
        text = "".join(pieces[cell.index])
        if cell.text and not _newline(cell.text) and text.endswith(joined.newline):
            text = text[:-len(joined.newline)]  # the newline the join added after the cell's last line
        sources[cell.index] = text
    return sources, where


# -- writing the notebook back -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Span:
    key: int  # offset of the "source" key
    start: int  # offset of its value
    end: int


def source_spans(text: str) -> list[_Span | None]:
    """Where each cell's "source" value is in the notebook's text (the last one, as json.loads keeps)."""
    decoder = json.JSONDecoder()
    spans: list[_Span | None] = []

    def skip(i: int) -> int:
        return _WHITESPACE.match(text, i).end()

    def expect(i: int, char: str) -> int:
        if text[i:i + 1] != char:
            raise ValueError(f"expected {char!r} at offset {i}")
        return i + 1

    def value_end(i: int) -> int:
        return decoder.raw_decode(text, i)[1]

    def walk_object(i: int, visit) -> int:
        """visit(key, key offset, value offset) returns the value's end; the offset after the `}`."""
        i = skip(expect(skip(i), "{"))
        if text[i:i + 1] == "}":
            return i + 1
        while True:
            key_at = i
            key, i = json.decoder.scanstring(text, expect(i, '"'))
            i = skip(visit(key, key_at, skip(expect(skip(i), ":"))))
            if text[i:i + 1] != ",":
                return expect(i, "}")
            i = skip(i + 1)

    def visit_cell(found: list):
        def visit(key: str, key_at: int, i: int) -> int:
            end = value_end(i)
            if key == "source":
                found[0] = _Span(key_at, i, end)
            return end
        return visit

    def visit_top(key: str, key_at: int, i: int) -> int:
        if key != "cells":
            return value_end(i)
        spans.clear()
        i = skip(expect(i, "["))
        if text[i:i + 1] == "]":
            return i + 1
        while True:
            found: list = [None]
            i = walk_object(i, visit_cell(found)) if text[i:i + 1] == "{" else value_end(i)
            spans.append(found[0])
            i = skip(i)
            if text[i:i + 1] != ",":
                return expect(i, "]")
            i = skip(i + 1)

    try:
        walk_object(1 if text.startswith("\ufeff") else 0, visit_top)
    except (ValueError, IndexError) as exc:
        raise _Unwritable(f"cannot locate the cell sources ({exc})") from None
    return spans


# A layout: (indent, item separator, ensure_ascii, newline). The first is what nbformat writes.
_INDENTS = (1, 2, 4, 3, "\t")


def _layouts(newline: str):
    for ensure_ascii in (False, True):
        for indent in _INDENTS:
            yield indent, ",", ensure_ascii, newline
        yield None, ", ", ensure_ascii, newline
        yield None, ",", ensure_ascii, newline


def _render(value, layout, base: str) -> str:
    indent, separator, ensure_ascii, newline = layout
    out = json.dumps(value, indent=indent, separators=(separator, ": "), ensure_ascii=ensure_ascii)
    return out.replace("\n", newline + base) if indent is not None else out


def _base_indent(text: str, key: int) -> str:
    line_start = max(text.rfind("\n", 0, key), text.rfind("\r", 0, key)) + 1
    prefix = text[line_start:key]
    return prefix if not prefix.strip(" \t") else ""


def _source_lines(text: str) -> list[str]:
    """A source as nbformat stores it: lines with their newlines."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def splice_sources(text: str, notebook: dict, sources: dict[int, str]) -> str:
    """The notebook's text with the changed cell sources replaced, in the layout of its other sources."""
    cells = notebook["cells"]
    changed = {i: s for i, s in sources.items() if s != source_text(cells[i])}
    if not changed:
        return text
    spans = source_spans(text)
    if len(spans) != len(cells) or any(spans[i] is None for i in changed):
        raise _Unwritable("cannot locate the cell sources")
    newline = "\r\n" if "\r\n" in text else "\n"
    best, best_score = None, -1
    for layout in _layouts(newline):
        score = sum(_render(cell["source"], layout, _base_indent(text, span.key)) == text[span.start:span.end]
                    for cell, span in zip(cells, spans) if span is not None)
        if score > best_score:
            best, best_score = layout, score
    pieces = []
    cursor = 0
    for index in sorted(changed):
        span = spans[index]
        value = _source_lines(changed[index]) if isinstance(cells[index]["source"], list) else changed[index]
        pieces.append(text[cursor:span.start])
        pieces.append(_render(value, best, _base_indent(text, span.key)))
        cursor = span.end
    pieces.append(text[cursor:])
    return "".join(pieces)
