"""Every thread and worker on the virtual GPU, the smaller divergences from a GPU machine, and the
front door's `-m` and `sys.argv[0]`. Each test was a failure before (issue 25)."""

from __future__ import annotations

import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

from devlint.cli import main
from tests.helpers import run_python

torch = pytest.importorskip("torch")

from devlint.virtual_gpu import virtual_gpu  # noqa: E402

SAME = "Expected all tensors to be on the same device"


def test_threads_carry_the_virtual_device():
    out = {}

    def work():
        out["made"] = torch.ones(3)
        out["moved"] = torch.ones(3).cuda()  # was: "PyTorch is not linked with support for cuda devices"
        try:
            out["g"] + torch.ones(3)
            out["mix"] = "allowed"
        except RuntimeError as e:
            out["mix"] = str(e)

    with virtual_gpu(devices=1):
        out["g"] = torch.ones(3, device="cuda")
        t = threading.Thread(target=work)
        t.start()
        t.join()
        assert out["made"].device.type == "cpu" and out["moved"].device.type == "cuda"
        assert SAME in out["mix"]  # was silently allowed
        with pytest.raises(RuntimeError, match=SAME):
            out["g"] + out["made"]  # a CPU tensor from another thread, mixed here
        with ThreadPoolExecutor(2) as pool:
            assert str(pool.submit(lambda: torch.zeros(2).cuda().device).result()) == "cuda:0"
    # after the context, threads are plain again
    res = []
    t = threading.Thread(target=lambda: res.append(torch.cuda.is_available()))
    t.start()
    t.join()
    assert res == [False]


def test_divergences_from_a_gpu_machine():
    with virtual_gpu(devices=1):
        g = torch.ones(3, device="cuda")
        v = torch.autograd.Variable(g)
        assert v.device.type == "cuda" and v.is_cuda
        with pytest.raises(RuntimeError, match=SAME):
            v + torch.ones(3)
        with pytest.raises(TypeError, match="can't convert cuda:0"):
            v.numpy()
        with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but found 'cpu'"):
            torch.randn(3, device="cuda", generator=torch.Generator())
        with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but found 'cpu'"):
            torch.multinomial(g, 2, generator=torch.Generator())
        with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'cuda'"):
            torch.randn(3, generator=torch.Generator(device="cuda"))
        assert torch.randn(3, device="cuda", generator=torch.Generator(device="cuda")).is_cuda
        with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
            torch.set_rng_state(torch.get_rng_state().cuda())
        torch.set_rng_state(torch.get_rng_state())
        assert isinstance(torch.version.cuda, str) and torch.backends.cudnn.is_available()
        assert isinstance(torch.cuda.nvtx.range_push("step"), int)
        torch.cuda.nvtx.range_pop()
        with torch.cuda.nvtx.range("block"):
            pass
        # DataParallel scatters a CPU input to device 0 and answers there, as on a GPU
        dp = torch.nn.DataParallel(torch.nn.Linear(3, 2).cuda())
        assert str(dp(torch.ones(4, 3)).device) == "cuda:0"
    assert torch.version.cuda is None  # undone on exit (the CPU build)


DATALOADER = '''
import sys, torch
from torch.utils.data import DataLoader, Dataset

class Squares(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return torch.full((2,), float(i * i)), torch.cuda.is_available()

if __name__ == "__main__":
    print("argv0", sys.argv[0])
    model = torch.nn.Linear(2, 1).cuda()
    for ctx in ("fork", "spawn"):
        dl = DataLoader(Squares(), batch_size=4, num_workers=2, pin_memory=True, multiprocessing_context=ctx)
        for x, avail in dl:
            y = model(x.to("cuda", non_blocking=True))
            print(ctx, x.device, x.is_pinned(), all(avail.tolist()), y.device)
    model(x)  # the batch left on the CPU: the GPU raises here
'''


@pytest.mark.slow
def test_dataloader_workers_and_pinning_as_on_a_gpu(tmp_path):
    """The loader of pytorch/examples with an accelerator: 2 workers (fork and spawn), pinned batches."""
    (tmp_path / "train.py").write_text(textwrap.dedent(DATALOADER))
    res = run_python(tmp_path, "-m", "devlint", "run", "--virtual-gpu", "train.py")
    lines = res.stdout.splitlines()
    assert "argv0 train.py" in lines, res.stdout + res.stderr  # as typed, as `python train.py` gives it
    for ctx in ("fork", "spawn"):
        # pinned CPU batches, workers that see the GPU, a non_blocking move that works
        assert lines.count(f"{ctx} cpu True True cuda:0") == 2, res.stdout + res.stderr
    assert res.returncode == 1 and "train.py:19: RuntimeError: Expected all tensors" in res.stderr, res.stderr


def test_run_module_as_python_dash_m(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tool.py").write_text("import sys\nprint(__name__, sys.argv[0].endswith('tool.py'), sys.argv[1:])\n")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["run", "-m", "pkg.tool", "--epochs", "1"])
    assert res.output.splitlines() == ["__main__ True ['--epochs', '1']"], res.output
    assert res.exit_code == 0
    bad = CliRunner().invoke(main, ["run", "-m", "nosuch.tool"])
    assert bad.exit_code == 2 and "nosuch.tool: no such module" in bad.output and "Traceback" not in bad.output
