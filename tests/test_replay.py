"""A warm check is replayed (devlint.replay) only while everything it rests on is unchanged, and then
prints exactly what it printed and exits as it exited, without click, the cache or LibCST.

Each test runs `devlint` as a user does (a new process, the command line); a probe says whether the
run was a replay (it imported neither click nor the result cache)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from devlint import replay
from tests.test_cli import BUGGY, CLEAN, write

ROOT = Path(__file__).resolve().parent.parent

# Runs devlint as `python -m devlint` does; at exit writes whether the run replayed to DEVLINT_PROBE.
_PROBE = (
    "import atexit, os, runpy, sys\n"
    "out = os.environ.pop('DEVLINT_PROBE')\n"
    "def report():\n"
    "    replayed = 'click' not in sys.modules and 'devlint.cache' not in sys.modules\n"
    "    open(out, 'w').write('replayed' if replayed else 'ran')\n"
    "atexit.register(report)\n"
    "sys.argv[0] = 'devlint'\n"
    "runpy.run_module('devlint', run_name='__main__', alter_sys=True)\n"
)


class Run:
    def __init__(self, done: subprocess.CompletedProcess, how: str) -> None:
        self.code, self.out, self.err, self.how = done.returncode, done.stdout, done.stderr, how

    def shown(self) -> tuple:
        return self.code, self.out, self.err


def devlint(cwd: Path, *args: str, env: dict | None = None) -> Run:
    probe = cwd.parent / f"probe-{os.getpid()}"
    environment = dict(env if env is not None else os.environ, DEVLINT_PROBE=str(probe),
                       PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8")
    environment.pop("CI", None) if env is None else None
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, capture_output=True, text=True,
                          env=environment, timeout=120)
    how = probe.read_text()
    probe.unlink()
    return Run(done, how)


@pytest.fixture()
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    write(root / "src" / "buggy.py", BUGGY)
    write(root / "src" / "clean.py", CLEAN)
    return root


def test_a_warm_check_is_replayed_with_the_same_output_and_exit_code(project):
    first = devlint(project, "src")
    again = devlint(project, "src")
    assert first.how == "ran" and again.how == "replayed"
    assert again.shown() == first.shown()
    assert first.code == 1 and "src/buggy.py:2:" in first.out and "Found 1 error" in first.out


@pytest.mark.parametrize("options", [["-q"], ["--output-format", "json", "--exit-zero"], ["--statistics"],
                                     ["--select=DL001", "-j", "1"], ["check", "--output-format=sarif"]])
def test_each_recordable_form_replays_exactly(project, options):
    first = devlint(project, *options, "src")
    again = devlint(project, *options, "src")
    assert again.how == "replayed" and again.shown() == first.shown()


def change_a_file(project: Path) -> None:
    write(project / "src" / "clean.py", BUGGY)


def add_a_file(project: Path) -> None:
    write(project / "src" / "new.py", BUGGY)


def remove_a_file(project: Path) -> None:
    (project / "src" / "buggy.py").unlink()


def rename_a_file(project: Path) -> None:
    """Same bytes in the same order: only the names differ, and they are what the report shows."""
    (project / "src" / "buggy.py").rename(project / "src" / "a_buggy.py")


def ignore_a_file(project: Path) -> None:
    write(project / ".gitignore", "buggy.py\n")


def configure(project: Path) -> None:
    write(project / "pyproject.toml", '[tool.devlint]\nignore = ["DL001"]\n')


def a_nearer_settings_file(project: Path) -> None:
    write(project / "src" / "pyproject.toml", '[tool.devlint]\nextend-exclude = ["buggy.py"]\n')


@pytest.mark.parametrize("change", [change_a_file, add_a_file, remove_a_file, rename_a_file, ignore_a_file, configure,
                                    a_nearer_settings_file])
def test_any_change_to_what_the_check_rests_on_is_a_run_not_a_replay(project, change):
    devlint(project, "src")
    change(project)
    after = devlint(project, "src")
    fresh = devlint(project, "src", "--no-cache")
    assert after.how == "ran"
    assert after.shown() == fresh.shown()


def test_a_change_to_another_file_a_result_rests_on_is_a_run(project):
    """train.py's finding depends on what data.make_batch returns (a tensor: a discarded move; a
    module: moved in place): the record holds data.py's digest too, not only the files named."""
    (project / "src").mkdir(exist_ok=True)
    write(project / "train.py", "import torch\nfrom data import make_batch\n\ndef step(device):\n"
          "    batch = make_batch()\n    batch.to(device)\n")
    write(project / "data.py", "import torch\n\ndef make_batch():\n    return torch.nn.Linear(3, 3)\n")
    before = devlint(project, "train.py")
    assert before.code == 0 and devlint(project, "train.py").how == "replayed"
    write(project / "data.py", "import torch\n\ndef make_batch():\n    return torch.zeros(4, 3)\n")
    after = devlint(project, "train.py")
    assert after.how == "ran" and after.code == 1 and "DL003" in after.out


