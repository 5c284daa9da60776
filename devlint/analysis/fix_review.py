"""Every fix a rule reports is reviewed here (`review`, devlint.rule.Rule.report): display-only in
TorchScript (devlint.analysis.binding.torchscript_owner), and unsafe where the device name it writes may
be rebound before the fixed line runs:

**Later rebindings** (`rebinding`): the fixed line reads the module's `device` when it runs; anything
that may rebind that global after the definition the fix relies on (a reused binding or the one
inserted) and before the line runs redirects it: another module-level binding that may run later
(`if "--cpu" in sys.argv: device = ...`, a `match` capture, `global device` in a function), or a
write the scope analysis cannot see (`globals().update(vars(args))`, `globals()["device"] = ...`,
`vars()`, `exec`, `setattr(sys.modules[__name__], ...)`). Those apply to a reused module-level
`device` and to an inserted one alike; `builtins.device = ...` only to an inserted one (a
module-level binding already shadows the builtin; a new one would shadow it for the file's reads).
Such a fix is unsafe, with the reason in its title. A definition local to a function is not
concerned: nothing outside the function rebinds it.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from devlint.analysis.binding import (
    _FUNCTIONS,
    _match_captures,
    _scope_owner,
    torchscript_owner,
)
from devlint.facts import FileFacts
from devlint.model import Applicability, Fix
from devlint.syntax import dotted_name, string_value

# -- S7: later rebindings --------------------------------------------------------------------------
_GLOBALS_READS = frozenset({"get", "keys", "items", "values", "copy", "__contains__", "__getitem__"})


def rebinding(ctx: FileFacts, node: cst.CSTNode, name: str, inserted: bool) -> str | None:
    """Why the module-level `name` that the fix at `node` reads may hold something else when it runs
    (see the module docstring), or None. `inserted`: the fixer defines it (after the imports, or at
    the top of the main block), rather than reusing a binding of the file."""
    dynamic = _dynamic_write(ctx, name, inserted)
    if dynamic is not None:
        return dynamic
    scope = ctx.scope(ctx.module)
    assignments = [a for a in scope[name] if hasattr(a, "node")] if scope is not None and name in scope else []
    reused = None if inserted else _reused_binding(ctx, node, name)
    others = [a.node for a in assignments if reused is None or a.node is not reused.node]
    others += [n for n in _match_captures(ctx) if n.value == name and _scope_owner(ctx, n) is None]
    at_import = not any(isinstance(a, _FUNCTIONS) for a in ctx.ancestors(node))
    site = _position(ctx, node)
    for other in sorted(others, key=lambda n: _position(ctx, n)):
        if _binds_the_run_device(ctx, other):
            continue  # `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` again
        in_function = ctx.enclosing(other, _FUNCTIONS) is not None
        if not in_function:
            at = _position(ctx, other)
            if reused is not None and at < _position(ctx, reused.node) and not ctx.loop_around_both(other, reused.node):
                continue  # overwritten by the binding the fix reuses, which runs before the fixed line
            if at_import and at > site and not ctx.loop_around_both(other, node):
                continue  # runs after the fixed line, which runs once, at import
        what = "a function's `global` assignment" if in_function else "a later binding"
        return f"`{name}` may be rebound by {what} (line {_line(ctx, other)}) before the fixed line runs"
    return None


def _binds_the_run_device(ctx: FileFacts, target: cst.CSTNode) -> bool:
    """Is `target` assigned the GPU `.cuda()` uses where CUDA is available: `torch.device("cuda")`,
    `"cuda:0"`, or such a device when `torch.cuda.is_available()`, else anything?"""
    from devlint.analysis.every_path import branch_run_device  # or the CPU on the side without CUDA

    value = ctx.assigned_value(target) if isinstance(target, cst.Name) else None
    return value is not None and (_run_device(ctx, value) or branch_run_device(ctx, target, value))


def _run_device(ctx: FileFacts, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Call) and len(value.args) == 1 and not value.args[0].keyword and (
            "torch.device" in ctx.qualified_names(value.func)):
        value = value.args[0].value
    if isinstance(value, cst.IfExp):
        test = value.test
        return (isinstance(test, cst.Call) and "torch.cuda.is_available" in ctx.qualified_names(test.func)
                and _run_device(ctx, value.body))
    return string_value(value) in ("cuda", "cuda:0")


def _reused_binding(ctx: FileFacts, node: cst.CSTNode, name: str):
    """The last binding of `name` that has certainly run when `node` runs (the one the fix reuses)."""
    from devlint.analysis.flow import _dominates

    dominating = [a for a in ctx.bindings(node, name) if _dominates(ctx, a, node)]
    return max(dominating, key=lambda a: _position(ctx, a.node)) if dominating else None


def _position(ctx: FileFacts, node: cst.CSTNode) -> tuple[int, int]:
    position = ctx.positions.get(node)
    return (0, 0) if position is None else (position.start.line, position.start.column)


def _line(ctx: FileFacts, node: cst.CSTNode) -> int:
    return _position(ctx, node)[0]


def unseen_rebinding(ctx: FileFacts, name: str) -> str | None:
    """Why the module-level `name` may be re-bound where no assignment shows it (`exec(...)`, a write to
    `globals()`), or None: such a name is not bound once and for all (DL004's device variables)."""
    return _dynamic_write(ctx, name, False)


def _dynamic_write(ctx: FileFacts, name: str, inserted: bool) -> str | None:
    """A write to the module's namespace (or, for an inserted definition, the builtins) that the scope
    analysis does not see, by which `name` may be rebound. (Once per file: every fix asks.)"""
    cache = ctx.memo.setdefault("binding_dynamic", {})
    if (name, inserted) not in cache:
        cache[name, inserted] = _find_dynamic_write(ctx, name, inserted)
    return cache[name, inserted]


def _find_dynamic_write(ctx: FileFacts, name: str, inserted: bool) -> str | None:
    for call in ctx.nodes(cst.Call):
        func = call.func
        if not isinstance(func, cst.Name) or ctx.binds(func.value):
            continue
        if func.value in ("exec", "eval"):
            return f"`{func.value}(...)` (line {_line(ctx, call)}) may rebind `{name}`"
        if func.value in ("globals", "vars") and not call.args and not _only_read(ctx, call):
            return f"`{func.value}()` is written to (line {_line(ctx, call)}): it may rebind `{name}`"
        if func.value == "setattr" and len(call.args) >= 2 and _namespace(ctx, call.args[0].value, inserted) and (
                string_value(call.args[1].value) in (None, name)):
            return f"`setattr` (line {_line(ctx, call)}) may rebind `{name}`"
    for attribute in ctx.nodes(cst.Attribute):
        if attribute.attr.value == name and _is_target(ctx, attribute) and _namespace(ctx, attribute.value, inserted):
            if _namespace(ctx, attribute.value, False):
                return f"`{_short(ctx, attribute)} = ...` (line {_line(ctx, attribute)}) rebinds `{name}`"
            return (f"`{_short(ctx, attribute)} = ...` (line {_line(ctx, attribute)}) binds a builtin `{name}`: a "
                    "module-level definition would shadow it for this file's reads")
    for subscript in ctx.nodes(cst.Subscript):
        if (_is_target(ctx, subscript) and dotted_name(subscript.value) == "__builtins__" and inserted
                and not ctx.binds("__builtins__")):
            return f"`__builtins__[...] = ...` (line {_line(ctx, subscript)}) may bind `{name}`"
    return None


def _only_read(ctx: FileFacts, call: cst.Call) -> bool:
    """`globals()["x"]`, `"x" in globals()`, `globals().get("x")`: a use that writes nothing."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Subscript):
        return not _is_target(ctx, parent)
    if isinstance(parent, (cst.ComparisonTarget, cst.Comparison)):
        return True
    return isinstance(parent, cst.Attribute) and parent.attr.value in _GLOBALS_READS


def _is_target(ctx: FileFacts, node: cst.CSTNode) -> bool:
    parent = ctx.parent(node)
    if isinstance(parent, (cst.Element, cst.StarredElement)):
        parent = ctx.enclosing(node, (cst.AssignTarget, cst.Call, cst.Subscript, cst.Comparison))
    return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del))


def _namespace(ctx: FileFacts, value: cst.BaseExpression, inserted: bool) -> bool:
    """Is `value` the module's own namespace (`sys.modules[__name__]`, `__main__`), or, for an inserted
    definition, the builtins?"""
    text = re.sub(r"\s+", "", ctx.code(value))
    qualified = ctx.qualified_names(value) or {text}
    if text.startswith("sys.modules[") or "__main__" in qualified or text == "__main__":
        return True
    return inserted and bool({"builtins", "__builtin__", "__builtins__"} & (qualified | {text}))


def _short(ctx: FileFacts, node: cst.CSTNode) -> str:
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= 40 else text[:37] + "..."


# -- applied to every reported fix ----------------------------------------------------------------
def review(ctx: FileFacts, node: cst.CSTNode, fix: Fix) -> Fix:
    """`fix`, made display-only in TorchScript and unsafe where the device name it writes may be rebound."""
    if fix.applicability is Applicability.DISPLAY_ONLY:
        return fix
    owner = torchscript_owner(ctx, node)
    if owner is not None:
        what = f"`{owner.name.value}`" if hasattr(owner, "name") else "this code"
        return Fix(f"{fix.title} (TorchScript compiles {what} (line {_line(ctx, owner)}) and cannot read a "
                   "Python `device` global or compile a CUDA query)", Applicability.DISPLAY_ONLY)
    if fix.applicability is not Applicability.SAFE:
        return fix
    reason = _rebinding_of_written_name(ctx, node, fix)
    if reason is None:
        return fix
    return dataclasses.replace(fix, title=f"{fix.title} ({reason})", applicability=Applicability.UNSAFE)


def _rebinding_of_written_name(ctx: FileFacts, node: cst.CSTNode, fix: Fix) -> str | None:
    from devlint.analysis.device_definition import (  # (on first use, like the other device modules)
        _has_star_import,
        definition_name,
        definition_placement,
    )

    if fix.needs_device:
        placement = definition_placement(ctx, node)
        if placement is None or isinstance(placement.function, cst.FunctionDef):
            return None  # a local definition: nothing outside the function rebinds it
        name = definition_name(ctx.options.device_name, _has_star_import(ctx))
        return rebinding(ctx, node, name, inserted=True) if name is not None else None
    name = ctx.options.device_name
    written = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)(?!\s*=[^=])")
    if not any(written.search(edit.content) for edit in fix.edits):
        return None
    scope = ctx.scope(node)
    if scope is None or name not in scope:
        return None
    assignments = [a for a in scope[name] if hasattr(a, "node")]
    if not assignments or any(a.scope is not scope.globals for a in assignments):
        return None  # a parameter or a local of the function: not the module's
    return rebinding(ctx, node, name, inserted=False)
