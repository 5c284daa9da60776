"""Whether the name a fix writes for the device binds what the fix means, where it runs (issue 29).

- **torch bound in the function** (`local_torch_binding`): a definition inside a function reads `torch`
  there. If the function binds it anywhere (`import torch.distributed` later in its body makes `torch`
  local: `UnboundLocalError` before that line; `def run(x, torch=None)`), or a function around it does
  (a closure), the definition would not read the torch module: no local definition there.
- **TorchScript** (`torchscript_owner`): a function compiled by TorchScript (`@torch.jit.script`, a
  class decorated with it, `@torch.jit.script_method`, `torch.jit.script(f)` or
  `torch.jit.script(Net())` of a function or class of the file, and what those call by name) cannot
  read a Python `device` global nor compile `torch.cuda.is_available()`: its fixes are display-only.
- **A library for placement** (`imported_by_project`): a file other project files import gets no
  module-level definition that queries CUDA at import (devlint.analysis.importers).
Later rebindings of that name, and the review of every reported fix: devlint.analysis.fix_review.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts
from devlint.syntax import calls_in, dotted_name

_FUNCTIONS = (cst.FunctionDef, cst.Lambda)


# -- S4: torch bound in the function ---------------------------------------------------------------
def local_torch_binding(ctx: FileFacts, function: cst.CSTNode) -> cst.CSTNode | None:
    """A binding of the torch name (`ctx.torch_alias`, else `torch`) in the scope of `function` or of a
    function around it, which a definition in `function` would read instead of the torch module."""
    if not isinstance(function, cst.FunctionDef):
        return None  # (the main block: module level, where `torch_alias` already speaks)
    name = ctx.torch_alias or "torch"
    owners = [function] + [a for a in ctx.ancestors(function) if isinstance(a, _FUNCTIONS)]
    for site in _torch_sites(ctx, name):
        if _scope_owner(ctx, site) in owners:
            return site
    return None


def _torch_sites(ctx: FileFacts, name: str) -> list[cst.CSTNode]:
    cache = ctx.memo.setdefault("binding_torch_sites", {})
    if name not in cache:
        sites = list(ctx.binding_sites.get(name, ()))
        for kind in (cst.Import, cst.ImportFrom):
            for statement in ctx.nodes(kind):
                if not isinstance(statement.names, cst.ImportStar) and any(_bound_name(a) == name for a in statement.names):
                    sites.append(statement)
        sites += [d for kind in (cst.FunctionDef, cst.ClassDef) for d in ctx.nodes(kind) if d.name.value == name]
        sites += [n for n in _match_captures(ctx) if n.value == name]
        cache[name] = sites
    return cache[name]


def _bound_name(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None:
        return dotted_name(alias.asname.name)
    return (dotted_name(alias.name) or "").split(".")[0]


def _scope_owner(ctx: FileFacts, site: cst.CSTNode) -> cst.CSTNode | None:
    """The function whose scope a binding belongs to (None: module or class level)."""
    if isinstance(site, cst.Param):
        return ctx.enclosing(site, _FUNCTIONS)
    child = site
    for ancestor in ctx.ancestors(site):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and child is not ancestor.body:
            child = ancestor  # its name, decorators, defaults: the scope around it
            continue
        if isinstance(ancestor, _FUNCTIONS):
            return ancestor
        if isinstance(ancestor, cst.ClassDef):
            return None
        child = ancestor
    return None


def _match_captures(ctx: FileFacts) -> list[cst.Name]:
    """Names a `match` statement binds (LibCST's scope analysis does not record them)."""
    names = [n.name for kind in (cst.MatchAs, cst.MatchStar) for n in ctx.nodes(kind) if n.name is not None]
    names += [m.rest for m in ctx.nodes(cst.MatchMapping) if m.rest is not None]
    return names


# -- S5: TorchScript ------------------------------------------------------------------------------
_SCRIPTING = frozenset({"torch.jit.script", "torch.jit.script_method", "torch.jit._script.script",
                        "torch.jit.script_if_tracing"})
_PYTHON_ONLY = frozenset({"torch.jit.ignore", "torch.jit.unused"})


def torchscript_owner(ctx: FileFacts, node: cst.CSTNode) -> cst.CSTNode | None:
    """The function or class around `node` that TorchScript compiles, if any."""
    compiled = _compiled(ctx)
    if not compiled:
        return None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef) and _decorated(ctx, ancestor, _PYTHON_ONLY):
            return None  # `@torch.jit.ignore`: left to Python
        if id(ancestor) in compiled:
            return ancestor
    return None


