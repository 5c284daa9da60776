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
* a name assigned from such a test anywhere in the file (`ok = torch.cuda.is_available()`); a name
  assigned a value computed with CUDA (`lab = torch.ones(1).cuda().fill_(v)`) is no test, but a name
  that only ever holds None or a CUDA-only object (`self.stream = torch.cuda.Stream()`, `y = x.cuda()`;
  a plain name bound no other way, not a parameter) is CUDA when it is not None.

`not`, `is None`, `== 0` on counts and `< N` invert a condition (`device_count() < 2` is false only
with CUDA); `and`/`or` combine them.

Code is *guarded* when it sits

* in the true branch of a condition that implies CUDA (`if`, conditional expression, later operand
  of `and`, `while`), in the false branch of one whose falsity implies CUDA (`else` of `if not cuda`,
  later operand of `or`), after an early exit (`if not cuda: return`, `assert cuda`), in the body of a
  loop over the GPUs (`for i in range(torch.cuda.device_count())`, `[... for i in range(args.n_gpu)]`);
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

Precision comes first, so the recognition is generous.
"""

from __future__ import annotations

from functools import cached_property, lru_cache

import libcst as cst

from devlint.facts import FileFacts
from devlint.analysis.conditions import NOTHING, Implications, assigned_values, flip
from devlint.syntax import calls_in, dotted_name, last_component, name_words, string_value

TRUE_ONLY = (True, False)  # (true implies CUDA, false implies CUDA)
FALSE_ONLY = (False, True)

_NEGATIONS = {"no", "not", "disable", "disabled", "without", "skip", "dont", "never"}
_COUNT_WORDS = {"n", "num", "count", "number", "ngpu", "ngpus", "gpus", "nb"}
_NOT_TESTS = {"cuda", "to", "cpu", "half", "float", "type", "set_device", "synchronize", "device"}
_EXIT_CALLS = {"exit", "quit", "_exit", "skip", "skipTest", "fail", "exit_with_error"}


@lru_cache(maxsize=4096)
def _switch_words_polarity(identifier: str) -> tuple[bool, bool]:
    words = name_words(identifier)
    cuda = any("cuda" in w or "gpu" in w for w in words)
    negated = any(w in _NEGATIONS for w in words) or any(
        w.startswith("no") and ("cuda" in w or "gpu" in w) for w in words
    )
    if cuda:
        return FALSE_ONLY if negated else TRUE_ONLY
    if any(w.startswith("cpu") for w in words):
        return TRUE_ONLY if negated else FALSE_ONLY
    return NOTHING


_QUESTION_FIRST_WORDS = {"is", "has", "have", "can", "use", "using", "should", "supports", "check", "on"}
_QUESTION_WORDS = {"available", "avail", "enabled", "supported", "count", "num", "ngpu", "ngpus", "gpus", "ok",
                   "devices", "ids", "visible",
                   "present", "exists", "usable"}


def _is_plain_dotted(node: cst.BaseExpression) -> bool:
    """`a.b.c`: names and attributes only (no call, subscript or literal in the chain)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _is_test_call(func: cst.BaseExpression) -> bool:
    """Is `func(...)` a question whose answer can be about CUDA (`torch.cuda.is_available()`,
    `has_gpu()`, `utils.cuda_enabled()`, `get_num_gpus()`), not a call that makes a value?"""
    if not _is_plain_dotted(func):
        return False
    words = name_words(last_component(func) or "")
    if not words:
        return False
    return words[0] in _QUESTION_FIRST_WORDS and len(words) > 1 or bool(set(words) & _QUESTION_WORDS) or (
        len(words) == 1 and any("cuda" in w or "gpu" in w for w in words)  # `cuda()`/`gpu()` as a flag
        and isinstance(func, cst.Name)
    )


def _is_cuda_object(node: cst.BaseExpression) -> bool:
    """A value that exists only with CUDA: `x.cuda()`, `torch.cuda.Stream()`, `torch.cuda.Event(...)`
    (not `torch.cuda.amp.GradScaler()`, which is built, disabled, without CUDA)."""
    if not isinstance(node, cst.Call):
        return False
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
        return True
    if not _is_plain_dotted(node.func):
        return False
    parts = (dotted_name(node.func) or "").split(".")
    return len(parts) >= 2 and parts[-2] == "cuda" and parts[-1][:1].isupper()


