from __future__ import annotations

import libcst as cst

from devlint.model import Applicability, Edit
from devlint.rule import Invalid, Rule
from devlint.analysis.device import device_failure, device_source, unproven_reference
from devlint.analysis.device import torch_name
from devlint.analysis.device_reasons import torch_failure
from devlint.rules._hardcoded import LEGACY_TENSOR_DTYPES, qualified, statement_indentation
from devlint.analysis.kinds import TENSOR
from devlint.syntax import dotted_name, find_arg, last_component, string_value

_LEGACY_TYPES = frozenset(f"torch.cuda.{name}" for name in LEGACY_TENSOR_DTYPES)
_SET_DEFAULT_TENSOR_TYPE = frozenset({"torch.set_default_tensor_type"})
_SIZE_METHODS = frozenset({"size", "numel", "dim"})


class LegacyCudaTensorType(Rule):
    """
    ## What it does
    Flags the legacy CUDA tensor types: a `torch.cuda.FloatTensor(...)` (or any other
    `torch.cuda.*Tensor`) constructor call, `.type(torch.cuda.FloatTensor)` and
    `.type("torch.cuda.FloatTensor")`, `torch.set_default_tensor_type(torch.cuda.FloatTensor)` (or
    its string form), and an unconditional alias of such a type (`Tensor = torch.cuda.FloatTensor`).

    On by default: 49 findings on the test corpus (fairseq 10, NeMo 38, PyTorch-GAN 1), every one a
    constructor, cast or alias that fails without CUDA; the device-agnostic alias used throughout
    PyTorch-GAN (`torch.cuda.FloatTensor if cuda else torch.FloatTensor`) is not flagged.

    ## Why is this bad?
    These types exist only on a CUDA build with a GPU: `torch.cuda.FloatTensor(2, 3)` raises
    `TypeError: type torch.cuda.FloatTensor not available` on a CPU-only build, and
    `.type(torch.cuda.FloatTensor)` a `RuntimeError`. They are also legacy API: the factories
    (`torch.empty`, `torch.tensor`) with `dtype=` and `device=` say the same thing and run anywhere.

    ## Example
    ```python
    buffer = torch.cuda.FloatTensor(2, 3)
    ids = torch.cuda.LongTensor([1, 2])
    x = x.type(torch.cuda.FloatTensor)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    buffer = torch.empty(2, 3, dtype=torch.float32, device=device)
    ids = torch.tensor([1, 2], dtype=torch.int64, device=device)
    x = x.to(device=device, dtype=torch.float32)
    ```

    ## Fix safety
    `device` is a device already bound in scope, one derived from the code at hand (`self.device` set
    from the run's device in `__init__`, where DL001 would write it; `y.device` of a tensor on the device that the new tensor is combined
    with, as in `torch.cuda.FloatTensor(3) + y`), or one definition the fixer inserts. Where none can
    be written the fix is display-only and its title names the cause; where the device in scope may
    be the run's device but is not proven to be (a `device` parameter a caller may set to the CPU,
    `device = args.device`) it is **unsafe**, with the reason in its title (`device` bound to a string, bound
    only later, a `CUDA_VISIBLE_DEVICES` setting, torch not imported, ...).
    A constructor given sizes (integer literals, `x.size(...)`, `x.shape[...]`, `len(...)`, two or more
    arguments) becomes `torch.empty(..., dtype=..., device=device)`: **safe**, since the legacy
    constructor also returns uninitialised memory (fill it, as before). No argument becomes
    `torch.empty(0, ...)` (an empty tensor), **safe**. A list or tuple of number literals becomes
    `torch.tensor(..., dtype=..., device=device)`, **safe**; other sequences (a comprehension, names)
    are converted the same way by both, but their elements are not known, so that is **unsafe**.
    `t.type(torch.cuda.FloatTensor)` becomes `t.to(device=device, dtype=torch.float32)`: **safe** on a
    tensor (both return `t` itself when nothing changes); on a module or an unknown receiver it is
    **unsafe**, because `Module.type` also casts integer buffers (BatchNorm's `num_batches_tracked`)
    and `Module.to` does not. `torch.set_default_tensor_type(...)` as a statement becomes
    `torch.set_default_dtype(...)` and `torch.set_default_device(device)`: **unsafe** (the default
    device is applied by a mode that also covers functions the old default type did not). A single
    argument of unknown kind (`torch.cuda.LongTensor(tokens)`: a list or a size?), keywords or `*args`
    make the fix **display-only**, as does an alias (each of its uses needs its own factory).

    ## Not flagged
    - Type checks and annotations: `isinstance(x, torch.cuda.FloatTensor)`,
      `x.type() == "torch.cuda.HalfTensor"`, `target: torch.cuda.LongTensor`,
      `class Scaler(torch.cuda.amp.GradScaler):`.
    - The device-agnostic alias and what it builds:
      `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`, then `Tensor(3)`.
    - Code under a CUDA condition (same guards as DL001), e.g.
      `if torch.cuda.is_available(): buf = torch.cuda.FloatTensor(8)`.
    - CPU types: `torch.FloatTensor(2, 3)`, `x.type(torch.FloatTensor)`.

    ## References
    - [Tensor types and dtypes](https://pytorch.org/docs/stable/tensors.html#data-types)
    - [torch.set_default_tensor_type (deprecated)](https://pytorch.org/docs/stable/generated/torch.set_default_tensor_type.html)
    """

    code = "DL005"
    name = "legacy-cuda-tensor-type"
    message = "legacy CUDA tensor type: it fails without CUDA; use a factory with `dtype=` and `device=device`"

    VALID = (
        "import torch\nok = isinstance(x, torch.cuda.FloatTensor)\n",
        'half = x.type() == "torch.cuda.HalfTensor"\n',
        "import torch\ndef loss(target: torch.cuda.LongTensor):\n    return target\n",
        "import torch\nclass Scaler(torch.cuda.amp.GradScaler):\n    pass\n",
        "import torch\ncuda = torch.cuda.is_available()\n"
        "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\nz = Tensor(3)\n",
        "import torch\nif torch.cuda.is_available(): buf = torch.cuda.FloatTensor(8)\n",
        "import torch\na = torch.FloatTensor(2, 3)\nb = x.type(torch.FloatTensor)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nbuf = torch.cuda.FloatTensor(2, 3)\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "buf = torch.empty(2, 3, dtype=torch.float32, device=device)\n",
        ),
        Invalid(
            "import torch\nids = torch.cuda.LongTensor([1, 2])\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "ids = torch.tensor([1, 2], dtype=torch.int64, device=device)\n",
        ),
        Invalid(
            "import torch\ndef f(x, device):\n    return x.type(torch.cuda.FloatTensor)\n",
            fixed="import torch\ndef f(x, device):\n    return x.to(device=device, dtype=torch.float32)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef f(device):\n    x = torch.zeros(2)\n    return x.type('torch.cuda.HalfTensor')\n",
            fixed="import torch\ndef f(device):\n    x = torch.zeros(2)\n"
            "    return x.to(device=device, dtype=torch.float16)\n",
            unsafe=True,  # a caller may pass the CPU
        ),
        Invalid(
            "import torch as th\ndef f(x, device):\n    return th.cuda.ByteTensor(x.size(0), 4).zero_()\n",
            fixed="import torch as th\ndef f(x, device):\n"
            "    return th.empty(x.size(0), 4, dtype=th.uint8, device=device).zero_()\n",
            unsafe=True,
        ),
        Invalid(
            "from torch.cuda import LongTensor as LT\nimport torch\nempty = LT()\n",
            fixed='from torch.cuda import LongTensor as LT\nimport torch\n'
            '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "empty = torch.empty(0, dtype=torch.int64, device=device)\n",
        ),
        Invalid(
            "import torch\ndef f(lengths, device):\n    return torch.cuda.LongTensor([len(s) for s in lengths])\n",
            fixed="import torch\ndef f(lengths, device):\n"
            "    return torch.tensor([len(s) for s in lengths], dtype=torch.int64, device=device)\n",
            unsafe=True,
        ),
        # the new tensor joins `y`, which lives on the GPU: it goes where `y` is
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    y = x.to('cuda')\n    return torch.cuda.FloatTensor(2, 3) + y\n",
            fixed="import torch\ndef f(x: torch.Tensor):\n    y = x.to('cuda')\n"
            "    return torch.empty(2, 3, dtype=torch.float32, device=y.device) + y\n",
        ),
        Invalid("import torch\ntokens = torch.cuda.LongTensor(context_tokens)\n"),
        Invalid("import torch\ndef sample(n):\n    Tensor = torch.cuda.FloatTensor\n    return Tensor(n)\n"),
        Invalid(
            'import torch\ndef setup():\n    torch.set_default_tensor_type("torch.cuda.FloatTensor")\n',
            fixed="import torch\ndef setup():\n"
            '    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "    torch.set_default_dtype(torch.float32)\n    torch.set_default_device(device)\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = last_component(func) or ""
        if last == "type" and isinstance(func, cst.Attribute):
            self._type_call(node)
        elif last == "set_default_tensor_type":
            self._set_default(node)
        elif last in LEGACY_TENSOR_DTYPES or isinstance(func, cst.Name):
            dtype = self._legacy_dtype(func)
            if dtype is not None and not self.ctx.guards.is_guarded(node):
                self.report(node, fix=self._constructor_fix(node, dtype))

    def visit_Assign(self, node: cst.Assign) -> None:
        """`Tensor = torch.cuda.FloatTensor`: every `Tensor(...)` of the file then builds a CUDA tensor."""
        value = node.value
        if not isinstance(value, (cst.Name, cst.Attribute)) or self._legacy_dtype(value) is None:
            return
        if self.ctx.guards.is_guarded(node):
            return
        name = self.ctx.code(value)
        self.report(value, f"`{name}` is a legacy CUDA tensor type: what this alias builds fails without CUDA",
                    self.display_only("Build tensors with a factory (`torch.empty`, `torch.tensor`) and "
                                      "`dtype=`, `device=device` instead of an alias of the type"))

    # -- what is legacy --------------------------------------------------------------------------------
    def _legacy_dtype(self, node: cst.BaseExpression) -> str | None:
        """The dtype of a `torch.cuda.XTensor` reference or `"torch.cuda.XTensor"` string, else None."""
        text = string_value(node)
        if text is not None:
            prefix, _, name = text.rpartition(".")
            return LEGACY_TENSOR_DTYPES.get(name) if prefix == "torch.cuda" else None
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return None
        found = qualified(self.ctx, node, _LEGACY_TYPES)
        return LEGACY_TENSOR_DTYPES[found.rsplit(".", 1)[-1]] if found else None

    # -- the three forms ---------------------------------------------------------------------------
    def _type_call(self, call: cst.Call) -> None:
        target = find_arg(call, "dtype", 0)
        if target is None or self.ctx.is_imported_module(call.func.value):
            return
        dtype = self._legacy_dtype(target.value)
        if dtype is None or self.ctx.guards.is_guarded(call):
            return
        self.report(call, fix=self._type_fix(call, target, dtype), start_node=call.func.attr)

    def _set_default(self, call: cst.Call) -> None:
        target = find_arg(call, "t", 0)
        if target is None:
            return
        dtype = self._legacy_dtype(target.value)
        if dtype is None or self.ctx.guards.is_guarded(call):
            return
        if not qualified(self.ctx, call.func, _SET_DEFAULT_TENSOR_TYPE):
            return
        self.report(call, fix=self._set_default_fix(call, dtype))

    # -- fixes ---------------------------------------------------------------------------------------
    def _device(self, node: cst.CSTNode, written: cst.CSTNode | None = None, value: cst.CSTNode | None = None):
        """(device expression, torch name, needs_definition, why it makes the fix unsafe or None), or why
        there is none (a string).

        `value`: the expression whose result the fix puts on the device, for a device derived from
        what it is combined with (`torch.cuda.FloatTensor(3) + y` -> `device=y.device`)."""
        reference, caveat = device_source(self.ctx, node, value), None
        if reference is None:
            unproven = unproven_reference(self.ctx, node)
            if unproven is None:
                return device_failure(self.ctx, node)
            reference, caveat = (unproven[0], False), unproven[1]
        name, needs_definition = reference
        torch = torch_name(self.ctx, needs_definition, written)
        return torch_failure(self.ctx) if torch is None else (name, torch, needs_definition, caveat)

    def _constructor_fix(self, call: cst.Call, dtype: str):
        title = "Use a tensor factory with `dtype=` and `device=device`"
        if any(arg.keyword is not None or arg.star for arg in call.args):
            return self.display_only(title)
        if not call.args:
            factory, applicability = "empty", Applicability.SAFE
        elif len(call.args) > 1 or _is_size(call.args[0].value):
            factory, applicability = "empty", Applicability.SAFE
        elif isinstance(call.args[0].value, (cst.List, cst.Tuple, cst.ListComp)):
            factory = "tensor"
            applicability = Applicability.SAFE if _numbers_only(call.args[0].value) else Applicability.UNSAFE
        else:
            return self.display_only(f"{title} (`torch.empty` for sizes, `torch.tensor` for data)")
        found = self._device(call, call.func, call)
        if isinstance(found, str):
            return self.display_only(f"{title} ({found})")
        device, torch, needs_definition, caveat = found
        if caveat is not None:
            applicability = Applicability.UNSAFE
        keywords = f"dtype={torch}.{dtype}, device={device}"
        if not call.args:
            edits = [self.replace(call, f"{torch}.{factory}(0, {keywords})")]
        else:  # edit around the arguments: their layout and comments stay
            end = self.ctx.span(call.args[-1].value)[1]
            edits = [self.replace(call.func, f"{torch}.{factory}"), Edit(end, end, f", {keywords}")]
        title = f"{title}: `{torch}.{factory}`" + (f" ({caveat})" if caveat is not None else "")
        return self.fix(title, applicability, *edits, needs_device=needs_definition)

    def _type_fix(self, call: cst.Call, target: cst.Arg, dtype: str):
        title = "Replace `.type(...)` with `.to(device=device, dtype=...)`"
        others = [arg for arg in call.args if arg is not target]
        if any(arg.star or arg.keyword is None for arg in others):
            return self.display_only(title)
        found = self._device(call, value=call)
        if isinstance(found, str):
            return self.display_only(f"{title} ({found})")
        device, torch, needs_definition, caveat = found
        kept = "".join(f", {self.ctx.code(arg.keyword)}={self.ctx.code(arg.value)}" for arg in others)
        text = f"to(device={device}, dtype={torch}.{dtype}{kept})"  # the receiver is left as it is
        tensor = self.ctx.kinds.of(call.func.value) is TENSOR
        applicability = Applicability.SAFE if tensor and caveat is None else Applicability.UNSAFE
        if caveat is not None:
            title += f" ({caveat})"
        return self.fix(title, applicability, self.replace_between(call.func.attr, call, text),
                        needs_device=needs_definition)

    def _set_default_fix(self, call: cst.Call, dtype: str):
        title = "Use `torch.set_default_dtype(...)` and `torch.set_default_device(device)`"
        expression = self.ctx.parent(call)
        line = self.ctx.parent(expression)
        if not (isinstance(expression, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            return self.display_only(title)
        found = self._device(call)
        if isinstance(found, str):
            return self.display_only(f"{title} ({found})")
        device, torch, needs_definition, _ = found  # (unsafe whatever the device)
        indentation = statement_indentation(self.ctx, call)
        newline = self.ctx.module.default_newline
        text = f"{torch}.set_default_dtype({torch}.{dtype}){newline}{indentation}{torch}.set_default_device({device})"
        return self.fix(title, Applicability.UNSAFE, self.replace(call, text), needs_device=needs_definition)


def _is_size(node: cst.BaseExpression) -> bool:
    """An integer or a size: `3`, `x.size(0)`, `x.size()`, `x.shape`, `x.shape[1]`, `len(xs)`, `torch.Size(...)`."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Subscript):
        node = node.value
        return isinstance(node, cst.Attribute) and node.attr.value == "shape"
    if isinstance(node, cst.Attribute):
        return node.attr.value == "shape"
    if isinstance(node, cst.Call):
        name = dotted_name(node.func) or ""
        return name == "len" or name.endswith(".Size") or (
            isinstance(node.func, cst.Attribute) and node.func.attr.value in _SIZE_METHODS
        )
    return False


def _numbers_only(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(not isinstance(e, cst.StarredElement) and _numbers_only(e.value) for e in node.elements)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _numbers_only(node.expression)
    if isinstance(node, cst.Name):
        return node.value in {"True", "False"}
    return isinstance(node, (cst.Integer, cst.Float))
