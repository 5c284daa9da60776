"""Issue 13, "never lose a user's byte": what --fix writes, where, and what it refuses to write; which files a
walk reaches; unreadable paths; Ctrl-C."""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint import engine, source
from devlint.cli import main
from devlint.config import Config
from devlint.files import discover
from devlint.runner import check_file

BUGGY = "import torch\nx = torch.zeros(3).cuda()\n"
FIXED_MARK = ".to(device)"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOBODY = 65534


def fix(*args: str):
    return CliRunner().invoke(main, ["--no-cache", "--fix", *args], catch_exceptions=False)


def write(path: Path, text: str = BUGGY) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- 1. symbolic links: the target is fixed, the link stays a link ------------------------------------
@pytest.mark.parametrize("named", ["folder", "link"])
def test_fix_through_a_symlink_fixes_the_target_once_and_keeps_the_link(tmp_path, named):
    target = write(tmp_path / "target.py")
    alias = tmp_path / "alias.py"
    alias.symlink_to("target.py")  # sorts first: the walk reaches the file through the link
    result = fix(str(tmp_path) if named == "folder" else str(alias))
    assert result.exit_code == 0, result.output
    assert alias.is_symlink() and os.readlink(alias) == "target.py"
    assert FIXED_MARK in target.read_text()
    assert "(1 fixed" in result.output  # one real file, fixed once


# -- 2. hard links, owner, read-only ------------------------------------------------------------------
def test_fix_keeps_a_hard_link(tmp_path):
    path = write(tmp_path / "src" / "a.py")
    backup = tmp_path / "elsewhere" / "a.py.orig"
    backup.parent.mkdir()
    os.link(path, backup)
    assert fix(str(tmp_path / "src")).exit_code == 0
    assert os.path.samefile(path, backup)  # still one file under two names...
    assert FIXED_MARK in backup.read_text()  # ...so both show the fix
    assert sorted(os.listdir(tmp_path / "src")) == ["a.py"]


@pytest.mark.skipif(not IS_ROOT, reason="only root can give a file to another user")
def test_fix_run_as_root_keeps_the_owner_and_the_mode(tmp_path):
    path = write(tmp_path / "a.py")
    os.chown(path, NOBODY, NOBODY)
    path.chmod(0o640)
    assert fix(str(path)).exit_code == 0
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (NOBODY, NOBODY, 0o640)
    assert FIXED_MARK in path.read_text()


def test_read_only_file_is_refused_even_for_root(tmp_path):
    locked = write(tmp_path / "a.py")
    other = write(tmp_path / "b.py")
    locked.chmod(0o444)
    result = fix(str(locked), str(other))
    assert result.exit_code == 2
    assert f"{locked}: error: read-only file; fixes not written" in result.stderr
    assert locked.read_text() == BUGGY and stat.S_IMODE(locked.stat().st_mode) == 0o444
    assert FIXED_MARK in other.read_text()
    assert "(1 fixed, 1 remaining)" in result.output  # the refused fix is not counted


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C as in a terminal: a test process may have inherited it ignored (once, under a loaded
    CI machine, a pytest worker had), and a child inherits an ignored SIGINT and never sees Ctrl-C."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # for a child, before it starts Python
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_an_in_place_write_waits_for_the_write_to_end(tmp_path, monkeypatch, ctrl_c_raises):
    path = write(tmp_path / "a.py", BUGGY + "# a long tail " + "x" * 500 + "\n")
    os.link(path, tmp_path / "twin.txt")  # written in place: truncating comes after writing

    class CtrlCBeforeTruncate:
        def __init__(self, handle):
            self.handle = handle

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.handle.__exit__(*exc)

        def truncate(self, *args):
            os.kill(os.getpid(), signal.SIGINT)
            return self.handle.truncate(*args)

    monkeypatch.setattr(source, "open", lambda *args: CtrlCBeforeTruncate(open(*args)), raising=False)
    with pytest.raises(KeyboardInterrupt):
        source.write_fixed(str(path), b"short\n")
    assert path.read_bytes() == b"short\n"  # not b"short\n" followed by the old file's tail


# -- 3. an edit saved while devlint checks the file ---------------------------------------------------
@pytest.mark.parametrize("links", [1, 2], ids=["replaced", "in-place"])
def test_file_edited_during_the_check_is_not_overwritten(tmp_path, monkeypatch, links):
    path = write(tmp_path / "a.py")
    if links == 2:
        os.link(path, tmp_path / "twin.txt")
    edited = BUGGY + "y = 1  # saved by the editor meanwhile\n"
    real_check = engine.check_source

    def check_while_the_user_saves(*args):
        result = real_check(*args)
        path.write_text(edited)
        return result

    monkeypatch.setattr(engine, "check_source", check_while_the_user_saves)
    result = check_file(str(path), Config(fix=True), write=True)
    assert path.read_text() == edited
    assert result.error is not None
    assert result.error.message == "changed on disk while devlint was checking it; not written"
    assert result.fixed_source is None and result.applied == [] and len(result.findings) == 1


