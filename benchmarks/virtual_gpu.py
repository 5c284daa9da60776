"""Overhead of devlint's virtual GPU against a plain CPU run of the same training loop.

    python benchmarks/virtual_gpu.py [--steps 200] [--repeats 5]

The same small MLP training loop (Linear-ReLU-Linear, Adam, cross-entropy, batch 32) runs on the plain
CPU (device "cpu") and under `virtual_gpu()` (device "cuda"); one torch thread, best of `repeats`
each, alternating so that a busy machine hurts both alike. Not part of the test suite.

Measured (torch 2.13.0+cpu, CPython 3.11, a 2-core machine shared with other work): 200 steps,
plain CPU 0.12-0.18 s, virtual GPU 0.23-0.37 s: overhead 1.9-2.1x, within the issue's 3x. The
losses are identical (the arithmetic is the CPU's).
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
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


if __name__ == "__main__":
    main()
