"""What says CUDA in a name or an expression, for the guards (devlint.analysis.guards): a switch's
words (`use_gpu`, `no_cuda`), a question call (`has_cuda()`), CUDA tensor types and CUDA-only objects,
device indices and GPU counts, skip decorators' conditions and markers' names (`@requires_gpu`), and
compiled CUDA-only extensions (`import fused_adam_cuda`)."""
from __future__ import annotations

from functools import lru_cache

import libcst as cst

from devlint.analysis.conditions import NOTHING
from devlint.syntax import dotted_name, last_component, name_words, string_value

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
