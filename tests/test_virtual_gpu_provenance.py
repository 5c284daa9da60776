"""When a mix raises, the report names where the stray tensor got its device (issue 25)."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest

torch = pytest.importorskip("torch")

from devlint.virtual_gpu import virtual_gpu  # noqa: E402
from devlint.virtual_gpu_runner import device_error_report  # noqa: E402

MODEL = '''
import torch


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.scale = torch.full((3,), 2.0)

    def forward(self, x):
        return self.lin(x) * self.scale


def moved(lin, x):
    y = x.cpu()
    return lin(y)


def discarded(lin):
    y = torch.ones(2, 3)
    y.cuda()
    return lin(y)
'''


def _load(tmp_path):
    path = tmp_path / "model_prov.py"
    path.write_text(textwrap.dedent(MODEL))
    spec = importlib.util.spec_from_file_location("model_prov", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _report(call):
    with pytest.raises(RuntimeError) as info:
        call()
    return device_error_report(info.value) or ""


def test_report_names_the_line_that_made_or_moved_the_stray_tensor(tmp_path):
    with virtual_gpu(devices=1):
        mod = _load(tmp_path)
        m = mod.Scaled().cuda()
        x = torch.ones(2, 3, device="cuda")
        text = _report(lambda: m(x))
        assert "the cpu tensor was created at" in text and "model_prov.py:9 (`self.scale = torch.full((3,), 2.0)`)" in text
        assert "plain tensor attribute" in text
        text = _report(lambda: mod.moved(m.lin, x))
        assert "the cpu tensor was moved to cpu at" in text and "model_prov.py:16 (`y = x.cpu()`)" in text
        text = _report(lambda: mod.discarded(m.lin))
        assert "model_prov.py:21 (`y = torch.ones(2, 3)`); `y.cuda()` at line 22 throws the moved tensor away: " \
            "DL003 (discarded-tensor-move)" in text
