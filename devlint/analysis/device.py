"""Which name a fix may write for "the device", and where the fixer must define it.

A fix that writes `device` reuses a binding already in scope when that binding is proven to hold the
run's device (the GPU `.cuda()` used, whenever CUDA is available; see `devlint.analysis.derived`) and is
certainly bound where the fix writes it: an assignment from `torch.device("cuda")`, a conditional on
`torch.cuda.is_available()` such as `torch.device("cuda" if torch.cuda.is_available() else "cpu")`, the
configured device expression, or a tensor's `.device` of one proven on that device. Never a parameter
(a caller may pass the CPU, whatever its default or annotation), `torch.device("cpu")`, `cuda:N` with
N > 0, `args.device` or a call devlint cannot see into. `device_source` (for rules that write an
expression, not a name; `device_reference` keeps returning names only) also offers `self.device` in a
method other than `__init__` when the class's `__init__` sets it from such a device value before
anything that could call the method, nothing else assigns an attribute of that name, and nothing
outside the file can subclass the class or reach its instances (`_derived.self_device_failure`), and
`y.device` of a tensor the moved value is combined with (`derived_device`).
Certainly bound: an assignment earlier in a block that holds the use
(not one on a branch, in a loop or in a `try` that may not have run), and no `del` of the name in
reach. A name bound to anything else (a plain string, a function, an import, a loop variable, a
parameter) is never used: the fix becomes display-only, with the reason in its title.

## Where a definition goes

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
import re
from dataclasses import dataclass

import libcst as cst

from devlint.facts import FileFacts, target_names
from devlint.analysis.binding import library_reason, local_torch_binding
from devlint.syntax import dotted_name, is_none, string_value


def device_expression(options_expression: str, torch_name: str) -> str:
    if options_expression == "cuda":
        return f'{torch_name}.device("cuda" if {torch_name}.cuda.is_available() else "cpu")'
    if options_expression == "accelerator":
        return (f"{torch_name}.accelerator.current_accelerator() if {torch_name}.accelerator.is_available() "
                f'else {torch_name}.device("cpu")')
    return options_expression


def device_reference(ctx: FileFacts, node: cst.CSTNode) -> tuple[str, bool] | None:
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
    return (definition, True) if _placement(ctx, node, definition, found) is not None else None


def device_failure(ctx: FileFacts, node: cst.CSTNode) -> str:
    """Why `device_reference(ctx, node)` is None: the real cause, in words for a display-only title.

    It follows `device_reference` step by step: the configured name is bound where the fix would
    write it, but not certainly to a device (`_reuse`: a later `global`, a non-device binding, a
    `del`, a binding later in the scope or only on some paths), the name a definition would bind is
    taken (builtins, a star import), or no definition can be placed (`_placement`: torch names
    something else, a `CUDA_VISIBLE_DEVICES` setting, a one-line `def`, a function that reads the
    name, a library module whose code runs at import, ...).
    """
    name = ctx.options.device_name
    found = _reuse(ctx, node, name)
    if found is None:
        return _reuse_failure(ctx, node, name)
    star = _has_star_import(ctx)
    definition = definition_name(name, star)
    if definition is None:
        return f"`{name}` and `_{name}` are builtins or keywords: no name is free for a definition"
    if definition != name:
        found = _reuse(ctx, node, definition)
        if found is None:
            return _reuse_failure(ctx, node, definition)
        if found is _UNBOUND and any(n.value == definition for n in ctx.nodes(cst.Name)):
            cause = "a star import may bind it" if star else "it may be a builtin"
            return f"`{definition}` is read without a binding in this file ({cause}): a definition would shadow it"
    return _placement_failure(ctx, node, definition, found, star and definition != name)


def torch_failure(ctx: FileFacts) -> str:
    """Why no name of the file is the torch module a fix may write (or a definition may use)."""
    if ctx.torch_alias is None and ctx.binds("torch"):
        if "torch" not in ctx._other_bindings and ctx._imports.get("torch") == {"torch"}:
            return "torch is imported only inside a function, not at module level"
        return "`torch` names something other than the torch module here"
    return "torch is not imported"


def _source_order(ctx: FileFacts, node: cst.CSTNode) -> tuple[int, int]:
    position = ctx.positions.get(node)
    return (0, 0) if position is None else (position.start.line, position.start.column)


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


def device_source(ctx: FileFacts, node: cst.CSTNode,
                  value: cst.CSTNode | None = None) -> tuple[str, bool] | None:
    """Like `device_reference`, but the text may be an expression, not only a name. For rules that
    write the text as an expression (`cst.parse_expression`), not as a `cst.Name`. In this order:

    1. a device name already in scope (`_reuse`);
    2. one derived from the code at hand: `self.device` (see `_own_device_attribute`), then `y.device`
       of a tensor that `value` (the expression whose result lives on the device: the `.cuda()` call,
       the factory given `device=`) is combined with, see `derived_device`;
    3. a definition (`device_reference`).

    A derived device does not depend on the name `device`: it is offered even where `device` names
    something else.
    """
    name = ctx.options.device_name
    found = _reuse(ctx, node, name)
    if isinstance(found, tuple):
        return found
    attribute = _own_device_attribute(ctx, node, name)
    if attribute is not None:
        return (attribute, False)
    if value is not None:
        derived = derived_device(ctx, value)
        if derived is not None:
            return (derived, False)
    if found is None:
        return None
    return device_reference(ctx, node)


# Functions of torch whose tensor arguments must share one device (a CPU tensor beside a CUDA one fails).
_COMBINING_FUNCTIONS = frozenset(
    """
    cat concat concatenate stack hstack vstack dstack column_stack matmul mm bmm mv addmm add sub subtract mul
    multiply div divide true_divide where maximum minimum fmax fmin atan2 pow dot outer inner kron cross cdist
    dist bilinear lerp
    """.split()
)


def derived_device(ctx: FileFacts, value: cst.CSTNode) -> str | None:
    """`y.device` where the expression `value` (whose result lives on the run's device: `x.cuda()`,
    `torch.ones(3, device="cuda")`) is, maybe through placement-keeping tensor methods (`.float()`,
    `.view(...)`), an operand of a binary operation (`value + y`) or an argument beside `y` of a torch
    function that needs one device (`torch.cat([value, y])`, `torch.matmul(value, y)`), and `y` is
    proven a tensor on the run's device (`proven_on_device`): by its kind a tensor, its binding certainly
    ran and put it on the device `.cuda()` uses (`y = x.cuda()`, `y = x.to("cuda")`, `y = x.to(device)`
    of a proven `device`), and nothing may have moved it in place since. (A CPU tensor with no
    dimensions combines with a CUDA one, so "the original would have failed" proves nothing.)
    `y` must be a name bound in this scope only by plain assignments (no parameter, `global`,
    `nonlocal`, `del`, loop variable or unpacking), the last one before the use must dominate it,
    and none may follow it in a loop around the use.
    """
    from devlint.analysis.placement import KEEPING_METHODS

    child = value
    while True:  # `x.cuda().float()`: the result still lives where `x.cuda()` does
        parent = ctx.parent(child)
        call = ctx.parent(parent) if isinstance(parent, cst.Attribute) else None
        if (isinstance(parent, cst.Attribute) and parent.value is child and isinstance(call, cst.Call)
                and call.func is parent and parent.attr.value in KEEPING_METHODS):
            child = call
            continue
        break
    candidates: list[cst.BaseExpression] = []
    parent = ctx.parent(child)
    if isinstance(parent, cst.BinaryOperation):
        candidates = [parent.right if parent.left is child else parent.left]
    else:
        element = container = None
        if isinstance(parent, cst.Element):
            element, container = parent, ctx.parent(parent)
            if not isinstance(container, (cst.List, cst.Tuple)):
                return None
            parent = ctx.parent(container)
        elif not isinstance(parent, cst.Arg):
            return None
        call = ctx.parent(parent)
        if not (isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star
                and isinstance(call, cst.Call) and _combines(ctx, call)):
            return None
        if container is not None:  # (only now: the elements of every list, per element, were quadratic)
            candidates = [e.value for e in container.elements if isinstance(e, cst.Element) and e is not element]
        for arg in call.args:
            if arg is not parent and arg.keyword is None and not arg.star:
                candidates.append(arg.value)
    for candidate in candidates:
        if isinstance(candidate, cst.Name) and proven_on_device(ctx, candidate):
            return f"{candidate.value}.device"
    return None


def proven_on_device(ctx: FileFacts, name: cst.Name) -> bool:
    """Is `name`, where it is read, a tensor (by its kind: not a model's output that may be a float, not
    a container with its own `.cuda()`) bound by an assignment that certainly ran, of a value proven on
    the run's device, and not moved in place since (`y.data = y.data.cpu()`)?"""
    from devlint.analysis.derived import is_tensor, on_run_device

    return is_tensor(ctx, name) and on_run_device(ctx, name)


