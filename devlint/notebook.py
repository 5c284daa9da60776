"""Jupyter notebooks: check and fix the code cells of an `.ipynb` as one Python module.

The code cells are joined into one text, each after a marker comment, with IPython's own
transformations applied first: a cell whose first line is indented loses that indent on every line
that starts with it (IPython's `leading_indent`), and every IPython-only line (`%time f()`,
`!pip install x`, `files = !ls`, `obj?`, automagic `pip install x` and `ls data/`, the first line of a
`%%time` cell) is replaced by a placeholder of the same line count, so that the code parses and no
rule sees the magic. Findings are mapped back to the cell (its 1-based index among *all* cells, as
ruff counts) and the line and column within it as written.

A cell that still does not parse (an exercise's `criterion = # TODO`, a half-written cell) is
reported once in the result's notice and left out; the other cells are checked and fixed, and a fix
never touches the skipped cell. A cell whose cell magic does not run Python (`%%bash`, `%%html`) is
left out. A `%%writefile NAME.py` cell holds a Python file, not notebook code: the cells that write
one file (`%%writefile -a` appends) are checked and fixed together as a module of their own. The last
expression of a cell is displayed (`Out[n]`), not discarded: DL003 leaves it alone (a trailing `;`
discards it again). A notebook whose kernel is not Python is skipped with a notice.

A fix rewrites only the `source` of the code cells it changes: the new value is spliced into the
original text in place of the old one, in the layout the other sources have (indent, ASCII escapes,
line endings), so outputs, metadata, key order and everything else keep their bytes.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import json
import re
import shlex
from dataclasses import dataclass, field, replace

import libcst as cst

from devlint.complexity import Unanalysable, cannot_parse
from devlint.notebook_json import InvalidNotebook, cell_source, load, source_text  # noqa: F401 (re-exported)
from devlint.engine import FixDidNotConverge, TooDeeplyNested, add_noqa_text, fix_text, lint_text
from devlint.model import Edit, FileError, FileResult, Finding, Position
from devlint.prefilter import TooComplex, parse_quietly
from devlint.report import PARTLY_CHECKED
from devlint.rescue import rescue_cells
from devlint.rules.discarded_tensor_move import MOVES
from devlint.size_limit import code_size_notice

# Cell magics whose body is Python run by the kernel: the body is checked, the `%%` line masked.
# Any other cell magic (%%bash, %%html, %%sql, ...) leaves its cell out; %%writefile NAME.py cells
# are checked as the file they write.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
# Line magics IPython runs without the `%` (automagic), as listed by ruff, and the shell aliases
# IPython defines on POSIX (`ls`, `mkdir`, ...); a line starting with one of these words is a magic
# only when it is not Python (`pip install x`, `ls data/`, but not `time = 3`).
AUTOMAGICS = frozenset("""
    alias alias_magic autoawait autocall automagic bookmark cd code_wrap colors conda config debug dhist
    dirs doctest_mode edit env gui history killbgscripts load load_ext loadpy logoff logon logstart
    logstate logstop lsmagic macro magic mamba matplotlib micromamba notebook page pastebin pdb pdef
    pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch psource pushd pwd pycat pylab
    quickref recall rehashx reload_ext rerun reset reset_selective run save sc set_env sx system tb
    time timeit unalias unload_ext who who_ls whos xdel xmode
    cat cp ldir lf lk ll ls lx mkdir mv rm rmdir
