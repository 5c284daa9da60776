"""pytest fixtures: which fixture a test's parameter receives, from this file or a `conftest.py` above it.

pytest hands a test function (`test*`, also a method of a `Test*` class) or a fixture each parameter
without a default value from the fixture of that name, looked up nearest first: a fixture of the class,
of the module, then of the `conftest.py` files from the test's folder up to the project root. A name the
test (or its class, or the module's `pytestmark`) parametrizes, a module that defines
`pytest_generate_tests`, a name the module imports, or a fixture defined twice: no answer.

`fixture_of(ctx, param)` answers a `Fixture`: where the definition is and what it returns (`values`, the
expressions of its `return`/`yield` statements, for a fixture of this file), or `facts` (plain data,
devlint.conftests) for one of a conftest. The kinds (devlint.analysis.kinds) and the placement
(devlint.analysis.placement) take a test's parameter from it; DL002 (devlint.analysis.origins) asks whether it
is a path the fixture saved CPU data to.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from devlint.facts import FileFacts, answer
from devlint.syntax import dotted_name, find_arg, string_value

# pytest's own fixtures, for text checked without a file (and so without conftest.py files to read).
_BUILTINS = frozenset({"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"})
_BUILTIN = object()
FIXTURE_DECORATORS = frozenset({"pytest.fixture", "pytest_asyncio.fixture", "fixture", "pytest.yield_fixture"})


@dataclass(frozen=True)
class Fixture:
    name: str
    definition: cst.FunctionDef | None  # a fixture of this file
    facts: object = None  # devlint.conftests.FixtureFacts, for a fixture of a conftest.py


def fixtures(ctx: FileFacts) -> "Fixtures":
    found = getattr(ctx, "_devlint_fixtures", None)
    if found is None:
        found = Fixtures(ctx)
        setattr(ctx, "_devlint_fixtures", found)
    return found


def fixture_of(ctx: FileFacts, param: cst.Param) -> Fixture | None:
    """The fixture a test's (or fixture's) parameter receives, if it can be told."""
    return fixtures(ctx).of(param) if fixtures(ctx).may_receive else None


def receives_builtin(ctx: FileFacts, param: cst.Param) -> bool:
    """Does a test's (or fixture's) parameter receive pytest's own fixture of its name (`tmp_path`): no fixture
    of its class, of this module or of a `conftest.py` above it defines the name, and nothing parametrizes it?"""
    found = fixtures(ctx)
    return (found.may_receive or ctx.project is None) and found._resolve(param) is _BUILTIN


def is_fixture(ctx: FileFacts, function: cst.FunctionDef) -> bool:
    return _fixture_decorator(ctx, function) is not None


def _fixture_decorator(ctx: FileFacts, function: cst.FunctionDef) -> cst.Decorator | None:
    for decorator in function.decorators:
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        names = ctx.qualified_names(target) | {dotted_name(target) or ""}
        if names & FIXTURE_DECORATORS:
            return decorator
    return None


def fixture_name(ctx: FileFacts, function: cst.FunctionDef) -> str:
    decorator = _fixture_decorator(ctx, function)
    if decorator is not None and isinstance(decorator.decorator, cst.Call):
        given = find_arg(decorator.decorator, "name", None)
        if given is not None and string_value(given.value) is not None:
            return string_value(given.value)
    return function.name.value


def function_scoped(ctx: FileFacts, function: cst.FunctionDef) -> bool:
    """Built anew for each test (no `scope=` other than "function"): another test cannot have changed it."""
    decorator = _fixture_decorator(ctx, function)
    if decorator is None or not isinstance(decorator.decorator, cst.Call):
        return decorator is not None
    scope = find_arg(decorator.decorator, "scope", 0)
    return scope is None or string_value(scope.value) == "function"


def returned_values(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    """The values of the function's own `return X` and `yield X` (not those of nested definitions)."""
    found: list[cst.BaseExpression] = []

    def visit(node: cst.CSTNode) -> None:
        for child in node.children:
            if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(child, cst.Return) and child.value is not None:
                found.append(child.value)
            elif isinstance(child, cst.Yield) and isinstance(child.value, cst.BaseExpression):
                found.append(child.value)
            visit(child)

    visit(function.body)
    return found


