"""Derived devices only where the derivation is proven (issue 29, S1-S3).

A fix may write `self.device`, an existing `device` or `y.device` for `.cuda()` only where that value is
certainly bound when the line runs and is the GPU `.cuda()` used; otherwise it writes a definition of its
own, or is display-only with the reason in its title. Each reproducer below is a complete program that
runs on the virtual GPU; the last test runs them all, before and after `devlint --fix`, in one batch.
"""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.context import FileContext
from devlint.model import Applicability
from devlint.analysis.derived import self_device_failure
from tests.helpers import fix, lint, run_python

RUN_DEVICE = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'

# S1: `reset_parameters()` runs from `nn.Linear.__init__`, before `self.device` is set.
S1_BASE_INIT = f'''
import torch
import torch.nn as nn


class MaskedLinear(nn.Linear):
    def __init__(self, n):
        super().__init__(n, n)
        self.device = {RUN_DEVICE}

    def reset_parameters(self):
        super().reset_parameters()
        self.mask = torch.ones(self.out_features).cuda()


print("s1", MaskedLinear(3).mask.tolist())
'''

# S1, a class nothing outside can reach: `__init__` calls the method before it sets the attribute.
S1_CALLED_FROM_INIT = f'''
import torch


def build():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.setup()
            self.device = {RUN_DEVICE}

        def setup(self):
            self.mask = torch.ones(2).cuda()

    return Net()


print("s1b", build().mask.tolist())
'''

# S1 again, in a function: the base is not `nn.Module` itself.
S1_LOCAL_BASE = f'''
import torch
import torch.nn as nn


def build():
    class MaskedLinear(nn.Linear):
        def __init__(self, n):
            super().__init__(n, n)
            self.device = {RUN_DEVICE}

        def reset_parameters(self):
            super().reset_parameters()
            self.mask = torch.ones(self.out_features).cuda()

    return MaskedLinear(3)


print("s1c", build().mask.tolist())
'''

# S2: a caller passes the CPU; `.cuda()` did not follow it.
S2_PARAMETER = '''
import torch


class Runner:
    def __init__(self, device):
        self.device = device

    def step(self, x):
        return x.cuda() * 2


out = Runner(torch.device("cpu")).step(torch.ones(2))
print("s2", out.tolist(), out.is_cuda == torch.cuda.is_available())
'''

# S2: another GPU than the one this code used (an invalid ordinal on a one-GPU machine).
S2_OTHER_GPU = '''
import torch


class Runner:
    def __init__(self):
        self.device = torch.device("cuda:1")

    def step(self, x):
        return x.cuda() * 2


print("s2b", Runner().step(torch.ones(2)).tolist())
'''

# S2: a subclass in another file sets the attribute to the CPU (runner_base.py, then prog.py).
S2_BASE = f'''
import torch


class Runner:
    def __init__(self):
        self.device = {RUN_DEVICE}

    def step(self, x):
        return x.cuda() * 2
'''
S2_SUBCLASS = '''
import torch

from runner_base import Runner


class CpuRunner(Runner):
    def __init__(self):
        super().__init__()
        self.device = torch.device("cpu")


out = CpuRunner().step(torch.ones(2))
print("s2c", out.tolist(), out.is_cuda == torch.cuda.is_available())
'''

# S2: an existing `device` that is the CPU, a parameter a caller sets to the CPU: display-only.
S2_CPU_NAME = '''
import torch

device = torch.device("cpu")


def step(x):
    return x.cuda() * 2


out = step(torch.ones(2))
print("s2d", out.tolist(), out.is_cuda == torch.cuda.is_available())
'''
S2_CPU_PARAMETER = '''
import torch


def step(x, device):
    return x.cuda() * 2


out = step(torch.ones(2), torch.device("cpu"))
print("s2e", out.tolist(), out.is_cuda == torch.cuda.is_available())
'''

# S3: the value combined with `.cuda()` is a Python float (a model's output).
S3_FLOAT = '''
import torch


class Total(torch.nn.Module):
    def forward(self, x):
        return float(x.sum())


def run(x: torch.Tensor):
    model = Total().cuda()
    y = model(x.cuda())
    return torch.ones(2).cuda() + y


print("s3", run(torch.ones(2)).tolist())
'''

# S3: a container with its own `cuda()` and `__radd__` (it has no `.device`).
S3_CONTAINER = '''
import torch

DEV = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Batch:
    def __init__(self, t):
        self.t = t

    def cuda(self):
        return Batch(self.t.to(DEV))

    def __radd__(self, other):
        return other + self.t


def run(b):
    y = b.cuda()
    return torch.ones(2).cuda() + y


print("s3b", run(Batch(torch.ones(2))).tolist())
'''

