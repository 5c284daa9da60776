"""The cache-race fuzz (issue 29): can the result cache serve a stale result?

Random small projects (scripts and packages importing `data`, `models` from the project, packages
that shadow modules, files with a syntax error or not UTF-8, root markers, FIFOs in a dependency's
place) are checked with the result cache, in a loop, while files are edited and the edits undone:
between runs, and during runs, at the moments a race can hurt (after a file is read for its key,
before it is checked, while the project index reads or probes a file, while the cache re-checks a
dependency). Some runs fix (`--fix`), some use worker processes.

After each such run, the tree is left alone and checked twice: with the cache, and without it
(`--no-cache`), each in a new project index as a new process would be. The two must agree on every
file. A *stale pass* is a file the cached run passes while the uncached run reports findings on it
(what a CI gate would wave through); a *stale result* is any other difference.

    python benchmarks/cache_race.py --minutes 5 [--seed N] [--projects N]

benchmarks/adversarial.py runs a few projects of it in each of its batches.

tests/test_cache_race.py runs a few rounds of it in the normal suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from devlint import depends, runner  # noqa: E402
from devlint.analysis import project as project_module  # noqa: E402
from devlint.cache import ResultCache, settings_key  # noqa: E402
from devlint.config import Config  # noqa: E402

CONFIG = Config()
FIX = replace(CONFIG, fix=True)

# What each role of file may hold; None: the file does not exist.
DATA = [
    None,
    "import torch\n\ndef make_batch():\n    return torch.zeros(4, 3)\n",
    "import torch\n\ndef make_batch():\n    return torch.nn.Linear(3, 3)\n",
    "import torch\n\ndef make_batch(:\n    return torch.zeros(4, 3)\n",  # a syntax error
    b'NAME = "caf\xe9"\nimport torch\n\ndef make_batch():\n    return torch.zeros(4, 3)\n',  # not UTF-8
    "from models import make_batch\n",  # a re-export, one file further
    "FIFO",
]
MODELS = [
    None,
    "import torch\n\nclass Net(torch.nn.Module):\n    pass\n\ndef make_batch():\n    return torch.ones(2)\n",
    "class Net:\n    def to(self, device):\n        return self\n\ndef make_batch():\n    return [1, 2]\n",
    "import torch\nfrom base import Base\n\nclass Net(Base):\n    pass\n\ndef make_batch():\n    return Net()\n",
]
BASE = [None, "import torch\n\nclass Base(torch.nn.Module):\n    pass\n", "class Base:\n    pass\n"]
TRAIN = [
    "import torch\nfrom data import make_batch\n\ndef step(device):\n    batch = make_batch()\n"
    "    batch.to(device)\n",
    "import torch\nfrom models import Net\n\ndef step(device):\n    net = Net()\n    net.to(device)\n"
    "    net.cuda()\n    x = torch.zeros(3).cuda()\n",
    "import torch\nimport data\n\ndef step(device):\n    data.make_batch().to(device)\n",
    "import torch\nfrom .data import make_batch\n\ndef step(device):\n    make_batch().to(device)\n",
    "import torch\nx = torch.zeros(3).cuda()\ny = torch.ones(2).cpu()\n",
    "import torch\nx = torch.zeros(3).cpu()\n",
]
INIT = [None, "", "from .data import make_batch\n"]
MARKER = [None, ""]


@dataclass
class Roles:
    """Every file the fuzz may create, edit or remove, with the contents it may hold."""

    files: dict[str, list] = field(default_factory=dict)

    @classmethod
    def make(cls) -> Roles:
        roles = cls()
        for folder in ("", "a/", "b/", "pkg/", "inner/", "inner/pkg/"):
            roles.files[folder + "data.py"] = DATA
            roles.files[folder + "models.py"] = MODELS
            roles.files[folder + "train.py"] = TRAIN
        for folder in ("", "a/", "pkg/", "inner/"):
            roles.files[folder + "data/__init__.py"] = [None, *DATA[1:3]]
        roles.files["base.py"] = BASE
        roles.files["inner/base.py"] = BASE
        for folder in ("pkg/", "inner/pkg/", "a/"):
            roles.files[folder + "__init__.py"] = INIT
        roles.files["inner/pyproject.toml"] = MARKER
        roles.files["a/pyproject.toml"] = MARKER
        return roles


@dataclass
class Counts:
    rounds: int = 0
    runs: int = 0
    edits: int = 0
    compared: int = 0  # (file, round) pairs compared
    stale_passes: int = 0
    stale_results: int = 0
    examples: list = field(default_factory=list)


class Tree:
    """A project on disk, its edits and their undo stack."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.roles = Roles.make()
        self.undo: list[tuple[Path, bytes | str | None]] = []
        (root / ".git").mkdir(parents=True)
        for name, contents in self.roles.files.items():
            if rng.random() < 0.5:
                self.put(root / name, rng.choice(contents))

    def state(self, path: Path):
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return "FIFO" if path.exists() and not path.is_dir() else None
        return path.read_bytes() if path.is_file() else None

    def put(self, path: Path, content) -> None:
        if path.is_dir() and not path.is_symlink():
            return  # (a folder: left alone)
        # (forked workers edit too, each with its own copy of this state: the other may have just
        # removed or created the path)
        path.unlink(missing_ok=True)
        if content is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "FIFO":
            if hasattr(os, "mkfifo"):
                try:
                    os.mkfifo(path)
                except FileExistsError:
                    pass
            return
        path.write_bytes(content if isinstance(content, bytes) else content.encode())

    def edit(self) -> None:
        """One random edit, or the undo of an earlier one (an editor's undo, `git checkout`)."""
        if self.undo and self.rng.random() < 0.4:
            path, previous = self.undo.pop(self.rng.randrange(len(self.undo)))
            self.put(path, previous)
            return
        name = self.rng.choice(list(self.roles.files))
        path = self.root / name
        previous = self.state(path)
        content = self.rng.choice(self.roles.files[name])
        if isinstance(content, str) and content.endswith("\n") and self.rng.random() < 0.3:
            content = content.replace(".cuda()", ".cpu()") if ".cuda()" in content else content + "z = 1\n"
        self.put(path, content)
        self.undo.append((path, previous))

    def sources(self) -> list[str]:
        return sorted(str(p) for p in self.root.rglob("*.py")
                      if ".devlint_cache" not in p.parts and p.is_file() and not p.is_symlink())


