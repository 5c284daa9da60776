"""Small helpers shared by the rules about hard-coded CUDA (DL004-DL008, DL015).

Device-string literals, qualified-name tests, the torch name a fix may write, and fixes that put the
run-time `device` (see `_device.py`) where a literal CUDA device was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from devlint.context import FileContext
from devlint.model import Applicability, Fix
from devlint.rules._device import device_reference
from devlint.syntax import dotted_name, name_words, string_value

_CUDA = re.compile(r"cuda(?::(\d+))?\Z")

# The legacy per-dtype tensor types of `torch.cuda` and the dtype each one holds.
LEGACY_TENSOR_DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16",
    "ByteTensor": "uint8", "CharTensor": "int8", "ShortTensor": "int16", "IntTensor": "int32",
    "LongTensor": "int64", "BoolTensor": "bool",
}


@dataclass(frozen=True)
class CudaLiteral:
    """A literal CUDA device: `"cuda"` (index None), `"cuda:1"` (1) or `f"cuda:{rank}"` (computed)."""

    index: int | None
    computed: bool = False

    @property
    def names_a_gpu(self) -> bool:
        """True when a rewrite to a plain `device` would drop which GPU was meant (`cuda:N`, N > 0)."""
        return self.computed or (self.index is not None and self.index > 0)


def cuda_literal(node: cst.CSTNode | None) -> CudaLiteral | None:
    """`"cuda"`, `"cuda:N"` or `f"cuda:{...}"` as a literal, else None."""
    value = string_value(node)
    if value is not None:
        match = _CUDA.match(value)
        if match is None:
            return None
        return CudaLiteral(int(match.group(1)) if match.group(1) is not None else None)
    if isinstance(node, cst.FormattedString) and len(node.parts) == 2:
        text, expression = node.parts
        if (isinstance(text, cst.FormattedStringText) and text.value == "cuda:"
                and isinstance(expression, cst.FormattedStringExpression)):
            return CudaLiteral(None, computed=True)
    return None


def qualified(ctx: FileContext, node: cst.CSTNode, names) -> str | None:
    """Which of `names` `node` (a dotted name) refers to through the imports, or None.

    A name that several imports bind (`from torch_musa.core.amp import autocast` in one branch,
    `from torch.cuda.amp import autocast` in another) counts only when every one of them is in `names`.
    """
    found = ctx.qualified_names(node)
    return min(found) if found and found <= names else None


def torch_name(ctx: FileContext, needs_definition: bool, written: cst.CSTNode | None = None) -> str | None:
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


def is_last_word_device(target: cst.BaseExpression) -> bool:
    """`device`, `self.device`, `train_device`, `DEVICE`: a name whose last word is "device"."""
    name = dotted_name(target)
    if name is None:
        return False
    words = name_words(name.rsplit(".", 1)[-1])
    return bool(words) and words[-1] == "device"


def replace_with_device(rule, node: cst.CSTNode, title: str, unsafe: bool) -> Fix:
    """Replace `node` with the run-time `device`; display-only where `device` cannot be written."""
    reference = device_reference(rule.ctx, node)
    if reference is None:
        return rule.display_only(f"{title} (define a torch.device first: `device` is bound to something else)")
    name, needs_definition = reference
    applicability = Applicability.UNSAFE if unsafe else Applicability.SAFE
    if unsafe:
        title += " (drops the device index)"
    return rule.fix(title, applicability, rule.replace(node, name), needs_device=needs_definition)


def device_type_reference(ctx: FileContext, node: cst.CSTNode,
                          written: cst.CSTNode | None = None) -> tuple[str, str, bool] | None:
    """(torch name, expression for the device *type*, needs_definition) for a fix at `node`, or None.

    `device.type` only works on a `torch.device`: a `device` parameter or a name bound to a string
    conditional may well be `"cuda"`, so those are wrapped: `torch.device(device).type`.
    """
    reference = device_reference(ctx, node)
    if reference is None:
        return None
    name, needs_definition = reference
    torch = torch_name(ctx, needs_definition, written)
    if torch is None:
        return None
    if needs_definition or _bound_to_torch_device(ctx, node, name):
        return torch, f"{name}.type", needs_definition
    return torch, f"{torch}.device({name}).type", needs_definition


def _bound_to_torch_device(ctx: FileContext, node: cst.CSTNode, name: str) -> bool:
    assignments = ctx.bindings(node, name)
    if not assignments:
        return False
    for assignment in assignments:
        target = assignment.node
        parent = ctx.parent(target)
        statement = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else parent
        value = getattr(statement, "value", None) if isinstance(statement, (cst.Assign, cst.AnnAssign)) else None
        if not (isinstance(value, cst.Call) and "torch.device" in ctx.qualified_names(value.func)):
            return False
    return True


def in_comparison(ctx: FileContext, node: cst.CSTNode) -> bool:
    """`x.device == torch.device("cuda")`, `"cuda" in str(d)`: a test, not a device given to torch."""
    parent = ctx.parent(node)
    return isinstance(parent, (cst.Comparison, cst.ComparisonTarget))


def is_alternative(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A branch of a conditional expression (`"cuda" if c else "cpu"`): the device is chosen, not fixed."""
    parent = ctx.parent(node)
    return isinstance(parent, cst.IfExp) and node is not parent.test


def statement_indentation(ctx: FileContext, node: cst.CSTNode) -> str:
    """The indentation of the line the statement holding `node` starts on, for a new line after it.

    Python counts the indentation from the last form feed in it (`"\\f    "` is four columns).
    """
    statement = ctx.enclosing(node, cst.SimpleStatementLine) or node
    line = re.split(r"\r\n|\r|\n", ctx.module.code)[ctx.span(statement)[0].line - 1]
    return line[: len(line) - len(line.lstrip(" \t\f"))].rsplit("\f", 1)[-1]