# S3: a tensor moved in place to the CPU; a CPU tensor with no dimensions combines with a CUDA one.
S3_MOVED = '''
import torch


def run(x: torch.Tensor):
    y = x.sum().cuda()
    y.data = y.data.cpu()
    return torch.ones(2).cuda() * y


z = run(torch.ones(2))
print("s3c", z.tolist(), z.is_cuda == torch.cuda.is_available())
'''

# Where the derivation is proven, it is still made (and the runtime proof runs it).
PROVEN = f'''
import torch


def build():
    class Runner:
        def __init__(self):
            self.device = {RUN_DEVICE}

        def step(self, x):
            return x.cuda() * 3

    return Runner()


def combine(x: torch.Tensor):
    y = x.cuda()
    z = torch.ones(3).cuda() + y
    return torch.cat([torch.zeros(2).cuda(), z]) * torch.ones(5, device="cuda")


out = combine(torch.arange(3.0))
print("proven", out.tolist(), out.is_cuda == torch.cuda.is_available(), build().step(torch.ones(2)).tolist())
'''

SAFE_PROGRAMS = {"s1.py": S1_BASE_INIT, "s1b.py": S1_CALLED_FROM_INIT, "s1c.py": S1_LOCAL_BASE,
                 "s2.py": S2_PARAMETER, "s2b.py": S2_OTHER_GPU, "runner_base.py": S2_BASE, "s2c.py": S2_SUBCLASS,
                 "s3.py": S3_FLOAT, "s3b.py": S3_CONTAINER, "s3c.py": S3_MOVED, "proven.py": PROVEN}


def _safe_dl001(source: str) -> list[str]:
    return [f.fix.title for f in lint(source, "DL001") if f.fix and f.fix.applicability is Applicability.SAFE]


@pytest.mark.parametrize("source", [S1_BASE_INIT, S1_CALLED_FROM_INIT, S1_LOCAL_BASE, S2_PARAMETER, S2_OTHER_GPU,
                                    S2_BASE], ids=["s1-base-init", "s1-called-from-init", "s1-local-base",
                                                   "s2-parameter", "s2-other-gpu", "s2-subclass-elsewhere"])
def test_self_device_is_not_written_where_it_may_be_unset_or_another_device(source):
    fixed = fix(source.lstrip(), "DL001")
    assert "self.device)" not in fixed
    assert ".to(device)" in fixed and 'device = torch.device("cuda" if' in fixed  # a definition of its own


@pytest.mark.parametrize("source, reason", [
    (S1_BASE_INIT, "a subclass or a caller in another file may set `self.device`"),
    (S1_CALLED_FROM_INIT, "`__init__` may call this method before it sets `self.device` (line 8)"),
    (S1_LOCAL_BASE, "its base `nn.Linear` may call this method from its `__init__`"),
    (S2_BASE, "a subclass or a caller in another file may set `self.device`"),
])
def test_why_self_device_is_not_offered(source, reason):
    ctx = FileContext(cst.parse_module(source.lstrip()))
    cls = ctx.nodes(cst.ClassDef)[0]
    init = next(f for f in ctx.nodes(cst.FunctionDef) if f.name.value == "__init__")
    first = next(s for s in init.body.body if "self.device =" in ctx.code(s))
    assert reason in self_device_failure(ctx, cls, init, first, "device")


def test_an_existing_device_that_is_the_cpu_is_not_reused():
    [finding] = lint(S2_CPU_NAME.lstrip(), "DL001")
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY
    assert '`device` is bound to `torch.device("cpu")` (line 3): the CPU, where this code used the GPU' in (
        finding.fix.title)
    assert fix(S2_CPU_NAME.lstrip(), "DL001", unsafe=True) == S2_CPU_NAME.lstrip()


@pytest.mark.parametrize("head, reason", [
    ("def step(x, device):\n", "`device` is a parameter (line 3): a caller may pass the CPU, where this code used the GPU"),
    ("def step(x, device=torch.device('cuda')):\n", "`device` is a parameter with the default `torch.device('cuda')`"),
    ("def step(x, args):\n    device = args.device\n", "`device` is bound to `args.device` (line 4): not provably"),
    ("def step(x, args):\n    device = torch.device('cuda' if args.cuda else 'cpu')\n",
     "a choice that does not depend only on `torch.cuda.is_available()`"),
])
def test_a_device_that_may_be_the_cpu_is_reused_only_by_an_unsafe_fix(head, reason):
    source = f"import torch\n\n{head}    return x.cuda() * 2\n"
    [finding] = lint(source, "DL001")
    assert finding.fix.applicability is Applicability.UNSAFE
    assert reason in finding.fix.title
    assert fix(source, "DL001") == source
    assert "return x.to(device) * 2" in fix(source, "DL001", unsafe=True)


