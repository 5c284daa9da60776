"""The calls of a plain function when the file shows them all: devlint.analysis.param_paths and
devlint.analysis.guarded_callers judge a function by what every call of it does.

`direct_calls(ctx, function)` answers the calls of `function` in the file, or None when some code may
call it unseen or with anything: a method (called through any object), a test (pytest calls it), a name
the file binds again or imports, and any occurrence of the name other than the callee of a direct call
`name(...)` (a callback, `map(fn, ...)`, `fn = name`). `obj.name` and a keyword `name=` are other names.
Whether other files may call it is the caller's question. `references(ctx, function)` answers every
occurrence of the name (under the same conditions), for a caller that accounts for more than direct
calls (devlint.analysis.handoffs).
"""

from __future__ import annotations

import libcst as cst


def direct_calls(ctx, function: cst.FunctionDef) -> list[cst.Call] | None:
    names = references(ctx, function)
    if names is None:
        return None
    calls = []
    for node in names:
        parent = ctx.parent(node)
        if not isinstance(parent, cst.Call) or parent.func is not node:
            return None
        calls.append(parent)
    return calls


def references(ctx, function: cst.FunctionDef) -> list[cst.Name] | None:
    """Every occurrence of the function's name in the file but its `def`, or None when the function may
    be reached unseen (a method, a test, a name bound again or imported)."""
    name = function.name.value
    owner = ctx.enclosing(function, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
    if isinstance(owner, (cst.ClassDef, cst.Lambda)) or name.startswith("test"):
        return None
    if name in ctx.binding_sites or name in ctx.imported_names or sum(
            d.name.value == name for d in ctx.nodes(cst.FunctionDef)) != 1:
        return None
    found = []
    for node in ctx.nodes(cst.Name):
        if node.value != name or node is function.name:
            continue
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node or isinstance(parent, cst.Arg) and parent.keyword is node:
            continue  # (`model.train()`, `f(train=...)`: another name)
        found.append(node)
    return found
