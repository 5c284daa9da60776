"""`devlint --fix` killed (SIGKILL) at random moments: every file is its original bytes or its fully fixed
bytes, never a partial write (temporary file in the same folder + os.replace)."""

from __future__ import annotations

import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

TEMPLATE = """import torch
import torch.nn as nn

model_{i} = nn.Linear({i} + 1, 2).cuda()
state_{i} = torch.load("ckpt_{i}.pt")
model_{i}.load_state_dict(state_{i})
x_{i} = torch.zeros({i} + 1)
x_{i}.to("cpu")
""" + "\n".join(f"# filler line {n} " + "x" * 60 for n in range(200)) + "\n"

FILES = 300
TEMPORARY = re.compile(r"\.devlint-[0-9]+-[a-z0-9_]+\.tmp")


def _devlint(folder: Path) -> subprocess.Popen:
    # --unsafe-fixes: the discarded move's fix is unsafe (issue 15); every file then has several fixes
    return subprocess.Popen([sys.executable, "-m", "devlint", "--fix", "--unsafe-fixes", "--no-cache", "-j", "2",
                             str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_sigkill_never_leaves_a_partial_file(tmp_path):
    originals = tmp_path / "originals"
    originals.mkdir()
    for i in range(FILES):
        (originals / f"f{i:03}.py").write_text(TEMPLATE.format(i=i))
    expected = tmp_path / "expected"
    shutil.copytree(originals, expected)
    started = time.monotonic()
    assert _devlint(expected).wait(timeout=600) == 0
    full_run = time.monotonic() - started
    fixed = {p.name: p.read_bytes() for p in expected.glob("*.py")}
    before = {p.name: p.read_bytes() for p in originals.glob("*.py")}
    assert all(fixed[name] != before[name] for name in before)

    rng = random.Random(1234)
    trials, partial_states = 6, 0
    for trial in range(trials):
        work = tmp_path / f"trial{trial}"
        shutil.copytree(originals, work)
        process = _devlint(work)
        time.sleep(rng.uniform(0.2, max(0.3, full_run * 0.9)))
        process.send_signal(signal.SIGKILL)
        process.wait()
        states = []
        for path in work.glob("*.py"):
            data = path.read_bytes()
            assert data in (before[path.name], fixed[path.name]), f"{path.name} is partial after SIGKILL"
            states.append(data == fixed[path.name])
        assert len(states) == FILES
        partial_states += 0 < sum(states) < FILES
        # A kill may leave a temporary file behind (no cleanup runs), never a .py one, and named with the
        # writing process's pid so that a later run can tell it is stale.
        assert all(TEMPORARY.fullmatch(p.name) for p in work.iterdir() if p.suffix != ".py")
    assert partial_states >= 1, "no kill landed in the middle of a run: the test proved nothing"
    # ... and the killed run's worker processes do not linger, waiting for work that never comes
    deadline = time.monotonic() + 15
    while _processes_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_mentioning(str(tmp_path)) == []
    # A later --fix removes the temporary files the killed run left where it writes.
    left = [work for work in sorted(tmp_path.glob("trial*")) if any(p.suffix == ".tmp" for p in work.iterdir())]
    for work in left[:1]:
        assert _devlint(work).wait(timeout=600) == 0
        assert sorted(p.name for p in work.iterdir()) == sorted(before)


def _processes_mentioning(text: str) -> list[int]:
    """Pids whose command line mentions `text` (Linux /proc; elsewhere nothing is seen)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*") if Path("/proc").is_dir() else []:
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found