def test_the_s2_parameter_reproducer_is_not_fixed_safely():
    assert fix(S2_CPU_PARAMETER.lstrip(), "ALL") == S2_CPU_PARAMETER.lstrip()


@pytest.mark.parametrize("source", [S3_FLOAT, S3_CONTAINER, S3_MOVED], ids=["float", "container", "moved"])
def test_y_device_is_not_derived_from_what_may_not_be_a_tensor_on_the_device(source):
    fixed = fix(source.lstrip(), "DL001")
    assert "y.device" not in fixed
    assert "torch.ones(2).to(device)" in fixed
    assert "Replace `.cuda()` with `.to(device)`" in _safe_dl001(source.lstrip())


@pytest.mark.parametrize("tail, reason", [
    ("    return Runner\n", "the class `Runner` leaves its function, where another file may subclass it"),
    ("    runners.append(Runner)\n    return Runner()\n", "leaves its function"),
])
def test_a_local_class_that_leaves_its_function_does_not_offer_self_device(tail, reason):
    source = (f"import torch\ndef build(runners):\n    class Runner:\n        def __init__(self):\n"
              f"            self.device = {RUN_DEVICE}\n        def step(self, x):\n            return x.cuda()\n{tail}")
    assert "self.device)" not in fix(source, "DL001")
    ctx = FileContext(cst.parse_module(source))
    cls = ctx.nodes(cst.ClassDef)[0]
    init = next(f for f in ctx.nodes(cst.FunctionDef) if f.name.value == "__init__")
    assert reason in self_device_failure(ctx, cls, init, init.body.body[0], "device")
    assert "return x.to(self.device)" in fix(source.replace(tail, "    return Runner()\n"), "DL001")


@pytest.mark.parametrize("before", [
    "self.setup()",  # calls the method that reads `self.device`
    "helper(self)",  # hands the object to code that may
    "self.scale = 2",  # a property's setter runs
    "if flag:\n                return",  # `__init__` may end before the attribute is set
])
def test_self_device_is_not_offered_where_init_may_run_the_method_first(before):
    def source(first: str) -> str:
        return (f"import torch\ndef build(flag, helper):\n    class Net(torch.nn.Module):\n        def __init__(self):\n"
                f"            super().__init__()\n            {first}\n            self.device = {RUN_DEVICE}\n"
                "        @property\n        def scale(self):\n            return 1\n"
                "        @scale.setter\n        def scale(self, v):\n            self.setup()\n"
                "        def setup(self):\n            self.mask = torch.ones(2).cuda()\n    return Net()\n")

    fixed = fix(source(before), "DL001")
    assert "self.device)" not in fixed and "torch.ones(2).to(device)" in fixed
    assert "torch.ones(2).to(self.device)" in fix(source("self.count = 0"), "DL001")


def test_proven_derivations_are_still_made():
    fixed = fix(PROVEN.lstrip(), "DL00")
    assert "return x.to(self.device) * 3" in fixed
    assert "torch.ones(3).to(y.device) + y" in fixed and "torch.zeros(2).to(z.device)" in fixed


@pytest.mark.slow
def test_the_fixed_programs_keep_their_virtual_gpu_output_and_run_without_cuda(tmp_path):
    """Each S case and the proven derivations, as one batch: the output on the virtual GPU is the same
    before and after `devlint --fix` (safe fixes only), and each fixed program runs with CUDA hidden."""
    pytest.importorskip("torch")
    for name, source in SAFE_PROGRAMS.items():
        (tmp_path / name).write_text(source.lstrip())
    mains = [name for name in SAFE_PROGRAMS if name != "runner_base.py"]
    runner = "import runpy, sys\nfor name in sys.argv[1:]:\n    runpy.run_path(name, run_name='__main__')\n"
    (tmp_path / "run_all.py").write_text(runner)

    def run(*args, **env):
        return run_python(tmp_path, *args, **env)

    before = run("-m", "devlint", "run", "--virtual-gpu", "run_all.py", *mains)
    assert before.returncode == 0, before.stderr
    assert len(before.stdout.splitlines()) == len(mains), before.stdout
    fixed = run("-m", "devlint", "--fix", "--no-cache", "--isolated", *SAFE_PROGRAMS)
    assert "self.device)" in (tmp_path / "proven.py").read_text(), fixed.stdout
    assert "y.device" in (tmp_path / "proven.py").read_text()
    after = run("-m", "devlint", "run", "--virtual-gpu", "run_all.py", *mains)
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout
    hidden = run("run_all.py", *mains, CUDA_VISIBLE_DEVICES="")
    assert hidden.returncode == 0, hidden.stderr
    assert len(hidden.stdout.splitlines()) == len(mains)