""".split())

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # a line with its newline (the last may have none)
_ESCAPES = "%!?/,;"  # magic, shell, help, and the autocall escapes `/f x`, `,f a b`, `;f a b`
_ASSIGN_MAGIC = re.compile(r"[ \t]*([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)[ \t]*=[ \t]*[%!]")
_WORD = re.compile(r"[ \t]*([A-Za-z_]\w*)(?:[ \t]|$)")
_CELL_MAGIC = re.compile(r"[ \t]*%%(\w*)")
_WRITEFILE = re.compile(r"%%writefile(?:[ \t]+(.*))?$")
_INDENT = re.compile(r"[ \t]+")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_CANNOT_PARSE = str(cannot_parse(""))[:-3]  # "skipped: valid Python that LibCST cannot parse"


class _Unwritable(Exception):
    pass


@dataclass
class _Cell:
    index: int  # among all cells, 0-based
    text: str  # the source as one string, as written
    lines: list[str]  # as checked: IPython's leading indent removed; with their newlines
    placeholders: dict[int, str] = field(default_factory=dict)  # line index -> placeholder (no newline)
    originals: dict[int, tuple[str, str]] = field(default_factory=dict)  # serial -> (placeholder, line)
    prefix: str = ""  # the indent IPython removes from every line starting with it ("" when none)
    written: list[str] | None = None  # the lines as written, when `prefix` was removed
    magic: int | None = None  # serial of the placeholder of a cell magic line, which must stay first
    shown: tuple[int, int] | None = None  # (line index, column) where a displayed last expression ends
    stub: bool = False  # stands for a skipped cell that may bind the device name: never written back

    def masked(self) -> str:
        return "".join(self.placeholders[i] + _newline(line) if i in self.placeholders else line
                       for i, line in enumerate(self.lines))

    def shift(self, index: int) -> int:
        """How many columns IPython removed from line `index` (0-based)."""
        if self.written is None or index >= len(self.written):
            return 0
        return len(self.prefix) if self.written[index].startswith(self.prefix) else 0


@dataclass
class _Joined:
    text: str
    where: list[tuple[int, int, int] | None]  # per line of `text`: (cell index, 1-based line in it, shift)
    cells: list[_Cell]
    tag: str
    originals: dict[int, tuple[str, str]]  # placeholder serial -> (placeholder, original line), no newlines
    newline: str  # of the marker lines and after a cell's last line: the cells' own, so the fixer uses it
    suffixes: dict[int, str] = field(default_factory=dict)  # cell index -> the mark of its displayed expression


@dataclass
class Prepared:
    """The notebook's code, ready to check: the notebook's own module, the files that %%writefile
    cells write (each a module of its own), and the cells left out because they do not parse."""

    main: _Joined
    files: list[_Joined]
    skipped: list[tuple[int, str]]  # (cell index, why: `cell N:line:column: SyntaxError: ...`)


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
    if (too_big := code_size_notice(notebook["cells"], config)) is not None:
        result.notice = too_big  # (its outputs do not count: devlint.size_limit)
        return result
    rules = config.rules_for(path)
    rescued = rescue_cells(notebook["cells"], config, rules)  # DL017: `x.cuda(async=True)` renamed
    prepared = prepare(rescued.cells, config.fix_options.device_name)
    if still := rescued.renamed.keys() & {index for index, _ in prepared.skipped}:
        # Renamed, those cells still do not parse: they are left as written.
        rescued = rescue_cells(notebook["cells"], config, rules, keep=still)
        prepared = prepare(rescued.cells, config.fix_options.device_name)
    skipped = list(prepared.skipped)
    result.findings, result.applied = rescued.findings, rescued.applied
    sources: dict[int, str] = dict(rescued.renamed)  # a cell a fix changes too gets its text below
    for unit in [prepared.main, *prepared.files]:
        is_main = unit is prepared.main
        try:
            unit, (fixed, applied, findings, added) = _check_unit(unit, config, rules, skipped)
        except cst.ParserSyntaxError as exc:
            if not is_main:
                skipped.append(_unit_refused(unit, f"SyntaxError: {exc.message}"))
                continue
            result.error = _syntax_error(unit, exc)
            return result
        except (Unanalysable, RecursionError, TooDeeplyNested, TooComplex) as exc:
            if not is_main:  # a %%writefile file the checker refuses: the notebook's own code still counts
                skipped.append(_unit_refused(unit, str(exc) or "too deeply nested to analyse"))
                continue
            if isinstance(exc, Unanalysable):
                raise
            result.error = FileError("too deeply nested to analyse (recursion limit reached)"
                                     if isinstance(exc, RecursionError) else str(exc))
            return result
        except FixDidNotConverge as exc:
            result.error = FileError(f"internal error: {exc}; the file was left unchanged", internal=True)
            return result
        where = unit.where
        if fixed != unit.text:
            try:
                changed, where = split_cells(unit, fixed)
            except _Unwritable as exc:
                result.error = FileError(f"cannot write fixes: {exc}; the notebook was left unchanged",
                                         internal=True)
                return result
            sources.update(changed)
        result.applied += [to_cell(f, unit.where) for f in applied]  # found in the text before the fix
        result.findings += [to_cell(f, where) for f in findings]
        result.added_noqa += added
    if sources:
        try:
            rewritten = splice_sources(text, notebook, sources)
        except _Unwritable as exc:
            result.error = FileError(f"cannot write fixes: {exc}; the notebook was left unchanged", internal=True)
            return result
        if rewritten != text:
            result.fixed_source = rewritten
    result.findings.sort(key=lambda f: (f.cell or 0, f.start, f.code))  # the %%writefile files among them
    result.applied.sort(key=lambda f: (f.cell or 0, f.start, f.code))
    if skipped:
        result.notice = skipped_notice(skipped)
    return result



def skipped_notice(skipped: list[tuple[int, str]]) -> str:
    """`skipped: cell 3:2:5: SyntaxError: ... (the other cells were checked)`."""
    reasons = "; ".join(reason for _, reason in sorted(skipped))
    return f"skipped: {reasons} {PARTLY_CHECKED}"


def _check_unit(unit: _Joined, config, rules, skipped: list[tuple[int, str]]):
    """Run the checker on one module; a cell that only LibCST cannot parse is left out and the rest
    checked again. Returns the module as checked and (fixed text, applied, findings, noqa added)."""
    while True:
        try:
            return unit, _run_checker(unit.text, config, rules)
        except (cst.ParserSyntaxError, Unanalysable) as exc:
            if isinstance(exc, Unanalysable) and not str(exc).startswith(_CANNOT_PARSE):
                raise  # a bound of the checker (nesting, size): about the whole module
            refused = {}
            for cell in unit.cells:
                if not cell.stub and (message := _libcst_refuses(cell)) is not None:
                    refused[cell.index] = message
            if not refused:
                raise
            skipped.extend(refused.items())
            unit = assemble([c for c in unit.cells if c.index not in refused], unit.tag, unit.suffixes)


def _run_checker(text: str, config, rules) -> tuple[str, list[Finding], list[Finding], int]:
    if config.add_noqa:
        fixed, added = add_noqa_text(text, config, rules)
        return fixed, [], [], added
    if config.fix:
        fixed, applied, findings = fix_text(text, config, rules)
        return fixed, applied, findings, 0
    return text, [], lint_text(text, config, rules), 0


def _libcst_refuses(cell: _Cell) -> str | None:
    """Why LibCST cannot parse this cell (valid Python for the interpreter), or None."""
    try:
        cst.parse_module(cell.masked())
    except cst.ParserSyntaxError as exc:  # its positions are not reliable enough to quote
        return f"cell {cell.index + 1}: {str(cannot_parse(exc.message)).removeprefix('skipped: ')}"
    except Exception:  # noqa: BLE001 - not this cell's doing: the checker reports it as before
        return None
    return None


def _unit_refused(unit: _Joined, why: str) -> tuple[int, str]:
    first = unit.cells[0]
    why = why.removeprefix("skipped: ")
    return first.index, f"cell {first.index + 1}: the %%writefile file is not checked: {why}"


def _language(notebook: dict) -> str | None:
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return None
    for key, name in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(name), str) and value[name]:
            return value[name]
    return None


# -- preparing the code cells: IPython's transformations, then masks ------------------------------
def prepare(cells: list, device_name: str = "device") -> Prepared:
    code = [(i, source_text(c)) for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    everything = "\n".join(text for _, text in code)
    tag = "devlint-nb"
    while tag in everything:
        tag += "-"
    mark = "_devlint_nb_shown"
    while mark in everything:
        mark += "_"
    serials = itertools.count()
    main: list[_Cell] = []
    files: list[list[_Cell]] = []
    writing: dict[str, list[_Cell]] = {}  # file name -> the cells writing it now
    skipped: list[tuple[int, str]] = []
    binds_device = re.compile(rf"(?<![\w.]){re.escape(device_name)}\b")
    for index, text in code:
        lines = _LINE.findall(text)
        target = _writefile(lines)
        if target is not None:
            name, append, line = target
            if name is None:
                continue  # writes a file that is not Python (or a name we cannot read): not code
            cell = _Cell(index, text, lines)
            _mask_span(cell, [_content(x) for x in lines], line, line, tag, serials, top_level=True)
            cell.magic = _serial(cell.placeholders[line])
            error, _ = _python_error(cell)
            if error is not None:
                skipped.append((index, f"{error}, in the body of %%writefile {name}"))
                continue
            if append and name in writing:
                writing[name].append(cell)
            else:
                writing[name] = [cell]
                files.append(writing[name])
            continue
        cell, why = _prepare_cell(index, text, lines, tag, serials)
        if cell is not None:
            main.append(cell)
            continue
        if why is None:
            continue  # a cell magic that does not run Python
        skipped.append((index, why))
        if binds_device.search(text):
            # What the skipped cell binds is unknown: `device` may be bound there, so no fix may rely
            # on defining it (as for `device = !cmd`, it stands bound to no device).
            placeholder = f"{device_name} = ...  # {tag} {next(serials)}"
            stub = _Cell(index, text, [placeholder], {0: placeholder}, stub=True)  # the join adds the newline
            stub.originals[_serial(placeholder)] = (placeholder, placeholder)
            main.append(stub)
    suffixes = {cell.index: f" or {mark}_{n}_" for n, cell in enumerate(main) if cell.shown is not None}
    return Prepared(assemble(main, tag, suffixes), [assemble(f, tag, {}) for f in files], skipped)


def join_cells(cells: list) -> _Joined:
    """The notebook's own module (cells that do not parse and %%writefile cells left out)."""
    return prepare(cells).main


