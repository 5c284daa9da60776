"""Path expressions over the instance's own attributes and over names bound more than once (DL002's `path_key`,
devlint.analysis.origins).

**An attribute of the instance**, `self.X` read in a method (the first parameter of a function defined in a
class body, not a static or class method), names the same thing wherever the class reads it when nothing in
the file re-binds `X` after construction: every assignment to an attribute named `X` (`obj.X = ...`, `obj.X +=
...`, `del obj.X`, a loop or `with` target), of any object, is in an `__init__`, at most once in each and not
in a loop there, and the file binds no attribute by a computed name (`setattr`, `delattr`, `__setattr__`, a
write through `obj.__dict__` or `vars(obj)`). `X` must be assigned or defined in the file (one defined
elsewhere may be a property of any state), and every `def X` of a class of the file must be a property whose
body is one `return` of a path expression with an identity (`return os.path.join(self.root, "processed")`): a
property of mutable state (`f"ckpt_{self.step}.pt"`) could name another file between a save and a load. Its
identity is the attribute's name, for the whole file: writers of `self.X` in another class of the file count
as writers too (more writers only make "every writer wrote CPU data" harder). Two instances may hold different
values; the files they name are all written by the code that names them the same way, which is what "every
writer found" asks. To keep that tie, a verdict on a path with such an attribute needs a writer in the class
of the load (`same_class_writer`).

**A name bound more than once** in its scope has the identity of the value of the one binding that
certainly reaches a read (devlint.analysis.flow.`last_binding`: the last plain assignment before the
read that dominates it, none later in a loop around both), but only when every read of that name in
the scope has such a binding: a read that could see either value would be a writer hidden from the
path's other uses.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts

_STATIC = frozenset({"staticmethod", "classmethod"})
_PROPERTIES = frozenset({"property", "cached_property"})
_NAMESPACE_WRITES = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"})


def attribute_key(ctx: FileFacts, expr: cst.Attribute, key_of):
    """("attribute", X) for `self.X` in a method when `X` is never re-bound after construction, else None.
    `key_of(ctx, expr)`: the path key of an expression (origins' `path_key`), for a property's value."""
    if not isinstance(expr.value, cst.Name) or not _is_instance(ctx, expr.value):
        return None
    name = expr.attr.value
    return ("attribute", name) if _stable(ctx, name, key_of) else None


def has_attribute(key) -> bool:
    """Does the path key rest on an attribute of the instance?"""
    if isinstance(key, tuple):
        return bool(key) and key[0] == "attribute" or any(has_attribute(k) for k in key[1:] if isinstance(k, tuple))
    return False


def same_class_writer(ctx: FileFacts, path: cst.CSTNode, calls) -> bool:
    """Is one of the writer calls in the class whose method holds `path`?"""
    cls = ctx.enclosing(path, (cst.ClassDef,))
    return cls is not None and any(ctx.enclosing(call, (cst.ClassDef,)) is cls for call in calls)


def rebound_binding(ctx: FileFacts, name: cst.Name):
    """The binding of a name bound several times that certainly reaches this read (devlint.analysis.flow's
    `last_binding`), None unless every read of the name has such a binding: a read without one could be a
    writer of the same file that no path key would match."""
    from devlint.analysis.flow import last_binding

    assignments = ctx.bindings(name)
    if not assignments:
        return None
    memo = ctx.__dict__.setdefault("_devlint_rebound_reads", {})
    group = id(assignments[0].node)  # (the name's bindings in its scope: one answer for all its reads)
    if group not in memo:
        reads = [access.node for a in assignments for access in getattr(a, "references", ())]
        bindings = {id(n): last_binding(ctx, n) if isinstance(n, cst.Name) else None for n in reads}
        memo[group] = None if not reads or any(b is None for b in bindings.values()) else bindings
    bindings = memo[group]
    return None if bindings is None else bindings.get(id(name))


def _is_instance(ctx: FileFacts, name: cst.Name) -> bool:
    assignments = ctx.bindings(name)
    if len(assignments) != 1 or not isinstance(assignments[0].node, cst.Param):
        return False
    param = assignments[0].node
    function = ctx.enclosing(param, (cst.FunctionDef,))
    if function is None or not function.params.params or function.params.params[0] is not param:
        return False
    block = ctx.parent(function)
    if not isinstance(ctx.parent(block), cst.ClassDef):
        return False
    return not any(isinstance(d.decorator, cst.Name) and d.decorator.value in _STATIC for d in function.decorators)


def _stable(ctx: FileFacts, name: str, key_of) -> bool:
    memo = ctx.__dict__.setdefault("_devlint_stable_attributes", {})
    if name not in memo:
        memo[name] = False  # (a property that reads itself: not known while it is judged)
        memo[name] = _compute_stable(ctx, name) and _pure_definitions(ctx, name, key_of)
    return memo[name]


def _pure_definitions(ctx: FileFacts, name: str, key_of) -> bool:
    """Is every `def X` of a class of the file a property that returns one path expression of stable parts
    (`return os.path.join(self.root, "processed")`), and is `X` assigned or defined in the file at all?"""
    definitions = [f for f in ctx.nodes(cst.FunctionDef) if f.name.value == name
                   and isinstance(ctx.parent(ctx.parent(f)), cst.ClassDef)]
    if not definitions:
        return any(node.attr.value == name and _bound_here(ctx, node) for node in ctx.nodes(cst.Attribute))
    for function in definitions:
        if not any(_decorator_name(d) in _PROPERTIES for d in function.decorators):
            return False
        body = [s for s in getattr(function.body, "body", ()) if not _docstring(s)]
        if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
            return False
        statement = body[0].body[0]
        if not isinstance(statement, cst.Return) or statement.value is None or key_of(ctx, statement.value) is None:
            return False
    return True


def _decorator_name(decorator: cst.Decorator) -> str:
    node = decorator.decorator
    return node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")


def _docstring(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(
        statement.body[0], cst.Expr) and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def _compute_stable(ctx: FileFacts, name: str) -> bool:
    if "_devlint_dynamic_attributes" not in ctx.__dict__:
        ctx.__dict__["_devlint_dynamic_attributes"] = _sets_attributes_by_name(ctx)
    if ctx.__dict__["_devlint_dynamic_attributes"]:
        return False
    per_init: dict[int, int] = {}
    for node in ctx.nodes(cst.Attribute):
        if node.attr.value != name or not _bound_here(ctx, node):
            continue
        function = ctx.enclosing(node, (cst.FunctionDef, cst.Lambda))
        if not isinstance(function, cst.FunctionDef) or function.name.value != "__init__":
            return False
        if any(isinstance(a, (cst.For, cst.While)) for a in _ancestors_until(ctx, node, function)):
            return False
        per_init[id(function)] = per_init.get(id(function), 0) + 1
        if per_init[id(function)] > 1:
            return False
    return True


def _sets_attributes_by_name(ctx: FileFacts) -> bool:
    """`setattr(obj, name, v)`, `obj.__setattr__(...)`, `delattr`, or a write through `obj.__dict__` /
    `vars(obj)` (an item assigned, a mutating method): attributes bound where no target names them."""
    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Name) and func.value in ("setattr", "delattr") or isinstance(
                func, cst.Attribute) and func.attr.value in ("__setattr__", "__delattr__"):
            return True
    namespaces = [a for a in ctx.nodes(cst.Attribute) if a.attr.value == "__dict__"] + [
        c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "vars"]
    for node in namespaces:
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr.value in _NAMESPACE_WRITES:
            return True
        target = ctx.parent(parent)
        if isinstance(parent, cst.Subscript) and isinstance(target, (cst.AssignTarget, cst.AugAssign, cst.Del)):
            return True
    return False


def _bound_here(ctx: FileFacts, node: cst.Attribute) -> bool:
    """Is the attribute a target: of an assignment, an augmented one, a `del`, a loop, a `with`?"""
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
            child = parent
            continue
        if isinstance(parent, (cst.AssignTarget, cst.Del)):
            return True
        if isinstance(parent, (cst.AnnAssign, cst.AugAssign)):
            return parent.target is child
        if isinstance(parent, (cst.For, cst.CompFor)):
            return parent.target is child
        if isinstance(parent, cst.AsName):
            return True
        return False
    return False


def _ancestors_until(ctx: FileFacts, node: cst.CSTNode, root: cst.CSTNode):
    for ancestor in ctx.ancestors(node):
        if ancestor is root:
            return
        yield ancestor
