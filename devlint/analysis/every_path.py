"""A device bound on every path before a fix site, and proven the run's device on each (issue 23).

`_device._reuse` reuses a binding that certainly ran (an earlier statement of a block that holds the
use). This adds the compound statements that bind the name on every path that reaches their end:

- `if`/`elif`/`else` whose every branch binds it (a branch that cannot fall through, ending in
  `raise`, `return`, `continue` or `break`, binds it vacuously);
- `try` whose body (or `else:`) binds it and whose every handler does, or whose `finally:` does;
- `with` whose body does (not `contextlib.suppress(...)`, which may swallow the error that skipped it).

Loops never count (they may run zero times), nor `match`.

Each binding must still be the run's device (issue 29): `branch_run_device` adds, to what
`_derived.run_device_value` proves alone, a binding on a side of `if torch.cuda.is_available():`
(through `not`, or a name bound only to that call) that is what the conditional expression
`torch.device("cuda" if torch.cuda.is_available() else "cpu")` would give there: `torch.device("cuda")`
(or another proven run's device) on the CUDA side, a device other than CUDA (`torch.device("cpu")`,
`torch.device("mps")`) on the other. Any other condition (`if args.cpu:`) proves nothing: the CPU may
be chosen on a GPU machine.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts, target_names
from devlint.syntax import dotted_name

_TERMINAL = (cst.Return, cst.Raise, cst.Continue, cst.Break)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)


def bound_on_every_path(ctx: FileFacts, use: cst.CSTNode, assignments) -> bool:
    """Does a statement that runs before `use` (an earlier one of a block that holds it) bind the name
    on every path through it, by one of `assignments` (the bindings the use's scope sees)?"""
    targets = {id(a.node) for a in assignments}
    if not targets:
        return False
    child = use
    for ancestor in ctx.ancestors(use):
        if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
            body = list(ancestor.body)
            index = next((i for i, item in enumerate(body) if item is child), -1)
            if any(_binds(statement, targets) for statement in body[:max(index, 0)]):
                return True
        child = ancestor
    return False


def _binds(statement: cst.CSTNode, targets: set[int]) -> bool:
    """Is the name bound (by one of `targets`) whenever `statement` completes normally?"""
    if isinstance(statement, cst.SimpleStatementLine):
        return any(_small_binds(small, targets) or isinstance(small, _TERMINAL) for small in statement.body)
    if isinstance(statement, cst.If):
        return _block_binds(statement.body, targets) and statement.orelse is not None and (
            _binds(statement.orelse, targets) if isinstance(statement.orelse, cst.If)
            else _block_binds(statement.orelse.body, targets))
    if isinstance(statement, (cst.Try, cst.TryStar)):
        if statement.finalbody is not None and _block_binds(statement.finalbody.body, targets):
            return True
        completes = _block_binds(statement.body, targets) or (
            statement.orelse is not None and _block_binds(statement.orelse.body, targets))
        return completes and all(_block_binds(h.body, targets) for h in statement.handlers)
    if isinstance(statement, cst.With):
        suppressing = any((dotted_name(item.item.func) or "").endswith("suppress")
                          for item in statement.items if isinstance(item.item, cst.Call))
        return not suppressing and _block_binds(statement.body, targets)
    return False


def _block_binds(block: cst.BaseSuite, targets: set[int]) -> bool:
    if isinstance(block, cst.SimpleStatementSuite):  # `if c: device = ...` on one line
        return any(_small_binds(small, targets) or isinstance(small, _TERMINAL) for small in block.body)
    return any(_binds(statement, targets) for statement in block.body)


def _small_binds(small: cst.BaseSmallStatement, targets: set[int]) -> bool:
    if isinstance(small, cst.Assign):
        return any(id(n) in targets for t in small.targets for n in target_names(t.target))
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return any(id(n) in targets for n in target_names(small.target))
    return False


def branch_run_device(ctx: FileFacts, node: cst.CSTNode, value: cst.BaseExpression) -> bool:
    """Is `value`, bound at `node`, the run's device because of the `if torch.cuda.is_available():`
    side it is on (the CUDA device on the CUDA side, a device other than CUDA on the other)?"""
    from devlint.analysis.derived import (_AVAILABLE, _branches, _cuda_literal, _is_availability_test, _not_cuda,
                                        run_device_value)

    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, _SCOPES):
            return False
        if isinstance(ancestor, cst.If) and (child is ancestor.body or child is ancestor.orelse):
            test, cuda_side, other_side = _branches(ancestor.test, ancestor.body, ancestor.orelse)
            if _is_availability_test(ctx, test, _AVAILABLE):
                if child is cuda_side:
                    return _cuda_literal(ctx, value) or run_device_value(ctx, value)
                return other_side is not None and _not_cuda(ctx, value)
        child = ancestor
    return False


def branch_may_be_run_device(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """For an unsafe fix (`_derived.may_be_run_device`, looser): a device bound on one branch of an
    `if` whose other branch binds the same name to what may be the run's device, as the conditional
    expression `torch.device("cpu") if args.cpu else torch.device("cuda")` may be."""
    from devlint.analysis.derived import holds_a_device, may_be_run_device

    if not isinstance(node, cst.Name) or not holds_a_device(ctx, node):
        return False
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, _SCOPES):
            return False
        if isinstance(ancestor, cst.If) and (child is ancestor.body or child is ancestor.orelse):
            other = ancestor.orelse if child is ancestor.body else ancestor.body
            others = [n for n in (_names(other) if other is not None else ())
                      if n.value == node.value and isinstance(ctx.parent(n), cst.AssignTarget)
                      and may_be_run_device(ctx, n)]
            values = [ctx.assigned_value(n) for n in [node, *others]]
            return bool(others) and _literals_allow_the_gpu(values)
        child = ancestor
    return False


def _literals_allow_the_gpu(values) -> bool:
    """As `_derived` judges `a if c else b`: the device literals of both branches together must name the
    GPU `.cuda()` used (`"cuda"`, `"cuda:0"`) if they name any, and never another GPU."""
    from devlint.analysis.derived import _CUDA_LITERALS, _strings
    from devlint.syntax import string_value

    literals = [t.strip().lower() for v in values if v is not None
                for t in (string_value(s) for s in _strings(v)) if t is not None]
    if any(t.startswith("cuda") and t not in _CUDA_LITERALS for t in literals):
        return False
    return not literals or any(t in _CUDA_LITERALS for t in literals)


def _names(root: cst.CSTNode):
    from devlint.syntax import descendants

    return (n for n in descendants(root) if isinstance(n, cst.Name))
