"""The devlint command and its workers collect garbage less often than Python's default (issue 28:
a cold run spent a sixth of its time in the collector); a program that imports devlint keeps its own
settings, and its objects are never frozen."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from devlint import collector
from devlint.cli import main
from devlint.cores import usable_cores
from tests.test_cli import BUGGY, write
from tests.test_warm_start import ROOT

# The command's own entry (devlint.entry, as the console script and `python -m devlint` call it), then
# what the process's collector looks like: its thresholds, how many objects it froze.
PROBE = """
import gc, json, sys
from devlint import entry
sys.argv = ["devlint", *sys.argv[2:]]
try:
    entry.main()
except SystemExit:
    pass
with open(REPORT, "w") as handle:
    json.dump({"thresholds": gc.get_threshold(), "frozen": gc.get_freeze_count()}, handle)
"""


def _command(project, *args: str) -> dict:
    report = project.parent / "collector.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    code = PROBE.replace("REPORT", repr(str(report)))
    done = subprocess.run([sys.executable, "-c", code, "unused", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)
    assert report.exists(), done.stderr
    return json.loads(report.read_text())


def _project(tmp_path, files: int):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    for n in range(files):
        write(project / f"m{n:02}.py", BUGGY)
    return project


def test_the_command_runs_with_the_tuned_thresholds(tmp_path):
    found = _command(_project(tmp_path, 1), "--no-cache", ".")
    assert tuple(found["thresholds"]) == collector.THRESHOLDS != gc.get_threshold()
    assert found["frozen"] == 0  # no workers were started: nothing frozen


@pytest.mark.parametrize("command", ["run", "server"])
def test_the_commands_that_are_no_check_keep_pythons_collector(tmp_path, command):
    # `devlint run` runs the user's program (and the virtual GPU's memory) under Python's own collector
    found = _command(_project(tmp_path, 1), command, "--help")
    assert tuple(found["thresholds"]) == gc.get_threshold() != collector.THRESHOLDS


@pytest.mark.skipif(usable_cores() < 2, reason="-j 2 needs two cores")
def test_the_command_freezes_what_its_workers_share(tmp_path):
    assert _command(_project(tmp_path, 20), "--no-cache", "-j", "2", ".")["frozen"] > 0


@pytest.mark.skipif(usable_cores() < 2, reason="-j 2 needs two cores")
def test_a_program_that_imports_devlint_keeps_its_collector(tmp_path, monkeypatch):
    project = _project(tmp_path, 20)
    monkeypatch.chdir(project)
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    result = CliRunner().invoke(main, ["--no-cache", "-j", "2", "."])
    assert result.exit_code == 1, result.output
    assert "m19.py" in result.output  # checked by the workers
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen
