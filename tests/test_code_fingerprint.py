"""The result cache never hands back a result of other code (issue 28): an edited module of devlint
gives another fingerprint, even when the edit keeps the file's size and modification time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from devlint import code_fingerprint
from devlint.code_fingerprint import fingerprint
from tests.test_cli import BUGGY, write

ROOT = Path(__file__).resolve().parent.parent
RULE = Path("rules") / "cuda_call.py"
OLD = "`.cuda()` hard-codes the CUDA device"
NEW = "`.cuda()` HARD-CODES the CUDA device"  # the same size


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "devlint", tree / "devlint", ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _edit_keeping_size_and_time(path: Path) -> None:
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    assert OLD in text
    path.write_text(text.replace(OLD, NEW), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_an_edit_that_keeps_size_and_modification_time_changes_the_fingerprint(tmp_path):
    package = _copy(tmp_path) / "devlint"
    later = time.time() + 3600  # every file long settled: the stat path, no hashing
    before = fingerprint(str(package), now=later)
    assert fingerprint(str(package), now=later) == before  # stable
    _edit_keeping_size_and_time(package / RULE)
    assert fingerprint(str(package), now=later) != before  # the change time moved


def test_a_file_changed_just_now_is_hashed(tmp_path, monkeypatch):
    """A file system keeping whole seconds leaves every time unchanged by a second edit within the
    same second: a recent file counts by its bytes."""
    package = _copy(tmp_path) / "devlint"
    frozen = os.stat(package / RULE)
    real_stat = os.stat
    monkeypatch.setattr(code_fingerprint.os, "stat", lambda p: frozen if p.endswith("cuda_call.py") else real_stat(p))
    now = frozen.st_mtime + 1
    before = fingerprint(str(package), now=now)
    path = package / RULE
    path.write_text(path.read_text(encoding="utf-8").replace(OLD, NEW), encoding="utf-8")
    assert fingerprint(str(package), now=now) != before
    # and once settled, the same times give the same fingerprint, whatever the bytes
    assert fingerprint(str(package), now=now + 3600) == fingerprint(str(package), now=now + 7200)


def test_a_warm_run_after_an_edit_of_devlint_runs_the_edited_code(tmp_path):
    """End to end: an edited rule (same size, modification time restored) is not answered from the
    cache filled by the code before the edit."""
    tree = _copy(tmp_path)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write(project / "train.py", BUGGY)
    # No bytecode: Python itself would run a stale .pyc of a file whose size and time did not change.
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}

    def messages() -> list[str]:
        done = subprocess.run([sys.executable, "-m", "devlint", ".", "--output-format", "json"], cwd=project,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        return [f["message"] for f in json.loads(done.stdout)]

    assert any(OLD in m for m in messages())
    assert (project / ".devlint_cache").is_dir()
    _edit_keeping_size_and_time(tree / "devlint" / RULE)
    assert any(NEW in m for m in messages())