def _is_cuda_type(node: cst.BaseExpression) -> bool:
    """`torch.cuda.FloatTensor` (any `torch.cuda.*Tensor`), or a tuple of nothing but such types."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return bool(node.elements) and all(_is_cuda_type(e.value) for e in node.elements)
    name = dotted_name(node) or ""
    parts = name.split(".")
    return len(parts) >= 2 and parts[-2] == "cuda" and parts[-1].endswith("Tensor")


_INDEX_TAILS = {"id", "idx", "index", "ordinal", "no"}


def _is_index_like(node: cst.BaseExpression) -> bool:
    """A CUDA device index by convention (-1, or a negative, for the CPU): a name whose last words
    are `device` or `device_id`/`device_idx`/`device_index` (`args.device`, `self.device_id`,
    `output_device`), or `x.get_device()`. `idx`, `rank`, `num_devices` are not."""
    if isinstance(node, cst.Call):
        return not node.args and (last_component(node.func) or "") == "get_device" and isinstance(
            node.func, cst.Attribute)
    component = last_component(node)
    if component is None:
        return False
    words = name_words(component)
    if not words or set(words) & _COUNT_WORDS:
        return False
    if words[-1] in {"device", "gpu", "cuda"}:
        return True
    return len(words) >= 2 and words[-1] in _INDEX_TAILS and words[-2] in {"device", "gpu", "cuda"}


def _index_comparison(op: cst.BaseCompOp, number: int) -> tuple[bool, bool]:
    """`index OP number` with `index` on the left, where an index of -1 (any negative) means the CPU."""
    means_gpu = {
        cst.GreaterThanEqual: True if number >= 0 else None,
        cst.GreaterThan: True if number >= -1 else None,
        cst.NotEqual: True if number < 0 else None,
        cst.Equal: number >= 0,
        cst.LessThan: False if number <= 0 else None,
        cst.LessThanEqual: False if number < 0 else None,
    }.get(type(op))
    if means_gpu is None:
        return NOTHING
    return TRUE_ONLY if means_gpu else FALSE_ONLY


def _is_count_like(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Call):
        name = dotted_name(node.func) or ""
        if name.endswith("device_count") or name == "len":
            return True
        node = node.func
    component = last_component(node) or ""
    words = set(name_words(component))
    return bool(words & _COUNT_WORDS) or component.endswith(("count", "gpus"))


def _number(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _number(node.expression)
        return -inner if inner is not None else None
    return None


def _mentions_string(node: cst.CSTNode, prefix: str) -> bool:
    """Is there a string literal starting with `prefix` in `node` (e.g. `torch.device("cuda:0")`)?"""
    value = string_value(node)
    if value is not None:
        return value.lower().startswith(prefix)
    if isinstance(node, (cst.Call, cst.Tuple, cst.List, cst.Set)):
        children = [a.value for a in node.args] if isinstance(node, cst.Call) else [e.value for e in node.elements]
        return any(_mentions_string(child, prefix) for child in children)
    return False


def _and_operands(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a and b and c` -> [a, b, c]; anything else -> [node]."""
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        return _and_operands(node.left) + _and_operands(node.right)
    return [node]


def _skip_condition(decorator: cst.BaseExpression) -> tuple[str, cst.BaseExpression | None]:
    """("skipif" or "skipunless", its condition) for `@pytest.mark.skipif(c, ...)`,
    `@unittest.skipIf(condition=c)` and the like; ("", None) for any other decorator."""
    if not isinstance(decorator, cst.Call) or not decorator.args:
        return "", None
    kind = (dotted_name(decorator.func) or "").rsplit(".", 1)[-1].lower()
    if kind not in {"skipif", "skipunless"}:
        return "", None
    condition = decorator.args[0].value
    for arg in decorator.args:
        if arg.keyword is not None and arg.keyword.value == "condition":
            condition = arg.value
    return kind, condition


_SETUP_METHODS = {"setUp", "setUpClass", "setup_method", "setup_class", "asyncSetUp"}
_SKIP_NEGATIONS = {"no", "not", "without", "unless", "missing", "unavailable", "absent"}
_BOTH_WORDS = {"cpu", "with", "or", "and", "both", "all", "any", "each", "every", "parametrize", "param"}
_COMPILED_NAMES = {"amp_c"}  # apex's multi-tensor CUDA kernels
# `common_cuda`, `test_cuda`, `skip_if_no_cuda`: helpers that say whether CUDA is there, not kernels
_HELPER_WORDS = {"common", "test", "tests", "testing", "util", "utils", "helper", "helpers", "check", "is", "has",
                 "to", "use", "with", "no", "not", "skip", "if", "only", "available", "device", "devices",
                 "needs", "need", "requires", "require", "move", "run", "on", "for", "in", "when", "unless",
                 "get", "load", "build", "make", "init", "set", "enable", "enabled", "gpu"}
_EXTENSION_WORDS = {"ext", "extension", "kernel", "kernels", "ops", "op", "lib", "c", "cpp", "impl", "backend"}


