"""Where the fixer defines the device a fix needs, and under which name.

When nothing binds the name in reach (or only module-level assignments that may not have run), the
fixer defines it, `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`, which
queries CUDA where it runs. So it goes where it runs no earlier than the code that needs it:

- **At module level, after the import header** (its imports, and the set-up between them:
  `matplotlib.use("Agg")`, `sys.path.insert(0, ROOT)`, `os.environ[...] = ...`, `try: import apex`;
  a site in that set-up gets no module-level definition), after one blank line, as ruff's and
  isort's import check want (the blank lines that followed the imports follow it), when the fix
  site itself runs at import (a module-level statement, a class body, a decorator or default of a
  module-level definition; not a lambda's body), or when the file is a script
  (`script_evidence`): it has `if __name__ == "__main__":`, it is a notebook, or its top-level
  statements do work: a `for`/`while`/`with` statement, an `await`,
  `args = parser.parse_args()`, or a bare call statement other than library set-up
  (logging, `warnings`, `sys.path`, `__all__`, registrations: a callee whose last part contains
  `register`, `setLevel`, `addHandler`, `basicConfig`, `filterwarnings`, `simplefilter`, ...).
  It comes before every module-level assignment of the name; one that may run before a fixed line
  (a branch, a function's `global` assignment) makes the fix unsafe (devlint.analysis.binding). A file
  that other project files import is a library here, whatever its main block says
  (devlint.analysis.importers): a site in its main block gets a definition there, a site in a function one in
  that function.
- **Otherwise, in the function whose body holds the fix site** (a module imported by others must
  not query CUDA at import time): right before the statement of that function's body that holds
  the site, indented like it (so after the docstring, and before the decorators of a nested
  definition whose decorator or default holds the site). It dominates the use; a lambda, a
  comprehension or a class body inside the function sees it as a closure variable. The innermost
  function counts: a site in a nested function or a method gets the definition there. The
  function must not mention the name otherwise (no read, `global` or `nonlocal` of it, which the
  new local would capture). Per pass the fixer writes one definition per function, before the
  earliest statement that holds a site; fixes in later statements wait for the next pass, which
  reuses the definition as a dominating binding. Never in a function that binds the torch name, or
  inside one that does (`import torch.distributed` anywhere in it, `def run(x, torch=None)`): the
  definition would not read the torch module. A function whose body is on the `def` line
  (`def f(): return x.cuda()`) has no statement to put it before: display-only. A site in the
  body of `if __name__ == "__main__":` where no module-level definition may go (a
  `CUDA_VISIBLE_DEVICES` setting) is placed the same way in that body, when nothing binds the name.
- **Never before a `CUDA_VISIBLE_DEVICES` assignment on the same execution path**
  (`os.environ["CUDA_VISIBLE_DEVICES"] = ...`, `os.environ.setdefault`/`update`, `os.putenv`,
  `monkeypatch.setenv`, or an `os.environ` write whose key is not a literal): querying CUDA first
  freezes the visible devices. If the file sets it anywhere but in a module-level statement above
  the insertion point, there is no module-level definition; a function-local one is written only
  when no setting runs after it in that function (lexically from the holding statement on, or
  through a call, by name, to a function of the file that sets it), and when the function is not
  called (by name, directly or through others) before a setting. Otherwise display-only.

A definition never shadows what the analysis cannot see: after a star import (`from torch import
*` binds `device`) or for a builtin name the definition is called `_device` (the configured name
with a leading underscore), never a name the file reads without binding it. Nor does a
module-level one land where it would not compile or would change the module: above a `global`
statement naming it, a `from __future__` import or the docstring.
"""
from __future__ import annotations

import builtins
import keyword
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.binding import library_reason, local_torch_binding
from devlint.analysis.device_reuse import _MODULE_MAYBE, _UNBOUND, _reuse
from devlint.analysis.flow import (
    _declarations,
    _declared_later,
    _deleted,
    _index,
    _inside,
    _owner,
)
from devlint.analysis.top_level import (
    _imports_future,
    _is_main_check,
    _starts_with_docstring,
    insertion_index,
    script_evidence,
)
from devlint.analysis.visible_devices import _facts
from devlint.facts import FileFacts


@dataclass(frozen=True)
class Placement:
    """Where the fixer defines the device for one fix site: at module level after the imports
    (`function` None), or in `function` (or the main block's `if`), right before `statement` of its body."""

    function: cst.FunctionDef | cst.If | None = None
    statement: cst.BaseStatement | None = None


MODULE_LEVEL = Placement()


def definition_placement(ctx: FileFacts, node: cst.CSTNode) -> Placement | None:
    """Where the definition that `device_reference(ctx, node)` asked for goes (None: nowhere)."""
    name = ctx.options.device_name
    definition = definition_name(name, _has_star_import(ctx))
    if definition is None:
        return None
    found = _reuse(ctx, node, definition)
    if found is None or isinstance(found, tuple):
        return None
    return _placement(ctx, node, definition, found)


def _placement(ctx: FileFacts, node: cst.CSTNode, name: str, found) -> Placement | None:
    """(Once per site: the rule asks, then devlint.analysis.binding.review and the fixer.)"""
    cache = ctx.memo.setdefault("device_placements", {})
    key = (id(node), name, found)
    if key not in cache:
        cache[key] = _find_placement(ctx, node, name, found)
    return cache[key]


