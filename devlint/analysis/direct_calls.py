"""The calls of a plain function when the file shows them all: devlint.analysis.param_paths and
devlint.analysis.guarded_callers judge a function by what every call of it does.

`direct_calls(ctx, function)` answers the calls of `function` in the file, or None when some code may
call it unseen or with anything: a method (called through any object), a test (pytest calls it), a name
the file binds again, and any occurrence of the name other than the callee of a direct call
`name(...)` (a callback, `map(fn, ...)`, `fn = name`). `obj.name` and a keyword `name=` are other names.

A `def` at the module's top level that re-defines a name imported above it (`from eval_knn import
extract_features`, then `def extract_features(...)`) binds the name for everything that runs after it:
its calls are every occurrence of the name, each of which must come after the `def` in the file
(a function defined after it is also called only after it), with the imports at the top level of the
module too and no star import or `global` declaration of the name that could bind it again.
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
    be reached unseen (a method, a test, a name bound again, an import no top-level `def` shadows)."""
    name = function.name.value
    owner = ctx.enclosing(function, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
    if isinstance(owner, (cst.ClassDef, cst.Lambda)) or name.startswith("test"):
        return None
    if name in ctx.binding_sites or sum(d.name.value == name for d in ctx.nodes(cst.FunctionDef)) != 1:
        return None
    shadowed = name in ctx.imported_names
    if shadowed and not _shadows_imports(ctx, function, name):
        return None
    start = ctx.positions[function].start.line if shadowed else 0  # (positions cost a walk of the file)
    found = []
    for node in ctx.nodes(cst.Name):
        if node.value != name or node is function.name:
            continue
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node or isinstance(parent, cst.Arg) and parent.keyword is node:
            continue  # (`model.train()`, `f(train=...)`: another name)
        if shadowed and _in_import(ctx, node):
            continue  # (the import the `def` shadows, checked above)
        if shadowed and ctx.positions[node].start.line <= start:
            return None  # (may run before the `def`, and use what was imported)
        found.append(node)
    return found


def _shadows_imports(ctx, function: cst.FunctionDef, name: str) -> bool:
    """Is every import of `name` a top-level statement above the top-level `def` that re-binds it?"""
    if not isinstance(ctx.parent(function), cst.Module):
        return False
    start = ctx.positions[function].start.line
    for node in ctx.nodes(cst.ImportFrom):
        if isinstance(node.names, cst.ImportStar) and ctx.positions[node].start.line >= start:
            return False  # (`from m import *` below may bind the name again)
    if any(n.name.value == name for kind in (cst.Global, cst.Nonlocal) for g in ctx.nodes(kind) for n in g.names):
        return False
    for kind in (cst.Import, cst.ImportFrom):
        for node in ctx.nodes(kind):
            if isinstance(node.names, cst.ImportStar) or not any(_bound(alias) == name for alias in node.names):
                continue
            line = ctx.parent(node)
            if not isinstance(line, cst.SimpleStatementLine) or not isinstance(ctx.parent(line), cst.Module) \
                    or ctx.positions[node].start.line >= start:
                return False
    return True


def _bound(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    target = alias.name
    while isinstance(target, cst.Attribute):  # (`import a.b` binds `a`)
        target = target.value
    return target.value if isinstance(target, cst.Name) else ""


def _in_import(ctx, node: cst.Name) -> bool:
    return any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in ctx.ancestors(node))
