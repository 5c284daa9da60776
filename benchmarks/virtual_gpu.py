"""Overhead of devlint's virtual GPU against a plain CPU run of the same training loop.

    python benchmarks/virtual_gpu.py [--steps 200] [--repeats 5]

The same small MLP training loop (Linear-ReLU-Linear, Adam, cross-entropy, batch 32) runs on the plain
CPU (device "cpu") and under `virtual_gpu()` (device "cuda"); one torch thread, best of `repeats`
each, alternating so that a busy machine hurts both alike. Not part of the test suite.

Measured (torch 2.13.0+cpu, CPython 3.11, a 2-core machine shared with other work): 200 steps,
plain CPU 0.12-0.19 s, virtual GPU 0.23-0.42 s: overhead 1.9-2.2x, within the issue's 3x. With the
provenance records (issue 25: the user's line for each tensor, provenance.py; about 5% of the virtual
run in a profile), on the same machine under heavier load: plain 0.52 s, virtual 1.24-1.25 s, 2.4x. The
losses are identical (the arithmetic is the CPU's). A generated pytest suite of 20 small training
tests took 6.1 s plain and 5.4 s with --virtual-gpu (whole processes, best of 3; the difference is noise
of the shared machine: interpreter start and the torch import dominate a small suite).

    python benchmarks/virtual_gpu.py --suite-files 0   # the training loop only
"""

from __future__ import annotations

import argparse
import time

import torch

from devlint.virtual_gpu import virtual_gpu


def loop(device: str, steps: int) -> float:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        x = torch.randn(32, 64, device=device)
        y = torch.randint(0, 10, (32,), device=device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


SUITE_TEST = """
import torch

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def test_train_{i}():
    torch.manual_seed({i})
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(DEVICE)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(20):
        x = torch.randn(8, 16, device=DEVICE)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() >= 0
"""


def suite(n_files: int, repeats: int) -> None:
    """A generated test suite run by pytest, plain and with --virtual-gpu (whole process, best of `repeats`)."""
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n_files):
            with open(os.path.join(tmp, f"test_m{i}.py"), "w") as fh:
                fh.write(SUITE_TEST.replace("{i}", str(i)))
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        times = {}
        for label, extra in (("plain", []), ("virtual", ["--virtual-gpu"])):
            best = None
            for _ in range(repeats):
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra], cwd=tmp,
                               check=True, capture_output=True, env=env)
                best = min(best or 1e9, time.perf_counter() - t)
            times[label] = best
    print(f"pytest suite of {n_files} tests: plain {times['plain']:.2f} s, --virtual-gpu {times['virtual']:.2f} s, "
          f"overhead {times['virtual'] / times['plain']:.2f}x (whole process, torch import included)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--suite-files", type=int, default=20, help="tests in the generated suite (0: skip)")
    opts = parser.parse_args()
    torch.set_num_threads(1)
    plain, virtual = [], []
    for _ in range(opts.repeats):
        t = time.perf_counter()
        a = loop("cpu", opts.steps)
        plain.append(time.perf_counter() - t)
        with virtual_gpu():
            t = time.perf_counter()
            b = loop("cuda", opts.steps)
            virtual.append(time.perf_counter() - t)
        assert a == b, (a, b)  # the arithmetic is the CPU's: same values
    p, v = min(plain), min(virtual)
    print(f"{opts.steps} steps: plain CPU {p:.3f} s, virtual GPU {v:.3f} s, overhead {v / p:.2f}x")
    if opts.suite_files:
        suite(opts.suite_files, min(opts.repeats, 3))


if __name__ == "__main__":
    main()