class Fixtures:
    def __init__(self, ctx: FileFacts) -> None:
        self.ctx = ctx

    @cached_property
    def _module_level(self) -> dict[str, list[cst.FunctionDef]]:
        found: dict[str, list[cst.FunctionDef]] = {}
        for statement in self.ctx.module.body:
            if isinstance(statement, cst.FunctionDef) and is_fixture(self.ctx, statement):
                found.setdefault(fixture_name(self.ctx, statement), []).append(statement)
        return found

    @cached_property
    def may_receive(self) -> bool:
        """Does the file define fixtures, or is it a test file (or conftest.py) that conftest files serve?"""
        if any("fixture" in (dotted_name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or "")
               for d in self.ctx.nodes(cst.Decorator)):
            return True
        name = (getattr(self.ctx.project, "path", "") or "").replace("\\", "/").rsplit("/", 1)[-1]
        return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"

    @cached_property
    def _generated(self) -> bool:
        """Parameters may come from `pytest_generate_tests` or a module-level `pytestmark` parametrization."""
        names = {n.value for n in self.ctx.nodes(cst.Name)}
        return "pytest_generate_tests" in names or "pytestmark" in names

    def of(self, param: cst.Param) -> Fixture | None:
        found = self._resolve(param)
        return None if found is _BUILTIN else found

    def _resolve(self, param: cst.Param):
        """The fixture, None where it cannot be told, or _BUILTIN where no fixture of the project defines it."""
        function = self.ctx.parent(self.ctx.parent(param))
        if not isinstance(function, cst.FunctionDef) or param.default is not None or self._generated:
            return None
        if self.ctx.parent(param) is not function.params or param not in function.params.params + \
                function.params.kwonly_params:
            return None
        cls = self._class_of(function)
        takes_fixtures = is_fixture(self.ctx, function) or (
            function.name.value.startswith("test") and (cls is None or cls.name.value.startswith("Test")))
        if not takes_fixtures:
            return None
        name = param.name.value
        if cls is not None and function.params.params and function.params.params[0] is param:
            return None  # (`self`)
        if self._parametrized(function, name) or (cls is not None and self._parametrized(cls, name)):
            return None
        if cls is not None:
            own = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and is_fixture(self.ctx, s)
                   and fixture_name(self.ctx, s) == name] if isinstance(cls.body, cst.IndentedBlock) else []
            if own:
                return Fixture(name, own[0]) if len(own) == 1 and own[0] is not function else None
            if cls.bases:
                return None  # (a base class may define it)
        local = self._module_level.get(name)
        if local:
            return Fixture(name, local[0]) if len(local) == 1 and local[0] is not function else None
        if name in self.ctx.imported_names:
            return None
        if self.ctx.project is None:
            return _BUILTIN if name in _BUILTINS else None  # (text with no file: no conftest.py to read)
        # (devlint.analysis.origin_files judges a conftest.py with the analyses that ask this one)
        facts = answer("conftest_fixture")(self.ctx.project, name)
        if facts is not None:
            return Fixture(name, None, facts)
        return _BUILTIN if name in _BUILTINS and answer("conftest_lacks")(self.ctx.project, name) else None

    def _class_of(self, function: cst.FunctionDef) -> cst.ClassDef | None:
        block = self.ctx.parent(function)
        owner = self.ctx.parent(block) if block is not None else None
        return owner if isinstance(owner, cst.ClassDef) else None

    def _parametrized(self, node: cst.FunctionDef | cst.ClassDef, name: str) -> bool:
        for decorator in node.decorators:
            call = decorator.decorator
            if not isinstance(call, cst.Call):
                continue
            text = dotted_name(call.func) or ""
            if not text.endswith("parametrize"):
                continue
            names = call.args[0].value if call.args else None
            listed = string_value(names) if names is not None else None
            if listed is None:
                return True  # (names we cannot read: any)
            if name in [n.strip() for n in listed.split(",")]:
                return True
        return False


def fixture_kind(kinds, param: cst.Param):
    """The kind (devlint.analysis.kinds) a test's parameter receives from its fixture; UNKNOWN without one."""
    from devlint.analysis.vocabulary import MODULE, TENSOR, UNKNOWN

    fixture = fixture_of(kinds.ctx, param)
    if fixture is None:
        return UNKNOWN
    if fixture.definition is None:
        kind = getattr(fixture.facts, "kind", None)
        return TENSOR if kind == "tensor" else MODULE if kind == "module" else UNKNOWN
    values = returned_values(fixture.definition)
    return kinds._combine({kinds.of(v) for v in values}) if values else UNKNOWN
