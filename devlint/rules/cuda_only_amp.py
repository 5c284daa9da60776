from __future__ import annotations

import libcst as cst

from devlint.model import Applicability, Edit
from devlint.rule import Invalid, Rule
from devlint.rules._hardcoded import device_type_reference, qualified
from devlint.syntax import last_component

_AUTOCAST = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
_SCALER = frozenset({"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"})
_CUSTOM = frozenset({
    "torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd",
    "torch.cuda.amp.autocast_mode.custom_fwd", "torch.cuda.amp.autocast_mode.custom_bwd",
})
_ALL = _AUTOCAST | _SCALER | _CUSTOM
_LAST_NAMES = frozenset({"autocast", "GradScaler", "custom_fwd", "custom_bwd"})
_AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")  # torch.cuda.amp.autocast's positional order


class CudaOnlyAmp(Rule):
    """
    ## What it does
    Flags the CUDA-only mixed-precision API: `torch.cuda.amp.autocast(...)`,
    `torch.cuda.amp.GradScaler(...)` and `torch.cuda.amp.custom_fwd` / `custom_bwd` (called, or used as
    decorators), through any import (`from torch.cuda.amp import autocast`).

    On by default: 21 findings on the test corpus (fairseq 3, NeMo 17, nanoGPT 1), every one a call of
    the deprecated CUDA-only namespace. A name that several imports bind is flagged only when all of
    them are `torch.cuda.amp`'s (mmcv's tests import `autocast` from `torch_musa` on MUSA machines).

    ## Why is this bad?
    `torch.cuda.amp` only does mixed precision on CUDA. Without CUDA, PyTorch warns and *disables* it
    (`CUDA is not available ... Disabling autocast`, `GradScaler is enabled, but CUDA is not
    available. Disabling.`), so the same script silently trains in another precision on a CPU or an
    Apple-silicon Mac. The whole namespace is deprecated since PyTorch 2.4 in favour of the
    device-generic `torch.amp`, which takes the device type as an argument.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    scaler = torch.amp.GradScaler(device.type)
    with torch.amp.autocast(device.type, dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Fix safety
    `torch.cuda.amp.autocast(...)` becomes `torch.amp.autocast(device.type, ...)` (positional
    `enabled`, `dtype`, `cache_enabled` are passed by keyword, since `torch.amp.autocast` orders its
    parameters differently), `torch.cuda.amp.GradScaler(...)` becomes
    `torch.amp.GradScaler(device.type, ...)` and `custom_fwd`/`custom_bwd` get
    `device_type=device.type`. On a CUDA machine `device.type` is `"cuda"` (the inserted definition
    picks CUDA when it is there) and the behaviour is the same, but the fix is **unsafe**: elsewhere
    the fixed code runs mixed precision on the device at hand (CPU autocast computes in bfloat16,
    the scaler is enabled) where the original silently ran in full precision, and `torch.amp`'s
    `GradScaler` and `custom_fwd(device_type=...)` need PyTorch 2.4 or later. When `device` is a
    parameter or another binding that may be a string, the fix writes `torch.device(device).type`.
    With `*args`, or where `device` names something that is not a device or torch is not imported,
    the fix is **display-only**.

    ## Not flagged
    - The device-generic API: `torch.amp.autocast("cuda")`, `torch.autocast(device_type="cuda")`,
      `torch.amp.GradScaler("cuda")`.
    - References that are not calls: `class GradScaler(torch.cuda.amp.GradScaler):`,
      `scaler: torch.cuda.amp.GradScaler = None`, `autocast = torch.cuda.amp.autocast`.
    - Code under a CUDA condition (same guards as DL001), e.g.
      `if torch.cuda.is_available(): scaler = torch.cuda.amp.GradScaler()`.

    ## References
    - [Automatic mixed precision (torch.amp)](https://pytorch.org/docs/stable/amp.html)
    """

    code = "DL006"
    name = "cuda-only-amp"
    message = "`torch.cuda.amp` is CUDA-only and deprecated: use `torch.amp` with the device type"

    VALID = (
        'import torch\nwith torch.amp.autocast("cuda"):\n    y = model(x)\n',
        'import torch\nwith torch.autocast(device_type="cuda"):\n    y = model(x)\n',
        'import torch\nscaler = torch.amp.GradScaler("cuda")\n',
        "import torch\nclass GradScaler(torch.cuda.amp.GradScaler):\n    pass\n",
        "import torch\nscaler: torch.cuda.amp.GradScaler = None\n",
        "import torch\nautocast = torch.cuda.amp.autocast\n",
        "import torch\nif torch.cuda.is_available(): scaler = torch.cuda.amp.GradScaler()\n",
    )
    INVALID = (
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "scaler = torch.amp.GradScaler(device.type)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nwith torch.cuda.amp.autocast(dtype=torch.bfloat16):\n    y = model(x)\n",
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "with torch.amp.autocast(device.type, dtype=torch.bfloat16):\n    y = model(x)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef step(device):\n    with torch.cuda.amp.autocast(False):\n        pass\n",
            fixed="import torch\ndef step(device):\n"
            "    with torch.amp.autocast(torch.device(device).type, enabled=False):\n        pass\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nfrom torch.cuda.amp import GradScaler, autocast\n"
            "scaler = GradScaler(init_scale=2.0**10)\nwith autocast():\n    pass\n",
            fixed="import torch\nfrom torch.cuda.amp import GradScaler, autocast\n"
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "scaler = torch.amp.GradScaler(device.type, init_scale=2.0**10)\n"
            "with torch.amp.autocast(device.type):\n    pass\n",
            count=2,
            unsafe=True,
        ),
        Invalid(
            "import torch\n\nclass F(torch.autograd.Function):\n"
            "    @staticmethod\n    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n"
            "    def forward(ctx, x):\n        return x\n\n"
            "    @staticmethod\n    @torch.cuda.amp.custom_bwd\n    def backward(ctx, g):\n        return g\n",
            fixed="import torch\n"
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n\n'
            "class F(torch.autograd.Function):\n"
            "    @staticmethod\n    @torch.amp.custom_fwd(device_type=device.type, cast_inputs=torch.float32)\n"
            "    def forward(ctx, x):\n        return x\n\n"
            "    @staticmethod\n    @torch.amp.custom_bwd(device_type=device.type)\n"
            "    def backward(ctx, g):\n        return g\n",
            count=2,
            unsafe=True,
        ),
        Invalid(
            "import torch\ndevice = torch.device(args.device)\nscaler = torch.cuda.amp.GradScaler(**amp_kwargs)\n",
            fixed="import torch\ndevice = torch.device(args.device)\n"
            "scaler = torch.amp.GradScaler(device.type, **amp_kwargs)\n",
            unsafe=True,
        ),
        Invalid(  # unsafe: without --unsafe-fixes nothing changes
            "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
            fixed="import torch\nscaler = torch.cuda.amp.GradScaler()\n",
        ),
        Invalid("from torch.cuda import amp\ndef f(device):\n    return amp.GradScaler()\n"),
        Invalid("import torch\nwith torch.cuda.amp.autocast(*flags):\n    pass\n"),
    )

    @staticmethod
    def could_match(summary) -> bool:
        return bool(
            # names bound by a star import are not resolved to torch: `autocast()` after
            # `from torch.cuda.amp import *` is not flagged, so a star import is no candidate
            _LAST_NAMES & (summary.attributes | summary.name_calls | summary.torch_imports)
        )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = last_component(func) or ""
        if last not in _LAST_NAMES and not isinstance(func, cst.Name):
            return
        if self.ctx.guards.is_guarded(node):
            return
        found = qualified(self.ctx, func, _ALL)
        if found is None:
            return
        self.report(node, self._message(found), self._fix(node, found))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        decorator = node.decorator
        if isinstance(decorator, cst.Call) or self.ctx.guards.is_guarded(node):
            return
        found = qualified(self.ctx, decorator, _CUSTOM)
        if found is None:
            return
        short = found.rsplit(".", 1)[-1]
        reference = device_type_reference(self.ctx, decorator, decorator)
        title = f"Use `torch.amp.{short}` with `device.type`"
        if reference is None:
            fix = self.display_only(f"{title} (`device` is bound to something else, or torch is not imported)")
        else:
            torch, device_type, needs_definition = reference
            fix = self.fix(title, Applicability.UNSAFE,
                           self.replace(decorator, f"{torch}.amp.{short}(device_type={device_type})"),
                           needs_device=needs_definition)
        self.report(decorator, self._message(found), fix)

    @staticmethod
    def _message(found: str) -> str:
        short = found.rsplit(".", 1)[-1]
        return f"`torch.cuda.amp.{short}` is CUDA-only and deprecated: use `torch.amp.{short}` with the device type"

    def _fix(self, call: cst.Call, found: str):
        short = found.rsplit(".", 1)[-1]
        title = f"Use `torch.amp.{short}` with `device.type`"
        if any(arg.star == "*" for arg in call.args) or (found in _CUSTOM and any(arg.star for arg in call.args)):
            return self.display_only(title)
        if found in _AUTOCAST and len([a for a in call.args if a.keyword is None]) > len(_AUTOCAST_POSITIONS):
            return self.display_only(title)
        reference = device_type_reference(self.ctx, call, call.func)
        if reference is None:
            return self.display_only(f"{title} (`device` is bound to something else, or torch is not imported)")
        torch, device_type, needs_definition = reference
        new_func = f"{torch}.amp.{short}"
        if found in _CUSTOM:
            edits = self._custom_edits(call, f"device_type={device_type}")
        else:
            edits = self._leading_edits(call, device_type, rename=found in _AUTOCAST)
        if edits is None:
            edits = [self.replace(call, f"{new_func}({device_type if found not in _CUSTOM else 'device_type=' + device_type})")]
        else:
            edits.insert(0, self.replace(call.func, new_func))
        return self.fix(title, Applicability.UNSAFE, *edits, needs_device=needs_definition)

    def _leading_edits(self, call: cst.Call, device_type: str, rename: bool) -> list[Edit] | None:
        """`device_type` becomes the first argument; autocast's positional arguments get keywords."""
        if not call.args:
            return None
        edits = []
        position = 0
        for index, arg in enumerate(call.args):
            prefix = f"{device_type}, " if index == 0 else ""
            if rename and arg.keyword is None and not arg.star:
                prefix += f"{_AUTOCAST_POSITIONS[position]}="
                position += 1
            if prefix:
                edits.append(self.insert_before(arg, prefix))
        return edits

    def _custom_edits(self, call: cst.Call, keyword: str) -> list[Edit] | None:
        if not call.args:
            return None
        first_keyword = next((arg for arg in call.args if arg.keyword is not None), None)
        if first_keyword is not None:
            return [self.insert_before(first_keyword, f"{keyword}, ")]
        end = self.ctx.span(call.args[-1].value)[1]
        return [Edit(end, end, f", {keyword}")]