def _hooked(tree: Tree, rate: float, counts: Counts):
    """Wrap the moments where a race can hurt: edit the tree there, now and then."""
    originals = {
        (runner, "read"): runner.read,
        (runner, "check_file"): runner.check_file,
        (depends, "read_regular"): depends.read_regular,
        (depends, "holds"): depends.holds,
    }

    def wrap(function):
        def hooked(*args, **kwargs):
            if tree.rng.random() < rate:
                tree.edit()
                counts.edits += 1
            value = function(*args, **kwargs)
            if tree.rng.random() < rate:
                tree.edit()
                counts.edits += 1
            return value
        return hooked

    for (module, name), function in originals.items():
        setattr(module, name, wrap(function))
    return originals


def _unhook(originals) -> None:
    for (module, name), function in originals.items():
        setattr(module, name, function)


def _check(paths: list[str], cache: ResultCache | None, config: Config = CONFIG, jobs: int = 1):
    project_module._INDEX = None  # a new process's index
    results = runner.check_files(paths, config, write=config.fix, jobs=jobs, cache=cache)
    if cache is not None:
        cache.save()
    return results


def _view(result) -> tuple:
    if result.error is not None or result.notice is not None:
        return ("error", str(result.error), result.notice)
    return tuple((f.code, f.start, f.end, f.message, f.fix) for f in result.findings)


def race(seed: int, rounds: int, *, workers: bool = True, rate: float = 0.15, folder: Path | None = None) -> Counts:
    """`rounds` rounds on one random project: a run with edits during it, then the comparison."""
    rng = random.Random(seed)
    counts = Counts()
    base = Path(tempfile.mkdtemp(prefix="cache-race-", dir=folder))
    minimum = runner.MIN_FILES_FOR_WORKERS
    try:
        tree = Tree(base / "project", rng)
        cache_dir = str(tree.root / ".devlint_cache")
        key = settings_key(CONFIG)
        for _ in range(rounds):
            counts.rounds += 1
            for _ in range(rng.randrange(3)):
                tree.edit()  # between runs
                counts.edits += 1
            config = FIX if rng.random() < 0.3 else CONFIG
            jobs = 2 if workers and rng.random() < 0.2 else 1
            runner.MIN_FILES_FOR_WORKERS = 2 if jobs > 1 else minimum
            originals = _hooked(tree, rate, counts)
            try:
                _check(tree.sources(), ResultCache(cache_dir, key), config, jobs)
            finally:
                _unhook(originals)
                runner.MIN_FILES_FOR_WORKERS = minimum
            counts.runs += 1
            # The tree at rest: the cache must answer what a run without it answers.
            paths = tree.sources()
            cached = _check(paths, ResultCache(cache_dir, key))
            fresh = _check(paths, None)
            counts.runs += 2
            for path, warm, cold in zip(paths, cached, fresh):
                counts.compared += 1
                if _view(warm) == _view(cold):
                    continue
                counts.stale_results += 1
                if not warm.findings and cold.findings and warm.error is None:
                    counts.stale_passes += 1
                if len(counts.examples) < 5:
                    counts.examples.append((seed, os.path.relpath(path, tree.root), _view(warm), _view(cold)))
    finally:
        runner.MIN_FILES_FOR_WORKERS = minimum
        shutil.rmtree(base, ignore_errors=True)
    return counts


