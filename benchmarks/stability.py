"""Stability check on a real corpus (a script; CI runs it through tests/test_stability.py):

    python benchmarks/stability.py                # the torch==2.13.0 wheel's sources
    python benchmarks/stability.py --corpus DIR   # any folder (it is copied, never modified)

Runs `devlint --fix --unsafe-fixes` on a copy and reports: files, findings per rule, crashes (internal
errors), files that compiled before and no longer compile after fixing, files that compile only after
fixing (DL017's `x.cuda(async=True)`), and fixes still applicable after a second pass. Exits 1 when
there is a crash, a file no longer compiling, or a fix left.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import in_sample, python_files, torch_sources  # noqa: E402


def devlint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "devlint", "--no-cache", "--exit-zero", *args],
                          capture_output=True, text=True)


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _outside_sample(root: str, every: int):
    def ignore(directory: str, names: list[str]) -> list[str]:
        return [name for name in names if name.endswith(".py")
                and not in_sample(os.path.relpath(os.path.join(directory, name), root), every)]
    return ignore


def compiles(path: str) -> bool:
    with open(path, "rb") as handle:
        data = handle.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
    return True


def check(folder: str, every: int = 1) -> dict:
    """`every` > 1 checks a fixed 1-in-`every` share of the folder's Python files (see corpus.in_sample)."""
    with tempfile.TemporaryDirectory() as work:
        copy = os.path.join(work, "corpus")
        shutil.copytree(folder, copy, symlinks=True, ignore=_outside_sample(folder, every))
        files = python_files(copy)
        compiled_before = {path for path in files if compiles(path)}
        original = {path: _read(path) for path in files}
        started = time.monotonic()
        before = devlint("--select", "ALL", "--output-format", "json", copy)
        findings = json.loads(before.stdout or "[]")
        fixed = devlint("--select", "ALL", "--fix", "--unsafe-fixes", copy)
        elapsed = time.monotonic() - started
        # A second pass over the files the fix changed: the others were just found to need no fix.
        changed = [path for path in files if _read(path) != original[path]]
        second = (devlint("--select", "ALL", "--unsafe-fixes", "--diff", *changed) if changed
                  else subprocess.CompletedProcess([], 0, "", ""))
        crashes = [line for run in (before, fixed, second) for line in run.stderr.splitlines()
                   if "internal error" in line]
        broken = sorted(os.path.relpath(p, copy) for p in compiled_before if not compiles(p))
        rescued = sorted(os.path.relpath(p, copy) for p in files if p not in compiled_before and compiles(p))
        return {
            "files": len(files),
            "findings per rule": dict(sorted(collections.Counter(f["code"] for f in findings).items())),
            "files not parsed (bad input)": len([line for line in before.stderr.splitlines() if ": error:" in line
                                                 and "internal error" not in line]),
            "crashes": crashes,
            "files no longer compiling after --fix": broken,
            "files compiling only after --fix (DL017)": rescued,
            "fixes left after a second pass": second.stdout.count("\n+++ "),
            "seconds (lint + fix)": round(elapsed, 1),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="a folder of Python files (default: the torch wheel's sources)")
    args = parser.parse_args(argv)
    folder = os.path.abspath(args.corpus) if args.corpus else torch_sources()
    report = check(folder)
    print(f"corpus: {folder}")
    for key, value in report.items():
        shown = len(value) if isinstance(value, list) else value
        print(f"  {key:40} {shown}")
        if isinstance(value, list):
            for item in value[:20]:
                print(f"      {item}")
    failed = report["crashes"] or report["files no longer compiling after --fix"] or report[
        "fixes left after a second pass"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
