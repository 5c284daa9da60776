"""Is the configured device name already a bound device where a fix writes it (`_reuse`)? And the
scope facts that answer it: `global`/`nonlocal` declarations after the use, a `del` in reach, whether a
binding certainly ran before the use (`_dominates`), whether any binding may be visible at all without
LibCST's scope analysis (`_may_be_visible`). Part of the device source (devlint.analysis.device)."""
from __future__ import annotations

import libcst as cst

from devlint.analysis.every_path import bound_on_every_path, branch_may_be_run_device, branch_run_device
from devlint.analysis.flow import _declared_later, _deleted, _dominates
from devlint.facts import FileFacts

# What `_reuse` says besides a reference or None (visible, but not certainly a bound device):
_UNBOUND = "unbound"  # nothing binds the name where the fix writes it


_MODULE_MAYBE = "module-maybe"  # only module-level device assignments that may not have run there


def _reuse(ctx: FileFacts, node: cst.CSTNode, name: str, loose: bool = False):
    """(name, False) when `name` is certainly a bound device at `node`, else None, _UNBOUND or _MODULE_MAYBE.
    `loose`: a binding that may be the run's device counts (`unproven_reference`). Module-level bindings
    that may not have run (`_MODULE_MAYBE`) need only hold a device: the definition the fixer then
    writes is the run's device (what a later module-level rebinding does is the placement's concern)."""
    if not ctx.binds(name) or not _may_be_visible(ctx, node, name):
        return _UNBOUND  # nothing binds it in reach
    if _declared_later(ctx, node, name):
        return None
    scope = ctx.scope(node)
    if scope is None:
        return None
    if name not in scope:
        return _UNBOUND
    assignments = ctx.bindings(node, name)
    if not assignments:
        return _UNBOUND  # a builtin
    from devlint.analysis.derived import holds_a_device, may_be_run_device

    if not all(holds_a_device(ctx, a.node) for a in assignments) or _deleted(ctx, node, name):
        return None
    if any(_dominates(ctx, a, node) for a in assignments) or bound_on_every_path(ctx, node, assignments):
        # reused only where every binding that may reach here is the run's device (`loose`: may be)
        proven = (lambda a: may_be_run_device(ctx, a.node) or branch_may_be_run_device(ctx, a.node)) if loose \
            else (lambda a: _is_device_binding(ctx, a))
        return (name, False) if all(proven(a) for a in assignments) else None
    if all(a.scope is scope.globals for a in assignments):
        return _MODULE_MAYBE
    return None  # a local (or an enclosing function's) binding that may not have run: no global helps


_SCOPE_OWNERS = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp,
                 cst.GeneratorExp)


def _may_be_visible(ctx: FileFacts, node: cst.CSTNode, name: str) -> bool:
    """Could a binding of `name` be in scope at `node`? False only when every one is certainly not.

    Answers the common case without LibCST's scope analysis of the whole file, which costs more than
    the parse on a large file: `device` bound only as a parameter or a local of other functions.
    Anything less plain (a module-level binding, one in a function or class around `node`, an
    import, a definition, `global`/`nonlocal`, a walrus, a match statement) is left to the analysis.
    """
    if name in ctx.imported_names or ctx.nodes(cst.Match) or any(
        d.name.value == name for kind in (cst.FunctionDef, cst.ClassDef) for d in ctx.nodes(kind)
    ):
        return True
    for kind in (cst.Global, cst.Nonlocal):
        if any(item.name.value == name for statement in ctx.nodes(kind) for item in statement.names):
            return True
    enclosing = {id(a) for a in ctx.ancestors(node)}
    for site in ctx.binding_sites.get(name, ()):
        if isinstance(ctx.parent(site), cst.NamedExpr):
            return True
        owner = ctx.enclosing(site, _SCOPE_OWNERS)
        if owner is None or id(owner) in enclosing:
            return True
    return False


def _is_device_binding(ctx: FileFacts, assignment) -> bool:
    """Is the binding proven to hold the run's device (`derived.run_device_value`)? Never a parameter:
    a caller may pass `torch.device("cpu")`, and `.cuda()` did not follow it."""
    from devlint.analysis.derived import run_device_value

    value = _bound_value(ctx, assignment.node)
    return value is not None and (run_device_value(ctx, value) or branch_run_device(ctx, assignment.node, value))


def _bound_value(ctx: FileFacts, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The value of `name = value` / `name: T = value` binding `node`, else None."""
    if not isinstance(node, cst.Name):
        return None
    parent = ctx.parent(node)
    statement = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else parent
    if isinstance(statement, cst.AnnAssign) and statement.value is not None:
        return statement.value
    if isinstance(statement, cst.Assign) and isinstance(parent, cst.AssignTarget):
        return statement.value
    return None
