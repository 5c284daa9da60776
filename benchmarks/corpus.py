"""The default real-world corpus of the benchmark and the stability check: the Python sources of the
pinned CPU build of PyTorch (torch==2.13.0, about 2,300 files and 1.2 M lines), taken from its wheel
(downloaded from the package registry once, never installed, never imported)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile
import zlib

TORCH = "torch==2.13.0"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "devlint-bench")


def torch_sources(cache: str = CACHE) -> str:
    """A folder holding the .py files of the torch wheel (extracted on first use)."""
    target = os.path.join(cache, "torch-2.13.0-sources")
    if os.path.isdir(os.path.join(target, "torch")):
        return target
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    found = glob.glob(os.path.join(wheels, "torch-2.13.0*.whl"))
    if not found:  # pip's configured index and find-links (where the pinned CPU wheel is found)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", wheels, TORCH], check=True)
        found = glob.glob(os.path.join(wheels, "torch-2.13.0*.whl"))
    partial = target + ".partial"
    with zipfile.ZipFile(sorted(found)[0]) as wheel:
        members = [m for m in wheel.namelist() if m.endswith(".py") and m.startswith(("torch/", "torchgen/"))]
        wheel.extractall(partial, members)
    os.replace(partial, target)
    return target


def python_files(folder: str) -> list[str]:
    return sorted(glob.glob(os.path.join(folder, "**", "*.py"), recursive=True))


def in_sample(relative_path: str, every: int) -> bool:
    """A fixed 1-in-`every` share of a corpus, by a hash of each file's path (the same files on every machine)."""
    return every <= 1 or zlib.crc32(relative_path.replace(os.sep, "/").encode()) % every == 0


def sample_share() -> int:
    """The test suite checks a quarter of the torch sources (the whole corpus costs about 9 CPU minutes);
    DEVLINT_FULL_CORPUS=1 checks all of it, as the benchmark scripts always do."""
    return 1 if os.environ.get("DEVLINT_FULL_CORPUS") == "1" else 4
