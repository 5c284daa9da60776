"""Which name a fix may write for "the device", and whether the fixer must define it.

A fix that writes `device` reuses a binding already in scope when that binding is a device (a
function parameter, or an assignment from `torch.device(...)`, a conditional expression, a call or
an attribute named `device`: `x.device`, `args.device`) and is certainly bound where the fix writes
it: a parameter, or an assignment earlier in a block that holds the use (not one on a branch, in a
loop or in a `try` that may not have run), and no `del` of the name in reach. A name bound to
anything else (a plain string such as "cuda", a function, an import, a loop variable) is never used:
the fix becomes display-only.

When nothing binds the name in reach, or only module-level assignments that may not have run (on a
branch, or after the use), the fixer inserts one module-level definition after the imports; it comes
before every such assignment, which still overwrites it where the program meant it to. A definition
never shadows what the analysis cannot see: after a star import (`from torch import *` binds
`device`) or for a builtin name the definition is called `_device` (the configured name with a
leading underscore), never a name the file reads without binding it. Nor does it land where it
would not compile or would change the module: above a `global` statement naming it, a
`from __future__` import or the docstring. Otherwise the fix is display-only.
"""

from __future__ import annotations

import builtins
import keyword

import libcst as cst

from devlint.context import FileContext, target_names
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
    found = _reuse(ctx, node, name)
    if found is None or isinstance(found, tuple):
        return found
    definition = definition_name(name, _has_star_import(ctx))
    if definition is None:
        return None
    if definition != name:
        found = _reuse(ctx, node, definition)
        if found is None or isinstance(found, tuple):
            return found
        if found is _UNBOUND and any(n.value == definition for n in ctx.nodes(cst.Name)):
            return None  # read without a binding in the file: it comes from somewhere devlint cannot see
    return (definition, True) if _can_insert(ctx, node, definition, found) else None


def definition_name(name: str, star_import: bool) -> str | None:
    """The name an inserted definition binds: the configured one unless something unseen may bind it.

    The fixer asks again on the fixed text, so this depends only on what the fixes never change:
    whether the file has a star import, and the builtins.
    """
    if not star_import and not _is_builtin(name):
        return name
    alternative = f"_{name}"
    if _is_builtin(alternative) or keyword.iskeyword(alternative):
        return None
    return alternative


def has_star_import(module: cst.Module) -> bool:
    """`from m import *` anywhere (Python allows it only at module level, maybe under `if`/`try`)."""
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            nonlocal found
            found = found or isinstance(node.names, cst.ImportStar)
            return False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False  # a star import is a SyntaxError there

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    module.visit(_Finder())
    return found


def _has_star_import(ctx: FileContext) -> bool:
    return any(isinstance(node.names, cst.ImportStar) for node in ctx.nodes(cst.ImportFrom))


def _is_builtin(name: str) -> bool:
    return name != "_" and name in vars(builtins)  # `_` is only set in an interactive session


# What `_reuse` says besides a reference or None (visible, but not certainly a bound device):
_UNBOUND = "unbound"  # nothing binds the name where the fix writes it
_MODULE_MAYBE = "module-maybe"  # only module-level device assignments that may not have run there


def _reuse(ctx: FileContext, node: cst.CSTNode, name: str):
    """(name, False) when `name` is certainly a bound device at `node`, else None, _UNBOUND or _MODULE_MAYBE."""
    if not ctx.binds(name) or not _may_be_visible(ctx, node, name):
        return _UNBOUND  # nothing binds it in reach
    if _declared_later(ctx, node, name):
        return None
    scope = ctx.scope(node)
    if scope is None:
        return None
    if name not in scope:
        return _UNBOUND
    assignments = ctx.bindings(node, name)
    if not assignments:
        return _UNBOUND  # a builtin
    if not all(_is_device_binding(ctx, a) for a in assignments) or _deleted(ctx, node, name):
        return None
    if any(_dominates(ctx, a, node) for a in assignments):
        return (name, False)
    if all(a.scope is scope.globals for a in assignments):
        return _MODULE_MAYBE
    return None  # a local (or an enclosing function's) binding that may not have run: no global helps


def _dominates(ctx: FileContext, assignment, use: cst.CSTNode) -> bool:
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


def _owner(ctx: FileContext, node: cst.CSTNode) -> cst.CSTNode:
    """The function, class or module whose body holds `node` (as a statement or in one)."""
    return ctx.enclosing(node, _STATEMENT_OWNERS) or ctx.module


def _declarations(ctx: FileContext, name: str):
    for kind in (cst.Global, cst.Nonlocal):
        for statement in ctx.nodes(kind):
            if any(item.name.value == name for item in statement.names):
                yield statement


def _declared_later(ctx: FileContext, node: cst.CSTNode, name: str) -> bool:
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


def _deleted(ctx: FileContext, node: cst.CSTNode, name: str) -> bool:
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


def _can_insert(ctx: FileContext, node: cst.CSTNode, name: str, found) -> bool:
    """Does a module-level `name = ...` after the imports bind `name` for `node`, breaking nothing?"""
    if not _definition_reaches(ctx, node) or _deleted(ctx, node, name) or _declared_later(ctx, node, name):
        return False
    body = list(ctx.module.body)
    index = insertion_index(ctx.module)
    if index == 0 and body and _starts_with_docstring(body[0]):
        return False  # `"""Doc."""; x = 1`: a definition above it would take the docstring's place
    if index < len(body) and _imports_future(body[index]):
        return False  # `from __future__ import annotations; x = 1` must stay first
    for statement in _declarations(ctx, name):
        if _owner(ctx, statement) is ctx.module and _top_index(ctx, statement) >= index:
            return False  # `global device` after an assignment to it does not compile
    if found is _MODULE_MAYBE:
        # the module's own assignments must come after the definition, to overwrite it as meant
        return all(_top_index(ctx, a.node) >= index for a in ctx.bindings(node, name))
    return True


def _top_index(ctx: FileContext, node: cst.CSTNode) -> int:
    top = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Module):
            break
        top = ancestor
    return _index(ctx.module.body, top)


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
    position = _top_index(ctx, node)
    return position < 0 or position >= insertion_index(ctx.module)


def insertion_index(module: cst.Module) -> int:
    """After the docstring, `__future__` imports, the leading import block (with any module-level
    `global` statements in it) and the import of torch."""
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
            isinstance(s, (cst.Import, cst.ImportFrom, cst.Global)) or (index == 0 and _is_docstring(s))
            for s in statement.body
        ):
            index += 1
            continue
        break
    return index


def _starts_with_docstring(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and _is_docstring(statement.body[0])


def _imports_future(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(s, cst.ImportFrom) and not s.relative and dotted_name(s.module) == "__future__"
        for s in statement.body
    )


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


def _is_device_binding(ctx: FileContext, assignment) -> bool:
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