def _combines(ctx: FileFacts, call: cst.Call) -> bool:
    return any(n.startswith("torch.") and n.count(".") == 1 and n.split(".", 1)[1] in _COMBINING_FUNCTIONS
               for n in ctx.qualified_names(call.func))


def holds_torch_device(ctx: FileFacts, node: cst.CSTNode, text: str) -> bool:
    """Is `text` (what `device_source` wrote at `node`) certainly a `torch.device`, not a string or an
    index, so that `text.type` works? `y.device` of a tensor; `self.device` set from `torch.device(...)`
    or a tensor's `.device`; a name whose every binding is `torch.device(...)`, a tensor's `.device`, or
    a parameter annotated `torch.device` (without a default, or with a `torch.device(...)` default)."""
    if text.endswith(".device") and text.count(".") == 1 and not text.startswith("self."):
        return True  # derived: `y.device` of a tensor on the device
    if "." in text:
        values = _own_device_values(ctx, node, text.split(".", 1)[1])
        return bool(values) and all(_is_torch_device_value(ctx, v) or (
            isinstance(v, cst.Name) and _holds_torch_device_name(ctx, v, v.value)) for v in values)
    return _holds_torch_device_name(ctx, node, text)


def _holds_torch_device_name(ctx: FileFacts, node: cst.CSTNode, text: str) -> bool:
    assignments = ctx.bindings(node, text)
    if not assignments:
        return False
    for assignment in assignments:
        target = assignment.node
        if isinstance(target, cst.Param):
            annotation = target.annotation.annotation if target.annotation is not None else None
            if annotation is None or "torch.device" not in ctx.qualified_names(annotation):
                return False
            if target.default is not None and not _is_torch_device_value(ctx, target.default):
                return False
            continue
        value = ctx.assigned_value(target) if isinstance(target, cst.Name) else None
        if value is None or not _is_torch_device_value(ctx, value):
            return False
    return True


