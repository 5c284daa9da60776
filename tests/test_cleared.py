"""Files the pre-pass clears need no LibCST (issue 28): each rule's condition lives in
devlint.candidates, free of LibCST, and a cleared file's result (devlint.cleared) is exactly the
engine's. A run, or a worker, whose files are all cleared never imports LibCST."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devlint import candidates
from devlint.cleared import cleared
from devlint.config import Config
from devlint.engine import check_source
from devlint.rule import Rule
from devlint.rules import RULES, rule_class
from tests.test_cli import BUGGY, write

ROOT = Path(__file__).resolve().parent.parent


# -- the conditions ------------------------------------------------------------------------------------
def test_every_rule_has_its_condition_here_and_none_of_its_own():
    """A `could_match` defined in a rule module would be used by the engine but not by the cleared
    path (which cannot import the rule): the two would disagree. Conditions go in devlint.candidates."""
    for info in RULES:
        cls = rule_class(info.code)
        assert info.code in candidates.CONDITIONS, f"{info.code}: add its condition to devlint/candidates.py"
        assert all("could_match" not in vars(k) for k in cls.__mro__ if k is not Rule), (
            f"{info.code}: its pre-pass condition belongs in devlint/candidates.py, not in its module")


def test_the_names_the_conditions_ask_for_follow_the_rules():
    """devlint.candidates keeps copies of the rules' lists that are not plain sets of names (a rule
    module imports LibCST; moves, factories and AMP names are imported from candidates by their users):
    a name a rule starts to look for must be a candidate too, or its files would be cleared unchecked."""
    from devlint.rules._hardcoded import LEGACY_TENSOR_DTYPES
    from devlint.rules.cuda_only_api import _RAISING
    from devlint.rules.factory_without_device_in_forward import _FACTORIES

    assert candidates.FORWARD_FACTORIES == {f.rsplit(".", 1)[-1] for f in _FACTORIES}
    assert candidates.LEGACY_TENSOR_TYPES == set(LEGACY_TENSOR_DTYPES)
    assert candidates.RAISING_CUDA_CALLS == set(_RAISING)


def test_an_unknown_rule_takes_every_file():
    assert candidates.could_match("DL999", candidates.Summary())
    assert not candidates.could_match("DL001", candidates.Summary())


# -- a cleared file's result is the engine's ---------------------------------------------------------------
SOURCES = sorted(ROOT.glob("tests/fixtures/DL*/*.py")) + sorted(ROOT.glob("examples/*.py")) + sorted(
    ROOT.glob("devlint/**/*.py"))
CONFIGS = {
    "default": Config(),
    "all": Config(select=("ALL",)),
    "fix": Config(select=("ALL",), fix=True, unsafe_fixes=True),
    "add-noqa": Config(add_noqa=True),
    "ignore-noqa": Config(select=("DL001", "DL100"), ignore_noqa=True),
    "dl100": Config(select=("DL100",)),
    "none": Config(select=("DL001",), per_file_ignores=(("*", ("DL001",)),), root=str(ROOT)),
}
SNIPPETS = {
    "plain": b"import json\nx = json.load(f)\n",
    "noqa": b"x = 1  # noqa: DL001\n",
    "async-text": b"# async\nx = 1\n",
    "broken": b"def f(:\n",
    "latin-1": b"# -*- coding: latin-1 -*-\nname = '\xe9'\n",
    "undecodable": b"x = '\xff'\n",
    "bom": b"\xef\xbb\xbfx = 1\r\n",
    "candidate": BUGGY.encode(),
    "deep": b"x = " + b"(" * 150 + b"1" + b")" * 150 + b"\n",
}


def _fields(result) -> dict:
    return dataclasses.asdict(result)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_cleared_file_gets_the_engines_result(name):
    config = CONFIGS[name]
    inputs = [(str(p), p.read_bytes()) for p in SOURCES] + [(f"{k}.py", v) for k, v in SNIPPETS.items()]
    cleared_count = 0
    for path, data in inputs:
        fast = cleared(path, data, config)
        if fast is not None:
            cleared_count += 1
            assert _fields(fast) == _fields(check_source(path, data, config)), path
    assert cleared_count > 10  # most of devlint's own modules move no tensor


def test_what_the_cleared_path_leaves_to_the_engine():
    config = Config(select=("ALL",))
    for name in ("noqa", "broken", "undecodable", "candidate"):
        assert cleared(f"{name}.py", SNIPPETS[name], config) is None, name
    assert cleared("a.py", SNIPPETS["noqa"], Config()) is not None  # DL100 is off by default
    fix = Config(fix=True)
    assert cleared("a.py", SNIPPETS["async-text"], fix) is None
    assert cleared("a.py", SNIPPETS["async-text"], Config()) is not None


# -- whole runs in a fresh interpreter -----------------------------------------------------------------
# Records every process (the run's, its workers') that imports LibCST: forked workers inherit the hook.
PROBE = """
import os, sys
from devlint.cli import main
marker = sys.argv[1]
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "libcst":
            with open(marker, "a") as handle:
                handle.write(f"{os.getpid()}\\n")
        return None
sys.meta_path.insert(0, Watch())
print("parent", os.getpid(), file=sys.stderr)
try:
    main(sys.argv[2:], prog_name="devlint")
except SystemExit as exit:
    sys.exit(exit.code)
"""


def _run(project: Path, *args: str, stdin: str = "") -> tuple[list[int], int, subprocess.CompletedProcess]:
    """(the pids that imported LibCST, the run's own pid, the process)."""
    marker = project.parent / "libcst-importers"
    if marker.exists():
        marker.unlink()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", PROBE, str(marker), *args], cwd=project, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)
    parent = int(next(line.split()[1] for line in done.stderr.splitlines() if line.startswith("parent ")))
    pids = [int(p) for p in marker.read_text().split()] if marker.exists() else []
    return pids, parent, done


@pytest.fixture()
def cleared_project(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    for index in range(20):  # enough files for worker processes (runner.MIN_FILES_FOR_WORKERS)
        write(root / f"m{index}.py", f"import torch\n\ndef f{index}(x):\n    return torch.relu(x) + {index}\n")
    return root


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_whose_files_are_all_cleared_never_imports_libcst(cleared_project, jobs):
    pids, _, done = _run(cleared_project, ".", "--no-cache", "-j", jobs, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert pids == []


def test_only_the_worker_with_a_file_to_analyse_imports_libcst(cleared_project):
    write(cleared_project / "train.py", BUGGY)
    pids, parent, done = _run(cleared_project, ".", "--no-cache", "-j", "2", "--output-format", "json")
    assert done.returncode == 1, done.stderr
    assert {Path(f["path"]).name for f in json.loads(done.stdout)} == {"train.py"}
    assert pids and parent not in pids  # a worker imported it, for train.py; the run itself did not


def test_a_cleared_file_checked_alone_does_not_import_libcst(cleared_project):
    pids, _, done = _run(cleared_project, "m3.py", "--no-cache")
    assert done.returncode == 0 and pids == [], done.stderr
    source = (cleared_project / "m3.py").read_text()
    pids, _, done = _run(cleared_project, "-", "--stdin-filename", "m3.py", "--fix", stdin=source)
    assert done.returncode == 0 and done.stdout == source and pids == [], done.stderr
    pids, _, done = _run(cleared_project, "-", "--stdin-filename", "m3.py", stdin=BUGGY)  # the control
    assert done.returncode == 1 and pids != [], done.stderr
