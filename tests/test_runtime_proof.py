"""Runtime proof on a real PyTorch (the pinned CPU build): each script fails the way users see it fail,
`devlint --fix` rewrites it, and the fixed script runs and gives the same numbers as a hand-written
device-agnostic version. Needs `torch==2.13.0` (the test extra installs the CPU build)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

TRAIN = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 4)
    y = x.sum(dim=1, keepdim=True)
    x = x.cuda()
    y = y.cuda(non_blocking=True)
    for _ in range(20):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    print(f"{loss.item():.6f}")
    """
)
TRAIN_AGNOSTIC = TRAIN.replace("model.cuda()", "model.to(device)").replace(
    "x = x.cuda()", "x = x.to(device)").replace("y = y.cuda(non_blocking=True)", "y = y.to(device)").replace(
    "import torch.nn as nn\n", 'import torch.nn as nn\ndevice = torch.device("cpu")\n')

MAKE_GPU_CHECKPOINTS = textwrap.dedent(
    """
    import sys
    import torch
    import torch.serialization as serialization

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    original = serialization.location_tag
    serialization.location_tag = lambda storage: "cuda:0"  # tag storages as saved on a GPU
    try:
        torch.save(model.state_dict(), sys.argv[1])
        torch.save({"w": torch.arange(6.0), "epoch": 3}, sys.argv[2])
    finally:
        serialization.location_tag = original
    """
)
LOAD = textwrap.dedent(
    """
    import torch

    model = torch.nn.Linear(3, 2)
    model.load_state_dict(torch.load("model.pt"))
    ckpt = torch.load("ckpt.pt")
    w = ckpt["w"]
    print(f"{model.weight.sum().item():.6f} {w.sum().item():.1f} {ckpt['epoch']}")
    """
)
LOAD_AGNOSTIC = LOAD.replace('torch.load("model.pt")', 'torch.load("model.pt", map_location="cpu")').replace(
    'torch.load("ckpt.pt")', 'torch.load("ckpt.pt", map_location="cpu")')

DISCARD = textwrap.dedent(
    """
    import torch

    def prepare(device):
        batch = torch.zeros(2, 3)
        batch.to(device)
        return batch

    print(prepare(torch.device("meta")).device)
    """
)


def python(script: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=300)


def devlint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "devlint", "--no-cache", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_training_loop_with_cuda_calls(tmp_path):
    script = write(tmp_path / "train.py", TRAIN)
    before = python(script, tmp_path)
    assert before.returncode != 0 and "Torch not compiled with CUDA enabled" in before.stderr
    fixed = devlint(tmp_path, "train.py", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    source = script.read_text()
    assert 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in source
    assert "x = x.to(device)" in source and "y = y.to(device, non_blocking=True)" in source
    after = python(script, tmp_path)
    expected = python(write(tmp_path / "agnostic.py", TRAIN_AGNOSTIC), tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout == expected.stdout and after.stdout.strip()
    assert devlint(tmp_path, "train.py", "--fix").returncode == 0
    assert script.read_text() == source  # a second --fix changes nothing


def test_accelerator_idiom(tmp_path):
    script = write(tmp_path / "train.py", TRAIN)
    fixed = devlint(tmp_path, "train.py", "--fix", "--device-expression", "accelerator")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert ('device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() '
            'else torch.device("cpu")') in script.read_text()
    after = python(script, tmp_path)
    expected = python(write(tmp_path / "agnostic.py", TRAIN_AGNOSTIC), tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout == expected.stdout


def test_loading_a_checkpoint_saved_on_a_gpu(tmp_path):
    maker = write(tmp_path / "make.py", MAKE_GPU_CHECKPOINTS)
    made = subprocess.run([sys.executable, str(maker), "model.pt", "ckpt.pt"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    script = write(tmp_path / "load.py", LOAD)
    before = python(script, tmp_path)
    assert before.returncode != 0 and "Attempting to deserialize object on a CUDA device" in before.stderr
    fixed = devlint(tmp_path, "load.py", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    source = script.read_text()
    assert 'torch.load("model.pt", map_location="cpu")' in source  # feeds load_state_dict
    # read as CPU data (`.item()`, a bookkeeping key): "cpu" keeps what a GPU run did with a CPU save
    assert 'torch.load("ckpt.pt", map_location="cpu")' in source
    after = python(script, tmp_path)
    expected = python(write(tmp_path / "agnostic.py", LOAD_AGNOSTIC), tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout == expected.stdout and after.stdout.strip().endswith("15.0 3")


def test_discarded_move_is_observable_through_the_meta_device(tmp_path):
    script = write(tmp_path / "prep.py", DISCARD)
    before = python(script, tmp_path)
    assert before.returncode == 0 and before.stdout.strip() == "cpu"  # the bug: left behind, silently
    # unsafe: code after it may rely on the tensor staying where it was (issue 15); asked for here
    fixed = devlint(tmp_path, "prep.py", "--fix", "--unsafe-fixes")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "batch = batch.to(device)" in script.read_text()
    after = python(script, tmp_path)
    assert after.returncode == 0 and after.stdout.strip() == "meta"


HARDCODED = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Linear(4, 1).to("cuda")
    x = torch.randn(16, 4, device="cuda:0")
    w = torch.cuda.FloatTensor(4, 1).fill_(0.5)
    ids = torch.cuda.LongTensor([0, 1, 2])
    y = x.type(torch.cuda.FloatTensor)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    with torch.cuda.amp.autocast(enabled=False):
        out = model(y) + x[ids].sum() + (y @ w).sum()
    print(f"{out.sum().item():.6f} {scaler.is_enabled()} {ids.dtype} {w.dtype}")
    """
)
HARDCODED_AGNOSTIC = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    x = torch.randn(16, 4)
    w = torch.full((4, 1), 0.5)
    ids = torch.tensor([0, 1, 2])
    y = x.float()
    out = model(y) + x[ids].sum() + (y @ w).sum()
    print(f"{out.sum().item():.6f} False {ids.dtype} {w.dtype}")
    """
)


def test_hard_coded_devices_types_and_amp(tmp_path):
    """DL004 (device strings), DL005 (legacy CUDA types) and DL006 (torch.cuda.amp), fixed together."""
    script = write(tmp_path / "train.py", HARDCODED)
    before = python(script, tmp_path)
    assert before.returncode != 0 and "Torch not compiled with CUDA enabled" in before.stderr
    fixed = devlint(tmp_path, "train.py", "--fix", "--unsafe-fixes")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    source = script.read_text()
    assert "torch.cuda" not in source.replace("torch.cuda.is_available()", "")
    assert "torch.empty(4, 1, dtype=torch.float32, device=device)" in source
    assert "torch.amp.autocast(device.type, enabled=False)" in source
    after = python(script, tmp_path)
    expected = python(write(tmp_path / "agnostic.py", HARDCODED_AGNOSTIC), tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout == expected.stdout and after.stdout.strip()
    assert devlint(tmp_path, "train.py", "--fix", "--unsafe-fixes").returncode == 0
    assert script.read_text() == source  # a second --fix changes nothing