def _is_torch_device_value(ctx: FileFacts, value: cst.BaseExpression) -> bool:
    """`torch.device(...)`, or `.device` of a tensor (by kind) or of `next(m.parameters())`."""
    from devlint.analysis.kinds import TENSOR, kinds_of

    if isinstance(value, cst.Call):
        return "torch.device" in ctx.qualified_names(value.func)
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        receiver = value.value
        if isinstance(receiver, cst.Call) and dotted_name(receiver.func) == "next" and len(receiver.args) == 1:
            inner = receiver.args[0].value
            return (isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute)
                    and inner.func.attr.value in ("parameters", "buffers") and not inner.args)
        return kinds_of(ctx).of(receiver) is TENSOR
    return False


def _own_device_attribute(ctx: FileFacts, node: cst.CSTNode, name: str) -> str | None:
    """`self.device` in a method (not `__init__`) of a class whose `__init__` sets `self.device` from a
    value proven to be the run's device in a statement of its body, and that binds the attribute to
    nothing else anywhere in the file (no other assignment, no `device` method or property), where
    the attribute is certainly set before the method can run and nothing outside the file can set it
    (`_derived.self_device_failure`)."""
    found = _own_device_found(ctx, node, name)
    return None if found is None else f"{found[0]}.{name}"


