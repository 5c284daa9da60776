"""Calls that are CUDA conditions by what the function called returns, not by its name.

devlint.analysis.guards reads a call as a CUDA test by its name (`torch.cuda.is_available()`,
`has_gpu()`). Two more are read by what they answer:

- `torch.distributed.is_initialized()`, where every process group the project starts is an NCCL one
  (devlint.analysis.process_group): the group exists only with a GPU;
- a call `name()` of a plain `def` of this file (at its top level, bound by nothing else, no decorator,
  not `async`, no `yield`, no parameter passed) that answers a yes/no question: its every `return`
  gives `False`, `None` or nothing, or a test (`True`, a `not`, a comparison, `and`/`or` of tests or
  of `is_...()`/`has_...()` calls) whose truth means CUDA or that comes where CUDA is certain (after
  `if not dist.is_initialized(): return False`): a true answer then means CUDA. A helper that
  returns a number (`get_rank()`: 0 without a group, the rank with one) is no such question:
  guards read `get_rank() == 0` as a device index.

    def is_dist_avail_and_initialized():
        if not dist.is_available():
            return False
        if not dist.is_initialized():
            return False
        return True
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.cuda_required import _own_function, _yields
from devlint.analysis.process_group import nccl_only
from devlint.syntax import dotted_name

NOTHING, TRUE_ONLY = (False, False), (True, False)
INITIALISED = frozenset({"torch.distributed.is_initialized", "torch.distributed.distributed_c10d.is_initialized"})


def call_condition(ctx, call: cst.Call, guards) -> tuple[bool, bool]:
    """(truth means CUDA, falsity means CUDA) for `call`, by the rules above; `guards` is the file's
    devlint.analysis.guards.CudaGuards (passed in: it asks this module)."""
    func = call.func
    if ctx.qualified_names(func) & INITIALISED:
        return TRUE_ONLY if not call.args and nccl_only(ctx) else NOTHING
    if not isinstance(func, cst.Name) or func.value in ctx.imported_names or call.args:
        return NOTHING
    function = _own_function(ctx, func.value)
    if function is None or function.decorators or function.asynchronous or _yields(function):
        return NOTHING
    memo = ctx.memo.setdefault("helper_conditions", {})
    if function not in memo:
        memo[function] = False  # (a helper that asks itself proves nothing)
        memo[function] = _true_only_with_cuda(function, guards)
    return TRUE_ONLY if memo[function] else NOTHING


def _true_only_with_cuda(function: cst.FunctionDef, guards) -> bool:
    returns = list(_returns(function.body))
    return bool(returns) and all(
        r.value is None or _false(r.value) or _test(r.value) and (guards.implies(r.value)[0] or guards.is_guarded(r))
        for r in returns)


def _returns(node: cst.CSTNode):
    for child in node.children:
        if isinstance(child, cst.Return):
            yield child
        elif not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            yield from _returns(child)


def _false(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value in {"False", "None"}


def _test(value: cst.BaseExpression) -> bool:
    """Does `value` answer yes or no (not a number or an object whose truth means something else)?"""
    if isinstance(value, cst.Name):
        return value.value in {"True", "False", "None"}
    if isinstance(value, cst.UnaryOperation):
        return isinstance(value.operator, cst.Not)
    if isinstance(value, cst.Comparison):
        return True
    if isinstance(value, cst.BooleanOperation):
        return _test(value.left) and _test(value.right)
    if isinstance(value, cst.Call):
        name = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
        return name.startswith(("is_", "has_"))
    return False
