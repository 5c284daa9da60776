"""Fixing many findings inside one statement (a script, not a test; issue 29, R1).

    python benchmarks/one_statement.py                      # 1,000 and 20,000 elements
    python benchmarks/one_statement.py --sizes 250 1000     # other sizes
    python benchmarks/one_statement.py --source /work/main  # another checkout's devlint, to compare

Each case is one file, `import torch` and `xs = [torch.zeros(1).cuda(), ...]` with N elements on one
line: `devlint --no-cache --fix` (one process, -j1) and `devlint --no-cache` (checking alone) are timed
and the fixed file is verified (N `.to(device)`, no `.cuda()` left). Fixing used to walk the whole
statement once per edit, so time grew with N squared (1,000 elements: 124 s; 20,000: 20 CPU minutes).
The time per element printed beside each case shows whether it still grows with N.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def source_of(count: int) -> str:
    return "import torch\nxs = [" + ", ".join(["torch.zeros(1).cuda()"] * count) + "]\n"


def run(command: list[str], env: dict, cwd: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    return time.perf_counter() - start, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 20000], help="elements per statement")
    parser.add_argument("--source", help="a devlint checkout to run instead of the installed one")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.source:
        env["PYTHONPATH"] = os.path.abspath(args.source)
    work = tempfile.mkdtemp(prefix="devlint-one-statement-")
    print(f"{'elements':>9}  {'check s':>8}  {'fix s':>8}  {'fix ms/element':>14}  result")
    try:
        for count in args.sizes:
            path = os.path.join(work, f"many_{count}.py")
            with open(path, "w") as handle:
                handle.write(source_of(count))
            base = [sys.executable, "-m", "devlint", "--no-cache", "-j", "1"]
            checked, _ = run([*base, path], env, work)
            fixed, done = run([*base, "--fix", path], env, work)
            with open(path) as handle:
                text = handle.read()
            correct = text.count(".to(device)") == count and ".cuda()" not in text
            verdict = "ok" if correct and done.returncode == 0 else f"WRONG (exit {done.returncode})"
            print(f"{count:>9,}  {checked:>8.1f}  {fixed:>8.1f}  {1000 * fixed / count:>14.2f}  {verdict}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
