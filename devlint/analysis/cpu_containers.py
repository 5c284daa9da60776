"""Values built on the CPU through containers, for the writers of a cache (devlint.analysis.cache_folders).

`deep_cpu(ctx, expr)`: every tensor the value holds lives on the CPU. Beyond origins' `host_value`
(CPU values and values without tensors) and a tokenizer's `return_tensors="pt"` output never moved
(devlint.analysis.round_trip), it follows a value through the containers it is gathered in:

- a part of a CPU container is CPU: `d[k]`, `d.items()`, `d.values()`, `enumerate(xs)`, `zip(xs, ys)`, a loop
  or comprehension variable over one (`for k, t in d.items()`);
- a container display or comprehension is CPU when its elements are (`{k: [] for k in keys}`,
  `{k: torch.cat(v) for k, v in d.items()}`);
- `torch.cat` / `torch.stack` (and their kin) of CPU tensors is CPU;
- a name is CPU when the binding its read certainly sees is (devlint.analysis.flow's `last_binding`,
  or its only binding), and when everything put into it is: `d[k].append(x)`, `xs.extend(x)`, `d[k] = x`
  with `x` CPU, also through an item (`d.setdefault(k, []).append(x)`) or a loop variable over its parts
  (`for xs in d.values(): xs.append(x)`); a move of it, of a part or of a loop variable over it
  (`enc.to(device)`: a tokenizer's output moves in place), an augmented assignment into it,
  or a part of it bound to another name (`xs = d[k]`), makes it unknown.

A container passed to a function that may fill it is not followed, as in `host_value`.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts

MAX_DEPTH = 16
_JOINS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"})
_PARTS = frozenset({"items", "values", "keys", "copy"})
_FILLS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})
_MOVES = frozenset({"to", "cuda", "xpu", "mps", "npu", "hpu", "ipu", "to_empty"})
_WRAPPERS = frozenset({"enumerate", "zip", "list", "tuple", "sorted", "reversed", "iter"})  # (items kept as they are)
_ITEMS = frozenset({"get", "setdefault"})  # (return an item of the container, which may be filled next)


def deep_cpu(ctx: FileFacts, expr: cst.CSTNode, depth: int = 0) -> bool:
    from devlint.analysis.origins import host_value
    from devlint.analysis.round_trip import _tokenizer_output

    if depth > MAX_DEPTH:
        return False
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return all(deep_cpu(ctx, e.value, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return all(isinstance(e, cst.DictElement) and deep_cpu(ctx, e.value, depth + 1) for e in expr.elements)
    if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return deep_cpu(ctx, expr.elt, depth + 1)
    if isinstance(expr, cst.DictComp):
        return deep_cpu(ctx, expr.value, depth + 1)
    if host_value(ctx, expr) or _tokenizer_output(ctx, expr):
        return True
    if isinstance(expr, cst.Subscript):
        return deep_cpu(ctx, expr.value, depth + 1)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _PARTS and not expr.args:
            return deep_cpu(ctx, func.value, depth + 1)
        names = ctx.qualified_names(func)
        if names & _WRAPPERS and not any(a.keyword for a in expr.args):
            return all(deep_cpu(ctx, a.value, depth + 1) for a in expr.args)
        if any(n.startswith("torch.") and n.rsplit(".", 1)[-1] in _JOINS for n in names) and expr.args and (
                expr.args[0].keyword is None and not any(a.keyword and a.keyword.value in ("out", "device")
                                                         for a in expr.args)):
            return deep_cpu(ctx, expr.args[0].value, depth + 1)
        return False
    if isinstance(expr, cst.Name):
        return _name_cpu(ctx, expr, depth)
    return False


def _name_cpu(ctx: FileFacts, name: cst.Name, depth: int) -> bool:
    from devlint.analysis.flow import last_binding

    assignments = ctx.bindings(name)
    if not assignments:
        return False
    if len(assignments) == 1:
        assignment = assignments[0]
    else:
        assignment = last_binding(ctx, name)
        if assignment is None:
            return False
    node = assignment.node
    if not isinstance(node, cst.Name):
        return False
    loop = _loop_of(ctx, node)
    if loop is not None:
        return deep_cpu(ctx, loop.iter, depth + 1)
    value = ctx.assigned_value(node)
    if value is None or not deep_cpu(ctx, value, depth + 1):
        return False
    return all(_fill_cpu(ctx, access.node, depth) for a in assignments for access in a.references)


def _loop_of(ctx: FileFacts, node: cst.Name) -> cst.For | cst.CompFor | None:
    """The `for` (statement or comprehension) whose target binds `node`, directly or in a tuple."""
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
            child = parent
            continue
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is child:
            return parent
        return None
    return None


def _fill_cpu(ctx: FileFacts, node: cst.Name, depth: int) -> bool:
    """Is what this use of a container puts into it (if anything) CPU data? A part of it bound to another
    name (`xs = d[k]`, then `xs.append(t)`) may be filled there: not followed, so not CPU."""
    top = node
    parent = ctx.parent(top)
    while True:
        if isinstance(parent, cst.Subscript) and parent.value is top:
            top, parent = parent, ctx.parent(parent)
            continue
        call = ctx.parent(parent) if isinstance(parent, cst.Attribute) and parent.value is top else None
        if isinstance(call, cst.Call) and call.func is parent and parent.attr.value in _FILLS | _ITEMS:
            if not all(deep_cpu(ctx, a.value, depth + 1) for a in call.args if a.keyword is None):
                return False
            if parent.attr.value in _FILLS - _ITEMS:
                return True
            top, parent = call, ctx.parent(call)  # `d.setdefault(k, []).append(t)`: the item, filled next
            continue
        break
    if isinstance(parent, cst.Attribute) and parent.value is top and parent.attr.value in _MOVES:
        return False  # `enc.to(device)`: a tokenizer's output (or a module) moves in place
    if isinstance(parent, cst.Attribute) and parent.value is top and parent.attr.value in _PARTS:
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent:
            top, parent = call, ctx.parent(call)
    while isinstance(parent, cst.Arg) and parent.value is top and parent.keyword is None:
        call = ctx.parent(parent)
        if not (isinstance(call, cst.Call) and ctx.qualified_names(call.func) & _WRAPPERS):
            break
        top, parent = call, ctx.parent(call)  # `enumerate(xs)`: its items are the container's
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is top:
        # `for xs in d.values(): xs.append(t)`: the loop variables are parts of it
        return all(_fill_cpu(ctx, access.node, depth + 1) for target in _target_names(parent.target)
                   for a in ctx.bindings(target) if a.node is target for access in a.references)
    if top is node:
        return True
    if isinstance(parent, cst.AssignTarget):
        statement = ctx.parent(parent)
        return isinstance(statement, cst.Assign) and deep_cpu(ctx, statement.value, depth + 1)
    if isinstance(parent, (cst.AugAssign, cst.Assign, cst.AnnAssign, cst.NamedExpr, cst.WithItem)):
        return False  # (augmented, or a part bound to another name)
    return True


def _target_names(target: cst.CSTNode) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []
