"""Benchmark devlint against TorchFix and ruff on the same files (a script, not a test).

    python benchmarks/bench.py                 # the torch==2.13.0 wheel's sources (1.2 M lines)
    python benchmarks/bench.py --corpus DIR    # any folder
    python benchmarks/bench.py --no-peers      # devlint only

Times, side by side in one run: devlint cold (no cache, default rules, all cores), devlint warm
(cache filled, nothing changed), TorchFix (`torchfix --select ALL`, in its own virtualenv because it
pins an old libcst), `ruff check --select F --no-cache`, a pre-commit style run on 5 files, and how
devlint's cold time grows over a quarter, half and all of the corpus, and over a random eighth of
it copied 1, 2 and 4 times. Peak memory is the largest resident set of any single process of the
command. The short runs (devlint warm, ruff) are timed
--repeat times and the best is kept: on a shared machine one run is mostly noise.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import python_files, torch_sources  # noqa: E402

PEERS_VENV = os.path.join(os.path.expanduser("~"), ".cache", "devlint-bench", "peers-venv")


def timed(command: list[str], **kwargs) -> tuple[float, int, subprocess.CompletedProcess]:
    """(seconds, peak RSS in MiB of the largest process, result), measured in a fresh child."""
    probe = (
        "import resource, subprocess, sys, time;"
        "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True);"
        "d = time.perf_counter() - t;"
        "print(d, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)"
    )
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, **kwargs)
    seconds, peak_kib, code = done.stdout.split()
    return float(seconds), int(peak_kib) // 1024, done


def best_of(times: int, command: list[str], **kwargs) -> tuple[float, int, subprocess.CompletedProcess]:
    """timed(), repeated; the fastest run (its peak memory is the largest seen)."""
    runs = [timed(command, **kwargs) for _ in range(max(1, times))]
    fastest = min(runs, key=lambda run: run[0])
    return fastest[0], max(run[1] for run in runs), fastest[2]


def peers_venv() -> tuple[str, str] | None:
    """torchfix and ruff executables in their own virtualenv (created on first use)."""
    bin_dir = os.path.join(PEERS_VENV, "bin")
    torchfix, ruff = os.path.join(bin_dir, "torchfix"), os.path.join(bin_dir, "ruff")
    if not (os.path.exists(torchfix) and os.path.exists(ruff)):
        subprocess.run([sys.executable, "-m", "venv", PEERS_VENV], check=True)
        installed = subprocess.run([os.path.join(bin_dir, "pip"), "install", "-q", "torchfix", "ruff"])
        if installed.returncode != 0:
            return None
    return torchfix, ruff


def lines_of(files: list[str]) -> int:
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            total += handle.read().count(b"\n")
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="a folder of Python files (default: the torch wheel's sources)")
    parser.add_argument("--no-peers", action="store_true", help="do not run TorchFix and ruff")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="devlint -j (default: all cores)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of devlint warm and ruff; the best is kept")
    args = parser.parse_args()

    folder = os.path.abspath(args.corpus) if args.corpus else torch_sources()
    files = python_files(folder)
    lines = lines_of(files)
    devlint = [sys.executable, "-m", "devlint", "--exit-zero", "--statistics", "-j", str(args.jobs)]
    print(f"corpus: {folder}\nfiles: {len(files)}, lines: {lines:,}, cores: {os.cpu_count()}\n")

    rows: list[tuple[str, float, int]] = []
    with tempfile.TemporaryDirectory() as work:
        # a folder devlint creates: it refuses to use an existing one it did not mark as its cache
        cache = os.path.join(work, "cache")
        seconds, peak, _ = timed([*devlint, "--no-cache", folder])
        rows.append(("devlint cold (no cache)", seconds, peak))
        timed([*devlint, "--cache-dir", cache, folder])  # fill the cache
        seconds, peak, _ = best_of(args.repeat, [*devlint, "--cache-dir", cache, folder])
        rows.append(("devlint warm (cache filled)", seconds, peak))
    sample = random.Random(0).sample(files, min(5, len(files)))
    seconds, peak, _ = timed([*devlint, "--no-cache", *sample])
    rows.append(("devlint on 5 files (pre-commit)", seconds, peak))

    peers = None if args.no_peers else peers_venv()
    if peers is not None:
        torchfix, ruff = peers
        seconds, peak, _ = timed([torchfix, "--select", "ALL", folder])
        rows.append(("torchfix --select ALL", seconds, peak))
        seconds, peak, _ = best_of(args.repeat, [ruff, "check", "--select", "F", "--no-cache", "--exit-zero",
                                                 "--quiet", folder])
        rows.append(("ruff check --select F --no-cache", seconds, peak))

    print(f"{'command':36} {'seconds':>9} {'lines/s':>11} {'peak MiB':>9}")
    for name, seconds, peak in rows:
        rate = f"{lines / seconds:,.0f}" if "5 files" not in name else "-"
        print(f"{name:36} {seconds:9.2f} {rate:>11} {peak:9d}")
    by_name = {name: seconds for name, seconds, _ in rows}
    if "torchfix --select ALL" in by_name:
        print(f"\ndevlint cold is {by_name['torchfix --select ALL'] / by_name['devlint cold (no cache)']:.1f}x "
              f"faster than TorchFix (target: 10x)")
        print(f"devlint warm takes {by_name['devlint warm (cache filled)'] / by_name['ruff check --select F --no-cache']:.1f}x "
              f"ruff's time (target: within 2x)")

    print("\nscaling (devlint cold):")
    ordered = sorted(files)
    for fraction in (0.25, 0.5, 1.0):
        subset = ordered[: max(1, int(len(ordered) * fraction))]
        with tempfile.TemporaryDirectory() as listing:
            seconds, _, _ = timed([*devlint, "--no-cache", *subset], cwd=listing)
        print(f"  {fraction:4.0%} of the files, {lines_of(subset):>9,} lines: {seconds:7.2f} s "
              f"({lines_of(subset) / seconds:,.0f} lines/s)")
    # The slices above differ in what they hold (a few huge candidate files weigh more than their
    # lines); the same files copied k times isolate how the time grows with the corpus alone.
    sample = random.Random(0).sample(files, max(1, len(files) // 8))
    for copies in (1, 2, 4):
        with tempfile.TemporaryDirectory() as folder:
            for k in range(copies):
                for i, path in enumerate(sample):
                    os.makedirs(os.path.join(folder, str(k)), exist_ok=True)
                    shutil.copyfile(path, os.path.join(folder, str(k), f"f{i}.py"))
            seconds, _, _ = timed([*devlint, "--no-cache", folder])
        lines = lines_of(sample) * copies
        print(f"  a random eighth x{copies}, {lines:>9,} lines: {seconds:7.2f} s ({lines / seconds:,.0f} lines/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
