"""Facts of other files of the project that the origin of a loaded file rests on (devlint.analysis.origins),
computed with the same analyses as a checked file and kept as plain data:

- the fixtures of the `conftest.py` files from a test's folder up to the project root (the nearest
  folder holding `.git`, `pyproject.toml`, `setup.py` or `setup.cfg`), nearest first: for each, the kind
  of what it returns (a tensor makes a test's parameter one, for DL003), where it lives (for a fixture
  built anew for each test), and whether it returns a path it saved CPU data to;
- the top-level functions that write one of their parameters with `torch.save` (or with the bytes of an
  in-memory buffer `torch.save` wrote, devlint.analysis.buffer_saves): which parameter, and whether what
  they save is CPU data of their own or one of their parameters (judged at the call);
- the top-level functions whose result holds no tensor off the CPU (devlint.analysis.host_returns).

Each file is parsed once per process and content (by digest). Every file read, and every `conftest.py`
looked for and not found, is recorded in the checked file's project view (`observed`, devlint.depends),
so the result cache checks the file again when one of them changes, appears or goes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import libcst as cst

from devlint.analysis.kinds import kinds_of
from devlint.facts import FileFacts, answers
from devlint.parsing import parse_module
from devlint.syntax import dotted_name, find_arg

ROOT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
MAX_LEVELS = 20


@dataclass(frozen=True)
class FixtureFacts:
    kind: str | None  # "tensor", "module" or None
    place: str | None  # "cpu", "device" or None (unknown, or a fixture shared between tests)
    cpu_file: bool  # returns (or yields) a path it saved CPU data to
    fresh_dir: bool = False  # returns (or yields) only paths inside folders created empty this run


@dataclass
class FileOrigins:
    fixtures: dict = field(default_factory=dict)  # name -> FixtureFacts, or None where defined twice
    writers: dict = field(default_factory=dict)  # top-level function name -> saves (see writer_facts)
    host_functions: set = field(default_factory=set)  # top-level functions whose result holds no tensor off the CPU


_BY_DIGEST: dict[str, FileOrigins | None] = {}


# -- a function that writes its path parameter ------------------------------------------------------------
def writer_facts(ctx: FileFacts, function: cst.FunctionDef) -> list | None:
    """[((index, name) of the path parameter, what is saved: ("cpu",) | ("param", (index, name)) |
    ("unknown",))] for each write of a parameter of `function`; None when it writes none."""
    from devlint.analysis.buffer_saves import buffered_objects
    from devlint.analysis.origins import LOADERS, SAVERS, WRITER_WORDS, host_value

    params = _parameters(function)
    found = []
    for call in _calls(function):
        names = ctx.qualified_names(call.func)
        if names & LOADERS:
            continue
        if names & SAVERS:
            path, obj = find_arg(call, "f", 1), find_arg(call, "obj", 0)
            target = _parameter(ctx, path.value if path is not None else None, params)
            if target is None:
                continue
            source = _parameter(ctx, obj.value if obj is not None else None, params)
            if source is not None:
                found.append((target, ("param", source)))
            else:
                found.append((target, ("cpu",) if obj is not None and host_value(ctx, obj.value) else ("unknown",)))
            continue
        last = (dotted_name(call.func) or "").rsplit(".", 1)[-1].lower()
        if any(word in last for word in WRITER_WORDS) or last == "open":
            buffered = buffered_objects(ctx, call) if last == "open" else None  # (devlint.analysis.buffer_saves)
            for arg in call.args:
                target = _parameter(ctx, arg.value, params)
                if target is not None and buffered is not None:
                    for obj in buffered:
                        source = _parameter(ctx, obj, params)
                        found.append((target, ("param", source) if source is not None else ("cpu",) if host_value(
                            ctx, obj) else ("unknown",)))
                elif target is not None:
                    found.append((target, ("unknown",)))
    return found or None


def _parameters(function: cst.FunctionDef) -> dict[cst.Param, tuple]:
    positional = list(function.params.posonly_params) + list(function.params.params)
    found = {param: (index, param.name.value) for index, param in enumerate(positional)}
    found.update({param: (None, param.name.value) for param in function.params.kwonly_params})
    return found


def _parameter(ctx: FileFacts, expr: cst.CSTNode | None, params: dict) -> tuple | None:
    if not isinstance(expr, cst.Name):
        return None
    assignments = ctx.bindings(expr)
    if len(assignments) == 1 and assignments[0].node in params:
        return params[assignments[0].node]
    return None


def _calls(function: cst.FunctionDef) -> list[cst.Call]:
    found, stack = [], [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call):
            found.append(node)
        stack.extend(node.children)
    return found


def writer_saves(ctx: FileFacts, call: cst.Call) -> list | None:
    """writer_facts of the function `call` calls: one of this file, or a top-level one of the project."""
    func = call.func
    if isinstance(func, cst.Name):
        assignments = ctx.bindings(func)
        if len(assignments) == 1 and isinstance(assignments[0].node, cst.FunctionDef):
            memo = ctx.__dict__.setdefault("_devlint_writers", {})
            node = assignments[0].node
            if node not in memo:
                memo[node] = writer_facts(ctx, node)
            return memo[node]
    view = ctx.project
    if view is None:
        return None
    name = ctx.project_name(func)
    if name is None or not (isinstance(func, cst.Name) and func.value in ctx.imported_names
                            or isinstance(func, cst.Attribute)):
        return None
    found = view.definition(name)
    if found is None:
        return None
    origins = _origins(view, found[0])
    return origins.writers.get(found[1]) if origins is not None else None


def host_functions(view, path: str) -> set:
    """The top-level functions of a project file whose result holds no tensor off the CPU (devlint.analysis.host_returns)."""
    origins = _origins(view, path)
    return origins.host_functions if origins is not None else set()


# -- the fixtures of conftest.py files --------------------------------------------------------------------
def conftest_fixture(view, name: str) -> FixtureFacts | None:
    """The facts of the fixture `name` in the nearest `conftest.py` above the checked file that defines it."""
    for path in conftests(view):
        origins = _origins(view, path)
        if origins is None:
            return None  # (unreadable: it may define it)
        if name in origins.fixtures:
            return origins.fixtures[name]
    return None


def conftest_lacks(view, name: str) -> bool:
    """Does no `conftest.py` above the checked file define the fixture `name` (each of them read)?"""
    for path in conftests(view):
        origins = _origins(view, path)
        if origins is None or name in origins.fixtures:
            return False
    return True


def conftests(view) -> list[str]:
    """The `conftest.py` files from the checked file's folder up to the project root, nearest first."""
    memo = view.__dict__.setdefault("_devlint_conftests", [])
    if not memo:
        memo.append(_conftests(view))
    return memo[0]


