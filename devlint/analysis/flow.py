"""Where a statement sits and what runs before a use, for the device analyses: the function, class or
module whose body holds a node (`_owner`), whether a binding has certainly run whenever a use runs
(`_dominates`), whether a `global`/`nonlocal` of a name comes after a use (`_declared_later`) or a
`del` may unbind it (`_deleted`), nodes in the file's order (`_source_order`), and the one binding a
read of a re-bound name sees (`last_binding`)."""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts, target_names


def _source_order(ctx: FileFacts, node: cst.CSTNode) -> tuple[int, int]:
    position = ctx.positions.get(node)
    return (0, 0) if position is None else (position.start.line, position.start.column)


def _inside(ctx: FileFacts, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(a is container for a in ctx.ancestors(node))


def _dominates(ctx: FileFacts, assignment, use: cst.CSTNode) -> bool:
    """Has the binding certainly run whenever `use` runs? A parameter, or an earlier statement of a block
    that holds `use` (Python has no jump into a block: its statements run in order)."""
    node = assignment.node
    if isinstance(node, cst.Param):
        return True
    small = ctx.parent(node)
    if isinstance(small, cst.AssignTarget):
        small = ctx.parent(small)
    line = ctx.parent(small)
    block = ctx.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    child = use
    for ancestor in ctx.ancestors(use):
        if ancestor is line:
            return _index(line.body, child) > _index(line.body, small)  # `device = ...; y = x.cuda()`
        if ancestor is block:
            return _index(block.body, child) > _index(block.body, line)
        child = ancestor
    return False


def _index(sequence, item) -> int:
    return next((i for i, each in enumerate(sequence) if each is item), -1)


_STATEMENT_OWNERS = (cst.FunctionDef, cst.ClassDef, cst.Module)


def _owner(ctx: FileFacts, node: cst.CSTNode) -> cst.CSTNode:
    """The function, class or module whose body holds `node` (as a statement or in one)."""
    return ctx.enclosing(node, _STATEMENT_OWNERS) or ctx.module


def _declarations(ctx: FileFacts, name: str):
    for kind in (cst.Global, cst.Nonlocal):
        for statement in ctx.nodes(kind):
            if any(item.name.value == name for item in statement.names):
                yield statement


def _declared_later(ctx: FileFacts, node: cst.CSTNode, name: str) -> bool:
    """A `global`/`nonlocal` of `name` after `node` in its body: a use written there does not compile."""
    owner = _owner(ctx, node)
    for statement in _declarations(ctx, name):
        if _owner(ctx, statement) is owner:
            declared, used = ctx.positions.get(statement), ctx.positions.get(node)
            if declared is None or used is None or (declared.start.line, declared.start.column) >= (
                used.start.line, used.start.column
            ):
                return True
    return False


def _deleted(ctx: FileFacts, node: cst.CSTNode, name: str) -> bool:
    """A `del name` that may unbind the name `node` reads: in the module, in a function around `node`,
    or declared global/nonlocal where it is."""
    owners = {id(a) for a in ctx.ancestors(node) if isinstance(a, _STATEMENT_OWNERS)}
    for statement in ctx.nodes(cst.Del):
        if not any(target.value == name for target in target_names(statement.target)):
            continue
        owner = _owner(ctx, statement)
        if isinstance(owner, cst.Module) or id(owner) in owners or any(
            _owner(ctx, d) is owner for d in _declarations(ctx, name)
        ):
            return True
    return False


def last_binding(ctx: FileFacts, name: cst.Name):
    """The binding of `name` that its read sees: a plain assignment in its own scope that certainly ran
    (the last one before the read, dominating it, none later in a loop around both), else None."""
    if name.value in ("self", "cls") or any(
        item.name.value == name.value for kind in (cst.Global, cst.Nonlocal)
        for statement in ctx.nodes(kind) for item in statement.names
    ):
        return None
    scope = ctx.scope(name)
    assignments = ctx.bindings(name)
    use = ctx.positions.get(name)
    if scope is None or not assignments or use is None or _deleted(ctx, name, name.value):
        return None
    use = (use.start.line, use.start.column)
    earlier = []
    for assignment in assignments:
        node = assignment.node
        if assignment.scope is not scope or not isinstance(node, cst.Name) or ctx.assigned_value(node) is None:
            return None  # a parameter, a closure, a loop variable, an unpacking, an import
        at = ctx.effective_position(node)
        if at is None:
            return None
        if at <= use:
            earlier.append(((at, _source_order(ctx, node)), assignment))  # (one statement's targets: left to right)
        elif ctx.loop_around_both(node, name):
            return None  # bound again later in a loop that runs the use again
    if not earlier:
        return None
    last = max(earlier, key=lambda item: item[0])[1]
    return last if _dominates(ctx, last, name) else None
