"""A run with workers imports the checker (LibCST and the rules) once, in devlint's own process
before it forks them, when they will likely need it; never when its files do not mention torch
(issue 28: each worker importing it was about 0.25 s of CPU per core)."""

from __future__ import annotations

import pytest

from devlint.cores import usable_cores
from devlint.runner import _checker_likely_needed
from tests.test_cli import BUGGY, write
from tests.test_warm_start import _imports_libcst, devlint_in_subprocess


def test_the_guess():
    assert not _checker_likely_needed(None, 2)  # --no-cache: the parent did not read the files
    assert not _checker_likely_needed([None] * 20, 2)
    assert not _checker_likely_needed([b"import torch\nx = torch.relu(y)\n"] * 20, 2)
    assert not _checker_likely_needed([b"x.cuda()\n"] + [b"x = 1\n"] * 19, 2)
    assert _checker_likely_needed([b"x.cuda()\n", b"torch.load(p)\n"] + [b"x = 1\n"] * 18, 2)


@pytest.mark.skipif(usable_cores() < 2, reason="-j 2 needs two cores")
@pytest.mark.parametrize("text, imported", [(BUGGY, True), ("x = 1\n", False)])
def test_the_parent_imports_the_checker_only_for_files_that_need_it(tmp_path, text, imported):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    for n in range(20):
        write(project / f"m{n:02}.py", text)
    probe, done = devlint_in_subprocess(project, "-j", "2", ".")
    assert probe["code"] == (1 if imported else 0), done.stderr
    assert _imports_libcst(probe["modules"]) == imported
