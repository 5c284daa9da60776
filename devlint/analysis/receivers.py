"""Does a `load_state_dict` receiver copy the loaded tensors into storage it owns?

DL002 calls `map_location="cpu"` safe into `x.load_state_dict(torch.load(p))` only when it cannot change
what the program does on a GPU machine: the receiver copies each loaded tensor into its own tensors,
which stay where they are. Measured on an H200 and under the virtual GPU (DOMAIN.md):

- `nn.Module.load_state_dict(sd)` copies into the parameters and buffers; with `assign=True` the loaded
  tensors *become* them, so a module on the GPU ends up on the CPU;
- `torch.optim` optimizers and LR schedulers, and `GradScaler`, copy (an optimizer casts its state to its
  parameters' device);
- any other `load_state_dict` (an EMA helper of the project, an unknown object) may keep the tensors as
  they were loaded, on the CPU, and a later in-place `ema.shadow[k].add_(cuda_weight)` raises.

`doubt(ctx, call)` answers None where the receiver copies, else the reason it may not (for a fix title).
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.kinds import kinds_of
from devlint.facts import FileFacts
from devlint.analysis.kinds import MODULE
from devlint.syntax import dotted_name, find_arg

# Classes whose load_state_dict copies into state they own (every class of these namespaces does).
COPYING_NAMESPACES = ("torch.optim.",)
COPYING_CLASSES = frozenset({"torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.amp.grad_scaler.GradScaler",
                             "torch.cuda.amp.grad_scaler.GradScaler", "torch.cpu.amp.GradScaler"})


def doubt(ctx: FileFacts, call: cst.Call) -> str | None:
    """None when `call` (`recv.load_state_dict(...)`) copies into tensors `recv` owns; else why not."""
    func = call.func
    receiver = func.value if isinstance(func, cst.Attribute) else None
    shown = _shown(ctx, receiver)
    if receiver is not None and kinds_of(ctx).of(receiver) is MODULE:
        assign = find_arg(call, "assign", 2)
        if assign is None or (isinstance(assign.value, cst.Name) and assign.value.value == "False"):
            return None
        if isinstance(assign.value, cst.Name) and assign.value.value == "True":
            return f"with `assign=True` the loaded tensors become the parameters of `{shown}`, on the device they load to"
        return f"`assign=` may be True: the loaded tensors would become the parameters of `{shown}`, on the device they load to"
    if receiver is not None and _built_by_copying_class(ctx, receiver):
        return None
    return (f"`{shown}` is not known to be an nn.Module, optimizer or GradScaler: its `load_state_dict` may keep "
            "the tensors where they were loaded")


def _shown(ctx: FileFacts, receiver: cst.CSTNode | None) -> str:
    text = dotted_name(receiver) if receiver is not None else None
    if text is None and receiver is not None:
        text = ctx.code(receiver)
    text = text or "the receiver"
    return text if len(text) <= 40 else text[:37] + "..."


def _built_by_copying_class(ctx: FileFacts, receiver: cst.CSTNode) -> bool:
    """Is every value `receiver` may hold built by an optimizer, LR scheduler or GradScaler class?"""
    values = _values(ctx, receiver)
    return bool(values) and all(_copying_call(ctx, v) for v in values)


def _copying_call(ctx: FileFacts, value: cst.CSTNode) -> bool:
    """A call of such a class, or an annotation naming one."""
    if isinstance(value, cst.Call):
        value = value.func
    elif not isinstance(value, (cst.Name, cst.Attribute)):
        return False
    names = ctx.qualified_names(value)
    return any(n.startswith(COPYING_NAMESPACES) and n.rsplit(".", 1)[-1][:1].isupper() for n in names) or bool(
        names & COPYING_CLASSES)


def _values(ctx: FileFacts, receiver: cst.CSTNode) -> list[cst.CSTNode]:
    """The values of every binding of a name (plain `name = value` only), or of `self.x` in its class."""
    if isinstance(receiver, cst.Name):
        values = []
        for assignment in ctx.bindings(receiver):
            node = assignment.node
            if isinstance(node, cst.Param) and node.annotation is not None:
                values.append(node.annotation.annotation)  # `opt: torch.optim.Optimizer`
                continue
            value = ctx.assigned_value(node)
            if value is None:
                return []
            values.append(value)
        return values
    if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
        cls = ctx.enclosing(receiver, cst.ClassDef)
        if cls is None:
            return []
        values = []
        for target in ctx.nodes(cst.AssignTarget):
            node = target.target
            if (isinstance(node, cst.Attribute) and node.attr.value == receiver.attr.value
                    and isinstance(node.value, cst.Name) and node.value.value == "self"
                    and ctx.enclosing(node, cst.ClassDef) is cls):
                statement = ctx.parent(target)
                if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
                    return []
                values.append(statement.value)
        for statement in ctx.nodes(cst.AnnAssign):
            node = statement.target
            if (isinstance(node, cst.Attribute) and node.attr.value == receiver.attr.value
                    and ctx.enclosing(node, cst.ClassDef) is cls):
                if statement.value is None:
                    continue
                values.append(statement.value)
        return values
    return []