# -- 4. a failed write is not a fix -------------------------------------------------------------------
def test_a_write_that_fails_is_not_counted_as_fixed(tmp_path, monkeypatch):
    path = write(tmp_path / "a.py")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    result = check_file(str(path), Config(fix=True), write=True)
    assert result.error.message == "cannot write fixes: No space left on device"
    assert result.fixed_source is None and result.applied == []
    assert [f.code for f in result.findings] == ["DL001"]  # what the file on disk still has
    shown = fix(str(path))
    assert shown.exit_code == 2
    assert "fixed" not in shown.output and "Found 1 error." in shown.output
    assert path.read_text() == BUGGY and os.listdir(tmp_path) == ["a.py"]


# -- 5. temporary files: named by pid, stale ones removed ---------------------------------------------
def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_temporary_files_carry_the_pid_and_a_later_run_removes_stale_ones(tmp_path, monkeypatch):
    path = write(tmp_path / "a.py")
    dead = _dead_pid()
    stale = tmp_path / f".devlint-{dead}-abc123_x.tmp"
    stale.write_bytes(b"")
    kept = [tmp_path / f".devlint-{os.getpid()}-live.tmp",  # a live devlint's (this process stands in)
            tmp_path / ".devlint-abc.tmp", tmp_path / f"devlint-{dead}-x.tmp", tmp_path / f".devlint-{dead}-x.py"]
    for each in kept:
        each.write_bytes(b"user data")
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append(os.path.basename(src))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    assert fix(str(path)).exit_code == 0
    assert len(seen) == 1 and re.fullmatch(rf"\.devlint-{os.getpid()}-[a-z0-9_]+\.tmp", seen[0]), seen
    assert not stale.exists()
    assert all(each.read_bytes() == b"user data" for each in kept)


# -- 6. discovery: linked folders outside the project ------------------------------------------------
def test_a_linked_folder_outside_the_root_is_not_walked_unless_asked(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    write(project / "a.py")
    write(outside / "lib.py")
    (project / "vendor").symlink_to(outside, target_is_directory=True)
    (project / "one.py").symlink_to(outside / "lib.py")
    assert discover([str(project)], root=str(project)).files == [str(project / "a.py")]
    followed = discover([str(project)], root=str(project), follow_links=True).files
    assert followed == [str(project / "a.py"), str(project / "one.py")]  # lib.py once, whatever the name
    # named on the command line: followed, the user asked
    assert discover([str(project / "vendor")], root=str(project)).files == [str(project / "vendor" / "lib.py")]


def test_fix_on_a_project_does_not_rewrite_files_behind_a_link_out_of_it(tmp_path, monkeypatch):
    project, outside = tmp_path / "project", tmp_path / "outside"
    write(project / "a.py")
    library = write(outside / "lib.py")
    (project / "vendor").symlink_to(outside, target_is_directory=True)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["--no-cache", "--fix", "--isolated", "."], catch_exceptions=False)
    assert result.exit_code == 0 and "(1 fixed" in result.output
    assert library.read_text() == BUGGY


def test_a_linked_folder_inside_the_root_is_walked_and_each_file_checked_once(tmp_path):
    write(tmp_path / "pkg" / "a.py")
    (tmp_path / "same").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "pkg" / "b.py").symlink_to(tmp_path / "pkg" / "a.py")
    assert discover([str(tmp_path)], root=str(tmp_path)).files == [str(tmp_path / "pkg" / "a.py")]


