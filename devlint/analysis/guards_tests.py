"""Test code that only runs with CUDA (part of devlint.analysis.guards): skip decorators and markers
(`@pytest.mark.skipif(not cuda)`, a marker the file defines, `@requires_gpu`), `pytest.param(...,
marks=...)`, `pytestmark`, a unittest class whose `setUp` skips without CUDA, a `def cuda(self)`
override, and a test file that imports a compiled CUDA-only extension."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.analysis.flags import flags_of
from devlint.analysis.guard_signs import (
    _SETUP_METHODS,
    _and_operands,
    _ends_in_skip,
    _is_cuda_extension,
    _is_mark,
    _marker_name_requires_cuda,
    _requires_cuda_keyword,
    _skip_condition,
    _strings_in,
)
from devlint.syntax import calls_in, dotted_name, string_value


class TestingGuards:
    """Mixed into CudaGuards, whose `implies` and `ctx` these methods use."""

    def _lambda_in_guarded_decorator(self, function: cst.Lambda) -> bool:
        """`@parametrize("map_location", [lambda s, loc: s.cuda()])` on a test skipped without CUDA:
        the lambda runs only in that test (unlike the decorator's other arguments, which are
        evaluated when the module is imported)."""
        decorator = self.ctx.enclosing(function, cst.Decorator)
        owner = self.ctx.parent(decorator) if decorator is not None else None
        if not isinstance(owner, (cst.FunctionDef, cst.ClassDef)):
            return False
        return any(self._decorator_guards(d.decorator) for d in owner.decorators if d is not decorator)

    def _skip_premise(self, branch: cst.If | cst.IfExp) -> bool:
        """`@skipif(A and not cuda)` on the function, then `if A:` in it: A there implies CUDA.

        The test runs only when `not (A and not cuda)`, that is when A is false or CUDA is there.
        """
        function = self.ctx.enclosing(branch, cst.FunctionDef)
        if function is None or not function.decorators:
            return False
        for decorator in function.decorators:
            kind, condition = _skip_condition(decorator.decorator)
            if kind != "skipif":
                continue
            operands = _and_operands(condition)
            if len(operands) < 2:
                continue
            for index, operand in enumerate(operands):
                if self.implies(operand)[1]:  # `not cuda`: false only with CUDA
                    premises = operands[:index] + operands[index + 1:]
                    if any(branch.test.deep_equals(premise) for premise in premises):
                        return True
        return False

    def _param_with_guarding_marks(self, call: cst.Call) -> bool:
        """`pytest.param(torch.device("cuda"), marks=pytest.mark.skipif(not torch.cuda.is_available(), ...))`."""
        if (dotted_name(call.func) or "").rsplit(".", 1)[-1] != "param":
            return False
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "marks":
                marks = arg.value.elements if isinstance(arg.value, (cst.List, cst.Tuple)) else None
                values = [e.value for e in marks] if marks is not None else [arg.value]
                return any(self._decorator_guards(v) for v in values)
        return False

    @cached_property
    def _module_has_pytestmark(self) -> bool:
        return self._has_pytestmark(self.ctx.module.body)

    def _decorator_guards(self, decorator: cst.BaseExpression) -> bool:
        if self._depth > 8:
            return False
        self._depth += 1
        try:
            return self._marker_guards(decorator)
        finally:
            self._depth -= 1

    def _marker_guards(self, decorator: cst.BaseExpression) -> bool:
        kind, condition = _skip_condition(decorator)
        if condition is not None:
            if flags_of(self.ctx).truth(condition) is not None:
                return False  # `skipif(True, reason="flaky")`: a skip meant to be lifted, not about CUDA
            polarity = self.implies(condition)
            return polarity[1] if kind == "skipif" else polarity[0]
        target = decorator.func if isinstance(decorator, cst.Call) else decorator
        name = dotted_name(target) or ""
        if isinstance(decorator, cst.Call):
            if any((string_value(arg.value) or "").lower().startswith(("gpu", "cuda")) for arg in decorator.args):
                return True  # a project's own GPU-only marker: `@pytest.mark.run_only_on("GPU")`
            if any(_requires_cuda_keyword(arg) for arg in decorator.args):
                return True  # Lightning's `@RunIf(min_cuda_gpus=1)`, `@requires(cuda=True)`
        if isinstance(target, cst.Name):
            resolved = self._resolved_marker(target.value)
            if resolved is not None:
                return resolved
        return _marker_name_requires_cuda(name)

    def _resolved_marker(self, name: str) -> bool | None:
        """What a marker defined in this file says: `skip_if_no_gpu = pytest.mark.skipif(not cuda, ...)`,
        `skip_no_cuda = unittest.skipIf(...)`, or a decorator function that applies such a skip.
        None when the file does not define `name` as a marker (imported, or no skip in sight)."""
        memo = self._marker_memo
        if name not in memo:
            memo[name] = None  # a marker defined through itself says nothing more
            answers = []
            for value in self._assigned_conditions.get(name, ()):
                if _skip_condition(value)[1] is not None or _is_mark(value):
                    answers.append(self._decorator_guards(value))
            for function in self._functions_by_name.get(name, ()):
                for call in calls_in(function.body):
                    if _skip_condition(call)[1] is not None:
                        answers.append(self._decorator_guards(call))
            memo[name] = any(answers) if answers else None
        return memo[name]

    @cached_property
    def _classes_by_name(self) -> dict[str, cst.ClassDef]:
        return {c.name.value: c for c in self.ctx.nodes(cst.ClassDef)}

    @cached_property
    def _marker_memo(self) -> dict[str, bool | None]:
        return {}

    @cached_property
    def _functions_by_name(self) -> dict[str, list[cst.FunctionDef]]:
        found: dict[str, list[cst.FunctionDef]] = {}
        for function in self.ctx.nodes(cst.FunctionDef):
            found.setdefault(function.name.value, []).append(function)
        return found

    # -- unittest classes, CUDA overrides, CUDA extension tests -------------------------------------
    def _method_needs_cuda(self, function: cst.FunctionDef) -> bool:
        """A method that runs only with CUDA: a `cuda()` override (it runs when someone calls
        `.cuda()`, which needs CUDA), or a test of a class whose `setUp`/`setUpClass` skips without CUDA."""
        block = self.ctx.parent(function)
        cls = self.ctx.parent(block) if block is not None else None
        if not isinstance(cls, cst.ClassDef):
            return False
        if function.name.value == "cuda" and function.params.params:
            return True
        return function.name.value not in _SETUP_METHODS and self._class_skips_without_cuda(cls)

    def _class_skips_without_cuda(self, cls: cst.ClassDef, seen: frozenset = frozenset()) -> bool:
        memo = self.__dict__.setdefault("_class_skip_memo", {})
        if cls in memo:
            return memo[cls]
        memo[cls] = False
        answer = False
        for statement in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(statement, cst.FunctionDef) and statement.name.value in _SETUP_METHODS:
                if self._skips_without_cuda(statement.body):
                    answer = True
        if not answer:  # a base class in this file that skips: `class TestHalf(CudaTestCase)`
            for base in cls.bases:
                base_class = self._classes_by_name.get(dotted_name(base.value) or "")
                if base_class is not None and base_class is not cls and self._class_skips_without_cuda(base_class):
                    answer = True
        memo[cls] = answer
        return answer

    def _skips_without_cuda(self, block: cst.BaseSuite) -> bool:
        """`if not torch.cuda.is_available(): self.skipTest(...)` (or `raise unittest.SkipTest`,
        `pytest.skip`) among the statements of a block."""
        for statement in getattr(block, "body", ()):
            if (
                isinstance(statement, cst.If)
                and statement.orelse is None
                and _ends_in_skip(statement.body)
                and self.implies(statement.test)[1]
            ):
                return True
        return False

    @cached_property
    def _tests_cuda_extension(self) -> bool:
        """A test file that imports a compiled CUDA-only extension at top level (`import fused_adam_cuda`,
        `from ops import deform_conv_cuda`, `amp_C`, or builds one from `.cu` sources with
        `torch.utils.cpp_extension.load`): it cannot be imported without CUDA, so nothing in it runs
        without CUDA. Limited to test files, where the extension is what is tested; a library module
        may import such an extension for one code path and serve the CPU on others."""
        if not self._is_test_file:
            return False
        for statement in self.ctx.module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Import):
                    if any(_is_cuda_extension(dotted_name(a.name) or "") for a in small.names):
                        return True
                elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    module = dotted_name(small.module) if small.module is not None else ""
                    if _is_cuda_extension(module or "") or any(
                        _is_cuda_extension(dotted_name(a.name) or "") for a in small.names
                    ):
                        return True
                elif isinstance(small, (cst.Assign, cst.Expr)) and isinstance(small.value, cst.Call):
                    if self._builds_cuda_extension(small.value):
                        return True
        return False

    def _builds_cuda_extension(self, call: cst.Call) -> bool:
        names = self.ctx.qualified_names(call.func)
        if not any(n.startswith("torch.utils.cpp_extension.load") for n in names):
            return False
        if any(arg.keyword is not None and arg.keyword.value == "cuda_sources" for arg in call.args):
            return True
        return any((string_value(node) or "").endswith(".cu") for node in _strings_in(call))

    @cached_property
    def _is_test_file(self) -> bool:
        """Test code by its content (the context does not know the path): it imports pytest or
        unittest, or defines `test_*` functions."""
        if self.ctx.imports_package("pytest") or self.ctx.imports_package("unittest"):
            return True
        return any(f.name.value.startswith("test_") for f in self.ctx.nodes(cst.FunctionDef))

    def _has_pytestmark(self, body) -> bool:
        for statement in body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(
                    dotted_name(t.target) == "pytestmark" for t in small.targets
                ):
                    marks = small.value.elements if isinstance(small.value, (cst.List, cst.Tuple)) else None
                    values = [e.value for e in marks] if marks is not None else [small.value]
                    if any(self._decorator_guards(v) for v in values):
                        return True
        return False
