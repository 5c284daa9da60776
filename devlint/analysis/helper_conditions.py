"""Calls that are CUDA conditions by what the function called returns, not by its name.

devlint.analysis.guards reads a call as a CUDA test by its name (`torch.cuda.is_available()`,
`has_gpu()`). Two more are read by what they answer:

- `torch.distributed.is_initialized()`, where every process group the project starts is an NCCL one
  (devlint.analysis.process_group): the group exists only with a GPU;
- a call `name()` of a plain `def` of this file (at its top level, bound by nothing else, no decorator,
  not `async`, no `yield`) whose every `return` gives a falsy literal (`False`, `None`, `0`, `""`, or
  nothing), a value whose truth means CUDA, or any value where CUDA is certain (after
  `if not dist.is_initialized(): return False`): a true result then means CUDA.

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
        r.value is None or _falsy(r.value) or guards.implies(r.value)[0] or guards.is_guarded(r) for r in returns)


def _returns(node: cst.CSTNode):
    for child in node.children:
        if isinstance(child, cst.Return):
            yield child
        elif not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            yield from _returns(child)


def _falsy(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Name):
        return value.value in {"False", "None"}
    if isinstance(value, cst.Integer):
        return value.evaluated_value == 0
    if isinstance(value, cst.SimpleString):
        return value.evaluated_value in ("", b"")
    return False
