"""Jupyter notebooks, an adapter of the engine: check and fix the code cells of an `.ipynb` as one
Python module, and map findings and fixes back to the cells.

The cells become one module as IPython runs them (devlint.documents.notebook_cells); the engine
checks and fixes that module like any file; findings are mapped back to the cell (its 1-based index
among *all* cells, as ruff counts) and the line and column within it as written, and a fix to the
new sources of the cells it changes (devlint.documents.notebook_map), which are spliced into the
notebook's text (devlint.documents.notebook_write).

A cell that still does not parse (an exercise's `criterion = # TODO`, a half-written cell) is
reported once in the result's notice and left out; the other cells are checked and fixed, and a fix
never touches the skipped cell. A `%%writefile NAME.py` file is checked and fixed as a module of its
own. A notebook whose kernel is not Python is skipped with a notice.

A fix rewrites only the `source` of the code cells it changes: outputs, metadata, key order and
everything else keep their bytes.
"""

from __future__ import annotations

import libcst as cst

from devlint.complexity import Unanalysable, cannot_parse, deep_recursion, run_with_big_stack
from devlint.documents.notebook_cells import Cell, Joined, assemble, prepare, python_error
from devlint.documents.notebook_map import split_cells, to_cell
from devlint.documents.notebook_write import Unwritable, splice_sources
from devlint.engine import FixDidNotConverge, TooDeeplyNested, add_noqa_text, fix_text, lint_text, project_view
from devlint.model import FileError, FileResult, Finding
from devlint.notebook_json import InvalidNotebook, load
from devlint.parsing import parse_module
from devlint.prefilter import TooComplex
from devlint.report import PARTLY_CHECKED
from devlint.rescue import rescue_cells
from devlint.size_limit import code_size_notice

_CANNOT_PARSE = str(cannot_parse(""))[:-3]  # "skipped: valid Python that LibCST cannot parse"

def check_notebook_file(path: str, data: bytes, config) -> FileResult:
    """`check_notebook`, with what the engine's `check_source` does for a Python file: errors and
    the checker's bounds become the result's error or notice, never an exception."""
    try:
        with deep_recursion():  # the cells' depth is known only once joined: always a big stack
            return run_with_big_stack(check_notebook, path, data, config)
    except Unanalysable as exc:
        return FileResult(path, notice=str(exc))
    except Exception as exc:  # as for .py files: one line, never a traceback
        return FileResult(path, error=FileError(f"internal error: {type(exc).__name__}: {exc}", internal=True))


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
    # The notebook's own code sees the project as a script in its folder does (`import fc_model` of a
    # sibling file); a %%writefile file is checked as before, without one.
    project = project_view(path)
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
            unit, (fixed, applied, findings, added) = _check_unit(unit, config, rules, skipped,
                                                                  project if is_main else None)
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
            except Unwritable as exc:
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
        except Unwritable as exc:
            result.error = FileError(f"cannot write fixes: {exc}; the notebook was left unchanged", internal=True)
            return result
        if rewritten != text:
            result.fixed_source = rewritten
    result.findings.sort(key=lambda f: (f.cell or 0, f.start, f.code))  # the %%writefile files among them
    result.applied.sort(key=lambda f: (f.cell or 0, f.start, f.code))
    if skipped:
        result.notice = skipped_notice(skipped)
    if project is not None and project.observed:
        result.dependencies = dict(project.observed)  # (the files the findings rest on: devlint.depends)
    return result


def skipped_notice(skipped: list[tuple[int, str]]) -> str:
    """`skipped: cell 3:2:5: SyntaxError: ... (the other cells were checked)`."""
    reasons = "; ".join(reason for _, reason in sorted(skipped))
    return f"skipped: {reasons} {PARTLY_CHECKED}"


def _check_unit(unit: Joined, config, rules, skipped: list[tuple[int, str]], project=None):
    """Run the checker on one module; a cell that only LibCST cannot parse is left out and the rest
    checked again. Returns the module as checked and (fixed text, applied, findings, noqa added)."""
    while True:
        try:
            return unit, _run_checker(unit.text, config, rules, project)
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


def _run_checker(text: str, config, rules, project=None) -> tuple[str, list[Finding], list[Finding], int]:
    if config.add_noqa:
        fixed, added = add_noqa_text(text, config, rules, project=project)
        return fixed, [], [], added
    if config.fix:
        fixed, applied, findings = fix_text(text, config, rules, project=project)
        return fixed, applied, findings, 0
    return text, [], lint_text(text, config, rules, project), 0


def _libcst_refuses(cell: Cell) -> str | None:
    """Why LibCST cannot parse this cell (valid Python for the interpreter), or None."""
    try:
        parse_module(cell.masked())
    except cst.ParserSyntaxError as exc:  # its positions are not reliable enough to quote
        return f"cell {cell.index + 1}: {str(cannot_parse(exc.message)).removeprefix('skipped: ')}"
    except Exception:  # noqa: BLE001 - not this cell's doing: the checker reports it as before
        return None
    return None


def _unit_refused(unit: Joined, why: str) -> tuple[int, str]:
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


def _syntax_error(joined: Joined, exc: cst.ParserSyntaxError) -> FileError:
    """Where the interpreter says the code is broken, as `cell N:line:column` (every cell parsed
    alone before joining: only a cell that parses alone and not joined can get here)."""
    for cell in joined.cells:
        error, _ = python_error(cell)
        if error is not None:
            return FileError(error)
    # Every cell is valid Python for the interpreter: the limitation is LibCST's, not the user's error.
    raise cannot_parse(exc.message)