def _devlint(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)


def _by_file(proc: subprocess.CompletedProcess) -> dict[str, list]:
    found: dict[str, list] = {}
    for item in json.loads(proc.stdout or "[]"):
        fix = item["fix"]
        found.setdefault(item["path"], []).append((item["code"], item["line"], item["column"], item["message"],
                                                   fix and (fix["applicability"], fix["title"])))
    return found


def race_processes(seed: int, rounds: int, *, files: int = 40, folder: Path | None = None) -> Counts:
    """Real processes: two `devlint --fix` runs and a plain run at once (worker processes, each saving
    the cache), while a thread edits files and undoes edits; then a cached and an uncached run of the
    tree at rest must agree."""
    rng = random.Random(seed)
    counts = Counts()
    base = Path(tempfile.mkdtemp(prefix="cache-race-", dir=folder))
    try:
        tree = Tree(base / "project", rng)
        for n in range(files):  # enough files for worker processes and a run that lasts
            name = f"src/f{n:02}.py"
            tree.roles.files[name] = TRAIN[4:]
            tree.put(tree.root / name, rng.choice(TRAIN[4:]))
        for _ in range(rounds):
            counts.rounds += 1
            runs = [threading.Thread(target=_devlint, args=(tree.root, ".", *extra))
                    for extra in (("--fix",), ("--fix", "-j", "2"), ("-j", "2"))]
            for thread in runs:
                thread.start()
            while any(thread.is_alive() for thread in runs):
                tree.edit()
                counts.edits += 1
                time.sleep(rng.random() * 0.05)
            counts.runs += len(runs)
            cached = _devlint(tree.root, ".", "--output-format", "json")
            fresh = _devlint(tree.root, ".", "--output-format", "json", "--no-cache")
            counts.runs += 2
            warm, cold = _by_file(cached), _by_file(fresh)
            for path in sorted(set(warm) | set(cold) | {os.path.relpath(p, tree.root) for p in tree.sources()}):
                counts.compared += 1
                if warm.get(path) == cold.get(path):
                    continue
                counts.stale_results += 1
                counts.stale_passes += bool(cold.get(path)) and not warm.get(path)
                if len(counts.examples) < 5:
                    counts.examples.append((seed, path, warm.get(path), cold.get(path)))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: random)")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per project")
    parser.add_argument("--projects", type=int, default=None, help="stop after this many projects")
    parser.add_argument("--processes", action="store_true",
                        help="real devlint processes racing (two --fix and a check at once) and an editing thread")
    args = parser.parse_args()
    seed = random.randrange(2**32) if args.seed is None else args.seed
    deadline = time.monotonic() + args.minutes * 60
    started = time.monotonic()
    total = Counts()
    projects = 0
    while time.monotonic() < deadline and (args.projects is None or projects < args.projects):
        counts = (race_processes if args.processes else race)(seed + projects, args.rounds)
        projects += 1
        for name in ("rounds", "runs", "edits", "compared", "stale_passes", "stale_results"):
            setattr(total, name, getattr(total, name) + getattr(counts, name))
        total.examples += counts.examples[: 5 - len(total.examples)]
        print(f"[{(time.monotonic() - started) / 60:5.1f} min] project {projects} (seed {seed + projects - 1}): "
              f"{counts.stale_passes} stale passes, {counts.stale_results} stale results", flush=True)
    print(f"\n{projects} projects, {total.rounds} rounds, {total.runs} runs, {total.edits} edits "
          f"(between and during runs), {total.compared} file results compared "
          f"in {(time.monotonic() - started) / 60:.1f} min (first seed {seed})")
    print(f"stale passes: {total.stale_passes}, stale results: {total.stale_results}")
    for example in total.examples:
        print("  seed %s %s\n    cached: %s\n    fresh:  %s" % example)
    return 1 if total.stale_results else 0


if __name__ == "__main__":
    sys.exit(main())
