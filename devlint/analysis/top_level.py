"""The file's top level, as a definition of the device needs it: where the import header ends (the
insertion index of a module-level definition: after the docstring, `__future__` imports, the imports
and the set-up between them) and whether the file runs as a script (`script_evidence`)."""
from __future__ import annotations

import re

import libcst as cst

from devlint.facts import FileFacts
from devlint.syntax import dotted_name, string_value

# -- is the file a script? ---------------------------------------------------------------------------
_NOTEBOOK_TAG = re.compile(r"#\s*devlint-nb-* cell \d+")  # how devlint.notebook marks joined cells


_SETUP_ROOTS = frozenset({"logging", "warnings", "__all__", "sys", "logger", "_logger", "log", "_log", "LOGGER",
                          "LOG", "typing"})


_SETUP_CALLS = frozenset({"setLevel", "addHandler", "basicConfig", "filterwarnings", "simplefilter",
                          "dictConfig", "captureWarnings", "disable_warnings", "load_library", "wrap",
                          "set_printoptions", "install", "extend", "append", "update", "use"})


def script_evidence(ctx: FileFacts) -> bool:
    """Is the file run as a program (so a module-level definition runs no earlier than its code)?

    `if __name__ == "__main__":` at top level, a notebook (devlint's joined cells), or top-level
    statements that do work: a loop, a `with`, an `await`, `args = parser.parse_args()`, or a
    bare call that is not library set-up (logging, warnings, `sys.path`, `__all__`, registrations).
    """
    return ctx.memoised(script_evidence, _file_is_script)


def is_notebook(ctx: FileFacts) -> bool:
    """Is the file a notebook's cells joined by devlint (so its top level runs cell by cell, at will)?"""
    return ctx.memoised(is_notebook, lambda c: _joined_cells(c.module))


def _joined_cells(module: cst.Module) -> bool:
    return any(line.comment is not None and _NOTEBOOK_TAG.match(line.comment.value)
               for line in (*module.header, *module.footer))


def _file_is_script(ctx: FileFacts) -> bool:
    return _is_script(ctx.module)


def _is_script(module: cst.Module) -> bool:
    if _joined_cells(module):
        return True
    for statement in module.body:
        if isinstance(statement, (cst.For, cst.While, cst.With)):
            return True
        if isinstance(statement, cst.If) and _is_main_check(statement.test):
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Expr) and _does_work(small.value):
                    return True
                value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
                if isinstance(value, cst.Await) or (
                    isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                    and value.func.attr.value in ("parse_args", "parse_known_args")
                ):
                    return True
    return False


def _is_main_check(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return (isinstance(test.comparisons[0].operator, cst.Equal)
            and any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides)
            and any(string_value(s) == "__main__" for s in sides))


def _does_work(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Await):
        return True
    if not isinstance(value, cst.Call):
        return False
    callee = dotted_name(value.func) or ""
    if not callee:
        return True  # `Net()(x)`, `f()[0]()`
    parts = callee.split(".")
    last = parts[-1]
    return not (parts[0] in _SETUP_ROOTS or last in _SETUP_CALLS or "register" in last.lower()
                or "log" in parts[0].lower())


def _subtree(node: cst.CSTNode, kind: type):
    """The nodes of `kind` that run with `node`: not those in the bodies of functions and lambdas it defines."""
    if isinstance(node, kind):
        yield node
    for child in node.children:
        if not (isinstance(node, cst.FunctionDef) and child is node.body) and not (
            isinstance(node, cst.Lambda) and child is node.body
        ):
            yield from _subtree(child, kind)


def insertion_index(module: cst.Module) -> int:
    """After the docstring, `__future__` imports, the leading import header (with any module-level
    `global` statements in it, and the set-up between its imports: `matplotlib.use(...)`,
    `sys.path.insert(...)`, `try: import x` ...) and the import of torch."""
    if _last_insertion[0] is module:  # asked once per fix: the header's set-up check walks whole statements
        return _last_insertion[1]
    index = _insertion_index(module)
    _last_insertion[:] = [module, index]
    return index


_last_insertion: list = [None, 0]  # (module, its insertion index): modules are immutable


def _insertion_index(module: cst.Module) -> int:
    body = list(module.body)
    torch_import = None
    for i, statement in enumerate(body):
        if _imports_torch(statement):
            torch_import = i
            break
    index = _after_header(body, 0)
    if torch_import is not None and torch_import >= index:
        # torch is imported below other code (`__author__ = ...`): after its import and the imports
        # right after it, which cannot use `device`, so as not to split that import block
        index = _after_header(body, torch_import + 1)
    return index


def _after_header(body: list[cst.CSTNode], index: int) -> int:
    """The index after the last import of the import header that starts at `index`.

    The header is a run of import lines (and the docstring) with, between them, the set-up that
    files put among their imports: simple statements (`matplotlib.use("Agg")`,
    `sys.path.insert(0, ROOT)`, `os.environ[...] = ...`, `__version__ = ...`) and `if`/`try`/`with`
    blocks that import (`try: import apex` ...). A definition inside the header would split it
    (ruff's and isort's import check, E402 for the imports after it); set-up after the last import
    is not part of it.
    """
    end = index
    while index < len(body):
        statement = body[index]
        if _is_import_line(statement, index) or _is_import_block(statement):
            index += 1
            end = index
        elif _is_setup(statement):
            index += 1
        else:
            break
    return end


