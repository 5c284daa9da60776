"""The pre-commit hooks as a user runs them: `pre-commit try-repo` against a temporary git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")
    return {**os.environ, "PRE_COMMIT_HOME": str(home), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


@pytest.fixture()
def project(tmp_path):
    _git(tmp_path, "init", "-q")
    return tmp_path


def _try_repo(project: Path, env: dict, hook: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PRE_COMMIT, "try-repo", str(ROOT), hook, "--verbose"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=900)


def test_check_hook_fails_on_staged_bug_and_passes_when_clean(project, env):
    (project / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    _git(project, "add", "train.py")
    failing = _try_repo(project, env, "devlint")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "train.py:2:20: DL001" in failing.stdout

    (project / "train.py").write_text("import torch\nx = torch.zeros(1)\n")
    _git(project, "add", "train.py")
    passing = _try_repo(project, env, "devlint")
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_hooks_skip_when_no_python_files_are_staged(project, env):
    (project / "notes.md").write_text("x.cuda()\n")
    _git(project, "add", "notes.md")
    result = _try_repo(project, env, "devlint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no files to check" in result.stdout.lower()


def test_fix_hook_rewrites_and_stops_the_commit(project, env):
    (project / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    _git(project, "add", "train.py")
    result = _try_repo(project, env, "devlint-fix")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "x = torch.zeros(1).to(device)" in (project / "train.py").read_text()
