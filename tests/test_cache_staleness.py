"""The result cache never serves a stale pass (issue 29, K1-K4), and its files are the user's.

- K1: a run reads each file once; the bytes hashed for the key are the bytes checked (and fixed). An
  edit made during a run and undone after it cannot leave the edited text's findings under the
  original bytes' key, and a `--fix` that races another cannot leave a wrong entry.
- K2: the key holds the file's place: byte-identical files beside different project files have
  different keys.
- K3: a project file looked for and not found, or found but unreadable (a syntax error, not UTF-8,
  over the index's size limit), or shadowed by a new package, is a dependency: creating or repairing
  it is a miss.
- K4: re-checking a dependency never hangs and never reads a device: a FIFO or a link to /dev/zero
  in its place is a change.
- The cache's files get the usual mode (not mkstemp's 0600); the cache lives in the project root.

Every test compares a cached run with a `--no-cache` run of the same tree.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.analysis import project as project_module
from devlint import runner
from devlint.cache import CACHE_DIR_NAME
from tests.test_cli import run, write

CUDA_LINE = "x = torch.zeros(3).cuda()\n"
TRAIN = "import torch\nfrom data import make_batch\n\ndef step(device):\n    batch = make_batch()\n" \
        "    batch.to(device)\n"
TENSOR_DATA = "import torch\n\ndef make_batch():\n    return torch.zeros(4, 3)\n"
MODULE_DATA = "import torch\n\ndef make_batch():\n    return torch.nn.Linear(3, 3)\n"


def codes(result) -> list[tuple[str, str]]:
    """(file name, code) of each finding of a JSON run."""
    return sorted((Path(f["path"]).as_posix(), f["code"]) for f in json.loads(result.stdout))


def cached_and_fresh(cwd: Path, *args: str) -> tuple[list, list]:
    """What a run with the cache and a run without it report on the tree as it is now, each run in
    a new project index as a new devlint process has (what is compared is the cache alone)."""
    project_module._INDEX = None
    cached = run(*args, "--output-format", "json", cwd=cwd)
    project_module._INDEX = None
    fresh = run(*args, "--output-format", "json", "--no-cache", cwd=cwd)
    assert cached.exit_code == fresh.exit_code, (cached.output, fresh.output)
    return codes(cached), codes(fresh)


@pytest.fixture()
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


# -- K1: one read per file ------------------------------------------------------------------------------
def edit_during_the_check(monkeypatch, target: Path, edited: bytes) -> None:
    """Between the read that keys `target` and its check, an editor (a formatter, git, another
    devlint) saves `edited` over it: the moment a second read of the file would see other bytes."""
    real = runner.check_file

    def check_file(path, config, **kwargs):
        if Path(path).resolve() == target.resolve():
            target.write_bytes(edited)
        return real(path, config, **kwargs)

    monkeypatch.setattr(runner, "check_file", check_file)


@pytest.mark.parametrize("workers", [False, True])
def test_an_edit_during_the_run_undone_after_it_is_not_a_stale_pass(project, monkeypatch, workers):
    target = write(project / "src" / "zz_last.py", "import torch\n" + CUDA_LINE)
    original = target.read_bytes()
    for n in range(3 if not workers else 20):
        write(project / "src" / f"f{n:02}.py", "import torch\n" + CUDA_LINE * 3)
    if workers:
        monkeypatch.setattr(runner, "MIN_FILES_FOR_WORKERS", 2)
    edit_during_the_check(monkeypatch, target, original.replace(b".cuda()", b".cpu()"))
    run("src", "-j", "2" if workers else "1", cwd=project)
    monkeypatch.undo()
    target.write_bytes(original)  # the editor's undo
    cached, fresh = cached_and_fresh(project, "src/zz_last.py")
    assert fresh == [("src/zz_last.py", "DL001")]
    assert cached == fresh


def test_a_fix_racing_another_fix_leaves_no_wrong_entry(project, monkeypatch):
    """Run A reads the file; run B fixes it; A checks. What A stores (if anything) is for the bytes
    it read. The file put back as it was is fixed again by the next `--fix`."""
    target = write(project / "train.py", "import torch\n" + CUDA_LINE)
    original = target.read_bytes()
    b_fixed = run("train.py", "--fix", "--no-cache", cwd=project)
    assert b_fixed.exit_code == 0
    fixed_by_b = target.read_bytes()
    assert fixed_by_b != original
    target.write_bytes(original)
    edit_during_the_check(monkeypatch, target, fixed_by_b)  # B writes between A's read and A's check
    run("train.py", "--fix", cwd=project)
    monkeypatch.undo()
    assert target.read_bytes() == fixed_by_b  # A did not write over B's fix
    target.write_bytes(original)  # `git checkout train.py`
    result = run("train.py", "--fix", cwd=project)
    assert result.exit_code == 0 and target.read_bytes() == fixed_by_b, result.output


def test_a_fixed_file_put_back_is_fixed_again(project):
    target = write(project / "train.py", "import torch\n" + CUDA_LINE)
    original = target.read_bytes()
    run("train.py", "--fix", cwd=project)
    fixed = target.read_bytes()
    assert fixed != original
    target.write_bytes(original)
    run("train.py", "--fix", cwd=project)
    assert target.read_bytes() == fixed
    assert cached_and_fresh(project, "train.py")[0] == []


# -- K2: the file's place is in the key --------------------------------------------------------------
def test_identical_files_beside_different_project_files_are_told_apart(project):
    for folder, data in (("a", TENSOR_DATA), ("b", MODULE_DATA)):
        write(project / folder / "train.py", TRAIN)
        write(project / folder / "data.py", data)
    for _ in range(2):  # the first run fills the cache, the second reads it
        cached, fresh = cached_and_fresh(project, ".")
        assert fresh == [("a/train.py", "DL003")]
        assert cached == fresh


# -- K3: what was looked for and not found, or not read -------------------------------------------------
UNREADABLE = {
    "missing": None,
    "syntax error": TENSOR_DATA.replace("def make_batch():", "def make_batch(:").encode(),
    "not UTF-8": b"NAME = \"caf\xe9\"\n" + TENSOR_DATA.encode(),
    "over the index's size limit": TENSOR_DATA.encode() + b"#" * (4 * 1024 * 1024) + b"\n",
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_creating_or_repairing_a_dependency_is_a_miss(project, case):
    write(project / "train.py", TRAIN)
    data = project / "data.py"
    if UNREADABLE[case] is not None:
        data.write_bytes(UNREADABLE[case])
    assert cached_and_fresh(project, "train.py") == ([], [])
    data.write_text(TENSOR_DATA)
    cached, fresh = cached_and_fresh(project, "train.py")
    assert fresh == [("train.py", "DL003")]
    assert cached == fresh


def test_a_new_package_that_shadows_a_module_is_a_miss(project):
    write(project / "train.py", TRAIN)
    write(project / "data.py", TENSOR_DATA)
    assert cached_and_fresh(project, "train.py") == ([("train.py", "DL003")],) * 2
    write(project / "data" / "__init__.py", MODULE_DATA)  # Python imports the package now
    cached, fresh = cached_and_fresh(project, "train.py")
    assert fresh == []
    assert cached == fresh


def test_a_module_created_earlier_in_the_search_order_is_a_miss(project):
    """`import data` from scripts/train.py finds src/data.py (the project's src/) until a data.py
    appears in scripts/, which Python looks in first."""
    write(project / "scripts" / "train.py", TRAIN)
    write(project / "src" / "data.py", MODULE_DATA)
    assert cached_and_fresh(project, "scripts/train.py") == ([], [])
    write(project / "scripts" / "data.py", TENSOR_DATA)
    cached, fresh = cached_and_fresh(project, "scripts/train.py")
    assert fresh == [("scripts/train.py", "DL003")]
    assert cached == fresh


def test_a_new_project_root_marker_is_a_miss(project):
    """`import data` from pkg/train.py is looked for in the project root: a new pyproject.toml in a
    folder between them moves the root."""
    inner = project / "inner"
    write(inner / "pkg" / "train.py", TRAIN)
    write(project / "data.py", MODULE_DATA)
    write(inner / "data.py", TENSOR_DATA)
    # (one cache folder: by default the new pyproject.toml would move the cache too)
    args = ("inner/pkg/train.py", "--cache-dir", str(project / "cache"))
    assert cached_and_fresh(project, *args) == ([], [])
    write(inner / "pyproject.toml", "")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == [("inner/pkg/train.py", "DL003")]
    assert cached == fresh


# -- K4: re-checks read only regular files, bounded ------------------------------------------------------
def devlint_subprocess(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # A memory bound: reading /dev/zero whole fails fast instead of filling the machine.
    def bounded() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60, preexec_fn=bounded)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("replacement", ["fifo", "link to /dev/zero"])
def test_a_dependency_replaced_by_a_fifo_or_a_device_is_a_change(project, replacement):
    write(project / "train.py", TRAIN)
    data = write(project / "data.py", TENSOR_DATA)
    first = devlint_subprocess(project, "train.py")
    assert first.returncode == 1 and "DL003" in first.stdout
    data.unlink()
    if replacement == "fifo":
        os.mkfifo(data)
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero here")
        os.symlink("/dev/zero", data)
    try:
        second = devlint_subprocess(project, "train.py")
    except subprocess.TimeoutExpired:
        pytest.fail("devlint hung on a FIFO in a dependency's place")
    assert "Traceback" not in second.stderr and "MemoryError" not in second.stderr, second.stderr
    assert second.returncode == 0 and "All checks passed!" in second.stdout, second.stdout + second.stderr


# -- the cache's files ------------------------------------------------------------------------------------
def test_cache_files_get_the_usual_mode(project):
    write(project / "a.py", "import torch\n" + CUDA_LINE)
    previous = os.umask(0o022)
    try:
        run("a.py", cwd=project)
    finally:
        os.umask(previous)
    cache = project / CACHE_DIR_NAME
    results = list(cache.glob("results-*.json"))
    assert results
    for path in [*results, cache / "CACHEDIR.TAG", cache / ".gitignore"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


@pytest.mark.parametrize("marker", [".git", "pyproject.toml"])
def test_the_cache_lives_in_the_project_root_not_the_current_folder(tmp_path, marker):
    root = tmp_path / "project"
    write(root / "src" / "a.py", "import torch\n" + CUDA_LINE)
    (root / ".git").mkdir() if marker == ".git" else write(root / marker, "[project]\nname = 'p'\n")
    run(".", cwd=root / "src")
    assert (root / CACHE_DIR_NAME / "CACHEDIR.TAG").is_file()
    assert not (root / "src" / CACHE_DIR_NAME).exists()
    assert run("clean", cwd=root / "src").exit_code == 0
    assert not (root / CACHE_DIR_NAME).exists()


def test_a_second_run_in_the_same_process_sees_the_disk_as_it_is(project):
    """Which files exist is remembered for one run: a process that runs devlint twice (a test, an
    editor integration) does not answer the second run from the first run's disk."""
    write(project / "train.py", TRAIN)
    project_module._INDEX = None
    assert codes(run("train.py", "--no-cache", "--output-format", "json", cwd=project)) == []
    write(project / "data.py", TENSOR_DATA)
    second = run("train.py", "--no-cache", "--output-format", "json", cwd=project)
    assert codes(second) == [("train.py", "DL003")]
