from __future__ import annotations

import libcst as cst

from devlint.model import Applicability, Edit
from devlint.rule import Invalid, Rule
from devlint.analysis.device import written_torch_root
from devlint.rules._hardcoded import qualified
from devlint.syntax import find_arg, last_component

# torch.cuda functions that raise without CUDA (checked on the CPU build of torch 2.13), and the
# torch.accelerator function (torch >= 2.6) that does the same on any accelerator, where there is one.
_RAISING = {
    "synchronize": "synchronize",
    "current_device": "current_device_index",
    "set_device": "set_device_index",
    "get_device_name": None,
    "get_device_properties": None,
    "get_device_capability": None,
    "mem_get_info": None,
    "current_stream": None,
    "default_stream": None,
    "reset_peak_memory_stats": None,
    "Event": None,
    "Stream": None,
}
_QUALIFIED = frozenset(f"torch.cuda.{name}" for name in _RAISING)
# Raises without CUDA when entered (`with torch.cuda.device(i):`, checked on the CPU build of torch
# 2.13), whatever `i` is, except -1 (a CPU tensor's `get_device()`), which it ignores; made and not
# entered, it does nothing.
_ENTERED = "torch.cuda.device"  # (its last name: devlint.candidates.ENTERED_CUDA_CALL)


class CudaOnlyApi(Rule):
    """
    ## What it does
    Flags calls of `torch.cuda` functions that raise without CUDA, outside a CUDA condition:
    `torch.cuda.synchronize()`, `set_device`, `current_device`, `get_device_name`,
    `get_device_properties`, `get_device_capability`, `mem_get_info`, `current_stream`,
    `default_stream`, `reset_peak_memory_stats`, `Event` and `Stream` (through any import alias),
    and `with torch.cuda.device(i):`, which raises when entered (`RuntimeError: PyTorch was compiled
    without CUDA support`; a CPU device: `ValueError: Expected a cuda device`).

    A constant flag guards nothing (as for DL001): after `USE_CUDA = True`, `if USE_CUDA:
    torch.cuda.synchronize()` is flagged; and `FusedNorm = None` re-bound by `from apex import FusedNorm`
    in a `try` makes `FusedNorm(...)` reachable, so the calls in its arguments are flagged.

    Off by default: 229 findings on the test corpus (NeMo 206, fairseq 12, pytorch/examples 5, mmcv 3,
    nanoGPT 3). Every sampled call does raise without CUDA, but 23 of 25 sampled sit in code that only
    ever runs with CUDA without a condition devlint can see (NCCL set-up, CUDA-graph decoding,
    Megatron inference, CUDA kernels). Turn it on with `--extend-select DL015` for code meant to run
    anywhere.

    ## Why is this bad?
    Unlike `torch.cuda.is_available()` or `torch.cuda.empty_cache()`, these need a CUDA device:
    on a CPU-only build `torch.cuda.synchronize()` raises `AssertionError: Torch not compiled with
    CUDA enabled`, `torch.cuda.set_device(0)` an `AttributeError`, `torch.cuda.Event()` a
    `RuntimeError`. Timing code (`synchronize`, `Event(enable_timing=True)`) and device selection
    are the usual way a script that otherwise runs on a CPU or a Mac dies.

    ## Example
    ```python
    torch.cuda.set_device(local_rank)
    torch.cuda.synchronize()
    ```

    ## Use instead
    ```python
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        torch.cuda.synchronize()
    ```
    or, on PyTorch 2.6 and later, the vendor-neutral `torch.accelerator.set_device_index(local_rank)`
    and `torch.accelerator.synchronize()` (CUDA, MPS, XPU, ...).

    ## Fix safety
    `torch.cuda.synchronize(...)` becomes `torch.accelerator.synchronize(...)`,
    `torch.cuda.current_device()` becomes `torch.accelerator.current_device_index()` and
    `torch.cuda.set_device(i)` becomes `torch.accelerator.set_device_index(i)`; a `device=` keyword is
    passed positionally, since the `torch.accelerator` functions take it positionally only. These are **unsafe**:
    they need PyTorch 2.6 or later, and they work on any accelerator but still raise on a machine with
    none (`RuntimeError: Cannot access accelerator device when none is available`), so a guard may
    still be needed. The other calls have no device-neutral equivalent that runs without an
    accelerator (`torch.Event` cannot be recorded on the CPU): their fix is **display-only** (guard them).

    ## Not flagged
    - Calls that work without CUDA: `torch.cuda.is_available()`, `torch.cuda.device_count()`,
      `torch.cuda.empty_cache()`, `torch.cuda.manual_seed(0)`, `torch.cuda.manual_seed_all(0)`,
      `torch.cuda.memory_allocated()`, `torch.cuda.max_memory_allocated()`.
    - `torch.cuda.stream(s)`: a no-op without CUDA.
    - `torch.cuda.device(...)` other than as the item of a `with`: alone it does nothing, and one kept
      in a name (`ctx = torch.cuda.device(local_rank)`) is not followed to where it may be entered.
    - `with torch.cuda.device(x.get_device()):` and `torch.cuda.device(-1)`: the index of a CPU tensor,
      -1, is ignored.
    - Code under a CUDA condition (same guards as DL001), e.g.
      `if torch.cuda.is_available(): torch.cuda.synchronize()`, `if device.type == "cuda":`,
      `if dist.get_backend() == dist.Backend.NCCL:` (NCCL needs CUDA), a test skipped with
      `skipif(torch.cuda.device_count() < 2, ...)` or after `if torch.cuda.device_count() < 2: return`.
    - Dead code: a branch that a module-level `None` never re-bound makes unreachable, e.g. the `else` of
      `x if FusedNorm is None else FusedNorm(x, torch.cuda.current_device())` after `FusedNorm = None`.
    - References that are not calls: `sync = torch.cuda.synchronize`.

    ## References
    - [torch.accelerator](https://pytorch.org/docs/stable/accelerator.html)
    - [CUDA semantics](https://pytorch.org/docs/stable/notes/cuda.html)
    """

    code = "DL015"
    name = "cuda-only-api"
    message = ("this `torch.cuda` call raises without CUDA; guard it with `torch.cuda.is_available()`, or use"
               " `torch.accelerator` (PyTorch >= 2.6), which still needs an accelerator")
    default_enabled = False

    VALID = (
        "import torch\nok = torch.cuda.is_available()\nn = torch.cuda.device_count()\ntorch.cuda.empty_cache()\n"
        "torch.cuda.manual_seed(0)\ntorch.cuda.manual_seed_all(0)\n",
        "import torch\nused = torch.cuda.memory_allocated()\npeak = torch.cuda.max_memory_allocated()\n",
        "import torch\nwith torch.cuda.stream(s):\n    y = f(x)\n",
        "import torch\nctx = torch.cuda.device(local_rank)\n",
        "import torch\nwith torch.cuda.device(x.get_device()):\n    y = f(x)\nwith torch.cuda.device(-1):\n    pass\n",
        "import torch\nif torch.cuda.is_available():\n    with torch.cuda.device(0):\n        y = f(x)\n",
        "import torch\nif torch.cuda.is_available(): torch.cuda.synchronize()\n",
        'import torch\nif device.type == "cuda":\n    start = torch.cuda.Event(enable_timing=True)\n',
        "import torch\nsync = torch.cuda.synchronize\n",
        "import torch\nimport torch.distributed as dist\nif dist.get_backend() == dist.Backend.NCCL:\n"
        "    torch.cuda.set_device(rank)\nif args.backend == 'nccl':\n    torch.cuda.synchronize()\n",
        "import pytest, torch\n@pytest.mark.skipif(torch.cuda.device_count() < 2, reason='2 gpus')\n"
        "def test_two():\n    torch.cuda.set_device(1)\n"
        "def run():\n    if torch.cuda.device_count() < 2: return\n    torch.cuda.synchronize()\n",
        "import torch\nFusedNorm = None\ndef norm(x):\n"
        "    return x if FusedNorm is None else FusedNorm(x, torch.cuda.current_device())\n",
    )
    INVALID = (
        Invalid(
            "import torch\ntorch.cuda.synchronize()\n",
            fixed="import torch\ntorch.accelerator.synchronize()\n",
            unsafe=True,
        ),
        Invalid(
            "import torch as th\ndef setup(rank):\n    th.cuda.set_device(rank)\n    return th.cuda.current_device()\n",
            fixed="import torch as th\ndef setup(rank):\n    th.accelerator.set_device_index(rank)\n"
            "    return th.accelerator.current_device_index()\n",
            unsafe=True,
            count=2,
        ),
        Invalid("import torch\ntorch.cuda.synchronize()\n", fixed="import torch\ntorch.cuda.synchronize()\n"),
        Invalid(
            "import torch\ntorch.cuda.synchronize(device = dev)\ntorch.cuda.set_device(device=rank)\n",
            fixed="import torch\ntorch.accelerator.synchronize(dev)\ntorch.accelerator.set_device_index(rank)\n",
            unsafe=True,
            count=2,
        ),
        Invalid("import torch\nstart = torch.cuda.Event(enable_timing=True)\n"),
        Invalid("import torch\nif torch.cuda.device_count() < 2:\n    torch.cuda.synchronize()\n"),
        Invalid("import torch\nif backend != 'nccl':\n    torch.cuda.synchronize()\n"),
        Invalid("from torch.cuda import get_device_name\nprint(get_device_name(0))\n"),
        Invalid(
            "import torch\ntry:\n    from apex import FusedNorm\nexcept ImportError:\n    FusedNorm = None\n"
            "def norm(x):\n    return x if FusedNorm is None else FusedNorm(x, torch.cuda.current_device())\n",
        ),
        Invalid("import torch\nwith torch.cuda.device(0):\n    x = torch.ones(2).cuda()\n"),
        Invalid("from torch.cuda import device\ndef run(rank):\n    with device(rank), open(p) as f:\n        pass\n"),
        Invalid("import torch\nUSE_CUDA = True\nif USE_CUDA:\n    torch.cuda.synchronize()\n",
                fixed="import torch\nUSE_CUDA = True\nif USE_CUDA:\n    torch.accelerator.synchronize()\n",
                unsafe=True),
        Invalid("from torch import cuda\ncuda.synchronize()\n", fixed="from torch import cuda\ncuda.synchronize()\n",
                unsafe=True),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = last_component(func) or ""
        if last not in _RAISING and last != "device" and not isinstance(func, cst.Name):
            return
        if self.ctx.guards.is_guarded(node):
            return
        if qualified(self.ctx, func, {_ENTERED}) is not None:
            if self._entered(node) and not self._ignored_index(node):
                self.report(node, "`torch.cuda.device(...)` raises without CUDA when entered; guard the `with` "
                                  "with `torch.cuda.is_available()`",
                            self.display_only("Guard `with torch.cuda.device(...)` with `if torch.cuda.is_available():`"))
            return
        found = qualified(self.ctx, func, _QUALIFIED)
        if found is None:
            return
        short = found.rsplit(".", 1)[-1]
        # the message names what the fix does: the guard, or the `torch.accelerator` call its title offers
        message = f"`torch.cuda.{short}` raises without CUDA; guard it with `torch.cuda.is_available()`"
        if _RAISING[short] is not None:
            message += (f", or use `torch.accelerator.{_RAISING[short]}` (PyTorch >= 2.6), which still needs"
                        " an accelerator")
        self.report(node, message, self._fix(node, short))

    def _entered(self, call: cst.Call) -> bool:
        item = self.ctx.parent(call)
        return isinstance(item, cst.WithItem) and item.item is call

    @staticmethod
    def _ignored_index(call: cst.Call) -> bool:
        """`x.get_device()` or `-1`: the index of a CPU tensor, which torch.cuda.device ignores."""
        arg = find_arg(call, "device", 0)
        if arg is None:
            return False
        value = arg.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "get_device" and not value.args:
            return True
        return isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) \
            and isinstance(value.expression, cst.Integer) and value.expression.value == "1"

    def _fix(self, call: cst.Call, short: str):
        replacement = _RAISING[short]
        if replacement is None:
            return self.display_only(f"Guard `torch.cuda.{short}(...)` with `if torch.cuda.is_available():`")
        title = f"Use `torch.accelerator.{replacement}` (PyTorch >= 2.6; still raises without an accelerator)"
        torch = written_torch_root(call.func)
        if torch is None:
            return self.display_only(title)
        if len(call.args) > 1 or any(arg.star for arg in call.args):
            return self.display_only(title)
        edits = [self.replace(call.func, f"{torch}.accelerator.{replacement}")]
        # torch.accelerator's functions take the device positionally only: `device=d` would raise.
        edits += [
            Edit(self.ctx.span(arg.keyword)[0], self.ctx.span(arg.value)[0], "")
            for arg in call.args
            if arg.keyword is not None
        ]
        return self.fix(title, Applicability.UNSAFE, *edits)