def _conftests(view) -> list[str]:
    found = []
    folder = os.path.dirname(view.path)
    for _ in range(MAX_LEVELS):
        candidate = os.path.join(folder, "conftest.py")
        if candidate != view.path and view.index.isfile(candidate, view.observed):
            found.append(candidate)
        if any(view.index.exists(os.path.join(folder, marker), view.observed) for marker in ROOT_MARKERS):
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return found


def _origins(view, path: str) -> FileOrigins | None:
    """The origin facts of a project file, read once per checked file (its view) and parsed once per content."""
    memo = view.__dict__.setdefault("_devlint_origins", {})
    if path not in memo:
        memo[path] = _read_origins(view, path)
    return memo[path]


def _read_origins(view, path: str) -> FileOrigins | None:
    data, observed = view.read(path)
    if data is None:
        return None
    if observed not in _BY_DIGEST:
        _BY_DIGEST[observed] = _analyse(data)
    return _BY_DIGEST[observed]


def _analyse(data: bytes) -> FileOrigins | None:
    from devlint.analysis.fixtures import fixture_name, function_scoped, is_fixture, returned_values
    from devlint.analysis.fresh_folders import fixture_gives_fresh
    from devlint.analysis.kinds import MODULE, TENSOR
    from devlint.analysis.origins import fixture_writes_cpu, host_value
    from devlint.analysis.placement import CPU, DEVICE, join, placement
    from devlint.analysis.host_returns import returns_host

    try:
        module = parse_module(data)
        ctx = FileFacts(module)
        origins = FileOrigins()
        for statement in module.body:
            if not isinstance(statement, cst.FunctionDef):
                continue
            if returns_host(ctx, statement, host_value):
                origins.host_functions.add(statement.name.value)
            if is_fixture(ctx, statement):
                name = fixture_name(ctx, statement)
                values = returned_values(statement)
                kinds = {kinds_of(ctx).of(v) for v in values}
                kind = kinds.pop() if len(kinds) == 1 else None
                place = join(placement(ctx).of(v) for v in values) if values and function_scoped(ctx, statement) else None
                facts = FixtureFacts(
                    "tensor" if kind is TENSOR else "module" if kind is MODULE else None,
                    "cpu" if place is CPU else "device" if place is DEVICE else None,
                    fixture_writes_cpu(ctx, statement),
                    fixture_gives_fresh(ctx, statement),
                )
                origins.fixtures[name] = None if name in origins.fixtures else facts
            elif b"save" in data:
                saves = writer_facts(ctx, statement)
                if saves is not None:
                    origins.writers[statement.name.value] = saves
        return origins
    except Exception:  # (a file that does not parse, or too deep: nothing known of it)
        return None


# Asked by devlint.analysis.origins and devlint.analysis.fixtures, which this module's analyses rest on.
answers("writer_saves", writer_saves)
answers("conftest_fixture", conftest_fixture)
answers("conftest_lacks", conftest_lacks)
answers("host_functions", host_functions)