def _compiled(ctx: FileFacts) -> set[int]:
    found = ctx.memo.get("binding_compiled")
    if found is not None:
        return found
    found = ctx.memo["binding_compiled"] = set()
    if not any(a.attr.value in ("script", "script_method") for a in ctx.nodes(cst.Attribute)) and not any(
            target.rsplit(".", 1)[-1] in ("script", "script_method")
            for targets in ctx._imports.values() for target in targets):
        return found  # the cheap common case: nothing in the file can name the scripting functions
    definitions: dict[str, list[cst.CSTNode]] = {}
    for kind in (cst.FunctionDef, cst.ClassDef):
        for definition in ctx.nodes(kind):
            definitions.setdefault(definition.name.value, []).append(definition)
    queue = [d for kind in (cst.FunctionDef, cst.ClassDef) for d in ctx.nodes(kind) if _decorated(ctx, d, _SCRIPTING)]
    for call in ctx.nodes(cst.Call):
        if call.args and _SCRIPTING & ctx.qualified_names(call.func):
            queue += _scripted_argument(ctx, call.args[0].value, definitions)
    while queue:  # TorchScript compiles what a compiled function calls by name, recursively
        definition = queue.pop()
        if id(definition) in found:
            continue
        found.add(id(definition))
        for call in calls_in(definition):
            if isinstance(call.func, cst.Name):
                queue += definitions.get(call.func.value, ())
    return found


def _scripted_argument(ctx: FileFacts, value: cst.BaseExpression, definitions) -> list[cst.CSTNode]:
    """What `torch.jit.script(value)` compiles of the file: `f`, the class `Net`, the methods but `__init__` of
    `Net(...)` or of `model` bound to `Net(...)`, the method `Net.forward`."""
    if isinstance(value, cst.Name) and value.value in definitions:
        return definitions[value.value]
    if isinstance(value, cst.Name):
        values = [ctx.assigned_value(site) for site in ctx.binding_sites.get(value.value, ())]
        return [d for v in values if v is not None for d in _scripted_argument(ctx, v, definitions)]
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
        return _module_methods(value.func.value, definitions, set())
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):  # `Net.forward`
        return [d for c in definitions.get(value.value.value, ()) if isinstance(c, cst.ClassDef)
                for d in definitions.get(value.attr.value, ()) if ctx.parent(ctx.parent(d)) is c]
    return []


def _module_methods(name: str, definitions, seen: set[str]) -> list[cst.CSTNode]:
    """What scripting an instance of the file's class `name` compiles: its methods, not its `__init__`
    (which has run in Python), and so those of the file's classes its `__init__` makes (submodules)."""
    found: list[cst.CSTNode] = []
    seen.add(name)
    for cls in definitions.get(name, ()):
        if not isinstance(cls, cst.ClassDef):
            continue
        for method in cls.body.body:
            if not isinstance(method, cst.FunctionDef):
                continue
            if method.name.value != "__init__":
                found.append(method)
                continue
            for call in calls_in(method):
                if isinstance(call.func, cst.Name) and call.func.value in definitions and call.func.value not in seen:
                    found += _module_methods(call.func.value, definitions, seen)
    return found


def _decorated(ctx: FileFacts, definition: cst.CSTNode, names: frozenset) -> bool:
    for decorator in getattr(definition, "decorators", ()):
        expression = decorator.decorator
        if isinstance(expression, cst.Call):
            expression = expression.func
        if names & ctx.qualified_names(expression):
            return True
    return False


# -- S6: a library for placement ------------------------------------------------------------------
def imported_by_project(ctx: FileFacts) -> tuple[str, ...] | None:
    """The project files that import this one (None: unknown, a project too big to list); () when the
    file is checked without a path (stdin) or nothing imports it."""
    view = ctx.project
    if view is None or not view.path.endswith(".py"):
        return ()  # stdin; a notebook, which no file imports
    found = ctx.memo.get("binding_importers", False)
    if found is False:
        from devlint.analysis.importers import importers

        found = ctx.memo["binding_importers"] = importers(view)
    return found


def library_reason(ctx: FileFacts) -> str | None:
    """Why the file counts as a library though it looks like a script, or None."""
    found = imported_by_project(ctx)
    if found is None:
        return "the project is too large to tell whether other files import this one"
    if found:
        import os

        names = ", ".join(f"`{os.path.basename(p)}`" for p in found[:2]) + (" ..." if len(found) > 2 else "")
        return f"{names} of the project import{'s' if len(found) == 1 else ''} this file"
    return None