def _own_device_values(ctx: FileFacts, node: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values `__init__` sets `self.<name>` from, when `_own_device_attribute` offers it."""
    found = _own_device_found(ctx, node, name)
    return [] if found is None else found[1]


def _own_device_found(ctx: FileFacts, node: cst.CSTNode, name: str):
    method = ctx.enclosing(node, (cst.FunctionDef, cst.Lambda))
    if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__":
        return None
    if _evaluation_site(ctx, node)[1] is not method:
        return None  # a default or a decorator of the method runs where `self` is not bound
    body = ctx.parent(method)
    cls = ctx.parent(body) if isinstance(body, cst.IndentedBlock) else None
    if not isinstance(cls, cst.ClassDef) or method.decorators:
        return None
    params = method.params.params
    if not params or method.params.posonly_params:
        return None
    receiver = params[0].name.value
    if any(each.value == receiver for each in _facts(ctx).mentions(receiver)
           if _inside(ctx, each, method) and _binds(ctx, each)):
        return None  # `self = ...` in the method
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None or not isinstance(init.body, cst.IndentedBlock) or not init.params.params:
        return None
    init_self = init.params.params[0].name.value
    values, first = [], None
    for statement in init.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and _is_self_attribute(small.targets[0].target, init_self, name)
                        and _init_device_value(ctx, init, small.value, name)):
                    values.append(small.value)
                    first = first or statement
    if not values:
        return None
    from devlint.analysis.derived import self_device_failure

    if self_device_failure(ctx, cls, init, first, name) is not None:
        return None
    for target in ctx.nodes(cst.Attribute):
        if target.attr.value == name and _is_assigned(ctx, target):
            statement = ctx.parent(ctx.parent(target)) if isinstance(ctx.parent(target), cst.AssignTarget) else None
            if not (isinstance(statement, cst.Assign) and ctx.enclosing(statement, (cst.FunctionDef,)) is init
                    and ctx.parent(ctx.parent(statement)) is init.body and _init_device_value(ctx, init, statement.value, name)):
                return None  # set elsewhere (another object's, a subclass's, a branch): not known
    if any(isinstance(s, cst.FunctionDef) and s.name.value == name for s in cls.body.body):
        return None
    return receiver, values


def _init_device_value(ctx: FileFacts, init: cst.FunctionDef, value: cst.BaseExpression, name: str) -> bool:
    """A value proven to be the run's device (`_derived.run_device_value`). Not a parameter of `__init__`
    (`self.device = device`): a caller may pass the CPU."""
    from devlint.analysis.derived import run_device_value

    return run_device_value(ctx, value)


def _is_self_attribute(target: cst.BaseExpression, receiver: str, name: str) -> bool:
    return (isinstance(target, cst.Attribute) and target.attr.value == name
            and isinstance(target.value, cst.Name) and target.value.value == receiver)


def _is_assigned(ctx: FileFacts, node: cst.CSTNode) -> bool:
    parent = ctx.parent(node)
    if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) or isinstance(parent, cst.Del):
        return True
    if isinstance(parent, (cst.Element, cst.StarredElement)):
        return True  # `a, self.device = ...` (conservatively: any tuple or list holding it)
    return isinstance(parent, (cst.For, cst.CompFor, cst.WithItem, cst.AsName, cst.NamedExpr))


def _binds(ctx: FileFacts, name: cst.Name) -> bool:
    parent = ctx.parent(name)
    return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.AsName,
                               cst.NamedExpr, cst.Element, cst.StarredElement, cst.NameItem))


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


def _is_variable(ctx: FileFacts, name: cst.Name) -> bool:
    parent = ctx.parent(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    return not (isinstance(parent, cst.ImportAlias) and parent.asname is not None)  # `import a.device as b`


def _inside(ctx: FileFacts, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(a is container for a in ctx.ancestors(node))


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


# -- is the file a script? ---------------------------------------------------------------------------
_NOTEBOOK_TAG = re.compile(r"#\s*devlint-nb-* cell \d+")  # how devlint.notebook marks joined cells
_SETUP_ROOTS = frozenset({"logging", "warnings", "__all__", "sys", "logger", "_logger", "log", "_log", "LOGGER",
                          "LOG", "typing"})
_SETUP_CALLS = frozenset({"setLevel", "addHandler", "basicConfig", "filterwarnings", "simplefilter",
                          "dictConfig", "captureWarnings", "disable_warnings", "load_library", "wrap",
                          "set_printoptions", "install", "extend", "append", "update", "use"})


def script_evidence(ctx: FileFacts) -> bool:
    """Is the file run as a program (so a module-level definition runs no earlier than its code)?

    `if __name__ == "__main__":` at top level, a notebook (devlint's joined cells), or top-level
    statements that do work: a loop, a `with`, an `await`, `args = parser.parse_args()`, or a
    bare call that is not library set-up (logging, warnings, `sys.path`, `__all__`, registrations).
    """
    return _facts(ctx).script


def _is_script(module: cst.Module) -> bool:
    for line in (*module.header, *module.footer):
        if line.comment is not None and _NOTEBOOK_TAG.match(line.comment.value):
            return True
    for statement in module.body:
        if isinstance(statement, (cst.For, cst.While, cst.With)):
            return True
        if isinstance(statement, cst.If) and _is_main_check(statement.test):
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Expr) and _does_work(small.value):
                    return True
                value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
                if isinstance(value, cst.Await) or (
                    isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                    and value.func.attr.value in ("parse_args", "parse_known_args")
                ):
                    return True
    return False


def _is_main_check(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return (isinstance(test.comparisons[0].operator, cst.Equal)
            and any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides)
            and any(string_value(s) == "__main__" for s in sides))


def _does_work(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Await):
        return True
    if not isinstance(value, cst.Call):
        return False
    callee = dotted_name(value.func) or ""
    if not callee:
        return True  # `Net()(x)`, `f()[0]()`
    parts = callee.split(".")
    last = parts[-1]
    return not (parts[0] in _SETUP_ROOTS or last in _SETUP_CALLS or "register" in last.lower()
                or "log" in parts[0].lower())


# -- where CUDA_VISIBLE_DEVICES is set --------------------------------------------------------------
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


class _Facts:
    """Per-file facts for placing a definition, computed once."""

    def __init__(self, ctx: FileFacts) -> None:
        self.ctx = ctx
        self.script = _is_script(ctx.module)
        self.settings = _visible_devices_settings(ctx)
        self._setters: set[str] | None = None
        self._called_before: set[str] | None = None
        self._calls: dict[int, list[cst.Call]] | None = None

    def mentions(self, name: str) -> list[cst.Name]:
        """The names `name` that are variables (not attributes, keywords)."""
        cache = self.__dict__.setdefault("_mentions", {})
        if name not in cache:
            cache[name] = [n for n in self.ctx.nodes(cst.Name) if n.value == name and _is_variable(self.ctx, n)]
        return cache[name]

    @property
    def setters(self) -> set[str]:
        """Names of the file's functions that set the variable, directly or through calls by name."""
        if self._setters is None:
            ctx = self.ctx
            functions = ctx.nodes(cst.FunctionDef)
            setters = {f.name.value for f in functions if any(_inside(ctx, s, f) for s in self.settings)}
            grew = True
            while grew:
                grew = False
                for function in functions:
                    if function.name.value not in setters and any(
                        _called_name(call) in setters for call in self._calls_in(function)
                    ):
                        setters.add(function.name.value)
                        grew = True
            self._setters = setters
        return self._setters

    def _calls_in(self, function: cst.FunctionDef) -> list[cst.Call]:
        if self._calls is None:
            self._calls = {}
            for call in self.ctx.nodes(cst.Call):
                for ancestor in self.ctx.ancestors(call):
                    if isinstance(ancestor, cst.FunctionDef):
                        self._calls.setdefault(id(ancestor), []).append(call)
        return self._calls.get(id(function), [])

    def events_in(self, function: cst.FunctionDef) -> list[cst.CSTNode]:
        """Settings in `function` and calls from it to functions that set the variable."""
        events = [s for s in self.settings if _inside(self.ctx, s, function)]
        setters = self.setters
        calls = self._calls_in(function) if isinstance(function, cst.FunctionDef) else _subtree(function, cst.Call)
        events += [c for c in calls if _called_name(c) in setters]
        return events

    @property
    def called_before_setting(self) -> set[str]:
        """Names of functions that may run before a setting: called earlier in a body that sets it
        (or earlier in a setter's body than its call to another setter), and what they call."""
        if self._called_before is None:
            ctx = self.ctx
            names: set[str] = set()
            setters = self.setters
            events = list(self.settings) + [c for c in ctx.nodes(cst.Call) if _called_name(c) in setters]
            for event in events:
                child = event
                for ancestor in ctx.ancestors(event):
                    if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                        for sibling in ancestor.body:
                            if sibling is child:
                                break
                            names.update(_called_name(c) for c in _subtree(sibling, cst.Call))
                    if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                        break
                    child = ancestor
            by_name: dict[str, list[cst.FunctionDef]] = {}
            for function in ctx.nodes(cst.FunctionDef):
                by_name.setdefault(function.name.value, []).append(function)
            queue = [n for n in names if n in by_name]
            while queue:
                for function in by_name[queue.pop()]:
                    for call in self._calls_in(function):
                        callee = _called_name(call)
                        if callee in by_name and callee not in names:
                            names.add(callee)
                            queue.append(callee)
            names.discard(None)
            self._called_before = names
        return self._called_before


def _subtree(node: cst.CSTNode, kind: type):
    """The nodes of `kind` that run with `node`: not those in the bodies of functions and lambdas it defines."""
    if isinstance(node, kind):
        yield node
    for child in node.children:
        if not (isinstance(node, cst.FunctionDef) and child is node.body) and not (
            isinstance(node, cst.Lambda) and child is node.body
        ):
            yield from _subtree(child, kind)


def _facts(ctx: FileFacts) -> _Facts:
    facts = ctx.memo.get("device_placement_facts")
    if facts is None:
        facts = ctx.memo["device_placement_facts"] = _Facts(ctx)
    return facts


def _called_name(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def sets_visible_devices(ctx: FileFacts) -> bool:
    """Does the file (maybe) set `CUDA_VISIBLE_DEVICES`? Then a CUDA query devlint writes may run first."""
    return bool(_visible_devices_settings(ctx))


def _visible_devices_settings(ctx: FileFacts) -> list[cst.CSTNode]:
    """Every node that may set `CUDA_VISIBLE_DEVICES` in the process's environment."""
    found: list[cst.CSTNode] = []
    for target in ctx.nodes(cst.AssignTarget):
        subscript = target.target
        if isinstance(subscript, cst.Subscript) and _is_environ(ctx, subscript.value) and len(subscript.slice) == 1:
            index = subscript.slice[0].slice
            key = string_value(index.value) if isinstance(index, cst.Index) else None
            if key is None or key == CUDA_VISIBLE_DEVICES:
                found.append(target)
    for call in ctx.nodes(cst.Call):
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _SETTERS:
            continue
        first = call.args[0].value if call.args else None
        if _is_environ(ctx, func.value):
            method = func.attr.value
            if method in ("setdefault", "__setitem__") and string_value(first) in (None, CUDA_VISIBLE_DEVICES):
                found.append(call)
            elif method == "update" and _may_set_key(call):
                found.append(call)
        elif func.attr.value == "setenv" or ctx.qualified_names(func) == {"os.putenv"}:
            if first is not None and string_value(first) in (None, CUDA_VISIBLE_DEVICES):
                found.append(call)  # `os.putenv`, pytest's `monkeypatch.setenv`
    for call in ctx.nodes(cst.Call):
        first = call.args[0].value if call.args else None
        if (isinstance(call.func, cst.Name) and first is not None and ctx.qualified_names(call.func) == {"os.putenv"}
                and string_value(first) in (None, CUDA_VISIBLE_DEVICES)):
            found.append(call)  # `from os import putenv`
    return found


_SETTERS = frozenset({"setdefault", "__setitem__", "update", "putenv", "setenv"})


def _is_environ(ctx: FileFacts, node: cst.BaseExpression) -> bool:
    return "os.environ" in ctx.qualified_names(node)


def _may_set_key(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == CUDA_VISIBLE_DEVICES:
                return True
            continue
        if not isinstance(arg.value, cst.Dict):
            return True  # `os.environ.update(env)`: any key
        for element in arg.value.elements:
            if not isinstance(element, cst.DictElement) or string_value(element.key) in (None, CUDA_VISIBLE_DEVICES):
                return True
    return False


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


# What `_reuse` says besides a reference or None (visible, but not certainly a bound device):
_UNBOUND = "unbound"  # nothing binds the name where the fix writes it
_MODULE_MAYBE = "module-maybe"  # only module-level device assignments that may not have run there


def unproven_reference(ctx: FileFacts, node: cst.CSTNode) -> tuple[str, str] | None:
    """(name, why a fix that writes it is unsafe) where the configured name is certainly bound at `node`
    to what may be the device `.cuda()` used, but is not proven to be (`_derived.may_be_run_device`:
    a parameter, `args.device`, `torch.device(name)`, ...; not `None`, the CPU or `cuda:N` with N > 0).
    For a rule to offer an unsafe fix where `device_reference`/`device_source` offer none."""
    name = ctx.options.device_name
    if _reuse(ctx, node, name) is not None or not isinstance(_reuse(ctx, node, name, loose=True), tuple):
        return None
    return name, _reuse_failure(ctx, node, name)


def _reuse(ctx: FileFacts, node: cst.CSTNode, name: str, loose: bool = False):
    """(name, False) when `name` is certainly a bound device at `node`, else None, _UNBOUND or _MODULE_MAYBE.
    `loose`: a binding that may be the run's device counts (`unproven_reference`). Module-level bindings
    that may not have run (`_MODULE_MAYBE`) need only hold a device: the definition the fixer then
    writes is the run's device (what a later module-level rebinding does is the placement's concern)."""
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
    from devlint.analysis.derived import holds_a_device, may_be_run_device

    if not all(holds_a_device(ctx, a.node) for a in assignments) or _deleted(ctx, node, name):
        return None
    if any(_dominates(ctx, a, node) for a in assignments):
        # reused only where every binding that may reach here is the run's device (`loose`: may be)
        proven = (lambda a: may_be_run_device(ctx, a.node)) if loose else (lambda a: _is_device_binding(ctx, a))
        return (name, False) if all(proven(a) for a in assignments) else None
    if all(a.scope is scope.globals for a in assignments):
        return _MODULE_MAYBE
    return None  # a local (or an enclosing function's) binding that may not have run: no global helps


def _dominates(ctx: FileFacts, assignment, use: cst.CSTNode) -> bool:
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


def _owner(ctx: FileFacts, node: cst.CSTNode) -> cst.CSTNode:
    """The function, class or module whose body holds `node` (as a statement or in one)."""
    return ctx.enclosing(node, _STATEMENT_OWNERS) or ctx.module


def _declarations(ctx: FileFacts, name: str):
    for kind in (cst.Global, cst.Nonlocal):
        for statement in ctx.nodes(kind):
            if any(item.name.value == name for item in statement.names):
                yield statement


def _declared_later(ctx: FileFacts, node: cst.CSTNode, name: str) -> bool:
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


def _deleted(ctx: FileFacts, node: cst.CSTNode, name: str) -> bool:
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


_SCOPE_OWNERS = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp,
                 cst.GeneratorExp)


def _may_be_visible(ctx: FileFacts, node: cst.CSTNode, name: str) -> bool:
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


def _definition_reaches(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """A module-level definition inserted after the imports is bound before `node` runs."""
    if ctx.torch_alias is None and ctx.binds("torch"):
        return False  # `torch` names something that is not the torch module
    position = _top_index(ctx, node)
    return position < 0 or position >= insertion_index(ctx.module)


def insertion_index(module: cst.Module) -> int:
    """After the docstring, `__future__` imports, the leading import header (with any module-level
    `global` statements in it, and the set-up between its imports: `matplotlib.use(...)`,
    `sys.path.insert(...)`, `try: import x` ...) and the import of torch."""
    if _last_insertion[0] is module:  # asked once per fix: the header's set-up check walks whole statements
        return _last_insertion[1]
    index = _insertion_index(module)
    _last_insertion[:] = [module, index]
    return index


_last_insertion: list = [None, 0]  # (module, its insertion index): modules are immutable


def _insertion_index(module: cst.Module) -> int:
    body = list(module.body)
    torch_import = None
    for i, statement in enumerate(body):
        if _imports_torch(statement):
            torch_import = i
            break
    index = _after_header(body, 0)
    if torch_import is not None and torch_import >= index:
        # torch is imported below other code (`__author__ = ...`): after its import and the imports
        # right after it, which cannot use `device`, so as not to split that import block
        index = _after_header(body, torch_import + 1)
    return index


def _after_header(body: list[cst.CSTNode], index: int) -> int:
    """The index after the last import of the import header that starts at `index`.

    The header is a run of import lines (and the docstring) with, between them, the set-up that
    files put among their imports: simple statements (`matplotlib.use("Agg")`,
    `sys.path.insert(0, ROOT)`, `os.environ[...] = ...`, `__version__ = ...`) and `if`/`try`/`with`
    blocks that import (`try: import apex` ...). A definition inside the header would split it
    (ruff's and isort's import check, E402 for the imports after it); set-up after the last import
    is not part of it.
    """
    end = index
    while index < len(body):
        statement = body[index]
        if _is_import_line(statement, index) or _is_import_block(statement):
            index += 1
            end = index
        elif _is_setup(statement):
            index += 1
        else:
            break
    return end


def _is_import_line(statement: cst.CSTNode, index: int) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom, cst.Global)) or (index == 0 and _is_docstring(s))
        for s in statement.body
    )


def _is_import_block(statement: cst.CSTNode) -> bool:
    """`try: import apex` / `except ImportError: apex = None`, `if TYPE_CHECKING: from x import Y`:
    a block of imports and what stands in for them (assignments, `pass`, `raise`, a warning)."""
    if not isinstance(statement, (cst.If, cst.Try, cst.TryStar, cst.With)) or (
        isinstance(statement, cst.If) and _is_main_check(statement.test)
    ):
        return False
    if any(not isinstance(inner, (cst.If, cst.Try, cst.TryStar, cst.With))
           for inner in _subtree(statement, cst.BaseCompoundStatement)):
        return False  # a loop, a definition
    smalls = list(_subtree(statement, cst.BaseSmallStatement))
    return any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in smalls) and all(
        isinstance(s, (*_SETUP_STATEMENTS, cst.Raise)) for s in smalls
    )


