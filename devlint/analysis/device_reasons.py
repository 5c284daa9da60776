"""Why no device can be written at a fix site, in words for a display-only title: the configured name
is bound but not certainly to the run's device (`_reuse_failure`, `_not_a_device`), or no definition can
be placed (`_placement_failure`, `_local_failure`, `_insert_failure`), or no name is the torch module
(`torch_failure`). Each mirrors one check of devlint.analysis.device_reuse or device_definition; the walk
that decides (devlint.analysis.device.device_walk) asks for the words only where it fails."""
from __future__ import annotations

import libcst as cst

from devlint.analysis.binding import library_reason, local_torch_binding
from devlint.analysis.device_definition import (
    _definition_reaches,
    _evaluation_site,
    _is_library,
    _main_block_site,
    _module_level_runs_in_time,
    _top_index,
)
from devlint.analysis.device_reuse import (
    _MODULE_MAYBE,
    _SCOPE_OWNERS,
    _UNBOUND,
    _is_device_binding,
)
from devlint.analysis.flow import (
    _declarations,
    _declared_later,
    _deleted,
    _dominates,
    _inside,
    _owner,
    _source_order,
)
from devlint.analysis.top_level import (
    _imports_future,
    _starts_with_docstring,
    insertion_index,
    script_evidence,
)
from devlint.analysis.visible_devices import _facts
from devlint.facts import FileFacts, target_names
from devlint.syntax import is_none, string_value


def torch_failure(ctx: FileFacts) -> str:
    """Why no name of the file is the torch module a fix may write (or a definition may use)."""
    if ctx.torch_alias is None and ctx.binds("torch"):
        if "torch" not in ctx._other_bindings and ctx._imports.get("torch") == {"torch"}:
            return "torch is imported only inside a function, not at module level"
        return "`torch` names something other than the torch module here"
    return "torch is not imported"


def _line(ctx: FileFacts, node: cst.CSTNode) -> str:
    position = ctx.positions.get(node)
    return "" if position is None else f" (line {position.start.line})"


def _short(ctx: FileFacts, node: cst.CSTNode, limit: int = 40) -> str:
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reuse_failure(ctx: FileFacts, node: cst.CSTNode, name: str) -> str:
    """Why `_reuse(ctx, node, name)` is None."""
    owner = _owner(ctx, node)
    for statement in _declarations(ctx, name) if _declared_later(ctx, node, name) else ():
        if _owner(ctx, statement) is owner:
            keyword = "global" if isinstance(statement, cst.Global) else "nonlocal"
            return f"`{keyword} {name}` comes after this use{_line(ctx, statement)}: a use of `{name}` here does not compile"
    scope = ctx.scope(node)
    if scope is None:
        return f"the scope of `{name}` here is unknown"
    # in the file's order: the scope's bindings come in no fixed order, and the message names one
    assignments = sorted(ctx.bindings(node, name), key=lambda a: _source_order(ctx, a.node))
    from devlint.analysis.derived import holds_a_device

    for assignment in sorted(assignments, key=lambda a: holds_a_device(ctx, a.node)):  # (stable: file order)
        if not _is_device_binding(ctx, assignment):
            return _not_a_device(ctx, assignment, name)
    if _deleted(ctx, node, name):
        statement = next((d for d in ctx.nodes(cst.Del)
                          if any(t.value == name for t in target_names(d.target))), None)
        return f"`del {name}`{_line(ctx, statement) if statement is not None else ''} may unbind `{name}` here"
    use = ctx.positions.get(node)
    if use is not None and assignments:
        use_at = (use.start.line, use.start.column)
        positions = [ctx.effective_position(a.node) for a in assignments if not isinstance(a.node, cst.Param)]
        if positions and all(p is not None and p > use_at for p in positions):
            first = min(assignments, key=lambda a: ctx.effective_position(a.node))
            return f"`{name}` is bound only later in this scope{_line(ctx, first.node)}, after this use"
    where = next((a for a in assignments if not _dominates(ctx, a, node)), None)
    detail = _line(ctx, where.node) if where is not None else ""
    return f"`{name}` may be unbound here: its binding{detail} is on a branch, in a loop or in a `try`"


