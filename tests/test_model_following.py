"""DL009, DL010, DL012 (issue 24): what the module-class analysis sees across files, the rule table of
run-time errors the virtual GPU's report reads, and the runtime proof of each fix on the virtual GPU."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from devlint.config import Config
from devlint.engine import check_source, fix_text
from devlint.model import Applicability
from devlint.rules import RULES, RUNTIME_ERRORS, RuntimeErrorRow, rules_for_error
from tests.helpers import lint, run_python

SELECT = Config(select=("DL009", "DL010", "DL012"))


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def _findings(path: Path):
    result = check_source(str(path), path.read_bytes(), SELECT)
    assert result.error is None, result.error
    return [(f.start.line, f.code, f.fix.applicability if f.fix else None) for f in result.findings]


# -- 1. classes of other files of the project (devlint.analysis.project: ProjectView.class_chain) -------------------

MODELS = """
    import torch.nn as nn
    from library import Mixin

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

    class Placed(nn.Module):
        def __init__(self, device):
            super().__init__()
            self.device = device

    class Mixed(Net, Mixin):
        pass

    class Moving(nn.Module):
        def _apply(self, fn, recurse=True):
            return super()._apply(fn, recurse)
"""


@pytest.mark.parametrize("cls, flagged", [("Net", True), ("Placed", False), ("Mixed", False)])
def test_dl012_reads_the_whole_chain_of_a_class_from_another_file(tmp_path, cls, flagged):
    root = _project(tmp_path, {"models.py": MODELS, "run.py": f"""
        from models import {cls}
        model = {cls}()
        print(model.device)
    """})
    found = _findings(root / "run.py")
    # a project class of another file: not known to have parameters here, so the fix is display-only
    assert found == ([(4, "DL012", Applicability.DISPLAY_ONLY)] if flagged else [])


@pytest.mark.parametrize("base, flagged", [("Net", True), ("Moving", False), ("Mixed", False)])
def test_dl009_on_a_class_built_on_a_project_class(tmp_path, base, flagged):
    root = _project(tmp_path, {"models.py": MODELS, "layer.py": f"""
        import torch
        from models import {base}

        class Layer({base}):
            def __init__(self):
                super().__init__()
                self.ids = torch.arange(4)

            def forward(self, x):
                return x + self.ids
    """})
    found = _findings(root / "layer.py")
    assert found == ([(8, "DL009", Applicability.SAFE)] if flagged else [])


def test_without_a_path_a_project_class_is_unknown():
    source = "from models import Net\nmodel = Net()\nprint(model.device)\n"
    assert lint(source, "DL012") == []


# -- 2. precision of the analyses the rules share ---------------------------------------------------------

@pytest.mark.parametrize("source", [
    # an argument of forward given a default is not taken for a tensor: `x + torch.arange(n) * scale`
    "import torch, torch.nn as nn\nclass N(nn.Module):\n    def forward(self, x, scale=1.0):\n"
    "        return torch.arange(4) * scale\n",
    # an input of a helper method with no evidence of being a tensor
    "import torch, torch.nn as nn\nclass N(nn.Module):\n    def forward(self, x):\n        return self.f(3)\n"
    "    def f(self, start):\n        return torch.arange(4) + start\n",
    # two CPU tensors meet: nothing follows the model
    "import torch, torch.nn as nn\nclass N(nn.Module):\n    def forward(self, x):\n"
    "        return x, torch.ones(3) + torch.zeros(3)\n",
    # the class is not known to be a module
    "import torch\nfrom lib import Base\nclass N(Base):\n    def forward(self, x):\n        return x + torch.zeros(3)\n",
])
def test_dl010_not_flagged(source):
    assert lint(source, "DL010") == []


@pytest.mark.parametrize("expression", ["F.relu(x).device", "nn.functional.gelu(x).device",
                                        "nn.init.zeros_(x).device", "nn.Parameter(x).device"])
def test_dl012_a_function_of_torch_nn_makes_no_module(expression):
    source = f"import torch.nn as nn\nimport torch.nn.functional as F\ndef f(x):\n    return {expression}\n"
    assert lint(source, "DL012") == []


def test_dl012_self_device_not_flagged_where_a_subclass_of_the_file_defines_it():
    source = ("import torch.nn as nn\nclass Encoder(nn.Module):\n    def f(self):\n        return self.device\n"
              "class Child(Encoder):\n    @property\n    def device(self):\n        return 'cpu'\n")
    assert lint(source, "DL012") == []
    assert len(lint(source.replace("def device", "def other"), "DL012")) == 1


def test_dl009_assignment_in_a_branch_of_init_is_display_only():
    source = ("import torch, torch.nn as nn\nclass N(nn.Module):\n    def __init__(self, flag):\n"
              "        super().__init__()\n        if flag:\n            self.ids = torch.arange(4)\n"
              "    def forward(self, x):\n        return x + self.ids\n")
    [finding] = lint(source, "DL009")
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY


def test_dl009_a_plain_attribute_assigned_twice_in_init_is_display_only():
    source = ("import torch, torch.nn as nn\nclass N(nn.Module):\n    def __init__(self):\n"
              "        super().__init__()\n        self.ids = None\n        self.ids = torch.arange(4)\n"
              "    def forward(self, x):\n        return x + self.ids\n")
    [finding] = lint(source, "DL009")
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY  # register_buffer would raise KeyError


# -- 3. the rule table of run-time errors (the virtual GPU's report) --------------------------------------

def _codes(exc: BaseException) -> list[str]:
    return [info.code for info in rules_for_error(exc)]


def test_each_error_names_the_rules_that_prevent_it():
    mixed = RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
    assert _codes(mixed) == ["DL009", "DL010", "DL013"]
    assert _codes(RuntimeError("Device index must not be negative")) == ["DL016"]
    assert _codes(TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() ...")) == ["DL011"]
    assert _codes(AttributeError("'Linear' object has no attribute 'device'")) == ["DL012"]
    assert _codes(AttributeError("'Linear' object has no attribute 'dtype'")) == []
    assert _codes(ValueError("Expected all tensors to be on the same device")) == []  # the exception type counts


def test_a_rule_is_added_to_the_report_by_one_row(monkeypatch):
    import devlint.rule_table as rules  # (the table of rules: one row adds a rule to the report)

    error = RuntimeError("CUDA error: an illegal memory access")
    assert _codes(error) == []
    monkeypatch.setattr(rules, "RUNTIME_ERRORS", RUNTIME_ERRORS + (
        RuntimeErrorRow("RuntimeError", "illegal memory access", "DL004"),
        RuntimeErrorRow("RuntimeError", "illegal memory access", "DL999")))  # (no such rule: skipped)
    assert _codes(error) == ["DL004"]


def test_every_row_names_a_code_of_the_table_or_a_rule_still_to_come():
    known = {info.code for info in RULES} | {"DL011"}  # (DL011 comes with issue 24's other half)
    assert {row.code for row in RUNTIME_ERRORS} <= known


def test_the_report_names_the_rule_also_for_an_error_that_is_not_a_device_error(monkeypatch):
    from devlint.virtual_gpu_runner import device_error_report

    stub = types.SimpleNamespace(device_error_info=lambda exc: None)  # (the virtual GPU did not raise it)
    monkeypatch.setitem(sys.modules, "devlint.virtual_gpu", stub)
    report = device_error_report(AttributeError("'Net' object has no attribute 'device'"))
    assert report is not None
    assert report.splitlines()[-1] == "devlint: rule that covers this pattern: DL012 (module-device-attribute)"
    assert device_error_report(ValueError("something else")) is None


def test_the_report_of_a_mixed_device_error_names_both_rules(monkeypatch):
    from devlint.virtual_gpu_runner import device_error_report

    stub = types.SimpleNamespace(device_error_info=lambda exc: ("cuda:0", "cpu"))
    monkeypatch.setitem(sys.modules, "devlint.virtual_gpu", stub)
    report = device_error_report(RuntimeError("Expected all tensors to be on the same device, but found ..."))
    assert report.splitlines()[1:] == [
        "devlint: the two devices: cuda:0 and cpu",
        "devlint: rules that cover this pattern: DL009 (unregistered-module-tensor), "
        "DL010 (factory-without-device-in-forward), DL013 (rebound-loop-variable-move)"]


# -- 4. runtime proof on the virtual GPU: one program per rule, run in two batched subprocesses -------------

PROGRAMS = {
    # DL009: the mask stays on the CPU after model.to(device); masked_fill on the GPU mixes devices
    "p9.py": '''
import torch
import torch.nn as nn


class Causal(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.proj = nn.Linear(n, n)
        self.mask = torch.triu(torch.ones(n, n), diagonal=1).bool()

    def forward(self, x):
        return self.proj(x).masked_fill(self.mask, 0.0)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Causal(4).to(device)
out = model(torch.randn(4, 4).to(device))
print([round(v, 4) for v in out.sum(0).tolist()], out.device.type == device.type)
''',
    # DL010: the LSTM's initial state is made on the CPU while its input is on the GPU
    "p10.py": '''
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.n_hidden = n_hidden
        self.lstm = nn.LSTM(n_in, n_hidden)

    def forward(self, x):
        h0 = torch.zeros(1, x.shape[1], self.n_hidden)
        c0 = torch.zeros(1, x.shape[1], self.n_hidden)
        out, _ = self.lstm(x, (h0, c0))
        return out[-1]


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Tagger(3, 5).to(device)
out = model(torch.randn(6, 2, 3).to(device))
print([round(v, 4) for v in out.sum(0).tolist()], out.device.type == device.type)
''',
    # DL012: a plain module has no `device`
    "p12.py": '''
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
noise = torch.randn(3, 4, device=model.device)
print([round(v, 4) for v in model(noise).sum(0).tolist()], noise.device.type == device.type)
''',
}
# The device-agnostic versions written by hand, each another way than the fix's.
AGNOSTIC = {
    "p9.py": ("self.proj(x).masked_fill(self.mask, 0.0)", "self.proj(x).masked_fill(self.mask.to(x.device), 0.0)"),
    "p10.py": ("torch.zeros(1, x.shape[1], self.n_hidden)", "x.new_zeros(1, x.shape[1], self.n_hidden)"),
    "p12.py": ("device=model.device", "device=device"),
}
# What each fix needs (its level) and the error it prevents, as the virtual GPU reports it.
LEVELS = {"p9.py": ("DL009", False), "p10.py": ("DL010", True), "p12.py": ("DL012", False)}
ERRORS = {
    "p9.py": ("expected self and mask to be on the same device", "DL009 (unregistered-module-tensor)"),
    "p10.py": ("Expected all tensors to be on the same device", "DL010 (factory-without-device-in-forward)"),
    "p12.py": ("AttributeError: 'Linear' object has no attribute 'device'", "DL012 (module-device-attribute)"),
}
DRIVER = '''
import contextlib, io, json, sys
from devlint.virtual_gpu_runner import run_script

results = {}
for path in sys.argv[2:]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_script(path, [], virtual=sys.argv[1] == "virtual")
    results[path] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(results))
'''


@pytest.mark.slow
def test_each_fix_keeps_the_virtual_gpu_output_of_a_device_agnostic_version_and_runs_without_cuda(tmp_path):
    pytest.importorskip("torch")
    import json

    (tmp_path / "drive.py").write_text(DRIVER)
    fixed_names, agnostic_names = [], []
    for name, source in PROGRAMS.items():
        (tmp_path / name).write_text(source)
        code, unsafe = LEVELS[name]
        safe_only = fix_text(source, Config(select=(code,), fix=True))[0]
        fixed = fix_text(source, Config(select=(code,), fix=True, unsafe_fixes=unsafe))[0]
        assert fixed != source and (safe_only == fixed) != unsafe  # the fix needs exactly its level
        (tmp_path / f"fixed_{name}").write_text(fixed)
        old, new = AGNOSTIC[name]
        (tmp_path / f"agnostic_{name}").write_text(source.replace(old, new))
        fixed_names.append(f"fixed_{name}")
        agnostic_names.append(f"agnostic_{name}")

    ran = run_python(tmp_path, "drive.py", "virtual", *PROGRAMS, *fixed_names, *agnostic_names)
    assert ran.returncode == 0, ran.stderr
    results = json.loads(ran.stdout.splitlines()[-1])
    for name in PROGRAMS:
        code, _, stderr = results[name]
        error, rule = ERRORS[name]
        assert code == 1 and error in stderr and "this pattern: " in stderr and rule in stderr, stderr
        fixed, agnostic = results[f"fixed_{name}"], results[f"agnostic_{name}"]
        assert fixed[0] == 0 and agnostic[0] == 0, fixed[2] + agnostic[2]
        assert fixed[1] == agnostic[1] and fixed[1].strip().endswith("True")

    hidden = run_python(tmp_path, "drive.py", "plain", *fixed_names, CUDA_VISIBLE_DEVICES="")
    assert hidden.returncode == 0, hidden.stderr
    for name, (code, out, err) in json.loads(hidden.stdout.splitlines()[-1]).items():
        assert code == 0 and out.strip().endswith("True"), f"{name}: {err}"


def test_dl012_an_input_the_method_moves_itself_gives_no_device():
    # `x` may come from the CPU (the method moves it): `x.device` would move nothing
    source = ("import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.fc = nn.Linear(2, 2)\n    def forward(self, x):\n"
              "        h = x.to(self.device).view(x.shape[0], -1)\n        return self.fc(h)\n")
    [finding] = lint(source, "DL012")
    assert finding.fix.applicability is Applicability.UNSAFE
    assert finding.fix.edits[0].content == "next(self.parameters()).device"
