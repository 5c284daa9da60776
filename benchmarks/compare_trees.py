"""Do two source trees of devlint find and fix the same? (a script, not a test)

    python benchmarks/compare_trees.py OLD_TREE NEW_TREE [FOLDER ...]

A refactor that promises "no behaviour change" (issue 22) is checked here: each tree's devlint runs on
the same folders (default: the torch wheel's sources, see corpus.py), once with `--output-format json`
and once with `--fix --unsafe-fixes --diff`, every rule selected and no cache; the outputs must be
byte-identical after the tree's own path is removed from them. Each tree runs from its own folder
(PYTHONPATH) under this interpreter, so the interpreter must have devlint's dependencies and must not
have devlint itself installed (an installed devlint would shadow one of the trees): the script checks
which tree each run imported. Exit status 0 when every output matches, 1 otherwise; the first
differing lines are printed.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import torch_sources  # noqa: E402

RUNS = {
    "json": ["--output-format", "json"],
    "diff": ["--fix", "--unsafe-fixes", "--diff"],
}


def run(tree: str, folder: str, flags: list[str]) -> tuple[str, float]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), PYTHONDONTWRITEBYTECODE="1")
    probe = subprocess.run(
        [sys.executable, "-c", "import devlint, os; print(os.path.dirname(os.path.dirname(devlint.__file__)))"],
        cwd=folder, env=env, capture_output=True, text=True, check=True,
    )
    if os.path.realpath(probe.stdout.strip()) != os.path.realpath(tree):
        sys.exit(f"{sys.executable} imports devlint from {probe.stdout.strip()}, not {tree}: use a venv without devlint")
    command = [sys.executable, "-m", "devlint", "check", "--no-cache", "--select", "ALL", "--exit-zero", *flags, "."]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    return (done.stdout + done.stderr).replace(os.path.abspath(tree), "<tree>"), elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("folders", nargs="*", help="default: the torch wheel's sources")
    args = parser.parse_args()
    folders = args.folders or [torch_sources()]
    same = True
    for folder in folders:
        for name, flags in RUNS.items():
            old, old_time = run(args.old, folder, flags)
            new, new_time = run(args.new, folder, flags)
            verdict = "identical" if old == new else "DIFFERENT"
            lines = old.count("\n")
            print(f"{verdict:9}  {name:4}  {folder}  ({lines} lines; old {old_time:.1f} s, new {new_time:.1f} s)")
            if old != new:
                same = False
                diff = difflib.unified_diff(old.splitlines(), new.splitlines(), "old", "new", lineterm="", n=1)
                for line in list(diff)[:40]:
                    print("    " + line)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
