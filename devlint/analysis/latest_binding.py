"""Which one of a name's several bindings a use reads, where straight-line code decides it.

A name bound more than once in its scope (`path = a` ... `path = b`) has no single value, and the
path analyses (devlint.analysis.origins' `path_key`) give up on it. Yet between two bindings the name
holds the first one's value on every path:

    path = osp.join(home, "model.pt")
    torch.save(model, path)
    model = torch.load(path)        # reads the first binding only
    path = osp.join(home, "package.pt")

`sole_binding(ctx, use, assignments)` is the binding `name = value` that every path to `use` runs last:
a plain assignment statement that is an earlier statement of a block holding the use, in the same
function (no function, lambda, class or comprehension between), with no other binding of the name in
the statements from it up to and including the one holding the use (a binding inside that statement,
after the use in a loop, may reach the use on the next turn). A loop around both runs the assignment
again before the use each time. None when no binding is such, or when the name is declared `global`
or `nonlocal` anywhere in the file (another function may re-bind it).
"""

from __future__ import annotations

import libcst as cst

_BOUNDARIES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp,
               cst.GeneratorExp)


def sole_binding(ctx, use: cst.Name, assignments) -> cst.CSTNode | None:
    """The node (the target `Name`) of the one binding among `assignments` (those of `use`'s scope) that
    reaches `use`, or None."""
    if declared_elsewhere(ctx, use.value):
        return None
    nodes = [a.node for a in assignments]
    for node in nodes:
        if ctx.assigned_value(node) is None:
            continue  # (a loop target, an unpacking, `with ... as`: not one plain value)
        statement = ctx.parent(node)
        if isinstance(statement, cst.AssignTarget):
            statement = ctx.parent(statement)
        line = ctx.parent(statement)
        block = ctx.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
        body = list(getattr(block, "body", ()))
        index = next((i for i, s in enumerate(body) if s is line), None)
        if index is None or len(line.body) != 1:
            continue
        later = _index_in(ctx, use, block, body)
        if later is None or later <= index:
            continue
        span = {id(s) for s in body[index + 1:later + 1]}
        if any(other is not node and _within(ctx, other, span) for other in nodes):
            continue  # re-bound between, or in the statement of the use
        return node  # (at most one binding qualifies: each other lies before it or in its span)
    return None


def _index_in(ctx, node: cst.CSTNode, block: cst.CSTNode, body: list) -> int | None:
    child = node
    for ancestor in ctx.ancestors(node):
        if ancestor is block:
            return next((i for i, s in enumerate(body) if s is child), None)
        if isinstance(ancestor, _BOUNDARIES):
            return None
        child = ancestor
    return None


def _within(ctx, node: cst.CSTNode, statements: set[int]) -> bool:
    return any(id(a) in statements for a in ctx.ancestors(node))


def declared_elsewhere(ctx, name: str) -> bool:
    return any(n.name.value == name for kind in (cst.Global, cst.Nonlocal) for d in ctx.nodes(kind) for n in d.names)
