"""Hostile input through the real CLI: one clear line naming the file and the reason, exit 2, the other
files still checked, nothing written, never a traceback or a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BUGGY = "import torch\nx = torch.zeros(3).cuda()\n"


def devlint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "devlint", "--no-cache", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


CASES = {
    "syntax_error.py": (b"def f(:\n    pass\n", "syntax_error.py:1:7: error: SyntaxError"),
    "invalid_utf8.py": (b"x = '\xff\xfe'\n", "invalid_utf8.py: error: cannot decode as utf-8"),
    "unknown_encoding.py": (b"# -*- coding: foobar -*-\nx = 1\n", "unknown_encoding.py: error: unknown encoding"),
    "utf16.py": ("x = 1\n".encode("utf-16"), "utf16.py: error: UTF-16 source is not supported"),
    "nul_bytes.py": (b"x = 1\0\n", "nul_bytes.py: error: source contains NUL bytes"),
    "nested_brackets.py": (("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n").encode(),
                           "nested_brackets.py: error: too deeply nested"),
    "nested_lists.py": (("x = " + "[" * 5000 + "]" * 5000 + "\n").encode(), "nested_lists.py: error: too deeply nested"),
    "long_chain.py": (("x = " + "+".join(["1"] * 50000) + "\n").encode(), "long_chain.py: error: too deeply nested"),
    "python2.py": (b'print "hello"\n', "python2.py:1:1: error: SyntaxError"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("fix", [False, True], ids=["check", "fix"])
def test_bad_file(tmp_path, name, fix):
    data, expected = CASES[name]
    bad = tmp_path / name
    bad.write_bytes(data)
    good = tmp_path / "good.py"
    good.write_text(BUGGY)
    proc = devlint(name, "good.py", *(["--fix"] if fix else []), cwd=tmp_path)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line]
    assert len(errors) == 1 and errors[0].startswith(expected), proc.stderr
    assert "Traceback" not in proc.stderr
    assert bad.read_bytes() == data
    if fix:
        assert ".to(device)" in good.read_text()
    else:
        assert "good.py:2:20: DL001" in proc.stdout


def _check_one(tmp_path: Path, target: str, expected: str) -> None:
    (tmp_path / "good.py").write_text(BUGGY)
    proc = devlint(target, "good.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert expected in proc.stderr, proc.stderr
    assert "good.py:2:20: DL001" in proc.stdout and "Traceback" not in proc.stderr


def test_path_that_does_not_exist(tmp_path):
    _check_one(tmp_path, "missing.py", "missing.py: error: no such file or directory")


def test_dangling_symlink(tmp_path):
    os.symlink(tmp_path / "nowhere.py", tmp_path / "dangling.py")
    _check_one(tmp_path, "dangling.py", "dangling.py: error: cannot read: No such file or directory")


def test_fifo_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    _check_one(tmp_path, "pipe.py", "pipe.py: error: not a regular file")
    walked = devlint(".", cwd=tmp_path)  # inside a walked folder too: never blocks on it
    assert "pipe.py: error: not a regular file" in walked.stderr


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_file_without_read_permission(tmp_path):
    locked = tmp_path / "locked.py"
    locked.write_text(BUGGY)
    locked.chmod(0)
    _check_one(tmp_path, "locked.py", "locked.py: error: cannot read: Permission denied")


def test_symlink_loop_is_walked_once(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(BUGGY)
    os.symlink("..", tmp_path / "pkg" / "up")
    proc = devlint(".", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.count("DL001") == 1


def test_directory_named_like_a_python_file(tmp_path):
    (tmp_path / "x.py").mkdir()
    (tmp_path / "x.py" / "inner.py").write_text(BUGGY)
    proc = devlint("x.py", cwd=tmp_path)
    assert proc.returncode == 1 and "inner.py:2:20: DL001" in proc.stdout  # a folder is walked


def test_empty_file(tmp_path):
    (tmp_path / "empty.py").write_text("")
    assert devlint("empty.py", cwd=tmp_path).returncode == 0


def test_huge_file_is_skipped_with_a_notice_and_a_smaller_limit_is_configurable(tmp_path):
    big = tmp_path / "big.py"
    big.write_text("import torch\n" + "x = torch.zeros(3)\n" * 1_200_000 + "y = x.cuda()\n")  # about 23 MB
    proc = devlint("big.py", cwd=tmp_path)
    assert proc.returncode == 0 and "big.py: warning: skipped" in proc.stderr and "--max-file-size" in proc.stderr
    small = tmp_path / "small.py"
    small.write_text(BUGGY)
    limited = devlint("small.py", "--max-file-size", "10", cwd=tmp_path)
    assert limited.returncode == 0 and "small.py: warning: skipped" in limited.stderr
