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

A comparison with a literal of such a helper's number is one too, in an NCCL-only project: a helper
whose every `return` gives one literal where CUDA is not certain (`get_world_size()`: `return 1` after
`if not is_dist_avail_and_initialized()`, and `return dist.get_world_size()` after it, where the group,
hence CUDA, is certain) has that value on a machine without CUDA, so the answer the comparison gives
for it says nothing and the other answer means CUDA: after `if get_world_size() == 1: return`, or
`world_size = get_world_size()` (the name's one binding, in a function: a module's name may be set by
other files) then `if world_size < 2: return`, the code runs only with a group.

    def get_world_size():
        if not is_dist_avail_and_initialized():
            return 1
        return dist.get_world_size()
"""

from __future__ import annotations

import operator

import libcst as cst

from devlint.analysis.cuda_required import _own_function, _yields
from devlint.analysis.process_group import nccl_only
from devlint.syntax import dotted_name

NOTHING, TRUE_ONLY, FALSE_ONLY = (False, False), (True, False), (False, True)
_OPERATORS = {cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
              cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge}
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


def comparison_condition(ctx, comparison: cst.Comparison, guards) -> tuple[bool, bool]:
    """(truth means CUDA, falsity means CUDA) for `helper() <op> literal` by the rule above."""
    if len(comparison.comparisons) != 1:
        return NOTHING
    apply = _OPERATORS.get(type(comparison.comparisons[0].operator))
    number = _integer(comparison.comparisons[0].comparator)
    if apply is None or number is None or not nccl_only(ctx):
        return NOTHING  # (asked first: a name's bindings cost the file's scopes)
    value = _value_without_cuda(ctx, _helper_call(ctx, comparison.left), guards)
    if value is None:
        return NOTHING
    return FALSE_ONLY if apply(value, number) else TRUE_ONLY


def _helper_call(ctx, expr: cst.BaseExpression) -> cst.Call | None:
    if isinstance(expr, cst.Name):
        bindings = ctx.bindings(expr)
        if len(bindings) != 1 or ctx.enclosing(bindings[0].node, (cst.FunctionDef,)) is None:
            return None
        expr = ctx.assigned_value(bindings[0].node)
    return expr if isinstance(expr, cst.Call) else None


def _value_without_cuda(ctx, call: cst.Call | None, guards) -> int | None:
    """The one literal the helper `call` calls returns where CUDA is not certain, or None."""
    if call is None or not isinstance(call.func, cst.Name) or call.func.value in ctx.imported_names or call.args:
        return None
    function = _own_function(ctx, call.func.value)
    if function is None or function.decorators or function.asynchronous or _yields(function):
        return None
    body = function.body.body
    last = body[-1].body[-1] if body and isinstance(body[-1], cst.SimpleStatementLine) else None
    if not isinstance(last, cst.Return):
        return None  # (it may end without a return: None)
    memo = ctx.memo.setdefault("helper_values", {})
    if function not in memo:
        memo[function] = None  # (a helper that asks itself proves nothing)
        values = {_integer(r.value) if r.value is not None else None for r in _returns(function.body)
                  if not guards.is_guarded(r)}
        memo[function] = values.pop() if len(values) == 1 and None not in values else None
    return memo[function]


def _integer(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer):
        return -int(expr.expression.value)
    return None