_SETUP_STATEMENTS = (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Pass, cst.Import, cst.ImportFrom,
                     cst.Global)
# Calls that compute a path for `sys.path` (`ROOT = os.path.dirname(os.path.abspath(__file__))`).
_PATH_ROOTS = frozenset({"os", "osp", "path", "pathlib", "Path", "PurePath", "str", "dirname", "abspath", "join",
                         "realpath", "normpath", "expanduser", "getcwd", "getenv"})
_PATH_METHODS = frozenset({"resolve", "absolute", "joinpath", "expanduser", "parent", "parents", "dirname"})


def _is_setup(statement: cst.CSTNode) -> bool:
    """Set-up between two imports of a header (see `_after_header`): library set-up calls (`matplotlib.use`,
    `sys.path.insert`, `warnings.filterwarnings`, `os.environ.setdefault`, ...), assignments to
    `os.environ[...]`, `sys.*` or a dunder name, a path computed for `sys.path`, and blocks of imports."""
    if isinstance(statement, cst.SimpleStatementLine):
        return all(_is_setup_small(s) for s in statement.body)
    if isinstance(statement, (cst.If, cst.Try, cst.TryStar, cst.With)) and not (
        isinstance(statement, cst.If) and _is_main_check(statement.test)
    ):
        return any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in _subtree(statement, cst.BaseSmallStatement))
    return False


