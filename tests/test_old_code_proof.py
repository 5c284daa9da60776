"""Runtime proof on research code of 2017-2018 (issue 27): a training script that does not even parse
on Python 3.7+ (`.cuda(async=True)`) is made, by `devlint --fix --unsafe-fixes`, to run to the end
without CUDA and on the virtual GPU, with the numbers of a hand-written device-agnostic version.

Batched: one process runs every program under the virtual GPU, one with CUDA hidden."""

from __future__ import annotations

import re
import textwrap

import pytest

from tests.helpers import run_python
from tests.test_cli import run

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

# Written for this test in the style of PyTorch 0.3 code: Variable, `.cuda(async=True)`, a legacy
# CUDA tensor type, a GPU-saved checkpoint loaded without map_location, `nn.DataParallel(...).cuda()`
# and a discarded `.cuda()` (which a GPU run also trips over: `mean` stays on the CPU).
OLD = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.autograd import Variable

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    model.load_state_dict(torch.load("init.pt"))
    model = nn.DataParallel(model).cuda()
    criterion = nn.MSELoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    inputs = torch.randn(32, 4)
    targets = inputs.sum(1, keepdim=True)
    scale = torch.cuda.FloatTensor(1).fill_(0.5)
    mean = inputs.mean(0)
    mean.cuda()

    for epoch in range(3):
        for i in range(0, 32, 8):
            target = targets[i:i + 8].cuda(async=True)
            input_var = Variable(inputs[i:i + 8].cuda(async=True) - mean)
            target_var = Variable(target)
            output = model(input_var) * scale
            loss = criterion(output, target_var)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print("epoch %d loss %.6f" % (epoch, loss.item()))
    """
)
AGNOSTIC = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    model.load_state_dict(torch.load("init.pt", map_location=device))
    model = nn.DataParallel(model).to(device)
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    inputs = torch.randn(32, 4)
    targets = inputs.sum(1, keepdim=True)
    scale = torch.full((1,), 0.5, device=device)
    mean = inputs.mean(0).to(device)

    for epoch in range(3):
        for i in range(0, 32, 8):
            target = targets[i:i + 8].to(device, non_blocking=True)
            output = model(inputs[i:i + 8].to(device, non_blocking=True) - mean) * scale
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print("epoch %d loss %.6f" % (epoch, loss.item()))
    """
)
# The checkpoint, saved from a GPU (the virtual one): its storages say `cuda:0`.
MAKE_CHECKPOINT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).cuda()
    assert next(model.parameters()).is_cuda
    torch.save(model.state_dict(), "init.pt")
    """
)
# Runs each program in turn, in this process, and reports how each ended.
DRIVER = textwrap.dedent(
    """
    import runpy
    import sys

    for path in sys.argv[1:]:
        print(f"== {path}", flush=True)
        try:
            runpy.run_path(path, run_name="__main__")
        except Exception as exc:
            print(f"!! {type(exc).__name__}: {str(exc).splitlines()[0]}", flush=True)
    """
)


def outputs(stdout: str) -> dict[str, str]:
    return {name: body.strip() for name, body in re.findall(r"^== (\S+)\n(.*?)(?=^== |\Z)", stdout, re.M | re.S)}


def test_a_2018_training_script_that_does_not_parse_runs_after_fix(tmp_path):
    with pytest.raises(SyntaxError):
        compile(OLD, "train.py", "exec")
    (tmp_path / "train.py").write_text(OLD)
    # What fixing the syntax error by hand gives: it parses, and still fails on both machines.
    (tmp_path / "renamed.py").write_text(OLD.replace("async=", "non_blocking="))
    (tmp_path / "agnostic.py").write_text(AGNOSTIC)
    (tmp_path / "make.py").write_text(MAKE_CHECKPOINT)
    (tmp_path / "driver.py").write_text(DRIVER)

    fixed = run("--no-cache", "--isolated", "--fix", "--unsafe-fixes", "--show-fixes", "train.py", cwd=tmp_path)
    assert fixed.exit_code == 0, fixed.output
    for code, count in (("DL017", 2), ("DL001", 5), ("DL002", 1), ("DL003", 1), ("DL005", 1)):
        assert f"{count} \u00d7 {code}" in fixed.output, fixed.output
    source = (tmp_path / "train.py").read_text()
    compile(source, "train.py", "exec")
    assert "async" not in source and "torch.cuda.FloatTensor" not in source
    assert "mean = mean.to(device)" in source and "Variable(inputs[i:i + 8].to(device, non_blocking=True)" in source
    assert run("--no-cache", "--isolated", "--fix", "--unsafe-fixes", "train.py", cwd=tmp_path).exit_code == 0
    assert (tmp_path / "train.py").read_text() == source  # a second --fix changes nothing

    gpu = run_python(tmp_path, "-m", "devlint", "run", "--virtual-gpu", "driver.py",
                     "make.py", "renamed.py", "train.py", "agnostic.py")
    cpu = run_python(tmp_path, "driver.py", "renamed.py", "train.py", "agnostic.py", CUDA_VISIBLE_DEVICES="")
    assert gpu.returncode == 0 and cpu.returncode == 0, gpu.stderr + cpu.stderr
    on_gpu, on_cpu = outputs(gpu.stdout), outputs(cpu.stdout)
    assert on_gpu["make.py"] == ""
    assert "Expected all tensors to be on the same device" in on_gpu["renamed.py"]  # the discarded .cuda()
    assert "Attempting to deserialize object on a CUDA device" in on_cpu["renamed.py"]
    losses = on_cpu["agnostic.py"]
    assert losses.count("loss") == 3 and "!!" not in losses
    assert on_cpu["train.py"] == on_gpu["train.py"] == on_gpu["agnostic.py"] == losses