def test_other_arguments_environment_or_folder_are_other_records(project):
    devlint(project, "src")
    assert devlint(project, "src", "--ignore", "DL001").how == "ran"
    coloured = devlint(project, "src", env=dict(os.environ, FORCE_COLOR="1"))
    assert coloured.how == "ran" and "\x1b[" in coloured.out
    assert devlint(project / "src", ".").how == "ran"
    assert devlint(project, "src").how == "replayed"


@pytest.mark.parametrize("options", [["--diff"], ["--no-cache"], ["--add-noqa"], ["-o", "report.txt"]])
def test_a_check_that_writes_or_skips_the_cache_is_never_replayed(project, options):
    devlint(project, *options, "src")
    assert devlint(project, *options, "src").how == "ran"


def test_a_fix_that_fixed_nothing_is_replayed_and_a_new_bug_is_fixed(project):
    # pre-commit's fixing hook on commit after commit: a run that fixed something is never replayed
    fixing = devlint(project, "--fix", "src")
    assert fixing.how == "ran" and "src/buggy.py" not in fixing.out
    nothing = devlint(project, "--fix", "src")
    assert nothing.how == "ran"  # the run that fixed was not recorded
    again = devlint(project, "--fix", "src")
    assert again.how == "replayed" and again.shown() == nothing.shown()
    write(project / "src" / "clean.py", BUGGY)
    fixed = devlint(project, "--fix", "src")
    assert fixed.how == "ran"
    assert ".cuda()" not in (project / "src" / "clean.py").read_text()


def test_a_check_with_an_unreadable_file_is_not_recorded(project):
    write(project / "src" / "broken.py", "def (:\n")
    first = devlint(project, "src")
    assert first.code == 2
    assert devlint(project, "src").how == "ran"
    assert not list((project / ".devlint_cache").glob("run-*.json"))


def damage(text: str) -> str:
    data = json.loads(text)
    data["writes"].append([1, 2])
    return json.dumps(data)


@pytest.mark.parametrize("damaged", [lambda text: '{"format": 1, "key": 3', damage])
def test_a_damaged_record_is_a_run(project, damaged):
    first = devlint(project, "src")
    for record in (project / ".devlint_cache").glob("run-*.json"):
        record.write_text(damaged(record.read_text()))
    again = devlint(project, "src")
    assert again.how == "ran" and again.shown() == first.shown()
    assert devlint(project, "src").how == "replayed"


def test_only_the_newest_records_are_kept(tmp_path):
    for n in range(replay.KEEP + 3):
        record = tmp_path / f"run-{n:02}.json"
        record.write_text("{}")
        os.utime(record, ns=(n * 10**9, n * 10**9))
    (tmp_path / "results-x.json").write_text("{}")
    replay._keep_newest(str(tmp_path))
    kept = sorted(p.name for p in tmp_path.glob("run-*.json"))
    assert kept == [f"run-{n:02}.json" for n in range(3, replay.KEEP + 3)]
    assert (tmp_path / "results-x.json").exists()


def test_the_grammar_read_without_click():
    assert replay.parse(["src", "-q", "--cache-dir", "c", "--config=p.toml"]).stored() == [["src"], "p.toml", False, "c"]
    assert replay.parse(["check", "--isolated", "-j2"]).stored() == [["."], None, True, None]
    assert replay.parse(["--", "-q"]).stored() == [["-q"], None, False, None]
    assert replay.parse(["--fix", "src"]).stored() == [["src"], None, False, None]  # (recorded when it fixed nothing)
    for refused in (["--diff"], ["--fix", "--diff"], ["-"], ["rule", "DL001"], ["clean"], ["--no-cache"], ["-o", "x"], ["--help"],
                    ["--version"], ["--select"], ["-qs"], ["--stdin-filename", "a.py"], ["--", "-"]):
        assert replay.parse(refused) is None, refused


def test_the_environment_in_a_record_name_is_every_variable_a_check_reads():
    read = set()
    for module in ("cli.py", "report.py", "output.py", "formats.py", "rendering.py", "files.py", "settings.py"):
        text = (ROOT / "devlint" / module).read_text()
        read |= set(re.findall(r"""environ(?:\.get)?\(?\[?["']([A-Z_]+)["']""", text))
        read |= set(re.findall(r"""["']([A-Z_]+)["'] in env""", text))
        assert "getenv" not in text
    assert read and read <= set(replay.ENVIRONMENT)


def test_a_record_is_json_naming_its_key(project):
    devlint(project, "src")
    (record,) = (project / ".devlint_cache").glob("run-*.json")
    data = json.loads(record.read_text())
    assert record.name == f"run-{data['key']}.json" and data["files"] and data["exit"] == 1
