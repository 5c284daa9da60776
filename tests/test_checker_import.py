"""A run with workers imports the checker (LibCST and the rules) once, in devlint's own process
before it forks them, when they will likely need it; never when its files do not mention torch
(issue 28: each worker importing it was about 0.25 s of CPU per core)."""

from __future__ import annotations

import os

import pytest

from devlint import runner
from devlint.cores import usable_cores
from devlint.runner import _checker_likely_needed
from tests.test_cli import BUGGY, write
from tests.test_warm_start import _imports_libcst, devlint_in_subprocess


def test_the_guess(tmp_path):
    assert not _checker_likely_needed(None, 2)  # (no bytes and no paths)
    assert not _checker_likely_needed([None] * 20, 2)
    assert not _checker_likely_needed([b"import torch\nx = torch.relu(y)\n"] * 20, 2)
    assert not _checker_likely_needed([b"x.cuda()\n"] + [b"x = 1\n"] * 19, 2)
    assert _checker_likely_needed([b"x.cuda()\n", b"torch.load(p)\n"] + [b"x = 1\n"] * 18, 2)


def test_without_the_bytes_the_guess_reads_the_start_of_the_files(tmp_path):
    # --no-cache: the parent did not read the files; it reads the start of a bounded number of them
    paths = []
    for n, text in enumerate([b"x = 1\n"] * 18 + [b"x.cuda()\n", b"torch.load(p)\n"]):
        paths.append(str(tmp_path / f"m{n:02}.py"))
        (tmp_path / f"m{n:02}.py").write_bytes(text)
    assert _checker_likely_needed(None, 2, paths)
    assert not _checker_likely_needed(None, 3, paths)
    assert not _checker_likely_needed(None, 2, paths[:19])
    assert not _checker_likely_needed(None, 1, [str(tmp_path / "missing.py")])
    late = [str(tmp_path / "m00.py")] * runner.SNIFFED_FILES + paths[18:]
    assert not _checker_likely_needed(None, 2, late)  # (past the files it reads)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_the_guess_never_waits_on_a_fifo(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)  # opened for reading without a writer, a plain open() would block for ever
    (tmp_path / "a.py").write_bytes(b"x.cuda()\n")
    (tmp_path / "b.py").write_bytes(b"torch.load(p)\n")
    assert _checker_likely_needed(None, 2, [str(fifo), str(tmp_path / "a.py"), str(tmp_path / "b.py")])


@pytest.mark.skipif(usable_cores() < 2, reason="-j 2 needs two cores")
@pytest.mark.parametrize("cache", [[], ["--no-cache"]])
@pytest.mark.parametrize("text, imported", [(BUGGY, True), ("x = 1\n", False)])
def test_the_parent_imports_the_checker_only_for_files_that_need_it(tmp_path, text, imported, cache):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    for n in range(20):
        write(project / f"m{n:02}.py", text)
    probe, done = devlint_in_subprocess(project, *cache, "-j", "2", ".")
    assert probe["code"] == (1 if imported else 0), done.stderr
    assert _imports_libcst(probe["modules"]) == imported