def _prepare_cell(index: int, text: str, lines: list[str], tag: str, serials) -> tuple[_Cell | None, str | None]:
    """The cell as checked; (None, None) for a cell magic that is not Python; (None, why) when it
    does not parse even as IPython transforms it."""
    cell = _Cell(index, text, lines)
    if not _mask(cell, tag, serials):
        return None, None
    error, tree = _python_error(cell)
    if error is not None:
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        indent = _INDENT.match(lines[first]) if first is not None else None
        if indent is not None:
            # IPython's leading_indent: the first line's indent goes from every line starting with it
            prefix = indent.group(0)
            dedented = _Cell(index, text, [x[len(prefix):] if x.startswith(prefix) else x for x in lines],
                             prefix=prefix, written=lines)
            if not _mask(dedented, tag, serials):
                return None, None
            error, tree = _python_error(dedented)
            cell = dedented
    if error is not None:
        return None, error
    cell.shown = _displayed(cell, tree)
    return cell, None


def _python_error(cell: _Cell) -> tuple[str | None, ast.Module | None]:
    """`cell N:line:column: SyntaxError: message` as the interpreter reports it, or (None, tree)."""
    try:
        return None, parse_quietly(cell.masked())
    except SyntaxError as error:
        line = min(max(error.lineno or 1, 1), max(len(cell.lines), 1))
        column = (error.offset or 1) + cell.shift(line - 1)
        return f"cell {cell.index + 1}:{line}:{column}: {type(error).__name__}: {error.msg}", None
    except ValueError as error:  # a null character
        return f"cell {cell.index + 1}:1:1: SyntaxError: {error}", None
    except (RecursionError, MemoryError):
        return None, None  # the checker's own bounds decide


