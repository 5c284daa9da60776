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
