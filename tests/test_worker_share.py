"""Workers of one run share what each would compute again (issue 28): a project file's call summary
is computed by one worker and loaded by the others; the shared folder is private and removed after
the run; anything unreadable in it is computed again."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from devlint import worker_share
from devlint.analysis import project_calls
from tests.test_cli import run, write


@pytest.fixture()
def share(monkeypatch):
    folder = worker_share.start()
    monkeypatch.setattr(worker_share, "FOLDER", folder)
    yield folder
    worker_share.stop(folder)
    assert not os.path.exists(folder)


def test_a_stored_value_is_loaded_and_nothing_is_stored_outside_a_run(share, monkeypatch):
    assert stat.S_IMODE(os.stat(share).st_mode) == 0o700
    assert worker_share.load("uses", "abc123", "missing") == "missing"
    worker_share.store("uses", "abc123", {"x": (1, 2)})
    assert worker_share.load("uses", "abc123") == {"x": (1, 2)}
    monkeypatch.setattr(worker_share, "FOLDER", None)
    worker_share.store("uses", "def456", 1)
    assert worker_share.load("uses", "def456", "missing") == "missing"
    assert worker_share.load("uses", "../escape", "missing") == "missing"  # keys are digests, never paths


def test_a_summary_computed_by_another_worker_is_loaded_and_a_damaged_one_computed_again(share, monkeypatch):
    source = "def one_hot(i, n, cuda=True):\n    pass\n\none_hot(1, 2)\n"
    expected = project_calls._summarise(source)
    index = type("Index", (), {})()
    project_calls._memo_summary(index, "d1", source)  # "another worker": stores it
    calls = []
    monkeypatch.setattr(project_calls, "_summarise", lambda s: calls.append(s) or expected)
    assert project_calls._memo_summary(type("Index", (), {})(), "d1", source) == expected
    assert calls == []  # loaded, not computed
    Path(share, "uses-d2").write_bytes(b"not a pickle")
    assert project_calls._memo_summary(type("Index", (), {})(), "d2", source) == expected
    assert calls == [source]


def test_a_run_with_workers_reports_as_one_without_and_leaves_no_shared_folder(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    # a flag parameter no call passes: every worker asks the project how `one_hot` is called
    flags = "import torch\n\ndef one_hot(x, cuda=False):\n    if cuda:\n        x = x.cuda()\n    return x\n"
    write(project / "lib.py", flags)
    for index in range(20):
        write(project / f"m{index}.py", f"import torch\nfrom lib import one_hot\n\ndef f{index}(x):\n"
                                        f"    return one_hot(x) + torch.zeros(1).cuda()\n")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    one = run(".", "--no-cache", "-j", "1", "--output-format", "json", cwd=project)
    two = run(".", "--no-cache", "-j", "2", "--output-format", "json", cwd=project)
    assert one.exit_code == two.exit_code == 1
    assert json.loads(one.output) == json.loads(two.output) != []
    assert list(temporary.iterdir()) == []


@pytest.mark.parametrize(("text", "shared"), [
    ("def f(cuda=True):\n    pass\n", True),
    ("# -*- coding: utf-8 -*-\nx = 'é'\n", True),
    ("# coding: latin-1\nx = 'é'\n", False),  # its bytes on disk are not these: parsed otherwise
    ("#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = 1\n", False),
    ("\ufeffx = 1\n", False),
    ("x = '\udcff'\n", False),
])
def test_the_checked_files_summary_has_its_project_key_only_where_its_bytes_parse_as_its_text(text, shared):
    from devlint import depends

    key = project_calls._own_key(text)
    assert (key == depends.digest(text.encode("utf-8", "surrogatepass"))) is shared
    assert key.startswith("own:") is not shared


def test_sibling_workers_start_far_apart_in_a_shared_list(share, monkeypatch):
    places = []
    for pid in range(1000, 1004):  # consecutive ids, as forked siblings get
        monkeypatch.setattr(os, "getpid", lambda pid=pid: pid)
        places.append(worker_share.place(90))
    assert all(0 <= p < 90 for p in places)
    assert min(abs(a - b) for i, a in enumerate(places) for b in places[i + 1:]) >= 10
    monkeypatch.setattr(worker_share, "FOLDER", None)
    assert worker_share.place(90) == 0  # (one process: the list's own order)


def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_value_another_worker_is_computing_is_waited_for_and_one_whose_claimant_died_is_computed(share):
    import subprocess
    import threading

    computed = []

    def compute():
        computed.append(1)
        return "mine"

    path = Path(share, "uses-k1.claim")
    sibling = subprocess.Popen(["sleep", "30"])  # a live process holding the claim
    try:
        path.write_text(str(sibling.pid))
        assert worker_share.obtain("uses", "k1", compute, wait=False) is worker_share.BUSY

        def finish():  # the sibling stores its value and lets go
            worker_share.store("uses", "k1", "theirs")
            path.unlink()

        threading.Timer(0.05, finish).start()
        assert worker_share.obtain("uses", "k1", compute) == "theirs"
        assert computed == []
    finally:
        sibling.kill()
        sibling.wait()
    Path(share, "uses-k2.claim").write_text(str(_dead_pid()))  # a worker that died mid-way
    assert worker_share.obtain("uses", "k2", compute, wait=False) == "mine"
    assert computed == [1]
    assert worker_share.load("uses", "k2") == "mine"
    assert not [p for p in os.listdir(share) if p.endswith(".claim") and "k2" not in p]  # released


def test_two_workers_asking_for_the_same_summaries_at_once_compute_each_once(share, tmp_path):
    # Both workers walked the list in step: each computed what the other was computing (issue 28).
    import multiprocessing
    import time

    log = tmp_path / "computed"
    sources = [(f"k{i}", f"def f{i}(cuda=True):\n    pass\n") for i in range(24)]
    slow = project_calls._summarise

    def summarise(source):
        time.sleep(0.01)  # (long enough for the other worker to reach the same file)
        with open(log, "a") as handle:
            handle.write(source.split("(")[0].split()[1] + "\n")
        return slow(source)

    def worker(start):
        project_calls._summarise = summarise
        start.wait()
        index = type("Index", (), {})()
        project_calls._summarise_shared(index, sources)
        os._exit(0 if all(project_calls._summaries(index)[k] == slow(s) for k, s in sources) else 1)

    context = multiprocessing.get_context("fork")
    start = context.Event()
    workers = [context.Process(target=worker, args=(start,)) for _ in range(2)]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(30)
    assert [p.exitcode for p in workers] == [0, 0]
    assert sorted(log.read_text().split()) == sorted(f"f{i}" for i in range(24))  # each once


def test_a_modules_index_facts_are_computed_once_per_run(share, monkeypatch):
    from devlint.analysis import project_files

    data = b"import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    expected = project_files.summarise_file("/p/net.py", data, "net")
    calls = []
    monkeypatch.setattr(project_files, "_summarise_file", lambda *a: calls.append(a))
    assert project_files.summarise_file("/p/net.py", data, "net") == expected  # loaded
    assert calls == []
    project_files.summarise_file("/p/other.py", data, "other")  # the facts name their file: not shared
    assert calls == [("/p/other.py", data, "other")]
