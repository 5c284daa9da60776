"""What re-binding can repair in a discarded move whose receiver is not a plain local name (DL003).

- A **temporary** (`torch.zeros(1).to(device)`, `model(x).cuda()`, `(a + b).cpu()` as a statement): no
  name holds the value, so nothing can read the moved copy and nothing was meant to; a deliberate
  warm-up (CUDA initialisation, a synchronisation point) looks like this. Not a finding. A method result
  of a tensor someone holds (`x.contiguous().cuda()`) is not a temporary: `x` was meant to move.
- A **loop variable** (`for batch in batches: batch.to(device); out = model(batch)`): re-binding it
  does what was meant when the moved value is read later in the same iteration, and nothing outside the
  iteration can see the re-binding or was waiting for moved items: the variable is not read after the
  loop (nor in the next pass of a loop around it, nor by a closure), and the iterated container is not
  used after the loop (only `len(...)` of it). Otherwise the author meant to update the container,
  which re-binding does not do (display-only; DL013 is about that same intent, and the re-binding this
  fix writes is never one DL013 flags: DL013 wants the moved value unread in the body and after the loop).
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.kinds import kinds_of
from devlint.facts import FileFacts, target_names
from devlint.analysis.kinds import TENSOR
from devlint.syntax import dotted_name, walk

_OPERATIONS = (cst.BinaryOperation, cst.UnaryOperation)
_CLOSURES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_MEMBERS = frozenset({"parameters", "buffers", "named_parameters", "named_buffers"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# Methods that hand back an item the receiver holds (not a new value): moving it was meant to move the item.
_HELD_ITEMS = frozenset({"get", "setdefault", "__getitem__"})


def is_temporary(ctx: FileFacts, root: cst.BaseExpression) -> bool:
    """A value no name holds: a call's result (not a method of a tensor a name or attribute holds), or
    arithmetic on values. `root` is the receiver under the chain of moves."""
    if isinstance(root, _OPERATIONS):
        return True
    if not isinstance(root, cst.Call):
        return False
    func = root.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, (cst.Name, cst.Attribute, cst.Subscript)):
        if func.attr.value in _HELD_ITEMS:
            return False  # `feats.get("mask")`: the container's own tensor, as `feats["mask"]` is
        return kinds_of(ctx).of(func.value) is not TENSOR  # `x.contiguous()`: x was meant to move
    return True


def enclosing_loop(ctx: FileFacts, name: cst.Name) -> cst.For | None:
    """The innermost `for` statement of the same scope whose target binds `name` and whose body holds it."""
    child: cst.CSTNode = name
    for ancestor in ctx.ancestors(name):
        if isinstance(ancestor, _CLOSURES):
            return None
        if isinstance(ancestor, cst.For) and child is ancestor.body and any(
                n.value == name.value for n in target_names(ancestor.target)):
            return ancestor
        child = ancestor
    return None


def iteration_failure(ctx: FileFacts, loop: cst.For, statement: cst.CSTNode, name: str) -> str | None:
    """None when re-binding the loop variable `name` at `statement` (in `loop`'s body) stays inside the
    iteration and the moved value is what the rest of the iteration reads; else why not, for the title."""
    end = ctx.span(statement)[1]
    owner = _module_members(loop.iter)
    if owner is not None:
        return f"the moved tensors were meant to be the module's: `{owner}.to(...)` moves them"
    if not any(isinstance(n, cst.Name) and n.value == name and _after(ctx, n, end) for n, _ in walk(loop.body)):
        container = _container_text(ctx, loop)
        return f"nothing reads `{name}` later in the iteration: the moved items were meant to be in {container}"
    scope = ctx.enclosing(loop, (cst.FunctionDef,)) or ctx.module
    outer = _outermost_loop(ctx, loop, scope)
    for node, _ in walk(scope):
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in node.names):
            return f"`{name}` is declared `{'global' if isinstance(node, cst.Global) else 'nonlocal'}`"
    for node, _ in walk(loop.body):
        if isinstance(node, (cst.FunctionDef, cst.Lambda)) and any(
                isinstance(n, cst.Name) and n.value == name for n, _ in walk(node)):
            return f"a function defined in the loop reads `{name}`: it may run after the loop"
    for mention in _outside_mentions(ctx, loop, scope, outer, {name}):
        if not _rebound_first(ctx, mention, name, loop):
            return f"`{name}` is read after the loop (line {ctx.span(mention)[0].line}): it would see the moved value"
    containers = _container_names(loop.iter)
    for mention in _outside_mentions(ctx, loop, scope, outer, containers):
        if not _in_len(ctx, mention):
            text = dotted_name(mention) or ""
            return (f"`{text}` is used after the loop (line {ctx.span(mention)[0].line}): the moved items were "
                    "meant to be in it, and re-binding the loop variable leaves it unchanged")
    return None


def _module_members(iterable: cst.BaseExpression) -> str | None:
    """`model` of `model.parameters()`, `model.named_buffers()`, ...: a loop meant to move the module."""
    for node, _ in walk(iterable):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _MEMBERS:
            return dotted_name(node.func.value) or "the module"
    return None


def _after(ctx: FileFacts, node: cst.CSTNode, end) -> bool:
    start = ctx.span(node)[0]
    return (start.line, start.column) >= (end.line, end.column)


def _outermost_loop(ctx: FileFacts, loop: cst.For, scope: cst.CSTNode) -> cst.CSTNode | None:
    """The outermost loop of the scope around `loop`: its later passes run `loop` again."""
    outer = None
    for ancestor in ctx.ancestors(loop):
        if ancestor is scope:
            break
        if isinstance(ancestor, (cst.For, cst.While)):
            outer = ancestor
    return outer


def _outside_mentions(ctx: FileFacts, loop: cst.For, scope: cst.CSTNode, outer, names: set[str]):
    """Mentions (names, or dotted attributes) of `names` that may run after a pass of `loop`: after the
    loop in the scope (its `else:` included), or anywhere in a loop around it outside it."""
    if not names:
        return
    end = ctx.span(loop.body)[1]
    inside = {id(n) for n, _ in walk(loop.target)} | {id(n) for n, _ in walk(loop.iter)} | {
        id(n) for n, _ in walk(loop.body)}
    for node, parent in walk(scope):
        if id(node) in inside or not isinstance(node, (cst.Name, cst.Attribute)) or _is_store(ctx, node):
            continue
        if isinstance(parent, cst.Attribute) and (parent.attr is node or dotted_name(parent) in names):
            continue  # `obj.x` is not `x`; `self.loader.dataset` is counted once, as `self.loader`
        if dotted_name(node) not in names:
            continue
        if isinstance(node, cst.Name) and _local_elsewhere(ctx, node, loop):
            continue  # a parameter or local of another function: not the name the loop binds
        if _after(ctx, node, end) or (outer is not None and _within(ctx, node, outer)):
            yield node


def _is_store(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """`x = ...`, `a, x = ...`, `for x in ...`: a new binding, not a read."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
            child = ancestor
            continue
        return isinstance(ancestor, cst.AssignTarget) or (
            isinstance(ancestor, (cst.For, cst.CompFor)) and child is ancestor.target) or (
            isinstance(ancestor, cst.AnnAssign) and child is ancestor.target)
    return False


def _local_elsewhere(ctx: FileFacts, name: cst.Name, loop: cst.For) -> bool:
    scope, own = ctx.scope(name), ctx.scope(loop)
    return scope is not None and own is not None and scope is not own and bool(scope.assignments[name.value])


def _within(ctx: FileFacts, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(a is container for a in ctx.ancestors(node))


def _rebound_first(ctx: FileFacts, mention: cst.CSTNode, name: str, loop: cst.For) -> bool:
    """Is `mention` the target of another `for` over `name`, or inside such a loop's body (it reads that
    loop's binding, not the one left by `loop`)?"""
    child = mention
    for ancestor in ctx.ancestors(mention):
        if ancestor is loop:
            return False
        if isinstance(ancestor, cst.For) and any(n.value == name for n in target_names(ancestor.target)) and (
                child is ancestor.body or child is ancestor.target):
            return True
        if isinstance(ancestor, _COMPREHENSIONS) and _comprehension_binds(ancestor.for_in, name):
            return True  # `[batch for batch in other]`: its own scope
        child = ancestor
    return False


def _comprehension_binds(loop: cst.CompFor | None, name: str) -> bool:
    while loop is not None:
        if any(n.value == name for n in target_names(loop.target)):
            return True
        loop = loop.inner_for_in
    return False


def _container_names(iterable: cst.BaseExpression) -> set[str]:
    """The values a loop iterates over: `batches`, `self.loader`; `xs` and `ys` of `zip(xs, ys)`;
    `d` of `d.items()`; never a called function's name (`enumerate`, `range`)."""
    if isinstance(iterable, (cst.Name, cst.Attribute)):
        dotted = dotted_name(iterable)
        return {dotted} if dotted is not None else set()
    names: set[str] = set()
    if isinstance(iterable, cst.Call):
        if isinstance(iterable.func, cst.Attribute):
            names |= _container_names(iterable.func.value)
        for arg in iterable.args:
            names |= _container_names(arg.value)
    elif isinstance(iterable, cst.Subscript):
        names |= _container_names(iterable.value)
    return names


def _container_text(ctx: FileFacts, loop: cst.For) -> str:
    text = " ".join(ctx.code(loop.iter).split())
    return f"`{text}`" if len(text) <= 40 else "the iterated container"


def _in_len(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """`len(container)` (or `len(container.dataset)`): its size, not its items."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Call):
            return dotted_name(ancestor.func) == "len"
        if not isinstance(ancestor, (cst.Arg, cst.Attribute)):
            return False
    return False