def _not_a_device(ctx: FileFacts, assignment, name: str) -> str:
    """Says what `assignment` binds `name` to, which is not known to be a device."""
    node = assignment.node
    line = _line(ctx, node)
    if isinstance(node, cst.Param):
        parameters = ctx.parent(node)
        if isinstance(parameters, cst.Parameters) and node is parameters.star_arg:
            return f"`{name}` is a `*{name}` parameter{line}: a tuple, not a device"
        if isinstance(parameters, cst.Parameters) and node is parameters.star_kwarg:
            return f"`{name}` is a `**{name}` parameter{line}: a dict, not a device"
        if is_none(node.default):
            return f"`{name}` is a parameter whose default is None{line}: not known to be a device"
        if node.default is not None:
            return (f"`{name}` is a parameter with the default `{_short(ctx, node.default)}`{line}: a caller may "
                    "pass the CPU, where this code used the GPU")
        return f"`{name}` is a parameter{line}: a caller may pass the CPU, where this code used the GPU"
    parent = ctx.parent(node)
    statement = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else parent
    value = ctx.assigned_value(node)
    if value is not None:
        if string_value(value) is not None:
            kind = "a string"
        elif isinstance(value, (cst.Integer, cst.Float)) or (
                isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer)):
            kind = "a number"
        elif is_none(value):
            kind = "None"
        else:
            from devlint.analysis.derived import not_run_device_reason

            return f"`{name}` is bound to `{_short(ctx, value)}`{line}: {not_run_device_reason(ctx, value)}"
        return f"`{name}` is bound to {kind}, `{_short(ctx, value)}`{line}: not known to be a device"
    if isinstance(statement, cst.AnnAssign):
        return f"`{name}` is only annotated{line}: not known to be bound to a device"
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        kind = "function" if isinstance(node, cst.FunctionDef) else "class"
        return f"`{name}` is a {kind} defined in this file{line}, not a device"
    if isinstance(node, (cst.Import, cst.ImportFrom)) or isinstance(parent, cst.ImportAlias):
        return f"`{name}` is imported{line}: not known to be a device"
    holder = ctx.parent(parent) if isinstance(parent, cst.AsName) else None
    if isinstance(holder, cst.WithItem):
        return f"`{name}` is bound by a `with` statement{line}: not known to be a device"
    if isinstance(holder, cst.ExceptHandler):
        return f"`{name}` is bound to an exception{line}, not a device"
    if isinstance(holder, cst.ImportAlias):
        return f"`{name}` is imported{line}: not known to be a device"
    if isinstance(parent, (cst.For, cst.CompFor)):
        return f"`{name}` is a loop variable{line}, not known to be a device"
    if isinstance(parent, (cst.Element, cst.StarredElement)):
        return f"`{name}` is bound by unpacking{line}: not known to be a device"
    if isinstance(parent, cst.AugAssign):
        return f"`{name}` is changed by `{_short(ctx, parent)}`{line}: not known to be a device"
    return f"`{name}` is bound by something other than a plain assignment{line}: not known to be a device"


def _placement_failure(ctx: FileFacts, node: cst.CSTNode, name: str, found, star: bool) -> str:
    """Why `_placement(ctx, node, name, found)` is None."""
    star_note = " (named `" + name + "`: a star import may bind `" + name.lstrip("_") + "`)" if star else ""
    if ctx.torch_alias is None and ctx.binds("torch"):
        return torch_failure(ctx)
    if _deleted(ctx, node, name) or _declared_later(ctx, node, name):
        return _reuse_failure(ctx, node, name)
    at_import, function, statement = _evaluation_site(ctx, node)
    script = script_evidence(ctx)
    if function is None and found is _UNBOUND:
        main, main_statement = _main_block_site(ctx, node)
        if main is not None and main_statement is not None:
            function, statement = main, main_statement
    if function is not None:
        if statement is None:
            return (f"the function's body is on the `def` line: there is no line to define `{name}` on"
                    f"{star_note}")
        return _local_failure(ctx, function, statement, name, found) + star_note
    if _module_level_runs_in_time(ctx, node, at_import):
        return _insert_failure(ctx, node, name, found) + star_note
    if script and _is_library(ctx):
        return (f"{library_reason(ctx)}: a module-level `{name}` would query CUDA when it is imported, and this "
                "code runs in no function that could define it")
    return (f"a library module: a module-level `{name}` would query CUDA at import, and this code runs in no "
            "function that could define it")


