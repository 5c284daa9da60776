"""A notebook's code cells as one Python module: IPython's transformations, masks, and the join.

The code cells are joined into one text, each after a marker comment, with IPython's own
transformations applied first: a cell whose first line is indented loses that indent on every line
that starts with it (IPython's `leading_indent`), and every IPython-only line (`%time f()`,
`!pip install x`, `files = !ls`, `obj?`, automagic `pip install x` and `ls data/`, the first line of a
`%%time` cell) is replaced by a placeholder of the same line count, so that the code parses and no
rule sees the magic. `Joined.where` says, per line of the joined text, which cell and line it is
(devlint.documents.notebook_map maps findings and fixed text back with it).

A cell that still does not parse is left out (`Prepared.skipped`). A cell whose cell magic does not
run Python (`%%bash`, `%%html`) is left out. A `%%writefile NAME.py` cell holds a Python file, not
notebook code: the cells that write one file (`%%writefile -a` appends) make a module of their own.
The last expression of a cell is displayed (`Out[n]`), not discarded: it gets a mark DL003 leaves
alone (a trailing `;` discards it again).
"""

from __future__ import annotations

import ast
import itertools
import re
import shlex
from dataclasses import dataclass, field

from devlint.notebook_json import source_text
from devlint.prefilter import parse_quietly
from devlint.analysis.moves import MOVES

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

LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # a line with its newline (the last may have none)
_ESCAPES = "%!?/,;"  # magic, shell, help, and the autocall escapes `/f x`, `,f a b`, `;f a b`
_ASSIGN_MAGIC = re.compile(r"[ \t]*([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)[ \t]*=[ \t]*[%!]")
_WORD = re.compile(r"[ \t]*([A-Za-z_]\w*)(?:[ \t]|$)")
_CELL_MAGIC = re.compile(r"[ \t]*%%(\w*)")
_WRITEFILE = re.compile(r"%%writefile(?:[ \t]+(.*))?$")
_INDENT = re.compile(r"[ \t]+")

@dataclass
class Cell:
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
        return "".join(self.placeholders[i] + line_ending(line) if i in self.placeholders else line
                       for i, line in enumerate(self.lines))

    def shift(self, index: int) -> int:
        """How many columns IPython removed from line `index` (0-based)."""
        if self.written is None or index >= len(self.written):
            return 0
        return len(self.prefix) if self.written[index].startswith(self.prefix) else 0


@dataclass
class Joined:
    text: str
    where: list[tuple[int, int, int] | None]  # per line of `text`: (cell index, 1-based line in it, shift)
    cells: list[Cell]
    tag: str
    originals: dict[int, tuple[str, str]]  # placeholder serial -> (placeholder, original line), no newlines
    newline: str  # of the marker lines and after a cell's last line: the cells' own, so the fixer uses it
    suffixes: dict[int, str] = field(default_factory=dict)  # cell index -> the mark of its displayed expression


@dataclass
class Prepared:
    """The notebook's code, ready to check: the notebook's own module, the files that %%writefile
    cells write (each a module of its own), and the cells left out because they do not parse."""

    main: Joined
    files: list[Joined]
    skipped: list[tuple[int, str]]  # (cell index, why: `cell N:line:column: SyntaxError: ...`)


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
    main: list[Cell] = []
    files: list[list[Cell]] = []
    writing: dict[str, list[Cell]] = {}  # file name -> the cells writing it now
    skipped: list[tuple[int, str]] = []
    binds_device = re.compile(rf"(?<![\w.]){re.escape(device_name)}\b")
    for index, text in code:
        lines = LINE.findall(text)
        target = _writefile(lines)
        if target is not None:
            name, append, line = target
            if name is None:
                continue  # writes a file that is not Python (or a name we cannot read): not code
            cell = Cell(index, text, lines)
            _mask_span(cell, [line_content(x) for x in lines], line, line, tag, serials, top_level=True)
            cell.magic = _serial(cell.placeholders[line])
            error, _ = python_error(cell)
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
            stub = Cell(index, text, [placeholder], {0: placeholder}, stub=True)  # the join adds the newline
            stub.originals[_serial(placeholder)] = (placeholder, placeholder)
            main.append(stub)
    suffixes = {cell.index: f" or {mark}_{n}_" for n, cell in enumerate(main) if cell.shown is not None}
    return Prepared(assemble(main, tag, suffixes), [assemble(f, tag, {}) for f in files], skipped)


def join_cells(cells: list) -> Joined:
    """The notebook's own module (cells that do not parse and %%writefile cells left out)."""
    return prepare(cells).main


def _prepare_cell(index: int, text: str, lines: list[str], tag: str, serials) -> tuple[Cell | None, str | None]:
    """The cell as checked; (None, None) for a cell magic that is not Python; (None, why) when it
    does not parse even as IPython transforms it."""
    cell = Cell(index, text, lines)
    if not _mask(cell, tag, serials):
        return None, None
    error, tree = python_error(cell)
    if error is not None:
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        indent = _INDENT.match(lines[first]) if first is not None else None
        if indent is not None:
            # IPython's leading_indent: the first line's indent goes from every line starting with it
            prefix = indent.group(0)
            dedented = Cell(index, text, [x[len(prefix):] if x.startswith(prefix) else x for x in lines],
                             prefix=prefix, written=lines)
            if not _mask(dedented, tag, serials):
                return None, None
            error, tree = python_error(dedented)
            cell = dedented
    if error is not None:
        return None, error
    cell.shown = _displayed(cell, tree)
    return cell, None


def python_error(cell: Cell) -> tuple[str | None, ast.Module | None]:
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


def _displayed(cell: Cell, tree: ast.Module | None) -> tuple[int, int] | None:
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
    line = line_content(cell.lines[end])
    column = len(line.encode("utf-8", "surrogatepass")[:last.end_col_offset].decode("utf-8", "surrogatepass"))
    if line[column:].lstrip(" \t").startswith(";"):
        return None  # `x.cuda();`: IPython displays nothing, the result is discarded
    return end, column


def _writefile(lines: list[str]) -> tuple[str | None, bool, int] | None:
    """For a `%%writefile [-a] NAME` cell: (NAME when it is a .py file, else None; append; its line)."""
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return None
    found = _WRITEFILE.match(line_content(lines[start]))
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


def assemble(cells: list[Cell], tag: str, suffixes: dict[int, str]) -> Joined:
    """One module: each cell after its marker comment, placeholders for masked lines."""
    endings = [line_ending(line) for cell in cells for line in cell.lines if line_ending(line)]
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
                line = cell.placeholders[number] + line_ending(line)
            elif cell.shown is not None and cell.shown[0] == number and cell.index in suffixes:
                column = cell.shown[1]
                line = line[:column] + suffixes[cell.index] + line[column:]
                kept[cell.index] = suffixes[cell.index]
            out.append(line)
            where.append((cell.index, number + 1, cell.shift(number)))
        if not line_ending(out[-1]):
            out[-1] += newline
    return Joined("".join(out), where, cells, tag, originals, newline, kept)


def line_ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def line_content(line: str) -> str:
    return line.rstrip("\r\n")


def _mask(cell: Cell, tag: str, serials) -> bool:
    """Fill cell.placeholders; False when the cell is not Python at all (a non-Python cell magic)."""
    lines = [line_content(line) for line in cell.lines]
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


def _mask_span(cell: Cell, lines: list[str], start: int, end: int, tag: str, serials,
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


