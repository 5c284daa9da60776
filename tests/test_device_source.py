"""Where a fix's device comes from: a name in scope, then one derived from the code at hand (`self.device`,
`y.device` of a tensor the statement combines with the moved value), then a definition; and DL006's
`device.type` where the device is known to be a `torch.device` (issue 15 item 1, issue 17 item 5). Only where
proven (issue 29): the reproducers and the runtime proof on the virtual GPU are in tests/test_derived_devices.py."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.context import FileContext
from devlint.model import Applicability
from devlint.analysis.device import device_source
from devlint.analysis.device_values import derived_device, holds_torch_device
from tests.helpers import fix, lint

DEFINITION = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'


def _dl001_titles(source: str) -> list[tuple[str, Applicability]]:
    return [(f.fix.title, f.fix.applicability) for f in lint(source, "DL001") if f.fix]


# -- 1. `y.device` of a tensor on the run's device, combined with the moved value ------------------------

@pytest.mark.parametrize("use, expected", [
    ("torch.ones(3).cuda() + y", "torch.ones(3).to(y.device) + y"),
    ("y * torch.ones(3).cuda()", "y * torch.ones(3).to(y.device)"),
    ("torch.ones(3).cuda().float() @ y", "torch.ones(3).to(y.device).float() @ y"),
    ("torch.cat([torch.zeros(2).cuda(), y])", "torch.cat([torch.zeros(2).to(y.device), y])"),
    ("torch.matmul(torch.eye(3).cuda(), y)", "torch.matmul(torch.eye(3).to(y.device), y)"),
    ("torch.where(m, torch.zeros(3).cuda(), y)", "torch.where(m, torch.zeros(3).to(y.device), y)"),
])
def test_a_tensor_on_the_device_combined_with_the_moved_value_gives_its_device(use, expected):
    source = f"import torch\ndef f(x: torch.Tensor, m):\n    y = x.to('cuda')\n    return {use}\n"
    assert fix(source, "DL001") == source.replace(use, expected)
    assert _dl001_titles(source) == [("Replace `.cuda()` with `.to(y.device)`", Applicability.SAFE)]


def test_the_binding_may_be_a_cuda_call_fixed_in_the_same_pass():
    source = "import torch\ndef f(x: torch.Tensor):\n    y = x.cuda()\n    z = torch.ones(3).cuda() + y\n    return z\n"
    assert fix(source, "DL001") == (
        f"import torch\ndef f(x: torch.Tensor):\n    {DEFINITION}\n    y = x.to(device)\n"
        "    z = torch.ones(3).to(y.device) + y\n    return z\n")


def test_a_module_level_script_derives_too():
    source = "import torch\ny = torch.randn(3).to('cuda:0')\nz = torch.ones(3).cuda() - y\nprint(z)\n"
    assert "torch.ones(3).to(y.device) - y" in fix(source, "DL001")


def test_the_device_index_is_still_unsafe_with_a_derived_device():
    source = "import torch\ndef f(x: torch.Tensor):\n    y = x.to('cuda')\n    return torch.ones(3).cuda(1) + y\n"
    assert _dl001_titles(source) == [("Replace `.cuda()` with `.to(y.device)` (drops the device index)",
                                      Applicability.UNSAFE)]


@pytest.mark.parametrize("body", [
    # the tensor lives on the CPU by the placement fact
    "    y = x.cpu()\n    return torch.ones(3).cuda() + y\n",
    "    y = torch.zeros(3)\n    return torch.ones(3).cuda() + y\n",
    "    y = x.to('cpu')\n    return torch.ones(3).cuda() + y\n",
    # rebound between: the last binding decides
    "    y = x.cuda()\n    y = y.cpu()\n    return torch.ones(3).cuda() + y\n",
    # bound on a branch only, or rebound later in a loop around the use
    "    if x is not None:\n        y = x.cuda()\n    return torch.ones(3).cuda() + y\n",
    "    y = x.cuda()\n    for i in range(3):\n        z = torch.ones(3).cuda() + y\n        y = y.cpu()\n    return z\n",
    # a parameter: where it lives is unknown
    "    return torch.ones(3).cuda() + x\n",
    # `del`, `global`
    "    y = x.cuda()\n    del y\n    y = x.cpu()\n    return torch.ones(3).cuda() + y\n",
    "    global y\n    y = x.cuda()\n    return torch.ones(3).cuda() + y\n",
    # not combined: a call that does not need one device, a comparison, another statement
    "    y = x.cuda()\n    return helper(torch.ones(3).cuda(), y)\n",
    "    y = x.cuda()\n    return torch.ones(3).cuda() == y\n",
    "    y = x.cuda()\n    z = torch.ones(3).cuda()\n    return z + y\n",
    # unpacking, a module (no `.device`)
    "    y, w = x.cuda(), x\n    return torch.ones(3).cuda() + y\n",
    "    y = torch.nn.Linear(3, 3).cuda()\n    return torch.ones(3).cuda() + y\n",
    # issue 29 S3: not provably a tensor on the device `.cuda()` uses
    "    y = b.cuda()\n    return torch.ones(3).cuda() + y\n",  # `b` may be a container with its own cuda()
    "    y = model(x.cuda())\n    return torch.ones(3).cuda() + y\n",  # a model's output may be a float
    "    y = x.to(args.device)\n    return torch.ones(3).cuda() + y\n",  # may be the CPU (a 0-d CPU tensor mixes)
    "    y = x.cuda(1)\n    return torch.ones(3).cuda() + y\n",  # another GPU
    # moved in place, or handed to what may move it, between its binding and the use
    "    y = x.cuda()\n    y.data = y.data.cpu()\n    return torch.ones(3).cuda() * y\n",
    "    y = x.cuda()\n    y.set_(y.cpu())\n    return torch.ones(3).cuda() * y\n",
    "    y = x.cuda()\n    w = y\n    w.data = w.data.cpu()\n    return torch.ones(3).cuda() * y\n",
    "    y = x.cuda()\n    helper(y)\n    return torch.ones(3).cuda() * y\n",
    "    y = x.cuda()\n    torch.utils.swap_tensors(y, x.cpu())\n    return torch.ones(3).cuda() * y\n",
    "    y = x.cuda().type_as(x.cpu())\n    return torch.ones(3).cuda() * y\n",  # the other's device
    "    y = x.cuda().max(dim=0)\n    return torch.ones(3).cuda() * y\n",  # (values, indices)
    "    y = x.cuda()\n    x.data = x.data.cpu()\n    return torch.ones(3).cuda() * y\n",  # y may be x itself
    "    w = x.cuda()\n    w.data = w.data.cpu()\n    y = w + 1\n    return torch.ones(3).cuda() * y\n",
    "    y = x.cuda()\n    for i in range(2):\n        z = torch.ones(3).cuda() * y\n        y.data = y.data.cpu()\n"
    "    return z\n",
])
def test_no_derived_device_without_proof(body):
    source = f"import torch\ndef f(x: torch.Tensor, b, model, args, helper=print):\n{body}"
    fixed = fix(source, "DL001")
    assert "y.device" not in fixed and "x.device" not in fixed
    assert "torch.ones(3).to(device)" in fixed or "torch.ones(3).cuda()" in fixed


def test_reads_that_leave_the_tensor_in_place_keep_the_derived_device():
    source = ("import torch\ndef f(x: torch.Tensor):\n    y = x.cuda().float()\n    print(y.shape, len(y))\n"
              "    y[0] = 1\n    s = torch.sum(y) + y.mean()\n    return torch.ones(3).cuda() * y, s\n")
    assert "torch.ones(3).to(y.device) * y" in fix(source, "DL001")


# -- 2. `self.device`, where the class's `__init__` sets it from the run's device ---------------------------
# Only a class nothing outside the file can subclass or reach (here: one defined in a function) offers it;
# tests/test_derived_devices.py has the classes that must not (issue 29 S1, S2).
RUN_DEVICE = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'


def _local_class(init: str, methods: str, bases: str = "") -> str:
    """A class defined in `build()`, with `init` as its `__init__` body and `methods` after it."""
    indented = "".join(f"    {line}\n" for line in methods.splitlines())
    return (f"import torch\ndef build():\n    class Runner{bases}:\n        def __init__(self):\n"
            f"            {init}\n{indented}    return Runner()\n")


def test_self_device_replaces_a_definition_in_dl001_dl004_and_dl005():
    source = _local_class(f"self.device = {RUN_DEVICE}",
                          "    def step(self, x):\n        a = x.cuda()\n        b = torch.zeros(2, device='cuda')\n"
                          "        c = torch.cuda.FloatTensor(2, 3)\n        return a, b, c")
    fixed = fix(source, "DL00")
    assert "a = x.to(self.device)" in fixed
    assert "b = torch.zeros(2, device=self.device)" in fixed
    assert "c = torch.empty(2, 3, dtype=torch.float32, device=self.device)" in fixed
    assert fixed.count("device = torch.device(") == 1  # `self.device = ...` only: no definition


def test_a_self_device_that_may_be_a_string_does_not_replace_a_torch_device_call():
    # `torch.device("cuda")` stored or compared keeps its type: a string `self.device` does not stand in
    source = _local_class("self.device = 'cuda' if torch.cuda.is_available() else 'cpu'",
                          "    def step(self):\n        self.target = torch.device('cuda')")
    assert "self.target = self.device" not in fix(source, "DL004")


def test_a_string_device_argument_may_become_self_device_even_if_it_is_a_string():
    source = _local_class("self.device = 'cuda' if torch.cuda.is_available() else 'cpu'",
                          "    def step(self, x):\n        return x.to('cuda')")
    assert "return x.to(self.device)" in fix(source, "DL004")


def test_an_nn_module_subclass_may_set_it_after_super_init():
    source = _local_class(f"super().__init__()\n            self.lin = torch.nn.Linear(3, 3)\n"
                          f"            self.device = {RUN_DEVICE}",
                          "    def forward(self, x):\n        return self.lin(x) * torch.ones(3).cuda()",
                          bases="(torch.nn.Module)")
    assert "self.lin(x) * torch.ones(3).to(self.device)" in fix(source, "DL001")


def test_inside_init_there_is_no_self_device_and_never_next_self_parameters():
    source = ("import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.lin = torch.nn.Linear(3, 3)\n        self.mask = torch.ones(3).cuda()\n"
              "    def forward(self, x):\n        return self.lin(x) * torch.ones(3).cuda()\n")
    fixed = fix(source, "DL001")
    assert "parameters()" not in fixed and "self.device" not in fixed
    assert "self.mask = torch.ones(3).to(device)" in fixed


def test_a_derived_device_is_used_where_device_names_something_else():
    source = ("import torch\ndef f(x: torch.Tensor, device=None):\n    y = x.to('cuda')\n"
              "    return torch.ones(3).cuda() + y\n")
    assert "torch.ones(3).to(y.device) + y" in fix(source, "DL001")


def test_a_device_in_scope_comes_before_a_derived_one_and_a_parameter_does_not():
    body = "    y = x.to('cuda')\n    return torch.ones(3).cuda() + y\n"
    source = f"import torch\ndef f(x: torch.Tensor):\n    device = {RUN_DEVICE}\n{body}"
    assert "torch.ones(3).to(device) + y" in fix(source, "DL001")
    source = f"import torch\ndef f(x: torch.Tensor, device):\n{body}"  # a caller may pass the CPU
    assert "torch.ones(3).to(y.device) + y" in fix(source, "DL001")


def test_dl004_factory_device_combined_with_a_device_tensor():
    source = "import torch\ndef f(x: torch.Tensor):\n    y = x.cuda()\n    return torch.ones(3, device='cuda') * y\n"
    assert "torch.ones(3, device=y.device) * y" in fix(source, "DL004")


def test_derived_device_api():
    source = "import torch\ndef f(x: torch.Tensor):\n    y = x.cuda()\n    return torch.ones(3).cuda() + y\n"
    ctx = FileContext(cst.parse_module(source))
    [call] = [c for c in ctx.nodes(cst.Call) if ctx.code(c) == "torch.ones(3).cuda()"]
    assert derived_device(ctx, call) == "y.device"
    assert device_source(ctx, call, call) == ("y.device", False)
    assert device_source(ctx, call) == ("device", True)  # no value: nothing to derive from
    assert holds_torch_device(ctx, call, "y.device")


# -- 3. DL006: `device.type` where the device is a torch.device -------------------------------------------

@pytest.mark.parametrize("head, expected", [
    (f"def f(x):\n    device = {RUN_DEVICE}\n", "device.type"),
    ("def f(x: torch.Tensor):\n    y = x.cuda()\n    device = y.device\n", "device.type"),
    ("def f(x):\n    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n", "torch.device(device).type"),
    ("def f(x):\n    device = 'cpu' if not torch.cuda.is_available() else 'cuda'\n", "torch.device(device).type"),
    # not proven to be the run's device (a caller may pass the CPU): DL006's fixes are unsafe anyway
    ("def f(x, device: torch.device):\n", "device.type"),
    ("def f(x: torch.Tensor):\n    device = x.device\n", "device.type"),
    ("def f(x, device):\n", "torch.device(device).type"),
    ("def f(x, device: str):\n", "torch.device(device).type"),
    ("def f(x, args):\n    device = args.device\n", "torch.device(device).type"),
])
def test_dl006_writes_device_type_only_for_a_torch_device(head, expected):
    source = f"import torch\n{head}    with torch.cuda.amp.autocast():\n        return x\n"
    assert f"with torch.amp.autocast({expected}):" in fix(source, "DL006", unsafe=True)


def test_dl006_inserted_definition_is_a_torch_device():
    source = "import torch\ndef f(x):\n    with torch.cuda.amp.autocast():\n        return x\n"
    fixed = fix(source, "DL006", unsafe=True)
    assert DEFINITION in fixed and "torch.amp.autocast(device.type)" in fixed


@pytest.mark.parametrize("init, expected", [
    (f"self.device = {RUN_DEVICE}", "self.device.type"),
    ("self.device = 'cuda' if torch.cuda.is_available() else 'cpu'", "torch.device(self.device).type"),
])
def test_dl006_self_device(init, expected):
    source = _local_class(init, "    def scaler(self):\n        return torch.cuda.amp.GradScaler()")
    assert f"torch.amp.GradScaler({expected})" in fix(source, "DL006", unsafe=True)


def test_dl006_string_device_stays_display_only():
    source = "import torch\ndevice = 'cuda'\nscaler = torch.cuda.amp.GradScaler()\n"
    [finding] = lint(source, "DL006")
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY
    assert "`device` is bound to a string" in finding.fix.title


@pytest.mark.parametrize("init", [
    "def __init__(self, device):",
    "def __init__(self, device: torch.device):",
    "def __init__(self, device=None):",
    "def __init__(self, device='cuda:1'):",
    "def __init__(self, device=torch.device('cuda')):",
])
def test_self_device_is_never_set_from_an_init_parameter(init):
    # issue 29 S2: a caller may pass `torch.device("cpu")`; `.cuda()` did not follow it
    source = (f"import torch\ndef build():\n    class Runner:\n        {init}\n            self.device = device\n"
              "        def step(self, x):\n            with torch.cuda.amp.autocast():\n                return x.cuda()\n"
              "    return Runner\n")
    fixed = fix(source, unsafe=True)
    assert "return x.to(device)" in fixed and "self.device)" not in fixed
    assert "torch.amp.autocast(device.type)" in fixed


def test_self_device_is_not_written_into_a_default_or_from_a_non_device_value():
    source = _local_class(f"self.device = {RUN_DEVICE}",
                          "    def step(self, x, e=torch.ones(2).cuda()):\n        return x")
    assert "self.device)" not in fix(source, "DL001")  # a default runs where `self` is not bound
    source = ("import torch\ndef build(gpu):\n    class Runner:\n        def __init__(self):\n"
              "            self.device = gpu\n        def step(self, x):\n            return x.cuda()\n"
              "    return Runner\n")
    assert "self.device)" not in fix(source, "DL001")  # `gpu` may be an index: another GPU