def _is_import_line(statement: cst.CSTNode, index: int) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom, cst.Global)) or (index == 0 and _is_docstring(s))
        for s in statement.body
    )


def _is_import_block(statement: cst.CSTNode) -> bool:
    """`try: import apex` / `except ImportError: apex = None`, `if TYPE_CHECKING: from x import Y`:
    a block of imports and what stands in for them (assignments, `pass`, `raise`, a warning)."""
    if not isinstance(statement, (cst.If, cst.Try, cst.TryStar, cst.With)) or (
        isinstance(statement, cst.If) and _is_main_check(statement.test)
    ):
        return False
    if any(not isinstance(inner, (cst.If, cst.Try, cst.TryStar, cst.With))
           for inner in _subtree(statement, cst.BaseCompoundStatement)):
        return False  # a loop, a definition
    smalls = list(_subtree(statement, cst.BaseSmallStatement))
    return any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in smalls) and all(
        isinstance(s, (*_SETUP_STATEMENTS, cst.Raise)) for s in smalls
    )


_SETUP_STATEMENTS = (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Pass, cst.Import, cst.ImportFrom,
                     cst.Global)


# Calls that compute a path for `sys.path` (`ROOT = os.path.dirname(os.path.abspath(__file__))`).
_PATH_ROOTS = frozenset({"os", "osp", "path", "pathlib", "Path", "PurePath", "str", "dirname", "abspath", "join",
                         "realpath", "normpath", "expanduser", "getcwd", "getenv"})


_PATH_METHODS = frozenset({"resolve", "absolute", "joinpath", "expanduser", "parent", "parents", "dirname"})


def _is_setup(statement: cst.CSTNode) -> bool:
    """Set-up between two imports of a header (see `_after_header`): library set-up calls (`matplotlib.use`,
    `sys.path.insert`, `warnings.filterwarnings`, `os.environ.setdefault`, ...), assignments to
    `os.environ[...]`, `sys.*` or a dunder name, a path computed for `sys.path`, and blocks of imports."""
    if isinstance(statement, cst.SimpleStatementLine):
        return all(_is_setup_small(s) for s in statement.body)
    if isinstance(statement, (cst.If, cst.Try, cst.TryStar, cst.With)) and not (
        isinstance(statement, cst.If) and _is_main_check(statement.test)
    ):
        return any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in _subtree(statement, cst.BaseSmallStatement))
    return False


def _is_setup_small(small: cst.BaseSmallStatement) -> bool:
    if isinstance(small, (cst.Import, cst.ImportFrom, cst.Global, cst.Pass)):
        return True
    if isinstance(small, cst.Expr):
        return isinstance(small.value, cst.Call) and _is_setup_call(small.value)
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
        targets = [small.target]
    else:
        return False
    value = small.value
    if value is None:
        return True
    if all(isinstance(t, cst.Name) and t.value.startswith("__") and t.value.endswith("__") for t in targets):
        return True  # `__version__ = "1.0"`
    if all(isinstance(t, (cst.Subscript, cst.Attribute)) and _root(t) in ("os", "sys") for t in targets):
        return True  # `os.environ["X"] = ...`, `sys.path[0:0] = ...`
    if isinstance(value, cst.Call) and _is_setup_call(value) and (dotted_name(value.func) or "").endswith(
            "importorskip"):
        return True  # `np = pytest.importorskip("numpy")`
    return all(isinstance(t, cst.Name) for t in targets) and all(
        _is_path_call(call) for call in _subtree(value, cst.Call)
    )


def _root(target: cst.BaseExpression) -> str | None:
    while isinstance(target, (cst.Subscript, cst.Attribute)):
        target = target.value
    return target.value if isinstance(target, cst.Name) else None


def _is_setup_call(call: cst.Call) -> bool:
    callee = dotted_name(call.func) or ""
    if callee.startswith(("os.environ.", "os.putenv", "site.", "pytest.importorskip", "faulthandler.")):
        return True
    return bool(callee) and not _does_work(call)


def _is_path_call(call: cst.Call) -> bool:
    callee = dotted_name(call.func)
    if callee is not None:
        parts = callee.split(".")
        return parts[0] in _PATH_ROOTS or parts[-1] in _PATH_METHODS
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in _PATH_METHODS


def _starts_with_docstring(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and _is_docstring(statement.body[0])


def _imports_future(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(s, cst.ImportFrom) and not s.relative and dotted_name(s.module) == "__future__"
        for s in statement.body
    )


def _is_docstring(small: cst.BaseSmallStatement) -> bool:
    return isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))


def _imports_torch(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                if (dotted_name(alias.name) or "").split(".")[0] == "torch" and (
                    alias.asname is None or dotted_name(alias.name) == "torch"
                ):
                    return True
    return False
