"""A warm run reads each file once (issue 28): a cached result that rests on another file of the run
(devlint.depends) is checked against the bytes the run has just read for that file's own key, not
read again; it is still a miss when that file changed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from devlint import depends, runner
from devlint.analysis import project as project_module
from tests.test_cache_staleness import MODULE_DATA, TENSOR_DATA, TRAIN, cached_and_fresh
from tests.test_cli import run, write


def test_a_warm_run_reads_each_file_once(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write(project / "train.py", TRAIN)
    write(project / "data.py", TENSOR_DATA)
    write(project / "big.py", TENSOR_DATA + "#" * (5 * 1024 * 1024) + "\n")  # over the index's read limit
    options = ("--max-file-size", str(8 * 1024 * 1024))
    first = run(".", "--output-format", "json", *options, cwd=project)
    project_module._INDEX = None
    reads: Counter = Counter()
    real_read, real_regular = runner.read, depends.read_regular

    def counting_read(path, config):
        reads[Path(path).name] += 1
        return real_read(path, config)

    def counting_regular(path, limit=depends.READ_LIMIT):
        reads[Path(path).name] += 1
        return real_regular(path, limit)

    monkeypatch.setattr(runner, "read", counting_read)
    monkeypatch.setattr(depends, "read_regular", counting_regular)
    monkeypatch.setattr(runner, "check_file", lambda *a, **k: (_ for _ in ()).throw(AssertionError("checked")))
    second = run(".", "--output-format", "json", *options, cwd=project)
    assert second.output == first.output and '"DL003"' in second.output
    assert reads == {"train.py": 1, "data.py": 1, "big.py": 1}


def test_answers_from_the_bytes_read_are_the_disks(tmp_path):
    small, big = tmp_path / "small.py", tmp_path / "big.py"
    small.write_bytes(b"x = 1\n")
    big.write_bytes(b"#" * (depends.READ_LIMIT + 1))
    # what a run hands over: the digest of each file it read, ABSENT for one over the limit (runner.check_files)
    known = {str(p): depends.ABSENT if len(p.read_bytes()) > depends.READ_LIMIT else depends.digest(p.read_bytes())
             for p in (small, big)}
    for path in (small, big, tmp_path / "missing.py"):
        name = f"{depends.READ}:{path}"
        assert depends.observe(name, known) == depends.observe(name)
    assert depends.observe(f"{depends.READ}:{big}") == depends.ABSENT


def test_a_changed_dependency_of_the_run_is_still_a_miss(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write(project / "train.py", TRAIN)
    write(project / "data.py", TENSOR_DATA)
    cached, fresh = cached_and_fresh(project, ".")
    assert cached == fresh == [("train.py", "DL003")]
    write(project / "data.py", MODULE_DATA)  # make_batch now returns a module: moved in place
    cached, fresh = cached_and_fresh(project, ".")
    assert cached == fresh == []
