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


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Train"]},
        {"cell_type": "code", "execution_count": 1, "id": "c", "metadata": {}, "outputs": [],
         "source": ["import torch\n", "x = torch.zeros(1).cuda()"]},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                 "language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _stage_notebook(project: Path) -> None:
    import json

    (project / "demo.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    _git(project, "add", "demo.ipynb")


def test_check_hook_blocks_a_staged_notebook(project, env):
    # types_or: [python, pyi, jupyter]: without jupyter a notebook was committed without a word.
    _stage_notebook(project)
    result = _try_repo(project, env, "devlint")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "demo.ipynb:cell 2:2:20: DL001" in result.stdout


def test_fix_hook_rewrites_a_staged_notebook_and_stops_the_commit(project, env):
    _stage_notebook(project)
    result = _try_repo(project, env, "devlint-fix")
    assert result.returncode == 1, result.stdout + result.stderr
    assert ".to(device)" in (project / "demo.ipynb").read_text()
    assert ".cuda()" not in (project / "demo.ipynb").read_text().split('"source"', 2)[2]


def test_a_staged_file_under_extend_exclude_passes(project, env):
    # pre-commit names each staged file; the hook's --force-exclude applies [tool.devlint] excludes to them.
    (project / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["third_party/"]\n')
    (project / "third_party").mkdir()
    (project / "third_party" / "vendored.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    _git(project, "add", "pyproject.toml", "third_party/vendored.py")
    result = _try_repo(project, env, "devlint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "DL001" not in result.stdout
    for hook in ("devlint", "devlint-fix"):  # the named file is still excluded alongside a checked one
        (project / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
        _git(project, "add", "train.py")
        mixed = _try_repo(project, env, hook)
        assert mixed.returncode == 1, mixed.stdout + mixed.stderr
        assert "third_party" not in mixed.stdout
    assert ".cuda()" in (project / "third_party" / "vendored.py").read_text()