def _displayed(cell: _Cell, tree: ast.Module | None) -> tuple[int, int] | None:
    """Where the cell's last statement ends when IPython displays its value and DL003 could take it
    for a discarded move (`x.to(device)` alone on the last line shows the moved copy in Out[n])."""
    if tree is None or not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return None
    last = tree.body[-1]
    value = last.value.elt if isinstance(last.value, ast.ListComp) else last.value
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MOVES):
        return None
    end = last.end_lineno - 1
    if end >= len(cell.lines) or end in cell.placeholders or any(i > end for i in cell.placeholders):
        return None  # a magic after it is the cell's last statement
    line = _content(cell.lines[end])
    column = len(line.encode("utf-8", "surrogatepass")[:last.end_col_offset].decode("utf-8", "surrogatepass"))
    if line[column:].lstrip(" \t").startswith(";"):
        return None  # `x.cuda();`: IPython displays nothing, the result is discarded
    return end, column


def _writefile(lines: list[str]) -> tuple[str | None, bool, int] | None:
    """For a `%%writefile [-a] NAME` cell: (NAME when it is a .py file, else None; append; its line)."""
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return None
    found = _WRITEFILE.match(_content(lines[start]))
    if found is None:
        return None
    try:
        words = shlex.split(found.group(1) or "")
    except ValueError:
        return None, False, start
    append = any(w in ("-a", "--append") for w in words)
    names = [w for w in words if not w.startswith("-")]
    if len(names) != 1 or not names[0].endswith(".py"):
        return None, append, start
    return names[0], append, start