def _find_placement(ctx: FileFacts, node: cst.CSTNode, name: str, found) -> Placement | None:
    if ctx.torch_alias is None and ctx.binds("torch"):
        return None  # `torch` names something that is not the torch module
    if _deleted(ctx, node, name) or _declared_later(ctx, node, name):
        return None
    at_import, function, statement = _evaluation_site(ctx, node)
    if _module_level_runs_in_time(ctx, node, at_import) and _can_insert(ctx, node, name, found):
        return MODULE_LEVEL
    if function is None and found is _UNBOUND:
        function, statement = _main_block_site(ctx, node)  # the main block: a body run once, like main()'s
    if function is not None and statement is not None and _can_define_locally(ctx, function, statement, name):
        return Placement(function, statement)
    return None


def _module_level_runs_in_time(ctx: FileFacts, node: cst.CSTNode, at_import: bool) -> bool:
    """Does a module-level definition run no earlier than the code that needs it? Where the site runs at
    import (not in the main block of a file others import: that block does not run then), or in a
    script that no project file imports (devlint.analysis.binding.library_reason)."""
    if at_import and (_main_block_site(ctx, node)[0] is None or not _is_library(ctx)):
        return True
    return script_evidence(ctx) and not _is_library(ctx)


def _is_library(ctx: FileFacts) -> bool:
    return script_evidence(ctx) and library_reason(ctx) is not None


def _main_block_site(ctx: FileFacts, node: cst.CSTNode):
    """(the top-level `if __name__ == "__main__":`, the statement of its body holding `node`) or Nones."""
    path = [node]
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None, None
        if (isinstance(ancestor, cst.If) and path[-1] is ancestor.body and isinstance(ancestor.body, cst.IndentedBlock)
                and isinstance(ctx.parent(ancestor), cst.Module) and _is_main_check(ancestor.test)):
            return ancestor, path[-2] if len(path) >= 2 else None
        path.append(ancestor)
    return None, None


def _evaluation_site(ctx: FileFacts, node: cst.CSTNode):
    """(runs at import, the innermost function whose body runs it, the statement of that body holding it).

    A decorator, a default or an annotation runs where its definition does; a lambda's body runs
    later (when called), but in the scope around it.
    """
    path = [node]
    in_lambda = False
    for ancestor in ctx.ancestors(node):
        child = path[-1]
        if isinstance(ancestor, cst.Lambda) and child is ancestor.body:
            in_lambda = True
        elif isinstance(ancestor, cst.FunctionDef) and child is ancestor.body:
            statement = path[-2] if isinstance(child, cst.IndentedBlock) and len(path) >= 2 else None
            return False, ancestor, statement
        elif isinstance(ancestor, cst.Module):
            return not in_lambda, None, None
        path.append(ancestor)
    return False, None, None


def _can_define_locally(ctx: FileFacts, function: cst.FunctionDef, statement: cst.BaseStatement,
                        name: str) -> bool:
    """Does `name = ...` right before `statement` of `function`'s body bind it for the site, changing
    nothing else and querying CUDA before no `CUDA_VISIBLE_DEVICES` setting?"""
    facts = _facts(ctx)
    if any(_inside(ctx, each, function) for each in facts.mentions(name)):
        return False  # a read, `global`/`nonlocal`, or a binding the new local would change
    if local_torch_binding(ctx, function) is not None:
        return False  # the definition would read that binding, not the torch module
    if not facts.settings:
        return True
    if isinstance(function, cst.FunctionDef) and function.name.value in facts.called_before_setting:
        return False
    index = _index(function.body.body, statement)
    for event in facts.events_in(function):
        holder = _holder(ctx, event, function)
        if holder is None or _index(function.body.body, holder) >= index:
            return False
    return True


def _holder(ctx: FileFacts, node: cst.CSTNode, function: cst.FunctionDef) -> cst.CSTNode | None:
    """The statement of `function`'s body that holds `node`."""
    child = node
    for ancestor in ctx.ancestors(node):
        if ancestor is function.body:
            return child
        child = ancestor
    return None


def statement_start(statement: cst.CSTNode) -> cst.CSTNode:
    """The node whose position is where `statement` starts: its first decorator, if it has any."""
    decorators = getattr(statement, "decorators", ())
    return decorators[0] if decorators else statement


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


def _has_star_import(ctx: FileFacts) -> bool:
    return any(isinstance(node.names, cst.ImportStar) for node in ctx.nodes(cst.ImportFrom))


def _is_builtin(name: str) -> bool:
    return name != "_" and name in vars(builtins)  # `_` is only set in an interactive session


def _can_insert(ctx: FileFacts, node: cst.CSTNode, name: str, found) -> bool:
    """Does a module-level `name = ...` after the imports bind `name` for `node`, breaking nothing?"""
    if not _definition_reaches(ctx, node) or _deleted(ctx, node, name) or _declared_later(ctx, node, name):
        return False
    body = list(ctx.module.body)
    index = insertion_index(ctx.module)
    for setting in _facts(ctx).settings:
        if _top_index(ctx, setting) >= index or any(
            isinstance(a, (cst.FunctionDef, cst.Lambda)) for a in ctx.ancestors(setting)
        ):
            return False  # the definition would query CUDA before the variable is set
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


def _top_index(ctx: FileFacts, node: cst.CSTNode) -> int:
    top = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Module):
            break
        top = ancestor
    return _index(ctx.module.body, top)


def _definition_reaches(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """A module-level definition inserted after the imports is bound before `node` runs."""
    if ctx.torch_alias is None and ctx.binds("torch"):
        return False  # `torch` names something that is not the torch module
    position = _top_index(ctx, node)
    return position < 0 or position >= insertion_index(ctx.module)