# -- 7. unreadable paths (as a user who cannot read them) --------------------------------------------
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _drop_root_file_powers() -> None:
    """In the child, before exec: root without the capabilities that bypass file permissions reads and
    lists only what the mode bits allow it (as the files' owner), like any user."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@functools.lru_cache(maxsize=None)
def _unprivileged() -> dict | None:
    """subprocess options running a command without root's power over file permissions, or None.

    As user nobody when nobody can start this interpreter (it may live under /root, mode 0700); else
    as root with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped, which reads files by their mode
    bits as nobody would."""
    if not IS_ROOT:
        return {}
    probe_dir = tempfile.mkdtemp(dir="/tmp")
    try:
        os.chmod(probe_dir, 0o755)
        locked = os.path.join(probe_dir, "locked")
        Path(locked).write_text("")
        os.chmod(locked, 0)
        probe = [sys.executable, "-c", f"import devlint; open({locked!r})"]
        for options in ({"user": NOBODY, "group": NOBODY, "extra_groups": []},
                        {"preexec_fn": _drop_root_file_powers}):
            try:
                done = subprocess.run(probe, capture_output=True, text=True, cwd=probe_dir, **options)
            except (OSError, subprocess.SubprocessError):
                continue
            if "PermissionError" in done.stderr:
                return options
        return None
    finally:
        shutil.rmtree(probe_dir)


@pytest.fixture
def unprivileged_dir():
    if _unprivileged() is None:
        pytest.skip("cannot run devlint without root's power over file permissions")
    folder = Path(tempfile.mkdtemp(dir="/tmp"))
    folder.chmod(0o755)  # nobody reaches it (pytest's tmp_path is under a 0700 folder)
    write(folder / "good.py").chmod(0o644)
    yield folder
    for each in folder.rglob("*"):
        if each.is_dir() and not each.is_symlink():
            each.chmod(0o755)
    shutil.rmtree(folder)


def devlint_unprivileged(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "devlint", "--no-cache", "--isolated", *args], cwd=folder,
                          capture_output=True, text=True, timeout=300, **_unprivileged())


def test_a_file_in_a_folder_without_search_permission_says_permission_denied(unprivileged_dir):
    write(unprivileged_dir / "locked" / "a.py").chmod(0o644)
    (unprivileged_dir / "locked").chmod(0o644)  # listable, not searchable
    proc = devlint_unprivileged(unprivileged_dir, "locked/a.py", "good.py")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["locked/a.py: error: cannot read: Permission denied"]
    assert "good.py:2:20: DL001" in proc.stdout


def test_an_unreadable_folder_met_in_a_walk_is_reported_and_the_rest_checked(unprivileged_dir):
    write(unprivileged_dir / "sub" / "b.py").chmod(0o644)
    (unprivileged_dir / "sub").chmod(0o311)  # searchable, not listable
    proc = devlint_unprivileged(unprivileged_dir, ".")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["sub: error: cannot read: Permission denied"]
    assert "good.py:2:20: DL001" in proc.stdout


def test_unreadable_paths_named_on_the_command_line_are_reported_and_the_rest_checked(unprivileged_dir):
    write(unprivileged_dir / "secret.py").chmod(0)
    write(unprivileged_dir / "closed" / "c.py").chmod(0o644)
    (unprivileged_dir / "closed").chmod(0o311)
    proc = devlint_unprivileged(unprivileged_dir, "secret.py", "closed", "good.py")
    assert proc.returncode == 2
    assert sorted(proc.stderr.splitlines()) == ["closed: error: cannot read: Permission denied",
                                                "secret.py: error: cannot read: Permission denied"]
    assert "good.py:2:20: DL001" in proc.stdout


def test_a_writable_file_in_a_read_only_folder_is_fixed_in_place(unprivileged_dir):
    # The atomic replace needs a temporary file in the folder: the fix was refused
    # ("cannot write fixes: Permission denied"); ruff writes such a file, in place.
    folder = unprivileged_dir / "shared"
    path = write(folder / "a.py")
    path.chmod(0o666)  # anyone may write the file, not the folder (its owner, root, may)
    inode = path.stat().st_ino
    folder.chmod(0o555)
    proc = devlint_unprivileged(unprivileged_dir, "--fix", "shared/a.py")
    assert proc.returncode == 0, proc.stderr
    assert FIXED_MARK in path.read_text()
    assert path.stat().st_ino == inode and sorted(os.listdir(folder)) == ["a.py"]


def test_where_no_temporary_file_can_be_made_the_fix_is_written_in_place(tmp_path, monkeypatch):
    # (the same, where this process may create files anywhere: root)
    path = write(tmp_path / "a.py")
    inode = path.stat().st_ino

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refused)  # (devlint.source imports it when writing)
    assert fix(str(path)).exit_code == 0
    assert FIXED_MARK in path.read_text() and path.stat().st_ino == inode


# -- 8. Ctrl-C during a parallel --fix ---------------------------------------------------------------
SLOW = BUGGY + "".join(f"y{n} = torch.zeros({n}).cuda()  # " + "x" * 40 + "\n" for n in range(20))
FILES = 200


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
def test_ctrl_c_stops_a_parallel_fix_at_once_and_leaves_every_file_whole(tmp_path, ctrl_c_raises):
    paths = [write(tmp_path / f"f{i:03}.py", SLOW) for i in range(FILES)]
    # The real command line: its exit code and message are what the user sees.
    proc = subprocess.Popen([sys.executable, "-m", "devlint", "--fix", "--no-cache", "-j", "2", *map(str, paths)],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_raises)
    deadline = time.monotonic() + 120
    while not any(FIXED_MARK in p.read_text() for p in paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    interrupted = time.monotonic()
    fixed_then = sum(FIXED_MARK in p.read_text() for p in paths)
    assert proc.wait(timeout=120) == 130
    stopped_after = time.monotonic() - interrupted
    fixed = sum(FIXED_MARK in p.read_text() for p in paths)
    assert "devlint: interrupted" in proc.stderr.read()
    assert stopped_after < 5, f"{stopped_after:.1f}s to stop"
    assert fixed - fixed_then <= 4 and fixed < FILES, (fixed_then, fixed)  # the files in hand at most
    assert all(p.read_text() == SLOW or FIXED_MARK in p.read_text() for p in paths)
    time.sleep(0.5)  # the workers exit with devlint
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in paths)  # no temporary file left