def assemble(cells: list[_Cell], tag: str, suffixes: dict[int, str]) -> _Joined:
    """One module: each cell after its marker comment, placeholders for masked lines."""
    endings = [_newline(line) for cell in cells for line in cell.lines if _newline(line)]
    newline = max(("\n", "\r\n", "\r"), key=endings.count) if endings else "\n"
    out: list[str] = []
    where: list[tuple[int, int, int] | None] = []
    originals: dict[int, tuple[str, str]] = {}
    kept = {}
    for cell in cells:
        originals.update(cell.originals)
        out.append(f"# {tag} cell {cell.index}{newline}")
        where.append(None)
        for number, line in enumerate(cell.lines):
            if number in cell.placeholders:
                line = cell.placeholders[number] + _newline(line)
            elif cell.shown is not None and cell.shown[0] == number and cell.index in suffixes:
                column = cell.shown[1]
                line = line[:column] + suffixes[cell.index] + line[column:]
                kept[cell.index] = suffixes[cell.index]
            out.append(line)
            where.append((cell.index, number + 1, cell.shift(number)))
        if not _newline(out[-1]):
            out[-1] += newline
    return _Joined("".join(out), where, cells, tag, originals, newline, kept)


def _newline(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def _mask(cell: _Cell, tag: str, serials) -> bool:
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
            end = _continued(lines, start)
            _mask_span(cell, lines, start, end, tag, serials, top_level=True)
            cell.magic = _serial(cell.placeholders[start])
            start = end + 1
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
            index = _mask_span(cell, lines, index, max(end, _continued(lines, index)), tag, serials)
            continue
        if _is_automagic(lines, index, end):
            index = _mask_span(cell, lines, index, end, tag, serials)
            continue
        if question:  # `obj?`, `obj??`, `%magic?`: IPython's help, anywhere outside strings and comments
            index = _mask_span(cell, lines, index, end, tag, serials)
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


def _mask_span(cell: _Cell, lines: list[str], start: int, end: int, tag: str, serials,
               top_level: bool = False) -> int:
    """Replace lines start..end by placeholders that keep the block structure; the next line index."""
    first = lines[start]
    indent = "" if top_level else first[: len(first) - len(first.lstrip(" \t"))]
    for number in range(start, end + 1):
        serial = next(serials)
        note = f"# {tag} {serial}"
        if number > start:
            placeholder = f"{indent}{note}"  # a comment fits any indentation
        elif (assign := _ASSIGN_MAGIC.match(first)) and not top_level:
            placeholder = f"{indent}{assign.group(1)} = ...  {note}"  # keeps the name bound (to no device)
        elif indent:
            placeholder = f"{indent}pass  {note}"  # a statement: the magic may be a block's only one
        else:
            placeholder = note  # at the top level a comment, so the imports around it stay one block
        cell.originals[serial] = (placeholder, lines[number])
        cell.placeholders[number] = placeholder
    return end + 1


def _serial(placeholder: str) -> int:
    return int(placeholder.rsplit(" ", 1)[1])


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
def _locate(position: Position, where: list[tuple[int, int, int] | None]) -> tuple[int, Position] | None:
    """(cell index, position in the cell as written); the start of the line after a cell's last is
    still in it. Columns count the indent IPython removed."""
    if 1 <= position.line <= len(where) and where[position.line - 1] is not None:
        cell, line, shift = where[position.line - 1]
        return cell, Position(line, position.column + shift)
    if position.column == 0 and 2 <= position.line <= len(where) + 1 and where[position.line - 2] is not None:
        cell, line, _ = where[position.line - 2]
        return cell, Position(line + 1, 0)
    return None


def to_cell(finding: Finding, where: list[tuple[int, int, int] | None]) -> Finding:
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
    """Where the interpreter says the code is broken, as `cell N:line:column` (every cell parsed
    alone before joining: only a cell that parses alone and not joined can get here)."""
    for cell in joined.cells:
        error, _ = _python_error(cell)
        if error is not None:
            return FileError(error)
    # Every cell is valid Python for the interpreter: the limitation is LibCST's, not the user's error.
    raise cannot_parse(exc.message)


# -- splitting the fixed text back into cells ------------------------------------------------------
def split_cells(joined: _Joined, fixed: str) -> tuple[dict[int, str], list[tuple[int, int, int] | None]]:
    """The new source of every checked cell, and where each line of `fixed` is."""
    for suffix in joined.suffixes.values():  # the marks of displayed expressions go first
        if fixed.count(suffix) != 1:
            raise _Unwritable("a fix touched the last expression of a cell")
        fixed = fixed.replace(suffix, "")
    marker = re.compile(rf"# {re.escape(joined.tag)} cell (\d+)$")
    placeholder = re.compile(rf"# {re.escape(joined.tag)} (\d+)$")
    cells = {cell.index: cell for cell in joined.cells}
    pieces: dict[int, list[str]] = {cell.index: [] for cell in joined.cells}
    spots: list[list[int] | None] = []  # per line of `fixed`: [cell index, 0-based line in its pieces]
    order: list[int] = []
    current = None
    before: list[int] = []  # lines the fixer put above the first marker go to the top of the first cell
    restored: set[int] = set()

    def add(cell: int, line: str, spot: list[int]) -> None:
        spot[:] = [cell, len(pieces[cell])]
        pieces[cell].append(line)

    for line in _LINE.findall(fixed):
        content = _content(line)
        found = marker.fullmatch(content)
        if found:
            current = int(found.group(1))
            if current not in pieces or current in order:
                raise _Unwritable("the cell boundaries were lost")
            order.append(current)
            spots.append(None)
            if len(order) == 1 and cells[current].magic is None:
                for index in before:
                    add(current, spots[index].pop(), spots[index])
                before = []
            continue
        masked = placeholder.search(content)
        if masked:
            serial = int(masked.group(1))
            if serial not in joined.originals or joined.originals[serial][0] != content or serial in restored:
                raise _Unwritable("a fix touched a masked IPython line")
            restored.add(serial)
            line = joined.originals[serial][1] + _newline(line)
        if current is None:
            before.append(len(spots))
            spots.append([line])  # the text, until it finds its cell
            continue
        spot: list[int] = []
        add(current, line, spot)
        spots.append(spot)
        if before and masked and cells[current].magic == serial:
            for index in before:  # below a cell magic, which must stay the cell's first line
                add(current, spots[index].pop(), spots[index])
            before = []
    if before or order != [cell.index for cell in joined.cells]:
        raise _Unwritable("the cell boundaries were lost")
    if restored != set(joined.originals):
        raise _Unwritable("a masked IPython line was lost")
    sources: dict[int, str] = {}
    shifts: dict[int, list[int]] = {}
    for cell in joined.cells:
        text = "".join(pieces[cell.index])
        if cell.stub:
            if pieces[cell.index] != [cell.placeholders[0] + joined.newline]:
                raise _Unwritable("a fix touched a cell that does not parse")
            shifts[cell.index] = [0]
            continue
        if cell.text and not _newline(cell.text) and text.endswith(joined.newline):
            text = text[:-len(joined.newline)]  # the newline the join added after the cell's last line
        shifts[cell.index] = [0] * len(pieces[cell.index])
        if cell.prefix:
            text, shifts[cell.index] = _indent_again(cell, text, len(pieces[cell.index]))
        sources[cell.index] = text
    where = [None if spot is None else (spot[0], spot[1] + 1, shifts[spot[0]][spot[1]]) for spot in spots]
    return sources, where


def _indent_again(cell: _Cell, text: str, count: int) -> tuple[str, list[int]]:
    """Put back the indent IPython removes: lines the fix left alone as written, new and changed
    lines with the cell's indent. Also how many columns each line gained."""
    new = _LINE.findall(text)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, cell.lines, new, autojunk=False)
    for operation, i1, i2, j1, j2 in matcher.get_opcodes():
        if operation == "equal":
            out.extend(cell.written[i1:i2])
        else:
            out.extend(cell.prefix + line if line.strip() else line for line in new[j1:j2])
    if [line[len(cell.prefix):] if line.startswith(cell.prefix) else line for line in out] != new:
        raise _Unwritable("the indent IPython removes cannot be put back")
    shifts = [len(cell.prefix) if line.startswith(cell.prefix) else 0 for line in out]
    return "".join(out), shifts + [0] * (count - len(shifts))


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
