"""Which name a fix may write for "the device", and whether the fixer must define it.

A fix that writes `device` reuses a binding already in scope when that binding is a device: a
function parameter, or an assignment from `torch.device(...)`, a conditional expression, a call or
an attribute named `device` (`x.device`, `args.device`). A name bound to anything else (a plain
string such as "cuda", a function, an import, a loop variable) is never used: the fix becomes
display-only. When nothing binds the name, the fixer inserts one module-level definition.
"""

from __future__ import annotations

import libcst as cst

from devlint.context import FileContext
from devlint.syntax import dotted_name, string_value


def device_expression(options_expression: str, torch_name: str) -> str:
    if options_expression == "cuda":
        return f'{torch_name}.device("cuda" if {torch_name}.cuda.is_available() else "cpu")'
    if options_expression == "accelerator":
        return (f"{torch_name}.accelerator.current_accelerator() if {torch_name}.accelerator.is_available() "
                f'else {torch_name}.device("cpu")')
    return options_expression


def device_reference(ctx: FileContext, node: cst.CSTNode) -> tuple[str, bool] | None:
    """(name to write, whether a module-level definition must be added), or None if unsafe to write."""
    name = ctx.options.device_name
    if not ctx.binds(name) or not _may_be_visible(ctx, node, name):
        return (name, True) if _definition_reaches(ctx, node) else None  # nothing binds it in reach
    scope = ctx.scope(node)
    if scope is None:
        return None
    if name not in scope:
        return (name, True) if _definition_reaches(ctx, node) else None
    assignments = ctx.bindings(node, name)
    if assignments and all(_is_device_binding(ctx, a, node) for a in assignments):
        return (name, False)
    return None


_SCOPE_OWNERS = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp,
                 cst.GeneratorExp)


def _may_be_visible(ctx: FileContext, node: cst.CSTNode, name: str) -> bool:
    """Could a binding of `name` be in scope at `node`? False only when every one is certainly not.

    Answers the common case without LibCST's scope analysis of the whole file, which costs more than
    the parse on a large file: `device` bound only as a parameter or a local of other functions.
    Anything less plain (a module-level binding, one in a function or class around `node`, an
    import, a definition, `global`/`nonlocal`, a walrus, a match statement) is left to the analysis.
    """
    if name in ctx.imported_names or ctx.nodes(cst.Match) or any(
        d.name.value == name for kind in (cst.FunctionDef, cst.ClassDef) for d in ctx.nodes(kind)
    ):
        return True
    for kind in (cst.Global, cst.Nonlocal):
        if any(item.name.value == name for statement in ctx.nodes(kind) for item in statement.names):
            return True
    enclosing = {id(a) for a in ctx.ancestors(node)}
    for site in ctx.binding_sites.get(name, ()):
        if isinstance(ctx.parent(site), cst.NamedExpr):
            return True
        owner = ctx.enclosing(site, _SCOPE_OWNERS)
        if owner is None or id(owner) in enclosing:
            return True
    return False


def _definition_reaches(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A module-level definition inserted after the imports is bound before `node` runs."""
    if ctx.torch_alias is None and ctx.binds("torch"):
        return False  # `torch` names something that is not the torch module
    top = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Module):
            break
        top = ancestor
    index = insertion_index(ctx.module)
    body = list(ctx.module.body)
    return top not in body or body.index(top) >= index


def insertion_index(module: cst.Module) -> int:
    """After the docstring, `__future__` imports, the leading import block and the import of torch."""
    body = list(module.body)
    torch_import = None
    for i, statement in enumerate(body):
        if _imports_torch(statement):
            torch_import = i
            break
    index = _after_imports(body, 0)
    if torch_import is not None and torch_import >= index:
        # torch is imported below other code (`__author__ = ...`): after its import and the imports
        # right after it, which cannot use `device`, so as not to split that import block
        index = _after_imports(body, torch_import + 1)
    return index


def _after_imports(body: list[cst.CSTNode], index: int) -> int:
    """The index of the first statement from `index` on that is not an import (or the docstring)."""
    while index < len(body):
        statement = body[index]
        if isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) or (index == 0 and _is_docstring(s))
            for s in statement.body
        ):
            index += 1
            continue
        break
    return index


def _is_docstring(small: cst.BaseSmallStatement) -> bool:
    return isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))


def _imports_torch(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                if (dotted_name(alias.name) or "").split(".")[0] == "torch" and (
                    alias.asname is None or dotted_name(alias.name) == "torch"
                ):
                    return True
    return False


def _is_device_binding(ctx: FileContext, assignment, use: cst.CSTNode) -> bool:
    node = assignment.node
    if isinstance(node, cst.Param):
        # `device="cuda:1"` as a default would silently pick another GPU than `.cuda()` did
        return node.default is None or string_value(node.default) is None
    if not isinstance(node, cst.Name):
        return False
    parent = ctx.parent(node)
    statement = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else parent
    if isinstance(statement, cst.AnnAssign) and statement.value is not None:
        value = statement.value
    elif isinstance(statement, cst.Assign) and isinstance(parent, cst.AssignTarget):
        value = statement.value
    else:
        return False
    if assignment.scope is ctx.scope(use):
        defined, used = ctx.positions.get(node), ctx.positions.get(use)
        if defined is None or used is None or defined.start.line >= used.start.line:
            return False
    return is_device_value(value)


def is_device_value(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.IfExp):
        return True
    if isinstance(value, cst.Call):
        name = dotted_name(value.func) or ""
        return name.rsplit(".", 1)[-1] in {"device", "current_accelerator", "get_device", "select_device",
                                            "get_default_device", "default_device"} or "device" in name.lower()
    if isinstance(value, cst.Attribute):
        return value.attr.value in {"device", "DEVICE"}
    return False
