from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.rules._hardcoded import (
    CudaLiteral, cuda_literal, in_comparison, is_alternative, is_last_word_device, qualified, replace_with_device,
    torch_name,
)
from devlint.rules.torch_load_without_map_location import LOADERS
from devlint.syntax import dotted_name, find_arg, last_component

_DEVICE_KEYWORDS = frozenset({"device", "map_location"})
_TORCH_DEVICE = frozenset({"torch.device"})
_SET_DEFAULT_DEVICE = frozenset({"torch.set_default_device"})


class HardcodedDeviceString(Rule):
    """
    ## What it does
    Flags a literal `"cuda"` or `"cuda:N"` (or `torch.device("cuda...")`) given as a device:
    `x.to("cuda")`, `device="cuda"` and `map_location="cuda:0"` in any call, the second argument of
    `torch.load`, `map_location=lambda storage, loc: storage.cuda()`, `torch.set_default_device("cuda")`,
    a `torch.device("cuda")` built without an availability check, and a variable named like a device
    (`device = "cuda"`, `self.device = "cuda:0"`) bound to such a literal once and for all.

    On by default: on the test corpus (mmcv, fairseq, NeMo, PyTorch-GAN, pytorch/examples, nanoGPT and
    two tutorials) it reports 80 literals, and in a sample of 20 every one is a device that fails
    without CUDA (6 of them in code that only runs on GPUs anyway: Megatron, NCCL broadcasts, TensorRT
    tests, as with DL001). Lightning's `MixedPrecisionPlugin(..., device="cuda")` (a device type, 42
    findings) and test parameters skipped without CUDA were false positives of a first version.

    ## Why is this bad?
    A device named in a string is as hard-coded as `.cuda()`: `torch.zeros(3, device="cuda")` raises
    `AssertionError: Torch not compiled with CUDA enabled` on a CPU-only build and a `RuntimeError` on a
    machine without a GPU, and `map_location="cuda:0"` cannot load a checkpoint on a laptop. The same
    script then dies on a Mac (MPS), a CPU CI runner or a GPU box where `cuda:1` does not exist.

    ## Example
    ```python
    x = torch.zeros(3, device="cuda")
    state = torch.load(path, map_location="cuda:0")
    device = torch.device("cuda")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.zeros(3, device=device)
    state = torch.load(path, map_location=device)
    ```

    ## Fix safety
    A literal given as a device becomes `device`: a device already bound in scope, or one module-level
    definition the fixer inserts after the imports (as for DL001). This is **safe** for `"cuda"` and
    `"cuda:0"`: on a machine with one GPU the same device is used. For `"cuda:N"` with N > 0,
    `f"cuda:{rank}"` or `torch.device("cuda", rank)` the rewrite drops which GPU was meant, so it is
    **unsafe**. A definition bound once (`device = "cuda"`, `gpu = torch.device("cuda:1")`) instead gets
    a CPU fallback, `device = "cuda" if torch.cuda.is_available() else "cpu"` or
    `torch.device("cuda:1" if torch.cuda.is_available() else "cpu")`, which keeps the index: **safe**
    for `"cuda"` and `"cuda:0"`, **unsafe** for another index (code that tells `cuda:0` and `cuda:1`
    apart, say as dictionary keys, would see both become the CPU where it used to run). Where `device`
    names something that is not a device (say, the string `"cuda"` itself) or torch is not imported,
    the fix is **display-only**.

    ## Not flagged
    - The device-agnostic choice itself: `"cuda" if torch.cuda.is_available() else "cpu"`,
      `torch.device("cuda" if use_cuda else "cpu")`, `x.to("cuda" if args.cuda else "cpu")`.
    - Code under a CUDA condition (same guards as DL001): `if torch.cuda.is_available():`,
      `if device.type == "cuda":`, a test skipped without CUDA, a test parameter
      `pytest.param(torch.device("cuda"), marks=pytest.mark.skipif(not torch.cuda.is_available(), ...))`.
    - Test parameters in a decorator: `@pytest.mark.parametrize("device", [torch.device("cpu"), torch.device("cuda")])`
      (whether the test skips the CUDA case is not visible).
    - Comparisons and tests: `x.device == torch.device("cuda")`, `device.type == "cuda"`,
      `"cuda" in str(device)`.
    - Defaults the caller can override: `def run(device="cuda"):`, a config field
      `device: str = "cuda"`, `parser.add_argument("--device", default="cuda")`.
    - A device variable that is re-bound elsewhere, e.g. `device = "cuda"` followed by
      `if not torch.cuda.is_available(): device = "cpu"`.
    - Device *types* for autocast: `torch.autocast(device_type="cuda")`,
      `MixedPrecisionPlugin(precision, device="cuda")`, `torch.amp.GradScaler(device="cuda")`
      (PyTorch disables autocast without CUDA and warns; DL006 is about those), and config values:
      `dict(batch=2, device="cuda")`, `_C.MODEL.DEVICE = "cuda"`, `cfg.device = "cuda"` (a field of
      another object than self is a setting the user overrides).
    - Other strings: `map_location={"cuda:1": "cuda:0"}`, `torch.device("cpu")`, `"mps"`.

    ## References
    - [CUDA semantics: device-agnostic code](https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
    - [torch.set_default_device](https://pytorch.org/docs/stable/generated/torch.set_default_device.html)
    """

    code = "DL004"
    name = "hardcoded-device-string"
    message = "hard-coded CUDA device: it fails without CUDA; use a `device` chosen at run time"

    VALID = (
        'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
        'import torch\nd = "cuda" if torch.cuda.is_available() else "cpu"\n',
        'import torch\ndevice = torch.device("cuda" if use_cuda else "cpu")\n',
        'x = x.to("cuda" if args.cuda else "cpu")\n',
        'import torch\nif torch.cuda.is_available():\n    x = torch.zeros(3, device="cuda")\n',
        'if device.type == "cuda":\n    x = x.to("cuda:0")\n',
        "import torch, pytest\n@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "def test():\n    x = torch.ones(2, device='cuda')\n",
        'import torch\nsame = x.device == torch.device("cuda")\n',
        'on_gpu = device.type == "cuda"\n',
        'gpu = "cuda" in str(device)\n',
        'def run(device="cuda"):\n    return device\n',
        'import dataclasses\n@dataclasses.dataclass\nclass Config:\n    device: str = "cuda"\n',
        'parser.add_argument("--device", default="cuda")\n',
        'import torch\ndevice = "cuda"\nif not torch.cuda.is_available(): device = "cpu"\nx = x.to(device)\n',
        'import torch\nwith torch.autocast(device_type="cuda"):\n    y = model(x)\n',
        'plugins = [MixedPrecisionPlugin(precision, device="cuda")]\n',
        'import torch\nscaler = torch.amp.GradScaler(device="cuda")\n',
        'cfg = dict(batch=2, device="cuda")\n',
        '_C.MODEL.DEVICE = "cuda"\ncfg.device = "cuda"\n',
        "import pytest, torch\n@pytest.mark.parametrize('device', [\n"
        "    pytest.param(torch.device(\"cuda\"), marks=pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')),\n"
        "])\ndef test(device):\n    x = torch.ones(1, device=device)\n"
        "cases = [pytest.param(torch.device(\"cuda\"), marks=pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu'))]\n",
        'import pytest, torch\n@pytest.mark.parametrize("device", [torch.device("cpu"), torch.device("cuda")])\n'
        'def test(device):\n    pass\n',
        'import torch\nstate = torch.load(f, map_location={"cuda:1": "cuda:0"})\n',
        'import torch\ncpu = torch.device("cpu")\nx = x.to("mps")\n',
    )
    INVALID = (
        Invalid(
            'import torch\nx = torch.zeros(3, device="cuda")\n',
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "x = torch.zeros(3, device=device)\n",
        ),
        Invalid(
            "import torch\ndef f(x, device):\n    return x.to('cuda:0', non_blocking=True)\n",
            fixed="import torch\ndef f(x, device):\n    return x.to(device, non_blocking=True)\n",
        ),
        Invalid(
            'import torch\nx = x.to("cuda:1")\n',
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "x = x.to(device)\n",
            unsafe=True,
        ),
        Invalid('import torch\nx = x.to(f"cuda:{rank}")\n', fixed='import torch\nx = x.to(f"cuda:{rank}")\n'),
        Invalid(
            'import torch\nstate = torch.load(path, map_location="cuda:0")\n',
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "state = torch.load(path, map_location=device)\n",
        ),
        Invalid(
            'import torch\nstate = torch.load(path, "cuda")\n',
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "state = torch.load(path, device)\n",
        ),
        Invalid(
            "import torch\nstate = torch.load(path, map_location=lambda storage, loc: storage.cuda())\n",
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "state = torch.load(path, map_location=device)\n",
            count=1,
        ),
        Invalid(
            'import torch\ntorch.set_default_device("cuda")\n',
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "torch.set_default_device(device)\n",
        ),
        Invalid(
            'import torch\ndevice = torch.device("cuda:0")\nmodel.to(device)\n',
            fixed='import torch\ndevice = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\n'
            "model.to(device)\n",
        ),
        Invalid(
            'import torch\ndevice_0 = torch.device("cuda:0")\ndevice_1 = torch.device("cuda:1")\n',
            fixed='import torch\ndevice_0 = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\n'
            'device_1 = torch.device("cuda:1" if torch.cuda.is_available() else "cpu")\n',
            unsafe=True,
            count=2,
        ),
        Invalid(
            'import torch\nclass Runner:\n    def __init__(self):\n        self.device = "cuda"\n',
            fixed='import torch\nclass Runner:\n    def __init__(self):\n'
            '        self.device = "cuda" if torch.cuda.is_available() else "cpu"\n',
        ),
        Invalid(
            "import torch as th\nDEVICE = 'cuda'\nmodel.to(DEVICE)\n",
            fixed="import torch as th\nDEVICE = 'cuda' if th.cuda.is_available() else 'cpu'\nmodel.to(DEVICE)\n",
        ),
        Invalid(
            'import torch\ndef f(model):\n    return model.to(torch.device("cuda", 1))\n',
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "def f(model):\n    return model.to(device)\n",
            unsafe=True,
        ),
        Invalid(
            'device = "cuda"\nx = x.to("cuda")\n',
            fixed='device = "cuda"\nx = x.to("cuda")\n',
            count=2,
        ),
        Invalid(
            'import torch\ndef f(x):\n    return x.to(device="cuda", dtype=torch.float16)\n',
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "def f(x):\n    return x.to(device=device, dtype=torch.float16)\n",
        ),
    )

    @staticmethod
    def could_match(summary) -> bool:
        # A literal starting with "cuda" given as an argument or assigned (f-string text included), or
        # `storage.cuda()` in a lambda.
        return "cuda" in summary.attribute_calls or bool(summary.device_strings)

    # -- where a device is given ---------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and not self.ctx.is_imported_module(func.value):
            self._positional(node, 0)
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in _DEVICE_KEYWORDS:
                continue
            if arg.keyword.value == "device" and _names_a_device_type(func):
                continue
            if cuda_literal(arg.value) is not None:
                self._literal(arg.value)
            elif arg.keyword.value == "map_location" and isinstance(arg.value, cst.Lambda):
                self._lambda(arg.value)
        last = last_component(func) or ""
        if last == "device":
            self._torch_device(node)
        else:  # `torch.set_default_device("cuda")`, `torch.load(f, "cuda:0")`, through any alias
            self._positional(node, 0, _SET_DEFAULT_DEVICE)
            self._positional(node, 1, LOADERS)

    def _positional(self, call: cst.Call, position: int, functions=None) -> None:
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) <= position or any(a.star for a in positional[: position + 1]):
            return
        value = positional[position].value
        if cuda_literal(value) is not None and (functions is None or qualified(self.ctx, call.func, functions)):
            self._literal(value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and cuda_literal(node.value) is not None:
            self._definition(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is None or cuda_literal(node.value) is None:
            return
        if isinstance(self.ctx.enclosing(node, (cst.ClassDef, cst.FunctionDef)), cst.ClassDef):
            return  # a config field: a default the caller overrides
        self._definition(node.target, node.value)

    # -- checks --------------------------------------------------------------------------------------
    def _skipped(self, node: cst.CSTNode) -> bool:
        return is_alternative(self.ctx, node) or in_comparison(self.ctx, node) or self.ctx.guards.is_guarded(node)

    def _literal(self, node: cst.BaseExpression) -> None:
        literal = cuda_literal(node)
        if literal is None or self._skipped(node):
            return
        text = self.ctx.code(node)
        self.report(node, self._message(text),
                    replace_with_device(self, node, f"Replace `{text}` with `device`", literal.names_a_gpu))

    def _lambda(self, node: cst.Lambda) -> None:
        body = node.body
        params = node.params.params
        if not (params and isinstance(body, cst.Call) and isinstance(body.func, cst.Attribute)
                and body.func.attr.value == "cuda" and isinstance(body.func.value, cst.Name)
                and body.func.value.value == params[0].name.value):
            return
        if self._skipped(node):
            return
        index = find_arg(body, "device", 0)
        literal = CudaLiteral(None) if index is None else _index_literal(index.value)
        title = "Replace the lambda with `device`"
        self.report(node, "`map_location` moves every tensor to CUDA: it fails without CUDA; use `map_location=device`",
                    replace_with_device(self, node, title, literal.names_a_gpu))

    def _torch_device(self, call: cst.Call) -> None:
        kind = find_arg(call, "type", 0)
        literal = cuda_literal(kind.value) if kind is not None else None
        if literal is None or any(arg.star for arg in call.args):
            return
        if any(isinstance(a, (cst.Param, cst.Decorator)) for a in self.ctx.ancestors(call)):
            return  # a parameter's default, or a test parameter (`@pytest.mark.parametrize(...)`)
        if self._skipped(call) or not qualified(self.ctx, call.func, _TORCH_DEVICE):
            return
        index = find_arg(call, "index", 1)
        if index is not None:
            literal = _index_literal(index.value)
        parent = self.ctx.parent(call)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is call:
            targets = parent.targets if isinstance(parent, cst.Assign) else [parent]
            if len(targets) == 1:
                self._definition(targets[0].target, call, checked=True, names_a_gpu=literal.names_a_gpu)
            return
        text = self.ctx.code(call)
        self.report(call, self._message(text),
                    replace_with_device(self, call, f"Replace `{text}` with `device`", literal.names_a_gpu))

    def _definition(self, target: cst.BaseExpression, value: cst.BaseExpression, checked: bool = False,
                    names_a_gpu: bool = False) -> None:
        """`device = "cuda"` / `self.device = torch.device("cuda:0")`, bound once: add a CPU fallback."""
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            if not is_last_word_device(target) or _is_config_field(target):
                return
            names_a_gpu = cuda_literal(value).names_a_gpu
        name = dotted_name(target)
        if name is None or self._binding_counts.get(name, 0) > 1:
            return  # re-bound elsewhere: probably `if not torch.cuda.is_available(): device = "cpu"`
        if not checked and self._skipped(value):
            return
        self.report(value, self._message(self.ctx.code(value)), self._fallback_fix(value, names_a_gpu))

    def _fallback_fix(self, value: cst.BaseExpression, names_a_gpu: bool):
        title = "Fall back to the CPU when CUDA is not available"
        # Two GPUs named apart (`cuda:0`, `cuda:1`) would both become the CPU: code that tells them apart
        # (device maps, peer copies) then behaves differently where it ran before.
        applicability = Applicability.UNSAFE if names_a_gpu else Applicability.SAFE
        torch = torch_name(self.ctx, False, value.func if isinstance(value, cst.Call) else None)
        if torch is None:
            return self.display_only(f"{title} (torch is not imported)")
        test = f"{torch}.cuda.is_available()"
        if isinstance(value, cst.Call):
            kind = find_arg(value, "type", 0)
            if len(value.args) == 1 and kind is not None and kind.keyword is None:
                edit = self.replace(kind.value, f'{self.ctx.code(kind.value)} if {test} else "cpu"')
            else:
                edit = self.replace(value, f'{self.ctx.code(value)} if {test} else {torch}.device("cpu")')
        else:
            quote = value.quote if isinstance(value, cst.SimpleString) else '"'
            quote = quote if len(quote) == 1 else '"'
            edit = self.replace(value, f"{self.ctx.code(value)} if {test} else {quote}cpu{quote}")
        return self.fix(title, applicability, edit)

    @cached_property
    def _binding_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        targets = [t.target for node in self.ctx.nodes(cst.Assign) for t in node.targets]
        targets += [node.target for kind in (cst.AnnAssign, cst.AugAssign) for node in self.ctx.nodes(kind)]
        for target in targets:
            name = dotted_name(target)
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
        return counts

    @staticmethod
    def _message(text: str) -> str:
        return f"`{text}` hard-codes the CUDA device: it fails without CUDA; use a `device` chosen at run time"


def _is_config_field(target: cst.BaseExpression) -> bool:
    """`cfg.MODEL.DEVICE = "cuda"`: a default in a config object, overridden from the command line or
    a file. Only `self.device = "cuda"` is taken as the object's own device; a field of another object
    is a setting.
    """
    owner = target.value if isinstance(target, cst.Attribute) else None
    return owner is not None and not (isinstance(owner, cst.Name) and owner.value == "self")


def _names_a_device_type(func: cst.BaseExpression) -> bool:
    """`device=` of a config `dict(...)` or of an autocast helper is not a device given to torch.

    Lightning's `MixedPrecisionPlugin(precision, device="cuda")` and `torch.amp.GradScaler(device="cuda")`
    take the device *type* for `torch.autocast`, which PyTorch disables (with a warning) without CUDA.
    """
    name = (dotted_name(func) or "").rsplit(".", 1)[-1]
    lowered = name.lower()
    return name == "dict" or any(word in lowered for word in ("precision", "autocast", "scaler"))


def _index_literal(node: cst.BaseExpression) -> CudaLiteral:
    if isinstance(node, cst.Integer):
        return CudaLiteral(int(node.evaluated_value))
    return CudaLiteral(None, computed=not (isinstance(node, cst.Name) and node.value == "None"))
