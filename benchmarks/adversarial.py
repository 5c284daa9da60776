"""A long adversarial run (issues 13, 29): the properties of tests/test_adversarial.py and
tests/test_fuzz.py on many more generated files, with long chains, and the cache-race fuzz
(benchmarks/cache_race.py: edits during and between cached runs, compared with --no-cache runs), for
a given number of minutes.

    python benchmarks/adversarial.py --minutes 30 [--chain 3000] [--batch 200]

Each batch runs in a child process with its own Hypothesis seed, so that a native crash (a
segmentation fault in the parser) is counted as a crash instead of ending the run. The summary counts
batches, examples, crashes, failed properties (a file that no longer compiles, a byte changed outside
the fixes, a lost BOM or line ending, an internal error), stale cache results, and where the
failing examples are.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/test_adversarial.py::test_adversarial_files", "tests/test_fuzz.py"]
CACHE_RACE_PROJECTS = 3  # random projects of the cache-race fuzz per batch (20 rounds each)
# A batch's time limit catches a hang; it does not shrink as the run's end nears: a batch of 200 examples
# took 14 minutes on a loaded 2-core machine, so one started late timed out without hanging.
BATCH_TIMEOUT = 30 * 60


def run_batch(seed: int, examples: int, chain: int, log: Path, timeout: float) -> tuple[str, int]:
    env = dict(os.environ, DEVLINT_FUZZ_EXAMPLES=str(examples), DEVLINT_FUZZ_CHAIN=str(chain))
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", f"--hypothesis-seed={seed}",
               *TESTS]
    try:
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        log.write_text(f"seed {seed}: timed out after {timeout:.0f} s\n{exc.stdout or ''}")
        return "timeout", 0
    passed = sum(int(n) for n in re.findall(r"(\d+) passed", proc.stdout))
    if proc.returncode != 0:
        log.write_text(f"seed {seed}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return ("crash" if proc.returncode < 0 else "failure"), passed
    return cache_race(seed, log, timeout), passed


def cache_race(seed: int, log: Path, timeout: float) -> str:
    """The cache-race fuzz on a few random projects: "stale" when the cache served a stale result."""
    command = [sys.executable, "benchmarks/cache_race.py", "--seed", str(seed), "--projects", str(CACHE_RACE_PROJECTS)]
    try:
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        log.write_text(f"seed {seed}: the cache race timed out after {timeout:.0f} s\n{exc.stdout or ''}")
        return "timeout"
    if proc.returncode == 0:
        return "ok"
    log.write_text(f"seed {seed}: cache race exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return "crash" if proc.returncode < 0 else "stale" if "stale passes" in proc.stdout else "failure"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--batch", type=int, default=200, help="examples per test per batch")
    parser.add_argument("--chain", type=int, default=3000, help="longest generated chain")
    parser.add_argument("--logs", type=Path, default=Path("adversarial-logs"))
    args = parser.parse_args()
    args.logs.mkdir(exist_ok=True)
    deadline = time.monotonic() + args.minutes * 60
    counts = {"ok": 0, "failure": 0, "crash": 0, "timeout": 0, "stale": 0}
    batches = 0
    started = time.monotonic()
    while time.monotonic() < deadline:
        seed = random.randrange(2**32)
        outcome, _ = run_batch(seed, args.batch, args.chain, args.logs / f"seed-{seed}.log",
                               timeout=max(BATCH_TIMEOUT, deadline - time.monotonic() + 600))
        batches += 1
        counts[outcome] += 1
        if outcome == "ok":
            (args.logs / f"seed-{seed}.log").unlink(missing_ok=True)
        print(f"[{(time.monotonic() - started) / 60:5.1f} min] batch {batches} seed {seed}: {outcome}", flush=True)
    tests = 4  # test_adversarial_files and the three tests of test_fuzz, each with --batch examples
    print(f"\n{batches} batches, about {batches * tests * args.batch:,} generated files "
          f"in {(time.monotonic() - started) / 60:.1f} min (chains up to {args.chain}), "
          f"{batches * CACHE_RACE_PROJECTS} cache-race projects")
    print(", ".join(f"{k}: {v}" for k, v in counts.items()))
    if counts["failure"] or counts["crash"] or counts["timeout"] or counts["stale"]:
        print(f"logs of the failing batches: {args.logs}/")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
