"""Peak memory and time per MB of source when checking and fixing, for a few shapes of file.

    python benchmarks/memory.py [--sizes 0.25,0.5,1] [--shapes ordinary,cuda_line,table]

Each measurement runs in a fresh child process (peak RSS is ru_maxrss of that process, minus
nothing: it includes the interpreter and LibCST, ~45 MB) so that one run's memory cannot hide
another's. Not part of the test suite.

Shapes:
  ordinary   a realistic module (imports, classes, functions, some `.cuda()` calls) repeated
  cuda_line  one long line of `x.cuda(); ` statements (every call a finding and a fix)
  table      generated data: a list of tuples of numbers and strings, as code generators write

Measured (LibCST 1.9.0, CPython 3.11, x86-64 Linux, a 2-core machine shared with other work, so
times are pessimistic; MB = 10^6 bytes; peak includes ~45 MB of interpreter and LibCST):

  shape       size     check: peak MB     s     fix: peak MB     s   findings
  ordinary    0.25 MB             180   6.8              208  10.3     1,014
  ordinary    0.50 MB             330  12.8              385  21.8     2,025
  table       0.10 MB             117   1.9              127   4.0         1
  table       0.25 MB             232   4.9              256   9.5         1
  cuda_line   (from issue 13: a 460 KB line of 20,000 `.cuda()` calls needs 1 GB; 0.1 MB here ran
              for minutes, every call a finding)

Memory grows linearly: ~600 MB per MB of ordinary code and ~770 MB per MB of generated tables for a
check (~700 and ~850 for a fix), ~2.2 GB per MB for a line that is nothing but findings. The issue's
5 MB generated file took 3.0 GB and 137 s, so the former 10 MiB default admitted files needing
several GB. The default --max-file-size is now 1 MiB: a check stays around 0.6-0.9 GB (fix 0.75-0.9)
for ordinary and generated code; only a file dense with findings can pass 1 GiB below the limit.
Larger files are skipped with a notice; --max-file-size raises the limit where memory allows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ORDINARY = '''
class Block{n}(torch.nn.Module):
    """A block of layers."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(width, width)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        y = self.linear(x)
        if y.shape[0] > 1:
            y = self.norm(y)
        return torch.relu(y) + x


def train_{n}(model, data, steps=10):
    model = model.cuda()
    for step, (inputs, labels) in enumerate(data):
        inputs = inputs.cuda()
        loss = torch.nn.functional.mse_loss(model(inputs), labels.to("cuda"))
        loss.backward()
        if step >= steps:
            break
    return {{"loss": float(loss), "step": step, "name": "train_{n}"}}
'''


def make(shape: str, size: int) -> str:
    if shape == "ordinary":
        parts = ["import torch\n"]
        total, n = 0, 0
        while total < size:
            parts.append(ORDINARY.format(n=n))
            total += len(parts[-1])
            n += 1
        return "".join(parts)
    if shape == "cuda_line":
        return "import torch\n" + "x.cuda(); " * (size // 10) + "\n"
    if shape == "table":
        rows = []
        total, n = 0, 0
        while total < size:
            rows.append(f"    ({n}, {n * 0.5!r}, 'name_{n}', {n % 7}, None),\n")
            total += len(rows[-1])
            n += 1
        return "import torch\nx = torch.zeros(3).cuda()\nTABLE = [\n" + "".join(rows) + "]\n"
    raise SystemExit(f"unknown shape {shape!r}")


CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from devlint.config import Config
from devlint.engine import check_source
data = open({path!r}, 'rb').read()
start = time.perf_counter()
result = check_source('bench.py', data, Config(fix={fix}, max_file_size=1 << 40))
print(json.dumps({{"seconds": time.perf_counter() - start,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "error": str(result.error) if result.error else None, "notice": result.notice,
                  "findings": len(result.findings) + len(result.applied)}}))
"""


def measure(path: str, fix: bool) -> dict:
    code = CHILD.format(root=ROOT, path=path, fix=fix)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"seconds": float("nan"), "peak_mb": float("nan"), "error": f"exit {proc.returncode}"}
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0.25,0.5", help="sizes in MB (10^6 bytes), comma-separated")
    parser.add_argument("--shapes", default="ordinary,cuda_line,table")
    args = parser.parse_args()
    import tempfile

    print(f"{'shape':10} {'size':>7}  {'check MB':>9} {'s':>6} {'MB/MB':>6}  {'fix MB':>7} {'s':>6}  findings")
    for shape in args.shapes.split(","):
        for size_mb in (float(s) for s in args.sizes.split(",")):
            text = make(shape, int(size_mb * 1_000_000))
            with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
                handle.write(text)
            try:
                real_mb = len(text.encode()) / 1_000_000
                check = measure(handle.name, fix=False)
                fix = measure(handle.name, fix=True)
            finally:
                os.unlink(handle.name)
            problem = check.get("error") or check.get("notice") or ""
            print(f"{shape:10} {real_mb:6.2f}M  {check['peak_mb']:9.0f} {check['seconds']:6.1f} "
                  f"{check['peak_mb'] / real_mb:6.0f}  {fix['peak_mb']:7.0f} {fix['seconds']:6.1f}  "
                  f"{check.get('findings', '?')} {problem}", flush=True)


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)")
