from __future__ import annotations

import dataclasses
from functools import cached_property

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.rules._hardcoded import (
    CudaLiteral, cuda_literal, feeds_torch, in_comparison, is_torch_call, inside_cuda_method, is_alternative, is_last_word_device,
    loop_variable_index, names_several_gpus, qualified, replace_with_device, simulates_gpu,
)
from devlint.analysis.device import torch_name
from devlint.analysis.fix_review import unseen_rebinding
from devlint.analysis.visible_devices import sets_visible_devices
from devlint.rules.torch_load_without_map_location import LOADERS
from devlint.syntax import dotted_name, find_arg, last_component

_DEVICE_KEYWORDS = frozenset({"device", "map_location"})
_TORCH_DEVICE = frozenset({"torch.device"})
_SET_DEFAULT_DEVICE = frozenset({"torch.set_default_device"})


class HardcodedDeviceString(Rule):
    """
    ## What it does
    Flags a literal `"cuda"` or `"cuda:N"` (or `torch.device("cuda...")`) given to torch as a device:
    `x.to("cuda")`, `device="cuda"` of a torch function, class or tensor/module method
    (`torch.zeros(3, device="cuda")`, `nn.Linear(2, 2, device="cuda")`, `x.new_zeros(2, device="cuda")`),
    or of a function or class of this file that hands its argument to torch, `map_location="cuda:0"` in
    any call, the second argument of `torch.load`, `map_location=lambda storage, loc: storage.cuda()`,
    `torch.set_default_device("cuda")`, a `torch.device("cuda")` built without an availability check,
    and a variable named like a device (`device = "cuda"`, `self.device = "cuda:0"`) bound to such a
    literal once and for all. Constructing `torch.device("cuda:0")` works without CUDA; *using* it
    (allocating, moving, loading there) is what fails.

    On by default: on the test corpus (mmcv, fairseq, NeMo, PyTorch-GAN, pytorch/examples, nanoGPT and
    two tutorials) it reports 80 literals, and in a sample of 20 every one is a device that fails
    without CUDA (6 of them in code that only runs on GPUs anyway: Megatron, NCCL broadcasts, TensorRT
    tests, as with DL001). Lightning's `MixedPrecisionPlugin(..., device="cuda")` (a device type, 42
    findings) and test parameters skipped without CUDA were false positives of a first version; devices
    handed to mocks and test helpers, `.type` comparisons, per-GPU device lists and `device=` of other
    packages (55 of 152 findings on Lightning, NeMo, stable-baselines3, OpenNMT-py and timm) of a second.

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
    A literal given as a device becomes `device`: a device already bound in scope, or one definition the
    fixer inserts (see `devlint/analysis/device.py`). This is **safe** for `"cuda"` and `"cuda:0"` given to torch: on a
    machine with one GPU the same device is used. It is **unsafe** for `"cuda:N"` with N > 0 (the rewrite
    drops which GPU was meant), and for a string given to a function of this file (`make(x,
    device="cuda")`: the function then gets a `torch.device`, which compares differently from the
    string, `device == "cuda"` is False), and where the device in scope may be the run's device but is
    not proven to be (a `device` parameter a caller may set to the CPU, `device = args.device`; the
    title says which). It is **display-only** where the rewrite would make devices
    equal that the code keeps apart: an index computed at run time (`f"cuda:{rank}"`,
    `torch.device("cuda", local_rank)`: a multi-GPU code path, every rank would get one device), and
    two different literal devices in one statement (`[torch.device("cuda:0"), torch.device("cuda:1")]`,
    `{torch.device("cuda:0"): a, torch.device("cuda:1"): b}`), even with `--unsafe-fixes`.

    A definition bound once (`device = "cuda"`, `gpu = torch.device("cuda:1")`) instead gets a CPU
    fallback, `device = "cuda" if torch.cuda.is_available() else "cpu"` or
    `torch.device("cuda:1" if torch.cuda.is_available() else "cpu")`, which keeps the index: **safe**
    for `"cuda"` and `"cuda:0"`, **unsafe** for another index or a computed one, and **display-only**
    where the function (or the module-level code) names several GPU indices, `"cuda"` counting as 0
    (`device_0 = torch.device("cuda:0")`, `device_1 = torch.device("cuda:1")` would both become the
    CPU, and a cache keyed by device would see one key), and in a file that sets `CUDA_VISIBLE_DEVICES`
    (the availability test queries CUDA, which freezes the visible devices, and may run before the setting).
    Where `device` names something that is not a device (say, the string `"cuda"` itself) or torch is
    not imported, the fix is **display-only**.

    ## Not flagged
    - The device-agnostic choice itself: `"cuda" if torch.cuda.is_available() else "cpu"`,
      `torch.device("cuda" if use_cuda else "cpu")`, `x.to("cuda" if args.cuda else "cpu")`.
    - Code under a CUDA condition (same guards as DL001): `if torch.cuda.is_available():`,
      `if device.type == "cuda":`, `device="cuda"` after `if not is_dist_avail_and_initialized(): return`
      or `if get_world_size() == 1: return` (a helper that returns 1 without the group) in a project whose
      every `init_process_group` is NCCL, a test skipped without CUDA, a test parameter
      `pytest.param(torch.device("cuda"), marks=pytest.mark.skipif(not torch.cuda.is_available(), ...))`.
    - Test parameters in a decorator: `@pytest.mark.parametrize("device", [torch.device("cpu"), torch.device("cuda")])`
      (whether the test skips the CUDA case is not visible).
    - Questions about a device, which construct it but never use it: comparisons
      `x.device == torch.device("cuda")`, `device.type == "cuda"`, `d.type == th.device("cuda").type`,
      `str(x.device) == "cuda:0"`, `d in (torch.device("cuda:0"), torch.device("cuda:1"))`,
      `"cuda" in str(device)`; reading `.type` or `.index` of one (`torch.device("cuda:1").index`);
      assertions `self.assertEqual(x.device, torch.device("cuda"))`,
      `m.to.assert_called_with(torch.device("cuda", 1))`.
    - One device per GPU, enumerated: `[torch.device("cuda", i) for i in ids]`,
      `for i in range(n): outs.append(x.to(f"cuda:{i}"))` (over `range(torch.cuda.device_count())` the
      list is empty without CUDA; a single `device` would give every rank the same GPU). Strings built
      otherwise (`"cuda:%d" % i`, `"cuda:" + str(i)`) are not read as devices.
    - Code inside a `def cuda(self, ...)` override: it implements `.cuda()` itself (DL001 exempts it too).
    - Code written to pretend to be on a GPU: a device handed to a mock or patch
      (`mock.patch(..., return_value=torch.device("cuda"))`, `MagicMock(device="cuda")`,
      `monkeypatch.setattr(obj, "device", torch.device("cuda"))`), set on another object
      (`model.device = torch.device("cuda")`, `m.return_value = torch.device("cuda")`), anything inside a
      function named fake, mock, stub, pretend, simulate or spoof (`def fake_device():`) or a class that
      is not a torch module named so or dummy (`class DummyAccelerator:`), and the device that the
      `device` property or a `get_device` method of a class that is not a torch module returns
      (`def device(self): return torch.device("cuda")` of a stand-in tensor or batch).
    - `device=` of a call that is not torch's: another package (`ctranslate2.Generator(path,
      device="cuda")` takes a string; `transformers.pipeline(..., device="cuda")`, numba, cupy, jax,
      onnxruntime, `SimpleNamespace(device="cuda")`), a call whose target the file does not show
      (`trainer.strategy.batch_to_device(batch, torch.device("cuda:0"))`, `build(cfg, device="cuda")`
      imported from the project), and a function of this file that does not give the argument to torch
      (`describe(device="cuda")`).
    - Defaults the caller can override: `def run(device="cuda"):`, a config field
      `device: str = "cuda"`, `parser.add_argument("--device", default="cuda")`.
    - A device variable that is re-bound elsewhere, e.g. `device = "cuda"` followed by
      `if not torch.cuda.is_available(): device = "cpu"`, or a module-level one that the file may
      re-bind where no assignment shows it: `exec(open("configurator.py").read())` (a configurator that
      writes `globals()` from `--device=cpu`), `globals().update(vars(args))`.
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
    message = "hard-coded CUDA device: using it fails without CUDA; use a `device` chosen at run time"

    VALID = (
        'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
        'import torch\nd = "cuda" if torch.cuda.is_available() else "cpu"\n',
        'import torch\ndevice = torch.device("cuda" if use_cuda else "cpu")\n',
        'x = x.to("cuda" if args.cuda else "cpu")\n',
        'import torch\nif torch.cuda.is_available():\n    x = torch.zeros(3, device="cuda")\n',
        'import torch\nimport torch.distributed as dist\ndist.init_process_group(backend="nccl")\n'
        'def is_dist_avail_and_initialized():\n    return dist.is_available() and dist.is_initialized()\n'
        'def total(n):\n    if not is_dist_avail_and_initialized():\n        return n\n'
        '    return torch.tensor([n], device="cuda")\n',
        'import torch\nimport torch.distributed as dist\nargs.dist_backend = "nccl"\n'
        'dist.init_process_group(backend=args.dist_backend)\ndef get_world_size():\n'
        '    if not dist.is_initialized():\n        return 1\n    return dist.get_world_size()\n'
        'def total(n):\n    if get_world_size() == 1:\n        return n\n    return torch.tensor([n], device="cuda")\n',
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
        'import torch\ndevice = "cuda"  # --device=cpu\nexec(open("configurator.py").read())\nx = torch.zeros(2, device=device)\n',
        'import torch\ndevice = "cuda"\nglobals().update(vars(args))\nx = torch.zeros(2, device=device)\n',
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
        # questions about a device
        'import torch as th\ndef on_gpu(d):\n    return d.type == th.device("cuda").type\n',
        'import torch\nok = str(x.device) == "cuda:0"\nhit = d in (torch.device("cuda:0"), torch.device("cuda:1"))\n'
        'second = torch.device("cuda:1").index\n',
        'import torch, unittest\nclass T(unittest.TestCase):\n    def test(self):\n'
        '        self.assertEqual(x.device, torch.device("cuda"))\n'
        '        m.to.assert_called_with(torch.device("cuda", 1))\n',
        # one device per GPU
        'import torch\ndef devices(ids):\n    return [torch.device("cuda", i) for i in ids]\n'
        'every = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]\n',
        'import torch\nouts = []\nfor i in range(n):\n    outs.append(x.to(f"cuda:{i}"))\n',
        'import torch\ny = x.to("cuda:%d" % i)\nz = x.to("cuda:" + str(i))\n',
        # an override of `.cuda()`
        'import torch\nclass Table:\n    def cuda(self, device=None):\n'
        '        self.buf = self.buf.to(torch.device("cuda"))\n        return super().cuda()\n',
        # pretending to be on a GPU
        'import torch\nfrom unittest import mock\nfrom unittest.mock import MagicMock\n'
        'with mock.patch("m.get", return_value=torch.device("cuda")):\n    pass\n'
        'm = MagicMock(device="cuda")\ndef test(monkeypatch):\n'
        '    monkeypatch.setattr(obj, "device", torch.device("cuda"))\n',
        'import torch\nmodel.device = torch.device("cuda")\nm.return_value = torch.device("cuda")\n',
        'import torch\ndef fake_device():\n    return torch.device("cuda")\nclass DummyAccelerator:\n'
        '    def setup(self):\n        self.root = torch.zeros(1, device="cuda")\n',
        'import torch\nclass Batch:\n    @property\n    def device(self):\n        return torch.device("cuda")\n'
        '    def get_device(self):\n        return torch.device("cuda:0")\n',
        # `device=` of something else than torch
        'import torch\nimport ctranslate2\nimport transformers\nfrom types import SimpleNamespace\n'
        'g = ctranslate2.Generator(path, device="cuda")\np = transformers.pipeline("fill-mask", device="cuda")\n'
        'ns = SimpleNamespace(device="cuda")\n',
        'import torch\nbatch = trainer.strategy.batch_to_device(batch, torch.device("cuda:0"))\n',
        'import torch\nfrom .builders import build\nm = build(cfg, device="cuda")\n',
        'import torch\ndef describe(device):\n    return f"on {device}"\nprint(describe(device="cuda"))\n',
    )
    INVALID = (
        Invalid(
            "import os\nDEVICE = 'cuda'\ndef main():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n",
            fixed="import os\nDEVICE = 'cuda'\ndef main():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n",
            unsafe=True,
        ),
        Invalid(
            'import torch\nx = torch.zeros(3, device="cuda")\n',
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "x = torch.zeros(3, device=device)\n",
        ),
        Invalid(
            "import torch\ndef f(x, device):\n    return x.to('cuda:0', non_blocking=True)\n",
            fixed="import torch\ndef f(x, device):\n    return x.to(device, non_blocking=True)\n",
            unsafe=True,  # a caller may pass the CPU
        ),
        Invalid(
            'import torch\nx = x.to("cuda:1")\n',
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "x = x.to(device)\n",
            unsafe=True,
        ),
        Invalid('import torch\nx = x.to(f"cuda:{rank}")\n', fixed='import torch\nx = x.to(f"cuda:{rank}")\n'),
        Invalid(
            'import torch\nstate = torch.load(path, map_location="cuda:0")\n',
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "state = torch.load(path, map_location=device)\n",
        ),
        Invalid(
            'import torch\nstate = torch.load(path, "cuda")\n',
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "state = torch.load(path, device)\n",
        ),
        Invalid(
            "import torch\nstate = torch.load(path, map_location=lambda storage, loc: storage.cuda())\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "state = torch.load(path, map_location=device)\n",
            count=1,
        ),
        Invalid(
            'import torch\ntorch.set_default_device("cuda")\n',
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "torch.set_default_device(device)\n",
        ),
        Invalid(
            'import torch\ndevice = torch.device("cuda:0")\nmodel.to(device)\n',
            fixed='import torch\ndevice = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\n'
            "model.to(device)\n",
        ),
        Invalid(
            'import torch\ndevice_0 = torch.device("cuda:0")\ndevice_1 = torch.device("cuda:1")\n',
            fixed='import torch\ndevice_0 = torch.device("cuda:0")\ndevice_1 = torch.device("cuda:1")\n',
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
            fixed="import torch\ndef f(model):\n"
            '    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "    return model.to(device)\n",
            unsafe=True,
        ),
        Invalid(
            'device = "cuda"\nx = x.to("cuda")\n',
            fixed='device = "cuda"\nx = x.to("cuda")\n',
            count=2,
        ),
        Invalid(
            'import torch\ndef make(n, device):\n    return torch.zeros(n, device=device)\n'
            'def run(device):\n    return make(3, device="cuda")\n',
            fixed='import torch\ndef make(n, device):\n    return torch.zeros(n, device=device)\n'
            'def run(device):\n    return make(3, device=device)\n',
            unsafe=True,
        ),
        Invalid(
            'import torch\nclass Runner:\n    def __init__(self, device):\n        self.device = torch.device(device)\n'
            'def main(device):\n    return Runner(torch.device("cuda"))\n',
            fixed='import torch\nclass Runner:\n    def __init__(self, device):\n        self.device = torch.device(device)\n'
            'def main(device):\n    return Runner(device)\n',
            unsafe=True,
        ),
        Invalid(
            'import torch\ndef shard(x, local_rank):\n    return x.to(torch.device("cuda", local_rank))\n',
            fixed='import torch\ndef shard(x, local_rank):\n    return x.to(torch.device("cuda", local_rank))\n',
            unsafe=True,
        ),
        Invalid(
            'import torch\ncache = {torch.device("cuda:0"): a, torch.device("cuda:1"): b}\n',
            fixed='import torch\ncache = {torch.device("cuda:0"): a, torch.device("cuda:1"): b}\n',
            unsafe=True,
            count=2,
        ),
        Invalid(
            'import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    @property\n    def device(self):\n'
            '        return torch.device("cuda")\n',
        ),
        Invalid(
            'import torch\ndef f(x):\n    return x.to(device="cuda", dtype=torch.float16)\n',
            fixed="import torch\ndef f(x):\n"
            '    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "    return x.to(device=device, dtype=torch.float16)\n",
        ),
    )

    # -- where a device is given ---------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and not self.ctx.is_imported_module(func.value):
            self._positional(node, 0)
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in _DEVICE_KEYWORDS:
                continue
            if arg.keyword.value == "device" and not self._gives_to_torch(node, arg):
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
        return (is_alternative(self.ctx, node) or in_comparison(self.ctx, node) or inside_cuda_method(self.ctx, node)
                or simulates_gpu(self.ctx, node) or self.ctx.guards.is_guarded(node))

    def _gives_to_torch(self, call: cst.Call, arg: cst.Arg) -> bool:
        if arg.keyword is not None and arg.keyword.value == "device" and _names_a_device_type(call.func):
            return False
        return feeds_torch(self.ctx, call, arg)

    def _literal(self, node: cst.BaseExpression) -> None:
        literal = cuda_literal(node)
        if literal is None or self._skipped(node):
            return
        if literal.computed and loop_variable_index(self.ctx, node):
            return  # one device per GPU, enumerated
        text = self.ctx.code(node)
        self.report(node, self._message(text), self._rewrite(node, f"Replace `{text}` with `device`", literal))

    def _rewrite(self, node: cst.CSTNode, title: str, literal: CudaLiteral):
        """Replace a device with the run-time `device`, unless that would make devices equal that differ."""
        if literal.computed:
            return self.display_only(f"{title} (the GPU index is computed: every rank or GPU would get one device)")
        if names_several_gpus(self.ctx, node):
            return self.display_only(f"{title} (the code tells several GPUs apart: they would become one device)")
        if not isinstance(node, cst.Call) and self._given_to_own_function(node):
            # `make(x, device="cuda")`: the function of this file gets a `torch.device` instead of a string,
            # which compares differently (`device == "cuda"`, `"cuda" in device`)
            fix = replace_with_device(self, node, title, literal.names_a_gpu)
            if fix.applicability is Applicability.SAFE:
                fix = dataclasses.replace(fix, applicability=Applicability.UNSAFE,
                                          title=f"{title} (the function gets a torch.device, not a string)")
            return fix
        return replace_with_device(self, node, title, literal.names_a_gpu)

    def _given_to_own_function(self, node: cst.CSTNode) -> bool:
        arg = self.ctx.parent(node)
        call = self.ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        return isinstance(call, cst.Call) and not is_torch_call(self.ctx, call, arg)

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
                    self._rewrite(node, title, literal))

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
        if literal.computed and loop_variable_index(self.ctx, call):
            return  # `[torch.device("cuda", i) for i in ids]`: one device per GPU, enumerated
        top, holder = self._holder(call)
        if isinstance(holder, cst.Arg):
            consumer = self.ctx.parent(holder)
            if not (isinstance(consumer, cst.Call) and self._gives_to_torch(consumer, holder)):
                return  # handed to something else than torch: a mock, a test helper, another package
        elif isinstance(holder, (cst.Assign, cst.AnnAssign)) and holder.value is top:
            targets = holder.targets if isinstance(holder, cst.Assign) else [holder]
            if len(targets) != 1 or _is_config_field(targets[0].target):
                return  # `model.device = torch.device("cuda")`: set on another object (a setting, a test double)
            if top is call:
                self._definition(targets[0].target, call, checked=True, names_a_gpu=literal.names_a_gpu)
                return
        text = self.ctx.code(call)
        self.report(call, self._message(text), self._rewrite(call, f"Replace `{text}` with `device`", literal))

    def _holder(self, node: cst.CSTNode) -> tuple[cst.CSTNode, cst.CSTNode | None]:
        """(the list/tuple/set or lambda holding `node`, or `node`; what holds that): `[torch.device("cuda", 0)]`
        and `property(lambda self: torch.device("cuda"))` -> the Arg they are given as."""
        top = node
        parent = self.ctx.parent(node)
        while isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.Set)) or (
            isinstance(parent, cst.Lambda) and parent.body is top
        ):
            if not isinstance(parent, cst.Element):
                top = parent  # a container of devices, or `lambda: torch.device("cuda")` that returns one
            parent = self.ctx.parent(parent)
        return top, parent

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
        if self._rebound_unseen(target):
            return  # a default that `exec(...)` or a `globals()` write may override from the command line
        if not checked and self._skipped(value):
            return
        self.report(value, self._message(self.ctx.code(value)), self._fallback_fix(value, names_a_gpu))

    def _rebound_unseen(self, target: cst.BaseExpression) -> bool:
        """Is `target` a module-level name that `exec(...)`, a write to `globals()` or `vars()`, or a
        `setattr` on the module may re-bind (devlint.analysis.fix_review)? A function's local is not:
        `exec` cannot re-bind it."""
        if not isinstance(target, cst.Name):
            return False
        if any(isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for a in self.ctx.ancestors(target)):
            return False
        return unseen_rebinding(self.ctx, target.value) is not None

    def _fallback_fix(self, value: cst.BaseExpression, names_a_gpu: bool):
        title = "Fall back to the CPU when CUDA is not available"
        if names_several_gpus(self.ctx, value, in_scope=True):
            return self.display_only(f"{title} (the code tells several GPUs apart: on the CPU they would be equal)")
        if sets_visible_devices(self.ctx):
            # the availability test queries CUDA, which freezes the visible devices: it may run first
            return self.display_only(f"{title} (this file sets CUDA_VISIBLE_DEVICES, which a CUDA query "
                                     "written here may run before)")
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
        return f"`{text}` is a hard-coded CUDA device: using it fails without CUDA; use a `device` chosen at run time"


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