def _marker_name_requires_cuda(name: str) -> bool:
    """Does a marker's name say that what it decorates runs only with CUDA?

    `requires_gpu`, `needs_cuda`, `gpu_only`, `onlyCUDA`, `pytest.mark.gpu`, `skip_if_no_gpu`,
    `skipUnlessCuda` do; `skip_if_cuda`, `cpu_or_gpu`, `withCUDA` (both devices), `no_cuda` do not.
    """
    for part in name.split("."):
        words = name_words(part)
        if not any("cuda" in w or "gpu" in w for w in words) or set(words) & _BOTH_WORDS:
            continue
        if "skip" in words:
            rest = [w for w in words if w != "skip"]
            if set(rest) & _SKIP_NEGATIONS or any(w.startswith("no") and ("cuda" in w or "gpu" in w) for w in rest):
                return True
            continue
        if _switch_words_polarity(part) == TRUE_ONLY:
            return True
    return False


def _requires_cuda_keyword(arg: cst.Arg) -> bool:
    """`min_cuda_gpus=1`, `min_gpus=2`, `cuda=True`, `requires_gpu=True` on a decorator call."""
    if arg.keyword is None or _switch_words_polarity(arg.keyword.value) != TRUE_ONLY:
        return False
    value = arg.value
    if isinstance(value, cst.Name):
        return value.value == "True"
    number = _number(value)
    return number is not None and number > 0


def _is_mark(node: cst.BaseExpression) -> bool:
    """`pytest.mark.gpu`, `pytest.mark.cuda(...)`: a pytest marker object."""
    name = dotted_name(node.func if isinstance(node, cst.Call) else node) or ""
    return ".mark." in f".{name}" or name.startswith("mark.")


def _strings_in(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.SimpleString, cst.ConcatenatedString)):
            yield current
        else:
            stack.extend(current.children)


def _ends_in_skip(block: cst.BaseSuite) -> bool:
    """The block ends by skipping the test: `self.skipTest(...)`, `pytest.skip(...)`,
    `raise unittest.SkipTest(...)`."""
    statements = list(block.body)
    if not statements or not isinstance(statements[-1], cst.SimpleStatementLine):
        return False
    last = statements[-1].body[-1]
    if isinstance(last, cst.Raise) and last.exc is not None:
        exc = last.exc.func if isinstance(last.exc, cst.Call) else last.exc
        return "skip" in (last_component(exc) or "").lower()
    if isinstance(last, cst.Expr) and isinstance(last.value, cst.Call):
        return (last_component(last.value.func) or "") in {"skip", "skipTest"}
    return False


def _is_cuda_extension(module: str) -> bool:
    """A compiled CUDA-only extension, by the names projects give them: `fused_layer_norm_cuda`,
    `deform_conv_cuda`, `cuda_ext`, `selective_scan_cuda_ext`, `amp_C`. Not `torch.cuda`,
    `numba.cuda`, `cuda_utils`: a plain `cuda` namespace or a helper module."""
    parts = module.split(".")
    if parts[0] in {"torch", "numba", "cupy", "jax", "tensorflow", "pycuda", "cuda", "triton", "apex"} and len(parts) > 1:
        return parts[-1].lower() in _COMPILED_NAMES
    last = parts[-1]
    if last.lower() in _COMPILED_NAMES:
        return True
    words = name_words(last)
    if len(words) < 2 or "cuda" not in words or set(words) & _HELPER_WORDS:
        return False
    return words[-1] == "cuda" or words[-1] in _EXTENSION_WORDS


def _is_nccl_constant(node: cst.CSTNode) -> bool:
    """`dist.Backend.NCCL`: the NCCL process-group backend, which only runs on CUDA."""
    return (dotted_name(node) or "").endswith("Backend.NCCL")


def guards_of(facts: FileFacts) -> "CudaGuards":
    """The file's guards (does this code only run with CUDA?), built once per file."""
    return facts.memoised(CudaGuards, CudaGuards)


class CudaGuards(Implications):
    """Answers `is_guarded(node)` for one file; `implies(condition)` is (truth means CUDA, falsity means CUDA)."""

    def __init__(self, ctx: FileFacts) -> None:
        super().__init__(ctx)
        self._name_polarity: dict[str, tuple[bool, bool]] = {}

    # -- conditions --------------------------------------------------------------------------------
    @cached_property
    def _assigned_conditions(self) -> dict[str, list[cst.BaseExpression]]:
        return assigned_values(self.ctx)

    def _atom(self, expr: cst.BaseExpression) -> tuple[bool, bool]:
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
            if value is not expr:
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
        polarity = self.implies(left)
        if polarity == NOTHING:
            switch, other, polarity = right, left, self.implies(right)
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
            return any(self._decorator_guards(d.decorator) for d in parent.decorators)
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
