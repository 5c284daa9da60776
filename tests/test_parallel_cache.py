"""Worker processes and the result cache change nothing in what is reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from devlint import cache as cache_module
from devlint import runner
from devlint.cache import ResultCache, settings_key
from devlint.config import Config
from devlint.model import FileResult
from tests.helpers import count_checks as _count_checks
from tests.test_cli import run, write

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def tree(tmp_path):
    """A few dozen files, enough for worker processes to start."""
    sources = sorted(ROOT.glob("tests/fixtures/DL*/*.py")) + sorted(ROOT.glob("examples/*.py"))
    for copy in range(6):
        for source in sources:
            write(tmp_path / "src" / f"c{copy}" / source.name, source.read_text())
    write(tmp_path / "src" / "broken.py", "def f(:\n")
    return tmp_path


def findings(result) -> list:
    return json.loads(result.stdout)


def test_same_findings_with_one_or_two_workers_and_stable_order(tree):
    one = run("src", "-j", "1", "--no-cache", "--output-format", "json", cwd=tree)
    two = run("src", "-j", "2", "--no-cache", "--output-format", "json", cwd=tree)
    assert one.exit_code == two.exit_code == 2
    assert findings(one) == findings(two) and len(findings(one)) > 50
    assert one.stderr == two.stderr


def test_same_findings_with_and_without_the_cache(tree):
    cold = run("src", "--output-format", "json", cwd=tree)
    assert (tree / ".devlint_cache").is_dir()
    warm = run("src", "--output-format", "json", cwd=tree)
    uncached = run("src", "--no-cache", "--output-format", "json", cwd=tree)
    assert findings(cold) == findings(warm) == findings(uncached)
    assert "SyntaxError" in warm.stderr  # errors are never cached




def test_warm_run_checks_nothing_and_a_changed_file_is_checked_again(tmp_path, monkeypatch):
    a = write(tmp_path / "a.py", "import torch\nx = torch.zeros(1).cuda()\n")
    b = write(tmp_path / "b.py", "import torch\ny = torch.load(p)\n")
    config = Config()
    cache = ResultCache(str(tmp_path / "cache"), settings_key(config))
    first = runner.check_files([str(a), str(b)], config, write=False, cache=cache)
    cache.save()
    checked = _count_checks(monkeypatch)
    cache = ResultCache(str(tmp_path / "cache"), settings_key(config))
    again = runner.check_files([str(a), str(b)], config, write=False, cache=cache)
    assert checked == [] and [r.findings for r in again] == [r.findings for r in first]
    write(a, "import torch\nx = torch.zeros(1)\n")
    changed = runner.check_files([str(a), str(b)], config, write=False, cache=cache)
    assert checked == [str(a)] and changed[0].findings == []


def test_a_changed_config_or_version_invalidates(tmp_path, monkeypatch):
    a = write(tmp_path / "a.py", "import torch\nx = torch.zeros(1).cuda()\n")
    config = Config()
    cache = ResultCache(str(tmp_path / "cache"), settings_key(config))
    runner.check_files([str(a)], config, write=False, cache=cache)
    cache.save()
    checked = _count_checks(monkeypatch)
    other = Config(select=("DL002",))
    runner.check_files([str(a)], other, write=False, cache=ResultCache(str(tmp_path / "cache"), settings_key(other)))
    assert checked == [str(a)]
    monkeypatch.setattr(cache_module, "__version__", "99.0")
    runner.check_files([str(a)], config, write=False, cache=ResultCache(str(tmp_path / "cache"), settings_key(config)))
    assert checked == [str(a), str(a)]


def test_a_corrupt_cache_is_survived_with_a_warning(tree):
    run("src", cwd=tree)
    for path in (tree / ".devlint_cache").glob("results-*.json"):
        path.write_text("{not json")
    result = run("src", "--output-format", "json", cwd=tree)
    assert result.exit_code == 2  # the broken.py syntax error, not the cache
    assert "ignoring an unreadable cache" in result.stderr
    assert len(findings(result)) > 50
    assert "Traceback" not in result.output


def test_an_unwritable_cache_is_a_warning(tree):
    (tree / "blocker").write_text("a file where the cache folder should be")
    result = run("src", "--cache-dir", str(tree / "blocker" / "cache"), "--output-format", "json", cwd=tree)
    assert "cannot write the cache" in result.stderr
    assert len(findings(result)) > 50


def test_clean_removes_the_cache(tree):
    run("src", cwd=tree)
    assert (tree / ".devlint_cache").exists()
    result = run("clean", cwd=tree)
    assert result.exit_code == 0 and not (tree / ".devlint_cache").exists()


def test_fix_uses_the_cache_only_for_files_without_fixes(tree):
    run("src", cwd=tree)  # fill the cache
    result = run("src", "--fix", cwd=tree)
    assert "to(device)" in (tree / "src" / "c0" / "train.py").read_text()
    again = run("src", "--fix", "--output-format", "json", cwd=tree)
    shutil.rmtree(tree / ".devlint_cache")
    uncached = run("src", "--fix", "--output-format", "json", cwd=tree)
    assert findings(again) == findings(uncached)
    assert result.exit_code == again.exit_code


def test_a_worker_that_dies_loses_only_its_file(tmp_path, monkeypatch):
    paths = [str(write(tmp_path / f"f{i}.py", "import torch\nx = torch.zeros(1).cuda()\n")) for i in range(40)]
    doomed = paths[7]
    real = runner.check_file

    def crashing(path, config, **kwargs):
        if path == doomed:
            import os

            os._exit(1)  # as a segfault or the OOM killer would end the worker
        return real(path, config, **kwargs)

    monkeypatch.setattr(runner, "check_file", crashing)
    results = runner.check_files(paths, Config(), write=False, jobs=2)
    assert [r.path for r in results] == paths
    assert results[7].error is not None and "worker process died" in results[7].error.message
    assert all(len(r.findings) == 1 for i, r in enumerate(results) if i != 7)
    assert isinstance(results[0], FileResult)
