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
outside the file can subclass the class or reach its instances (`derived.self_device_failure`), and
`y.device` of a tensor the moved value is combined with (`derived_device`).
Certainly bound: an assignment earlier in a block that holds the use
(not one on a branch, in a loop or in a `try` that may not have run), or an earlier statement that
binds it on every path (both branches of an `if`/`else`, a `try` and each handler:
devlint.analysis.every_path, where a side of `if torch.cuda.is_available():` may hold the CPU), and no
`del` of the name in reach. A name bound to anything else (a plain string, a function, an import, a loop variable, a
parameter) is never used: the fix becomes display-only, with the reason in its title.

One walk (`device_walk`) answers both "which name" and, where none, "why not" (`NoDevice`), so the
reason a display-only title gives cannot drift from the decision. Where a definition goes:
devlint.analysis.device_definition; the reasons' words: devlint.analysis.device_reasons. Also here:
the torch name a fix may write (`torch_name`) and the device *type* (`device_type_reference`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import libcst as cst

from devlint.analysis.device_definition import (
    _has_star_import,
    _placement,
    definition_name,
)
from devlint.analysis.device_reasons import (
    _placement_failure,
    _reuse_failure,
    torch_failure,
)
from devlint.analysis.device_reuse import _UNBOUND, _reuse
from devlint.analysis.device_values import (
    _own_device_attribute,
    derived_device,
    holds_torch_device,
)
from devlint.facts import FileFacts
from devlint.syntax import dotted_name


@dataclass(frozen=True)
class NoDevice:
    """No device can be written at the site; `reason` says why, in words for a display-only title.
    The words are built on demand: most sites that ask never show them."""

    explain: Callable[[], str]

    @property
    def reason(self) -> str:
        return self.explain()


def device_walk(ctx: FileFacts, node: cst.CSTNode) -> tuple[str, bool] | NoDevice:
    """(name to write, whether a definition must be added), or why none can be written.

    The configured name is reused where it is certainly bound to the run's device (`_reuse`: not after
    a later `global`, a non-device binding, a `del`, a binding later in the scope or only on some
    paths). Otherwise a definition is placed (devlint.analysis.device_definition), under the
    configured name unless builtins or a star import may bind it, and only where the name it binds
    is not read without a binding in the file.
    """
    name = ctx.options.device_name
    found = _reuse(ctx, node, name)
    if found is None:
        return NoDevice(partial(_reuse_failure, ctx, node, name))
    if isinstance(found, tuple):
        return found
    star = _has_star_import(ctx)
    definition = definition_name(name, star)
    if definition is None:
        return NoDevice(lambda: f"`{name}` and `_{name}` are builtins or keywords: no name is free for a definition")
    if definition != name:
        found = _reuse(ctx, node, definition)
        if found is None:
            return NoDevice(partial(_reuse_failure, ctx, node, definition))
        if isinstance(found, tuple):
            return found
        if found is _UNBOUND and any(n.value == definition for n in ctx.nodes(cst.Name)):
            cause = "a star import may bind it" if star else "it may be a builtin"
            return NoDevice(lambda: f"`{definition}` is read without a binding in this file ({cause}): a definition "
                                    "would shadow it")
    if _placement(ctx, node, definition, found) is not None:
        return (definition, True)
    return NoDevice(partial(_placement_failure, ctx, node, definition, found, star and definition != name))


def device_reference(ctx: FileFacts, node: cst.CSTNode) -> tuple[str, bool] | None:
    """(name to write, whether a module-level definition must be added), or None if unsafe to write."""
    found = device_walk(ctx, node)
    return None if isinstance(found, NoDevice) else found


def device_failure(ctx: FileFacts, node: cst.CSTNode) -> str:
    """Why `device_reference(ctx, node)` is None: the real cause, in words for a display-only title.
    Asked only where it is None (a site with a device to write has no failure to explain)."""
    found = device_walk(ctx, node)
    if not isinstance(found, NoDevice):
        raise ValueError("device_failure asked where a device can be written")
    return found.reason


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


def unproven_reference(ctx: FileFacts, node: cst.CSTNode) -> tuple[str, str] | None:
    """(name, why a fix that writes it is unsafe) where the configured name is certainly bound at `node`
    to what may be the device `.cuda()` used, but is not proven to be (`derived.may_be_run_device`:
    a parameter, `args.device`, `torch.device(name)`, ...; not `None`, the CPU or `cuda:N` with N > 0).
    For a rule to offer an unsafe fix where `device_reference`/`device_source` offer none."""
    name = ctx.options.device_name
    if _reuse(ctx, node, name) is not None or not isinstance(_reuse(ctx, node, name, loose=True), tuple):
        return None
    return name, _reuse_failure(ctx, node, name)


# -- the torch name, and the device type, a fix may write -------------------------------------------
def torch_name(ctx: FileFacts, needs_definition: bool, written: cst.CSTNode | None = None) -> str | None:
    """The name a fix may write for the torch module, or None when none is bound.

    `written` is the flagged function (`th.cuda.synchronize`): the root it was written with is used
    first, so that the fix depends on the flagged code alone, not on imports another fix may add.
    When the fix also needs the inserted `device` definition, the fixer imports torch itself.
    """
    root = written_torch_root(written) if written is not None else None
    if root is not None:
        return root
    if ctx.torch_alias is not None:
        return ctx.torch_alias
    return "torch" if needs_definition and not ctx.binds("torch") else None


def written_torch_root(func: cst.CSTNode) -> str | None:
    """`th` for `th.cuda.X...` or `th.device`, a name already resolved to torch's; else None."""
    parts = (dotted_name(func) or "").split(".")
    if len(parts) >= 3 and parts[1] == "cuda" or len(parts) == 2 and parts[1] == "device":
        return parts[0]
    return None


def device_type_reference(ctx: FileFacts, node: cst.CSTNode,
                          written: cst.CSTNode | None = None) -> tuple[str, str, bool] | str:
    """(torch name, expression for the device *type*, needs_definition) for a fix at `node`, or why not.

    `device.type` only works on a `torch.device`: where the device is known to be one (a definition
    devlint inserts, a name bound from `torch.device(...)` or a tensor's `.device`, a parameter
    annotated `torch.device`, `self.device` set from one) the fix writes `device.type`; a `device`
    parameter without annotation or a name bound to a string conditional may well be `"cuda"`, so
    those are wrapped: `torch.device(device).type`.
    """
    reference = device_source(ctx, node)
    if reference is None and (unproven := unproven_reference(ctx, node)) is not None:
        reference = (unproven[0], False)  # a device not proven to be the run's: DL006's fixes are unsafe anyway
    if reference is None:
        return device_failure(ctx, node)
    name, needs_definition = reference
    torch = torch_name(ctx, needs_definition, written)
    if torch is None:
        return torch_failure(ctx)
    if needs_definition or holds_torch_device(ctx, node, name):
        return torch, f"{name}.type", needs_definition
    return torch, f"{torch}.device({name}).type", needs_definition
