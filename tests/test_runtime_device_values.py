"""Runtime proof for DL011, DL013, DL016 and DL018 (one batched program, each rule a part of it).

Under `devlint run --virtual-gpu` the original fails in each bug's part (DL011: `.numpy()` of a CUDA
tensor; DL016: the -1 index of `get_device()` on a CPU tensor, which also fails with CUDA hidden; DL013,
display-only: the items stay on the CPU and meet the device's tensors). After `--fix` (and, for DL013,
the comprehension its message gives) it prints on the virtual GPU what the hand-written
device-agnostic version prints, and runs with CUDA hidden. DL018's fix keeps values and dtypes: the
part prints the same on the CPU before and after.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from tests.helpers import fix, run_python

PROGRAM = '''
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(4, 3).to(device)
x = torch.randn(5, 4)


def predictions():
    out = model(x.to(device))
    return out.argmax(1).numpy().tolist()


def masks():
    def ones_for_rows(t: torch.Tensor):
        return torch.ones(t.shape[0], device=t.get_device())

    return ones_for_rows(x.to(device)).sum().item() + ones_for_rows(x).sum().item()


def moved_items():
    batch = [x[0], x[1]]
    for t in batch:
        t = t.to(device)
    w = torch.ones(4, device=device)
    return [round(v, 4) for v in (torch.stack(batch) @ w).tolist()]


def created():
    a = torch.zeros(2, 3).to(device)
    b = torch.arange(5, dtype=torch.long).to(device, non_blocking=True)
    c = torch.tensor([1.5, 2.5]).to(device)
    d = torch.full((2,), 0.1).to(device)
    e = torch.linspace(0, 1, 5).to(device)
    f = torch.eye(3).to(device, torch.float64)
    return [(t.tolist(), str(t.dtype), t.device == device) for t in (a, b, c, d, e, f)]


for part in (predictions, masks, moved_items, created):
    try:
        print(part.__name__, part())
    except Exception as error:
        print(part.__name__, "ERROR", type(error).__name__, str(error).splitlines()[0])
'''

AGNOSTIC = (PROGRAM
            .replace("out.argmax(1).numpy()", "out.argmax(1).cpu().numpy()")
            .replace("device=t.get_device()", "device=t.device")
            .replace("    for t in batch:\n        t = t.to(device)\n", "    batch = [t.to(device) for t in batch]\n")
            .replace("torch.zeros(2, 3).to(device)", "torch.zeros(2, 3, device=device)")
            .replace("torch.arange(5, dtype=torch.long).to(device, non_blocking=True)",
                     "torch.arange(5, dtype=torch.long, device=device)")
            .replace("torch.tensor([1.5, 2.5]).to(device)", "torch.tensor([1.5, 2.5], device=device)")
            .replace("torch.full((2,), 0.1).to(device)", "torch.full((2,), 0.1, device=device)")
            .replace("torch.linspace(0, 1, 5).to(device)", "torch.linspace(0, 1, 5, device=device)")
            .replace("torch.eye(3).to(device, torch.float64)", "torch.eye(3, dtype=torch.float64, device=device)"))


def _parts(output: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in output.splitlines() if line.strip())


@pytest.mark.slow
def test_fixed_parts_run_on_the_virtual_gpu_and_without_cuda(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("numpy")
    assert AGNOSTIC.count("device=device") == 7 and "get_device" not in AGNOSTIC  # every replacement took

    def run(*args, **env):
        return run_python(tmp_path, *args, **env)

    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.lstrip())
    before = _parts(run("-m", "devlint", "run", "--virtual-gpu", "prog.py").stdout)
    assert "ERROR TypeError can't convert cuda:0 device type tensor to numpy" in before["predictions"]
    assert "ERROR RuntimeError Device index must not be negative" in before["masks"]
    assert "ERROR RuntimeError Expected all tensors to be on the same device" in before["moved_items"]
    hidden_before = _parts(run("prog.py", CUDA_VISIBLE_DEVICES="").stdout)
    assert "ERROR RuntimeError Device index must not be negative" in hidden_before["masks"]

    fixed = run("-m", "devlint", "--fix", "--no-cache", "--isolated",
                "--select", "DL011,DL013,DL016,DL018", "prog.py")
    meant = re.search(r"DL013 .*meant: `(?P<meant>[^`]+)`", fixed.stdout)
    assert fixed.returncode == 1 and meant is not None, fixed.stdout + fixed.stderr  # DL013 stays: display-only
    source = prog.read_text()
    loop = "    for t in batch:\n        t = t.to(device)\n"
    assert loop in source
    prog.write_text(source.replace(loop, f"    {meant['meant']}\n"))  # what the message says was meant

    after = run("-m", "devlint", "run", "--virtual-gpu", "prog.py")
    (tmp_path / "agnostic.py").write_text(AGNOSTIC.lstrip())
    expected = run("-m", "devlint", "run", "--virtual-gpu", "agnostic.py")
    assert after.returncode == 0 and "ERROR" not in after.stdout, after.stdout + after.stderr
    assert after.stdout == expected.stdout and len(_parts(after.stdout)) == 4
    hidden_after = _parts(run("prog.py", CUDA_VISIBLE_DEVICES="").stdout)
    assert not any("ERROR" in value for value in hidden_after.values()), hidden_after
    assert hidden_after["created"] == hidden_before["created"]  # DL018: same values, same dtypes


# -- DL018 on the CPU, in process: every safe fix gives the same tensor -----------------------------------
SAFE_CREATIONS = [
    "torch.zeros(2, 3).to(device)",
    "torch.ones(4, dtype=torch.int32).to(device, non_blocking=True)",
    "torch.arange(0, 1, 0.25).to(device)",
    "torch.tensor([[1, 2], [3, 4]]).to(device=device)",
    "torch.as_tensor([0.1, 0.2]).to(device)",
    "torch.full((2, 2), 7).to(device)",
    "torch.linspace(-1, 1, 9).to(device)",
    "torch.eye(3).to(device, torch.float16)",
    "torch.zeros_like(base).to(device)",
    "torch.empty(0).to(device)",
]


@pytest.mark.parametrize("expression", SAFE_CREATIONS)
def test_dl018_safe_fix_keeps_values_and_dtype_on_the_cpu(expression):
    torch = pytest.importorskip("torch")
    source = f"import torch\nvalue = {expression}\n"
    fixed = fix(source, select="DL018")
    assert fixed != source and ".to(" not in fixed, fixed  # fixed by the safe fix alone
    results = []
    for text in (source, fixed):
        scope = {"device": torch.device("cpu"), "base": torch.arange(6.0).view(2, 3)}
        exec(compile(textwrap.dedent(text), "<dl018>", "exec"), scope)
        results.append(scope["value"])
    original, rewritten = results
    assert rewritten.dtype == original.dtype and rewritten.shape == original.shape
    if original.numel() and "empty" not in expression:
        assert torch.equal(rewritten, original)