def _is_setup_small(small: cst.BaseSmallStatement) -> bool:
    if isinstance(small, (cst.Import, cst.ImportFrom, cst.Global, cst.Pass)):
        return True
    if isinstance(small, cst.Expr):
        return isinstance(small.value, cst.Call) and _is_setup_call(small.value)
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
        targets = [small.target]
    else:
        return False
    value = small.value
    if value is None:
        return True
    if all(isinstance(t, cst.Name) and t.value.startswith("__") and t.value.endswith("__") for t in targets):
        return True  # `__version__ = "1.0"`
    if all(isinstance(t, (cst.Subscript, cst.Attribute)) and _root(t) in ("os", "sys") for t in targets):
        return True  # `os.environ["X"] = ...`, `sys.path[0:0] = ...`
    if isinstance(value, cst.Call) and _is_setup_call(value) and (dotted_name(value.func) or "").endswith(
            "importorskip"):
        return True  # `np = pytest.importorskip("numpy")`
    return all(isinstance(t, cst.Name) for t in targets) and all(
        _is_path_call(call) for call in _subtree(value, cst.Call)
    )


def _root(target: cst.BaseExpression) -> str | None:
    while isinstance(target, (cst.Subscript, cst.Attribute)):
        target = target.value
    return target.value if isinstance(target, cst.Name) else None