def _local_failure(ctx: FileFacts, function, statement, name: str, found) -> str:
    """Why `_can_define_locally` is False."""
    facts = _facts(ctx)
    mention = next((m for m in facts.mentions(name) if _inside(ctx, m, function)), None)
    if mention is not None and found is _MODULE_MAYBE:
        first = next((s for s in ctx.binding_sites.get(name, ()) if ctx.enclosing(s, _SCOPE_OWNERS) is None), None)
        detail = _line(ctx, first) if first is not None else ""
        return (f"the module-level `{name}`{detail} may not be bound when this runs, and this function also "
                f"reads it{_line(ctx, mention)}: a local definition would change that read")
    if mention is not None:
        return (f"this function also uses the outer `{name}`{_line(ctx, mention)}: a local definition would "
                "change it")
    torch_site = local_torch_binding(ctx, function)
    if torch_site is not None:
        where = _line(ctx, torch_site).strip(" ()")
        return (f"`{ctx.torch_alias or 'torch'}` is bound in this function or one around it ({where}: "
                f"`{_short(ctx, torch_site).rstrip(', ')}`): a definition here would not read the torch module")
    kind = "function" if isinstance(function, cst.FunctionDef) else "main block"
    if isinstance(function, cst.FunctionDef) and function.name.value in facts.called_before_setting:
        return (f"`{function.name.value}` may run before `CUDA_VISIBLE_DEVICES` is set: a definition in it would "
                "query CUDA first")
    setting = next(iter(facts.events_in(function)), None)
    detail = _line(ctx, setting) if setting is not None else ""
    return (f"`CUDA_VISIBLE_DEVICES` is set later in this {kind}{detail}: a definition before this line would "
            "query CUDA first")


def _insert_failure(ctx: FileFacts, node: cst.CSTNode, name: str, found) -> str:
    """Why `_can_insert` is False (a site that runs at import, or a script's)."""
    if not _definition_reaches(ctx, node):
        return "this code runs above the end of the imports, where a module-level definition would go"
    index = insertion_index(ctx.module)
    for setting in _facts(ctx).settings:
        if _top_index(ctx, setting) >= index or any(
            isinstance(a, (cst.FunctionDef, cst.Lambda)) for a in ctx.ancestors(setting)
        ):
            return (f"`CUDA_VISIBLE_DEVICES` is set{_line(ctx, setting)} after the imports: a module-level "
                    "definition would query CUDA before it")
    body = list(ctx.module.body)
    if index == 0 and body and _starts_with_docstring(body[0]):
        return "the module docstring shares its line with code: a definition cannot go above it"
    if index < len(body) and _imports_future(body[index]):
        return "a `from __future__` import shares its line with code: a definition cannot go above it"
    for statement in _declarations(ctx, name):
        if _owner(ctx, statement) is ctx.module and _top_index(ctx, statement) >= index:
            return f"a module-level `global {name}`{_line(ctx, statement)} follows the imports"
    if found is _MODULE_MAYBE:
        first = next((a for a in sorted(ctx.bindings(node, name), key=lambda a: _source_order(ctx, a.node))
                      if _top_index(ctx, a.node) < index), None)
        detail = _line(ctx, first.node) if first is not None else ""
        return (f"`{name}` is assigned among the imports{detail} and may not be bound here: "
                "a definition after the imports would overwrite it")
    return "no module-level definition can be placed here"
