"""The virtual GPU's front doors: `devlint run --virtual-gpu SCRIPT` and `pytest --virtual-gpu`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

BUGGY_MODEL = '''
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.mask = torch.ones(2)  # a plain tensor attribute: model.cuda() leaves it on the CPU

    def forward(self, x):
        return self.lin(x) * self.mask
'''

FIXED_MODEL = BUGGY_MODEL.replace(
    "self.mask = torch.ones(2)  # a plain tensor attribute: model.cuda() leaves it on the CPU",
    'self.register_buffer("mask", torch.ones(2), persistent=False)',
)

TEST_MODEL = '''
import torch

from model import Net


def test_forward():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = Net().to(device)
    out = net(torch.ones(1, 2, device=device))
    assert out.shape == (1, 2)
    assert out.device.type == device.type
'''

SCRIPT = '''
import sys

import torch

from model import Net

print("args", sys.argv[1:])
net = Net().cuda()
print("done", net(torch.ones(1, 2).cuda()).shape == (1, 2))
'''

_ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1"}


def _project(tmp_path, model: str):
    (tmp_path / "model.py").write_text(textwrap.dedent(model))
    (tmp_path / "test_model.py").write_text(textwrap.dedent(TEST_MODEL))
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    return tmp_path


def _pytest(project, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=project, capture_output=True, text=True, env=_ENV, timeout=240)


def _devlint_run(project, *args):
    return subprocess.run([sys.executable, "-m", "devlint", "run", *args], cwd=project,
                          capture_output=True, text=True, env=_ENV, timeout=240)


def test_plugin_is_registered():
    assert any(e.name == "devlint" and e.value == "devlint.pytest_plugin"
               for e in entry_points(group="pytest11")), "run `pip install -e .` to register the pytest plugin"


def test_pytest_virtual_gpu_fails_then_passes_after_fix(tmp_path):
    project = _project(tmp_path, BUGGY_MODEL)
    # On the CPU the bug is invisible.
    plain = _pytest(project)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    virtual = _pytest(project, "--virtual-gpu")
    out = virtual.stdout + virtual.stderr
    assert virtual.returncode == 1, out
    assert "Expected all tensors to be on the same device" in out
    assert "devlint virtual GPU" in out
    assert f"device error at {project / 'model.py'}:12" in out or "model.py:12" in out, out
    assert "cuda:0 and cpu" in out
    # After the fix (a non-persistent buffer follows the module), it passes under the virtual GPU.
    (project / "model.py").write_text(textwrap.dedent(FIXED_MODEL))
    fixed = _pytest(project, "--virtual-gpu")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "1 passed" in fixed.stdout


def test_devlint_run_virtual_gpu(tmp_path):
    project = _project(tmp_path, BUGGY_MODEL)
    res = _devlint_run(project, "--virtual-gpu", "script.py", "--epochs", "1")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "args ['--epochs', '1']" in res.stdout
    assert "model.py:12" in res.stderr and "the two devices: cuda:0 and cpu" in res.stderr, res.stderr
    assert "Expected all tensors to be on the same device" in res.stderr
    assert "virtual_gpu.py" not in res.stderr  # devlint's frames are left out of the traceback
    # Without the virtual GPU, on the CPU build, .cuda() itself fails.
    plain = _devlint_run(project, "script.py")
    assert plain.returncode == 1 and "Torch not compiled with CUDA enabled" in plain.stderr
    (project / "model.py").write_text(textwrap.dedent(FIXED_MODEL))
    ok = _devlint_run(project, "--virtual-gpu", "script.py")
    assert ok.returncode == 0, ok.stderr
    assert "done True" in ok.stdout


def test_devlint_run_numpy_error_and_exit_status(tmp_path):
    (tmp_path / "np_script.py").write_text(textwrap.dedent('''
        import sys
        import torch
        t = torch.load(sys.argv[1], map_location="cuda")
        t.numpy()
    '''))
    (tmp_path / "exit3.py").write_text("import sys\nsys.exit(3)\n")
    import torch

    torch.save(torch.ones(2), tmp_path / "t.pt")
    res = _devlint_run(tmp_path, "--virtual-gpu", "np_script.py", "t.pt")
    assert res.returncode == 1
    assert "np_script.py:5" in res.stderr, res.stderr
    assert "TypeError: can't convert cuda:0 device type tensor to numpy" in res.stderr
    assert _devlint_run(tmp_path, "--virtual-gpu", "exit3.py").returncode == 3
    missing = _devlint_run(tmp_path, "--virtual-gpu", "nope.py")
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_cli_import_does_not_import_torch():
    code = "import sys, devlint.cli, devlint.virtual_gpu_runner; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_without_torch_both_doors_say_so(tmp_path):
    (tmp_path / "s.py").write_text("print('hi')\n")
    block = "import sys; sys.modules['torch'] = None; "
    res = subprocess.run([sys.executable, "-c", block + "from devlint.cli import main; main()",
                          "run", "--virtual-gpu", "s.py"], cwd=tmp_path, capture_output=True, text=True, env=_ENV)
    assert res.returncode == 2 and "--virtual-gpu needs PyTorch" in res.stderr, res.stderr
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    res = subprocess.run([sys.executable, "-c", block + "import pytest; sys.exit(pytest.main(['-q', '-p', "
                          "'no:cacheprovider', '--virtual-gpu']))"], cwd=tmp_path, capture_output=True, text=True,
                         env=_ENV)
    assert res.returncode != 0 and "--virtual-gpu needs PyTorch" in res.stdout + res.stderr
    plain = subprocess.run([sys.executable, "-c", block + "import pytest; sys.exit(pytest.main(['-q', '-p', "
                            "'no:cacheprovider']))"], cwd=tmp_path, capture_output=True, text=True, env=_ENV)
    assert plain.returncode == 0, plain.stdout + plain.stderr  # the plugin is inert unless asked


REALISTIC_TRAINING = '''
import copy, io
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, random_split

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
X = torch.randn(64, 1, 8, 8); Y = torch.randint(0, 3, (64,))
train, val = random_split(TensorDataset(X, Y), [48, 16], generator=torch.Generator().manual_seed(0))

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(4 * 4 * 4, 3)
        self.register_buffer("class_weight", torch.tensor([1.0, 2.0, 1.0]))
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(self.drop(x.flatten(1)))

model = Net().to(device)
ema = copy.deepcopy(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)
scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
for epoch in range(3):
    model.train()
    for xb, yb in DataLoader(train, batch_size=16, shuffle=True, pin_memory=True):
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        with torch.autocast(device.type, enabled=device.type == "cuda"):
            out = model(xb)
            loss = F.cross_entropy(out.float(), yb, weight=model.class_weight)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt); scaler.update()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.9).add_(pm, alpha=0.1)
    sched.step()
    model.eval(); preds = []; ys = []
    with torch.no_grad():
        for xb, yb in DataLoader(val, batch_size=8):
            preds.append(model(xb.to(device)).argmax(1).cpu()); ys.append(yb)
    p = torch.cat(preds); y = torch.cat(ys)
    acc = (p == y).float().mean().item()
    cm = torch.bincount(y * 3 + p, minlength=9).reshape(3, 3)
    print(epoch, round(acc, 3), cm.sum().item())
buf = io.BytesIO(); torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf); buf.seek(0)
ck = torch.load(buf, map_location=device)
model.load_state_dict(ck["model"]); opt.load_state_dict(ck["opt"])
print("memory", torch.cuda.memory_allocated() if torch.cuda.is_available() else 0)
print("done")
'''


def test_realistic_training_script_runs_as_on_a_gpu(tmp_path):
    # Conv/BatchNorm/Dropout, AdamW + cosine schedule, autocast + GradScaler, gradient clipping, an EMA copy,
    # a pinned DataLoader, evaluation on the CPU, a checkpoint round trip: no false device errors.
    (tmp_path / "train.py").write_text(REALISTIC_TRAINING)
    virtual = _devlint_run(tmp_path, "--virtual-gpu", "train.py")
    assert virtual.returncode == 0, virtual.stderr
    lines = virtual.stdout.splitlines()
    assert lines[-1] == "done" and len(lines) == 5
    assert int(lines[-2].split()[1]) > 0  # torch.cuda.memory_allocated() on the virtual device
    plain = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True,
                           env=_ENV, timeout=240)
    assert plain.returncode == 0 and plain.stdout.splitlines()[-1] == "done", plain.stderr
