"""Issue 29 M1: devlint's workers end with devlint. After a SIGKILL (a CI timeout, an impatient hook)
they went on fixing their queued files for up to 2.4 s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc to find the workers")

BUGGY = "import torch\nx = torch.zeros(3).cuda()\n"
FILES = 600


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie nobody reaps has ended all the same


def test_workers_write_nothing_once_devlint_is_killed(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    paths = [src / f"m{i:04}.py" for i in range(FILES)]
    for path in paths:
        path.write_text(BUGGY)
    env = {**os.environ, "CI": "1"}
    process = subprocess.Popen([sys.executable, "-m", "devlint", "--no-cache", "--fix", "-j", "2", str(src)],
                               cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while BUGGY == paths[0].read_text():  # the first worker's first file is fixed: the workers run
            assert process.poll() is None and time.monotonic() < deadline, "devlint ended before fixing"
            time.sleep(0.01)
        workers = _children(process.pid)
        assert workers, "no worker processes"
        process.kill()
        process.wait()
        killed = time.time()  # devlint is gone (reaped): from now on nothing may start a write
    finally:
        if process.poll() is None:
            process.kill()
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(_alive(w) for w in workers), "workers outlived devlint"
    # A write in hand when devlint died ends (never half done); none starts later. (Before: hundreds.)
    late = [p.name for p in paths if p.stat().st_mtime > killed + 0.05]
    assert late == []
    fixed = sum(p.read_text() != BUGGY for p in paths)
    assert 0 < fixed < FILES
    assert not [name for name in os.listdir(src) if name.endswith(".tmp")]  # no temporary file left
