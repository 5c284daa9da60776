"""DL003's `x = x.to(device)` is safe only where the original cannot have worked on a GPU machine.

Re-binding changes where later code finds the tensor: a test that moves its input to the GPU while the
model under test stays on the CPU passes on a GPU machine as written, and fails after the fix (seen on
an H100). So the fix is safe only when the moved name is next read, in straight-line code, together
with a module or tensor known to be on the target device (or, after `.cpu()`, turned `.numpy()`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import fix, lint

H = "import torch\nimport torch.nn as nn\n"


def _labels(source: str) -> list[str]:
    return [f.fix.applicability.value for f in lint(source, select="DL003") if f.fix is not None]


SAFE = {
    "module moved in place, then called": H + "def f(device):\n    model = nn.Linear(2, 2)\n    model.to(device)\n"
    "    x = torch.zeros(2)\n    x.to(device)\n    return model(x)\n",
    "module bound moved": H + "def f(device):\n    model = nn.Linear(2, 2).to(device).eval()\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    y = model(x)\n",
    "cuda on both, module level": H + "model = nn.Linear(2, 2)\nmodel.cuda()\nx = torch.zeros(2)\nx.cuda()\nprint(model(x))\n",
    "'cuda' string and .cuda() are one device": H + "model = nn.Linear(2, 2).cuda()\nx = torch.zeros(2)\n"
    "x.to('cuda')\nout = model(x)\n",
    "module of unknown kind, moved and called": H + "def f(device, cfg):\n    net = build(cfg)\n    net.to(device)\n"
    "    x = torch.zeros(2)\n    x.to(device)\n    return net(x)\n",
    "self attribute module moved in the method": H + "class Runner:\n    def step(self, device):\n"
    "        self.model.to(device)\n        x = torch.zeros(2)\n        x.to(device)\n        return self.model(x)\n",
    "read inside a with block": H + "def f(device):\n    model = nn.Linear(2, 2).to(device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    with torch.no_grad():\n        out = model(x)\n",
    "the model moved after the discarded move": H + "def f(device):\n    x = torch.zeros(2)\n    x.to(device)\n"
    "    model = nn.Linear(2, 2).to(device)\n    return model(x)\n",
    "arithmetic with a factory tensor": H + "def f(device):\n    w = torch.ones(2, device=device)\n"
    "    x = torch.zeros(2)\n    x.to(device)\n    return x * w\n",
    "arithmetic with a moved tensor": H + "def f(device, y):\n    w = y.to(device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    return w + x\n",
    "augmented assignment": H + "def f(device):\n    w = torch.ones(2, device=device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    x += w\n",
    "torch.cat with a moved tensor": H + "def f(device):\n    w = torch.ones(2, device=device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    return torch.cat([x, w])\n",
    "torch.matmul with an inline factory": H + "def f(device):\n    x = torch.zeros(2, 2)\n    x.to(device)\n"
    "    return torch.matmul(x, torch.eye(2, device=device))\n",
    "cpu then numpy": H + "def f(t: torch.Tensor):\n    t.cpu()\n    return t.numpy()\n",
}

UNSAFE = {
    "the model stays on the CPU (a test's reference)": H + "model = nn.Linear(2, 2)\nx = torch.zeros(2)\nx.cuda()\n"
    "out = model(x)\nassert torch.equal(out, model(torch.zeros(2)))\n",
    "move under a CUDA guard, read after it": H + "model = nn.Linear(2, 2)\nx = torch.zeros(2)\n"
    "if torch.cuda.is_available():\n    x.cuda()\nout = model(x)\n",
    "another device expression": H + "def f(device, other):\n    model = nn.Linear(2, 2).to(other)\n"
    "    x = torch.zeros(2)\n    x.to(device)\n    y = model(x)\n",
    "DataParallel takes CPU inputs": H + "model = nn.DataParallel(nn.Linear(2, 2)).cuda()\nx = torch.zeros(2)\nx.cuda()\n"
    "out = model(x)\n",
    "a forward that moves its inputs": H + "class Net(nn.Module):\n    def forward(self, x):\n"
    "        return x.to(self.w.device)\ndef f(device):\n    model = Net().to(device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    return model(x)\n",
    "conditional module move": H + "def f(device, cuda):\n    model = nn.Linear(2, 2)\n    if cuda:\n"
    "        model.to(device)\n    x = torch.zeros(2)\n    x.to(device)\n    return model(x)\n",
    "module re-bound after its move": H + "def f(device):\n    model = nn.Linear(2, 2).to(device)\n"
    "    model = nn.Linear(2, 2)\n    x = torch.zeros(2)\n    x.to(device)\n    model(x)\n",
    "module moved back to the CPU": H + "def f(device):\n    model = nn.Linear(2, 2).to(device)\n    model.cpu()\n"
    "    x = torch.zeros(2)\n    x.to(device)\n    model(x)\n",
    "module moved in another method": H + "class Runner:\n    def setup(self, device):\n"
    "        self.model.to(device)\n    def step(self, device):\n        x = torch.zeros(2)\n        x.to(device)\n"
    "        return self.model(x)\n",
    "a module of the tensor kind is not callable evidence": H + "def f(device):\n    w = torch.zeros(2)\n"
    "    w.to(device)\n    x = torch.zeros(2)\n    x.to(device)\n    return w(x)\n",
    "a 0-dim tensor mixes with CUDA tensors": H + "def f(device):\n    w = torch.ones(2, device=device)\n"
    "    x = torch.tensor(0.5)\n    x.to(device)\n    return x * w\n",
    "a parameter of unknown shape": H + "def f(device, x: torch.Tensor):\n    w = torch.ones(2, device=device)\n"
    "    x.to(device)\n    return x * w\n",
    "arithmetic with a CPU tensor": H + "def f(device):\n    w = torch.ones(2)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    return x * w\n",
    "never read again": H + "x = torch.zeros(3)\nx.to(device)\n",
    "first read works anywhere": H + "def f(device):\n    model = nn.Linear(2, 2).to(device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    print(x)\n    model(x)\n",
    "read in a branch": H + "def f(device, c):\n    model = nn.Linear(2, 2).to(device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    if c:\n        model(x)\n",
    "read in a loop": H + "def f(device, n):\n    model = nn.Linear(2, 2).to(device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    for _ in range(n):\n        model(x)\n",
    "read in a lambda": H + "def f(device):\n    model = nn.Linear(2, 2).to(device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    g = lambda: model(x)\n",
    "re-bound before the read": H + "def f(device):\n    model = nn.Linear(2, 2).to(device)\n    x = torch.zeros(2)\n"
    "    x.to(device)\n    x = torch.ones(2)\n    model(x)\n",
    "cpu then tolist": H + "def f(t: torch.Tensor):\n    t.cpu()\n    return t.tolist()\n",
    "a dtype cast": H + "def f(device):\n    w = torch.ones(2, device=device)\n    x = torch.zeros(2)\n"
    "    x.to(device).half()\n    return x * w\n",
    "a list comprehension": H + "def f(device):\n    model = nn.Linear(2, 2).to(device)\n    ts = [torch.zeros(2)]\n"
    "    [t.to(device) for t in ts]\n    return model(ts[0])\n",
}


@pytest.mark.parametrize("source", SAFE.values(), ids=SAFE.keys())
def test_safe_where_the_original_cannot_have_worked_on_a_gpu(source):
    assert _labels(source) == ["safe"]
    fixed = fix(source, select="DL003")
    assert fixed != source and fix(fixed, select="DL003") == fixed
    compile(fixed, "<fixed>", "exec")


@pytest.mark.parametrize("source", UNSAFE.values(), ids=UNSAFE.keys())
def test_unsafe_where_later_code_may_rely_on_the_tensor_staying(source):
    assert set(_labels(source)) == {"unsafe"}
    assert fix(source, select="DL003") == source
    assert fix(source, select="DL003", unsafe=True) != source


def test_a_safe_fix_rebinds_only_the_moved_name():
    source = SAFE["module moved in place, then called"]
    assert fix(source, select="DL003") == source.replace("    x.to(device)\n", "    x = x.to(device)\n")


# -- on the virtual GPU --------------------------------------------------------------------------------
_ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"}

_CPU_MODEL_TEST = '''
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    x = torch.ones(2, 3)
    x.to("cuda")
    expected = model(torch.ones(2, 3))
    print(torch.equal(model(x), expected))
'''

_GPU_MODEL = '''
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).to("cuda")
    x = torch.ones(2, 3)
    x.to("cuda")
    print(round(model(x).sum().item(), 4))
'''


def _run(args, cwd, env=_ENV):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=240)


@pytest.mark.slow
def test_on_the_virtual_gpu_the_labels_hold(tmp_path):
    pytest.importorskip("torch")
    # 1. A CPU model's test with an input moved "by mistake": it passes on a GPU; the re-binding breaks it,
    #    so the fix must not be safe (a safe --fix leaves the program doing what it did).
    cpu = tmp_path / "cpu_model"
    cpu.mkdir()
    prog = cpu / "prog.py"
    prog.write_text(textwrap.dedent(_CPU_MODEL_TEST).lstrip())
    before = _run(["-m", "devlint", "run", "--virtual-gpu", "prog.py"], cpu)
    assert before.returncode == 0 and before.stdout.strip() == "True", before.stderr
    assert [f.fix.applicability.value for f in lint(prog.read_text(), select="DL003")] == ["unsafe"]
    rebound = prog.read_text().replace('x.to("cuda")', 'x = x.to("cuda")')
    prog.write_text(rebound)
    broken = _run(["-m", "devlint", "run", "--virtual-gpu", "prog.py"], cpu)
    assert broken.returncode != 0, "the re-binding should break the CPU model's test on the GPU"

    # 2. A model on the GPU given the unmoved input: it cannot have worked there; the safe fix repairs it,
    #    on the (virtual) GPU and with CUDA hidden.
    gpu = tmp_path / "gpu_model"
    gpu.mkdir()
    prog = gpu / "prog.py"
    prog.write_text(textwrap.dedent(_GPU_MODEL).lstrip())
    before = _run(["-m", "devlint", "run", "--virtual-gpu", "prog.py"], gpu)
    assert before.returncode != 0, "the original cannot work on a GPU"
    fixed = _run(["-m", "devlint", "--fix", "--no-cache", "--isolated", "--select", "DL003,DL004", "prog.py"], gpu)
    assert "x = x.to(" in prog.read_text(), fixed.stdout + fixed.stderr
    after = _run(["-m", "devlint", "run", "--virtual-gpu", "prog.py"], gpu)
    assert after.returncode == 0, after.stderr
    hidden = _run(["prog.py"], gpu, env={**_ENV, "CUDA_VISIBLE_DEVICES": ""})
    assert hidden.returncode == 0, hidden.stderr
