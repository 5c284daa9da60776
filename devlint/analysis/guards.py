"""Is this code only reached when CUDA is present or was asked for?

A *CUDA condition* is an expression whose truth says something about CUDA:

* an availability test: `torch.cuda.is_available()`, `torch.cuda.device_count()`, any call that
  asks a question and whose dotted name mentions cuda/gpu (`has_cuda()`, `utils.gpu_available()`,
  `get_num_gpus()`; not a call that makes a value: `move_to_cuda(s)`, `t.cuda().fill_(0)`),
  `x.is_cuda` on any name, a comparison with a "cuda" string (`device.type == "cuda"`,
  `"cuda" in str(device)`), or with the NCCL backend, which needs CUDA
  (`dist.get_backend() == dist.Backend.NCCL`, `backend == "nccl"`);
* a CUDA tensor type: `isinstance(x, torch.cuda.FloatTensor)` (any `torch.cuda.*Tensor`, or a tuple
  of nothing but those), `x.type() == "torch.cuda.HalfTensor"`, `x.type().startswith("torch.cuda")`,
  `type(x) is torch.cuda.LongTensor`;
* a CUDA device index compared with a number, where -1 (any negative) means the CPU:
  `device >= 0`, `device_id != -1`, `args.output_device > -1`, `0 <= gpu_idx`, `x.get_device() >= 0`
  (true means CUDA), `device == -1`, `device < 0` (false means CUDA). An index is a name whose last
  words are `device` or `device_id`/`_idx`/`_index`/`_ordinal` (or mention cuda/gpu); `idx`, `rank`
  and `num_devices` are not;
* a user's explicit switch, recognised by its name: `args.cuda`, `use_gpu`, `opt.gpu_ids`, `TEST_CUDA`,
  `args.gpu is not None`, `args.ngpu > 0`, `cuda_device >= 0`; `no_cuda`/`cpu`-style names count
  inverted;
* `torch.distributed.is_initialized()` where every process group the project starts is NCCL
  (devlint.analysis.process_group), and a call of a yes/no helper of the file whose every true answer
  comes with CUDA (`is_dist_avail_and_initialized()`: devlint.analysis.helper_conditions);
* a name assigned from such a test anywhere in the file (`ok = torch.cuda.is_available()`); a name
  assigned a value computed with CUDA (`lab = torch.ones(1).cuda().fill_(v)`) is no test, but a name
  that only ever holds None or a CUDA-only object (`self.stream = torch.cuda.Stream()`, `y = x.cuda()`;
  a plain name bound no other way, not a parameter) is CUDA when it is not None.

`not`, `is None`, `== 0` on counts and `< N` invert a condition (`device_count() < 2` is false only
with CUDA); `and`/`or` combine them.

Code is *guarded* when it sits

* in the true branch of a condition that implies CUDA (`if`, conditional expression, later operand
  of `and`, `while`), in the false branch of one whose falsity implies CUDA (`else` of `if not cuda`,
  later operand of `or`), after an early exit (`if not cuda: return`, `assert cuda`, a call of a function
  that never returns without CUDA: devlint.analysis.cuda_required), in the body of a
  loop over the GPUs (`for i in range(torch.cuda.device_count())`, `[... for i in range(args.n_gpu)]`);
* in a function whose every call is guarded (devlint.analysis.guarded_callers: a plain `def` called only
  directly, only from guarded code, in this file and nowhere else in the project);
* in a function or class whose decorators skip it without CUDA: `@pytest.mark.skipif(not cuda, ...)`,
  `@unittest.skipUnless(cuda, ...)`; a marker defined in the file by such a call
  (`skip_if_no_gpu = pytest.mark.skipif(...)`, `cuda_only = unittest.skipIf(...)`) or by a function that
  applies one; a requirement keyword on a decorator call (`@RunIf(min_cuda_gpus=1)`, `min_gpus=2`,
  `cuda=True`); a GPU string argument (`@pytest.mark.run_only_on("GPU")`); or a marker imported from
  elsewhere whose name says so (`@requires_gpu`, `@needs_cuda`, `@gpu_only`, `@pytest.mark.gpu`,
  `@skip_if_no_cuda`, `@skipUnlessCUDA`; not `@skip_if_cuda`, `@cpu_or_gpu`, `@withCUDA`, `@no_gpu`):
  a marker defined in the file is read, never trusted by its name;
* in a `pytest.param(..., marks=...)` whose marks do that, or in a module or class with such a
  `pytestmark`; in a lambda given to another decorator of such a test
  (`@parametrize("map_location", [lambda s, loc: s.cuda()])`), which runs only in the test;
* in a method of a test class whose `setUp`/`setUpClass`/`setup_method` (its own or a base class's in
  the file) skips without CUDA (`if not cuda: self.skipTest(...)`, `raise unittest.SkipTest`,
  `pytest.skip`), the setup method itself excepted (what follows its skip is guarded by the early exit);
* in a `def cuda(self, ...)` override, which runs only when someone calls `.cuda()`;
* anywhere in a test file (one that imports pytest or unittest, or defines `test_*` functions) that
  imports a compiled CUDA-only extension at top level, outside `try`: `import fused_norm_cuda`,
  `from ops import roi_align_cuda_ext`, `amp_C`, or `torch.utils.cpp_extension.load(...)` with `.cu`
  sources or `cuda_sources`. Such a file cannot be imported without CUDA. A library module may import
  such an extension for one code path and serve the CPU on others, so it is not covered;
* under `if A:` in a test skipped by `skipif(A and not cuda)`.

Precision comes first, so the recognition is generous. One exception is proved, never guessed: a
condition devlint.analysis.flags proves constant (`USE_CUDA = True` and nothing else binds it, a
parameter's literal default no call in the project passes, `FusedNorm is None` with `FusedNorm = None`
never re-bound) asks nothing at run time. It guards nothing, whatever its name says, and the branch it
never takes is dead code (nothing in it is flagged, by any rule: devlint.rule.Rule.report).
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.analysis.conditions import NOTHING, Implications, assigned_values, flip
from devlint.analysis.cuda_required import requires_cuda
from devlint.analysis.guarded_callers import every_call_guarded
from devlint.analysis.helper_conditions import call_condition, comparison_condition
from devlint.analysis.flags import flags_of
from devlint.analysis.guard_signs import (
    _EXIT_CALLS,
    _NOT_TESTS,
    FALSE_ONLY,
    TRUE_ONLY,
    _index_comparison,
    _is_count_like,
    _is_cuda_object,
    _is_cuda_type,
    _is_index_like,
    _is_nccl_constant,
    _is_test_call,
    _mentions_string,
    _number,
    _switch_words_polarity,
)
from devlint.analysis.guards_tests import TestingGuards
from devlint.facts import FileFacts
from devlint.syntax import dotted_name, last_component, string_value

# A condition proved constant (devlint.analysis.flags) implies anything where it never holds: an
# always-true flag guards nothing and leaves its `else` unreachable, an always-false one the reverse.
ALWAYS_TRUE, ALWAYS_FALSE = FALSE_ONLY, TRUE_ONLY


def guards_of(facts: FileFacts) -> "CudaGuards":
    """The file's guards (does this code only run with CUDA?), built once per file."""
    return facts.memoised(CudaGuards, CudaGuards)