def _is_setup_call(call: cst.Call) -> bool:
    callee = dotted_name(call.func) or ""
    if callee.startswith(("os.environ.", "os.putenv", "site.", "pytest.importorskip", "faulthandler.")):
        return True
    return bool(callee) and not _does_work(call)


def _is_path_call(call: cst.Call) -> bool:
    callee = dotted_name(call.func)
    if callee is not None:
        parts = callee.split(".")
        return parts[0] in _PATH_ROOTS or parts[-1] in _PATH_METHODS
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in _PATH_METHODS


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


def _is_device_binding(ctx: FileFacts, assignment) -> bool:
    """Is the binding proven to hold the run's device (`_derived.run_device_value`)? Never a parameter:
    a caller may pass `torch.device("cpu")`, and `.cuda()` did not follow it."""
    from devlint.analysis.derived import run_device_value

    value = _bound_value(ctx, assignment.node)
    return value is not None and run_device_value(ctx, value)


def _bound_value(ctx: FileFacts, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The value of `name = value` / `name: T = value` binding `node`, else None."""
    if not isinstance(node, cst.Name):
        return None
    parent = ctx.parent(node)
    statement = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else parent
    if isinstance(statement, cst.AnnAssign) and statement.value is not None:
        return statement.value
    if isinstance(statement, cst.Assign) and isinstance(parent, cst.AssignTarget):
        return statement.value
    return None
