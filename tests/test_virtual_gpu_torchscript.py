"""Code compiled by TorchScript runs PyTorch's operators from C++, where the virtual GPU does not reach:
its CUDA operations fail under `--virtual-gpu` although a GPU runs them (seen on an H100). The report
says so instead of presenting the failure as the program's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:.*torch.jit.script. is deprecated:DeprecationWarning")

from devlint.virtual_gpu import virtual_gpu  # noqa: E402
from devlint.virtual_gpu_runner import device_error_report  # noqa: E402

SCRIPTED = '''
import torch


@torch.jit.script
def doubled(t):
    return t.cuda() * 2
'''


def _load(tmp_path, name="scripted_mod"):
    path = tmp_path / f"{name}.py"
    path.write_text(SCRIPTED)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_cuda_operation_of_compiled_code_is_named_the_virtual_gpus_limit(tmp_path):
    with virtual_gpu(devices=1):
        module = _load(tmp_path)
        with pytest.raises(RuntimeError) as info:
            module.doubled(torch.ones(2))
        report = device_error_report(info.value) or ""
    assert "does not reach code compiled by TorchScript" in report
    assert report.startswith("devlint: error at ")


def test_an_ordinary_device_error_says_nothing_of_torchscript():
    with virtual_gpu(devices=1):
        with pytest.raises(RuntimeError) as info:
            torch.ones(2, device="cuda") + torch.ones(2)
        report = device_error_report(info.value) or ""
    assert "device error at" in report
    assert "TorchScript" not in report


def test_devlint_run_prints_the_note(tmp_path):
    script = tmp_path / "main.py"
    script.write_text(SCRIPTED + "\nprint(doubled(torch.ones(2)).device)\n")
    done = subprocess.run([sys.executable, "-m", "devlint", "run", "--virtual-gpu", str(script)],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 1
    assert "the virtual GPU does not reach code compiled by TorchScript" in done.stderr
    assert f"error at {script}:9" in done.stderr