class CudaGuards(TestingGuards, Implications):
    """Answers `is_guarded(node)` for one file; `implies(condition)` is (truth means CUDA, falsity means CUDA)."""

    def __init__(self, ctx: FileFacts) -> None:
        super().__init__(ctx)
        self._name_polarity: dict[str, tuple[bool, bool]] = {}

    # -- conditions --------------------------------------------------------------------------------
    @cached_property
    def _assigned_conditions(self) -> dict[str, list[cst.BaseExpression]]:
        return assigned_values(self.ctx)

    def _constant(self, expr: cst.BaseExpression) -> tuple[bool, bool] | None:
        truth = flags_of(self.ctx).truth(expr)
        return None if truth is None else ALWAYS_TRUE if truth else ALWAYS_FALSE

    def _operand(self, expr: cst.BaseExpression) -> tuple[bool, bool]:
        """What a compared value says as a switch: a proved constant (`-1`, `THRESHOLD = 0`) is none."""
        return NOTHING if flags_of(self.ctx).truth(expr) is not None else self.implies(expr)

    def _atom(self, expr: cst.BaseExpression) -> tuple[bool, bool]:
        constant = self._constant(expr)
        if constant is not None:
            return constant
        if isinstance(expr, cst.Call):
            name = dotted_name(expr.func) or ""
            if name in {"len", "bool", "any", "all"} and expr.args:
                return self.implies(expr.args[0].value)
            if name.endswith(".startswith") and isinstance(expr.func, cst.Attribute) and expr.args:
                prefix = (string_value(expr.args[0].value) or "").lower()
                return TRUE_ONLY if prefix.startswith(("cuda", "gpu", "torch.cuda")) else (
                    FALSE_ONLY if prefix == "cpu" else NOTHING)
            if name == "isinstance" and len(expr.args) == 2:
                return TRUE_ONLY if _is_cuda_type(expr.args[1].value) else NOTHING
            answered = call_condition(self.ctx, expr, self)  # (`dist.is_initialized()`, a helper's returns)
            if answered != NOTHING:
                return answered
            if name.rsplit(".", 1)[-1] in _NOT_TESTS or not _is_test_call(expr.func):
                # `x.cuda()` moves a tensor, `move_to_cuda(s)` and `t.cuda().fill_(0)` make values:
                # only a call that asks a question (`is_available()`, `device_count()`) tests CUDA
                return NOTHING
            polarity = NOTHING
            for part in name.split("."):
                candidate = _switch_words_polarity(part)
                if candidate != NOTHING:
                    polarity = candidate
            return polarity
        name = dotted_name(expr)
        if name is None:
            return NOTHING
        memo = self._name_polarity
        if name not in memo:
            memo[name] = NOTHING  # a name assigned from itself (directly or not) says nothing more
            memo[name] = self._name_implies(name, expr)
        return memo[name]

    def _name_implies(self, name: str, expr: cst.BaseExpression) -> tuple[bool, bool]:
        values = self._assigned_conditions.get(name, ())
        for value in values:
            # a proved constant among several values says nothing of the others (`ok = USE_CUDA`
            # here, `ok = torch.cuda.is_available()` there): only the run-time ones guard
            if value is not expr and flags_of(self.ctx).truth(value) is None:
                polarity = self.implies(value)
                if polarity != NOTHING:
                    return polarity
        if self._holds_only_cuda_objects(name, values):
            return TRUE_ONLY
        component = last_component(expr)
        return _switch_words_polarity(component) if component else NOTHING

    def _holds_only_cuda_objects(self, name: str, values) -> bool:
        """`self.stream = None` ... `self.stream = torch.cuda.Stream()`: every value the file gives the
        name is None or a CUDA-only object, so `if self.stream is not None:` means CUDA. A plain name
        bound any other way (a parameter, a loop) can hold anything."""
        if not values or not any(_is_cuda_object(v) for v in values):
            return False
        if not all(_is_cuda_object(v) or (isinstance(v, cst.Name) and v.value == "None") for v in values):
            return False
        if "." not in name:
            return len(self.ctx.binding_sites.get(name, ())) == len(values)
        return True

    def _comparison(self, expr: cst.Comparison) -> tuple[bool, bool]:
        constant = self._constant(expr)
        if constant is not None:
            return constant
        answered = comparison_condition(self.ctx, expr, self)  # (`get_world_size() == 1` in an NCCL-only project)
        if answered != NOTHING:
            return answered
        target = expr.comparisons[0]
        left, op, right = expr.left, target.operator, target.comparator
        positive = isinstance(op, (cst.Equal, cst.Is, cst.In))
        negative = isinstance(op, (cst.NotEqual, cst.IsNot, cst.NotIn))
        if _is_cuda_type(left) or _is_cuda_type(right):  # `type(x) == torch.cuda.FloatTensor`
            return TRUE_ONLY if positive else FALSE_ONLY if negative else NOTHING
        # `x.type() == "torch.cuda.HalfTensor"`: the type names of CUDA tensors
        for prefix, result in ((("cuda", "torch.cuda."), TRUE_ONLY), ("gpu", TRUE_ONLY), ("nccl", TRUE_ONLY),
                               ("cpu", FALSE_ONLY)):
            if _mentions_string(left, prefix) or _mentions_string(right, prefix) or (
                prefix == "nccl" and (_is_nccl_constant(left) or _is_nccl_constant(right))
            ):
                if positive:
                    return result
                if negative:
                    return flip(result)
                return NOTHING
        switch, other = left, right
        polarity = self._operand(left)
        if polarity == NOTHING:
            switch, other, polarity = right, left, self._operand(right)
        if polarity == NOTHING:
            return self._index_test(left, op, right)
        if other is left:  # `0 < n_gpu`: mirror the operator so that the switch is on the left
            op = {cst.LessThan: cst.GreaterThan(), cst.GreaterThan: cst.LessThan(),
                  cst.LessThanEqual: cst.GreaterThanEqual(), cst.GreaterThanEqual: cst.LessThanEqual()}.get(type(op), op)
        if isinstance(other, cst.Name) and other.value in {"None", "False"}:
            return flip(polarity) if positive else polarity if negative else NOTHING
        if isinstance(other, cst.Name) and other.value == "True":
            return polarity if positive else flip(polarity) if negative else NOTHING
        number = _number(other)
        if number is None:
            # `batch == global_batch_per_gpu` compares sizes; only a literal says something about CUDA
            return NOTHING
        means_gpu = {
            cst.GreaterThan: True,
            cst.GreaterThanEqual: number >= 0,
            # `device_count() < 2` is false only with two GPUs or more: its falsity means CUDA
            cst.LessThan: False if number >= 1 else None,
            cst.LessThanEqual: False if number >= 0 else None,
            cst.NotEqual: True if number <= 0 else None,
            cst.Equal: number > 0 or (number == 0 and not _is_count_like(switch)),
        }.get(type(op))
        if means_gpu is None:
            return NOTHING
        return polarity if means_gpu else flip(polarity)

    def _index_test(self, left, op, right) -> tuple[bool, bool]:
        """`device >= 0`, `args.device_id != -1`, `0 <= gpu_idx`, `x.get_device() > -1`."""
        number = _number(right)
        if number is not None and _is_index_like(left):
            return _index_comparison(op, number)
        number = _number(left)
        if number is not None and _is_index_like(right):
            mirrored = {cst.LessThan: cst.GreaterThan(), cst.GreaterThan: cst.LessThan(),
                        cst.LessThanEqual: cst.GreaterThanEqual(), cst.GreaterThanEqual: cst.LessThanEqual()}
            return _index_comparison(mirrored.get(type(op), op), number)
        return NOTHING

    # -- placement ---------------------------------------------------------------------------------
    def is_guarded(self, node: cst.CSTNode) -> bool:
        return self._holds_at(node, self._guards_child)

    def _guards_child(self, parent: cst.CSTNode, child: cst.CSTNode) -> bool:
        if isinstance(parent, (cst.If, cst.IfExp)):
            if child is parent.body:
                return self.implies(parent.test)[0] or self._skip_premise(parent)
            if child is parent.orelse:
                return self.implies(parent.test)[1]
            return False
        if isinstance(parent, cst.While):
            return child is parent.body and self.implies(parent.test)[0]
        if isinstance(parent, cst.For):
            return child is parent.body and self._counts_gpus(parent.iter)
        if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            if child is not parent.for_in:
                loop = parent.for_in
                while loop is not None:
                    if self._counts_gpus(loop.iter):
                        return True
                    loop = loop.inner_for_in
            return False
        if isinstance(parent, cst.Lambda) and child is parent.body:
            return self._lambda_in_guarded_decorator(parent)
        if isinstance(parent, cst.BooleanOperation) and child is parent.right:
            polarity = self.implies(parent.left)
            return polarity[0] if isinstance(parent.operator, cst.And) else polarity[1]
        if isinstance(parent, (cst.IndentedBlock, cst.Module)):
            return self._guarded_by_earlier_statement(parent.body, child) or (
                isinstance(parent, cst.Module) and (self._module_has_pytestmark or self._tests_cuda_extension)
            )
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            if child is not parent.body:
                return False
            if isinstance(parent.body, cst.IndentedBlock):
                if isinstance(parent, cst.ClassDef) and self._has_pytestmark(parent.body.body):
                    return True
            if isinstance(parent, cst.FunctionDef) and self._method_needs_cuda(parent):
                return True
            if any(self._decorator_guards(d.decorator) for d in parent.decorators):
                return True
            return isinstance(parent, cst.FunctionDef) and every_call_guarded(
                self.ctx, parent, self.is_guarded, guards_of)
        if isinstance(parent, cst.Call) and isinstance(child, cst.Arg) and child.keyword is None:
            return self._param_with_guarding_marks(parent)
        return False

    def _counts_gpus(self, iterable: cst.BaseExpression) -> bool:
        """`range(torch.cuda.device_count())`, `range(1, args.n_gpu)`: a loop that runs only with a GPU."""
        if not (isinstance(iterable, cst.Call) and dotted_name(iterable.func) == "range"):
            return False
        args = [a for a in iterable.args if a.keyword is None and not a.star]
        if len(args) == 2 and (_number(args[0].value) or 0) < 0 or not 1 <= len(args) <= 2:
            return False
        count = args[-1].value
        return _is_count_like(count) and self.implies(count)[0]

    def _guarded_by_earlier_statement(self, body, child: cst.CSTNode) -> bool:
        for statement in body:
            if statement is child:
                return False
            if isinstance(statement, cst.If) and statement.orelse is None and self._always_exits(statement.body):
                if self.implies(statement.test)[1]:
                    return True
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assert) and self.implies(small.test)[0]:
                        return True
                    if requires_cuda(self.ctx, small, guards_of):  # `setup()` that exits without CUDA
                        return True
        return False

    def _always_exits(self, block: cst.BaseSuite) -> bool:
        statements = list(block.body)
        if not statements:
            return False
        last = statements[-1]
        if isinstance(last, cst.SimpleStatementLine):
            last = last.body[-1]
        if isinstance(last, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
            return True
        if isinstance(last, cst.Expr) and isinstance(last.value, cst.Call):
            name = dotted_name(last.value.func) or ""
            return name.rsplit(".", 1)[-1] in _EXIT_CALLS
        return False

