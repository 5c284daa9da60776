"""The result cache never harms the user's files and never changes what is reported (issue 13).

- `devlint clean` removes only a folder that devlint made its cache (CACHEDIR.TAG written by
  devlint), never a symbolic link, and never prints a traceback.
- The cache writes only into a folder it created or that holds its marker: `--cache-dir src` leaves
  src/ as it was (no `.gitignore` hiding new files from git).
- Entries are keyed by everything the result depends on, the kind of file included.
- `--add-noqa` after a plain run adds the directives the cache knows findings for.
- A corrupt entry or results file is a miss, never a traceback and never a wrong finding.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import fields
from pathlib import Path

import pytest

from devlint import cache as cache_module
from devlint import runner
from tests.helpers import count_checks as _count_checks
from devlint.cache import CACHE_DIR_NAME, ResultCache, settings_key
from devlint.config import Config, FixOptions
from tests.test_cli import BUGGY, run, write

SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
NOT_A_CACHE = "is not a devlint cache (no CACHEDIR.TAG written by devlint); not removed"
# DL004's fix here is unsafe: a plain `--fix` leaves it, so a warm run serves it from the cache.
UNSAFE_ONLY = 'import torch\nz = torch.zeros(2, device="cuda:1")\n'
NOTEBOOK = json.dumps({
    "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
               "source": ["import torch\n", "x = torch.zeros(1).cuda()\n"]}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}, indent=1) + "\n"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def findings(result) -> list:
    return json.loads(result.stdout)


@pytest.fixture()
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    write(root / "src" / "a.py", BUGGY)
    write(root / "src" / "b.py", "import torch\nstate = torch.load(path)\n")
    write(root / "src" / "c.py", UNSAFE_ONLY)
    write(root / "src" / "d.py", "import torch\nx = torch.zeros(1).cuda()  # noqa: DL001\n")
    write(root / "src" / "nb.ipynb", NOTEBOOK)
    return root


# -- 1. clean removes only devlint's own cache -------------------------------------------------------
def test_clean_removes_a_cache_devlint_made(project):
    run("src", cwd=project)
    run("src", "--cache-dir", "build/lint-cache", cwd=project)
    assert (project / CACHE_DIR_NAME / "CACHEDIR.TAG").is_file()
    result = run("clean", cwd=project)
    assert result.exit_code == 0 and not (project / CACHE_DIR_NAME).exists()
    result = run("clean", "--cache-dir", "build/lint-cache", cwd=project)
    assert result.exit_code == 0 and not (project / "build" / "lint-cache").exists()
    assert (project / "build").is_dir()  # only the cache folder itself goes


def test_clean_without_a_cache_does_nothing_and_succeeds(project):
    result = run("clean", cwd=project)
    assert result.exit_code == 0 and result.stderr == ""


@pytest.mark.parametrize("target", ["src", ".", ".."])
def test_clean_refuses_a_folder_that_is_not_a_devlint_cache(project, target):
    before = snapshot(project.parent)
    result = run("clean", "--cache-dir", target, cwd=project / "src" if target == ".." else project)
    assert result.exit_code == 2
    assert result.stderr == f"devlint: error: {target} {NOT_A_CACHE}\n"
    assert snapshot(project.parent) == before


def test_clean_refuses_a_folder_that_holds_another_tools_cachedir_tag(project):
    write(project / ".ruff_cache" / "CACHEDIR.TAG", f"{SIGNATURE}\n# created by ruff\n")
    write(project / ".ruff_cache" / "0.1" / "data", "x")
    result = run("clean", "--cache-dir", ".ruff_cache", cwd=project)
    assert result.exit_code == 2 and NOT_A_CACHE in result.stderr
    assert (project / ".ruff_cache" / "0.1" / "data").is_file()


def test_clean_refuses_a_marker_that_is_a_symbolic_link(project):
    run("src", cwd=project)
    tag = project / CACHE_DIR_NAME / "CACHEDIR.TAG"
    write(project / "src" / "tag", tag.read_text())
    write(project / "src" / "keep.py", "x = 1\n")
    os.symlink(project / "src" / "tag", project / "src" / "CACHEDIR.TAG")
    result = run("clean", "--cache-dir", "src", cwd=project)
    assert result.exit_code == 2 and NOT_A_CACHE in result.stderr
    assert (project / "src" / "keep.py").is_file()


@pytest.mark.parametrize("link", ["linked-cache", "linked-cache/"])
def test_clean_refuses_a_cache_folder_that_is_a_symbolic_link(project, link):
    run("src", "--cache-dir", "real-cache", cwd=project)
    os.symlink(project / "real-cache", project / "linked-cache")
    before = snapshot(project)
    result = run("clean", "--cache-dir", link, cwd=project)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"devlint: error: {link} ")
    assert "symbolic link" in result.stderr and "Traceback" not in result.output
    assert (project / "linked-cache").is_symlink() and snapshot(project) == before


def test_clean_recognises_a_cache_written_before_the_marker(project):
    """A `.devlint_cache` from before CACHEDIR.TAG holds only devlint's own files: it is cleaned."""
    old = project / CACHE_DIR_NAME
    write(old / ".gitignore", "# Automatically created by devlint.\n*\n")
    write(old / "results-0123456789abcdef0123.json", '{"version": "0.0", "entries": {}}')
    assert run("clean", cwd=project).exit_code == 0 and not old.exists()


def test_an_old_cache_folder_is_adopted_and_a_foreign_one_is_not(project):
    old = project / CACHE_DIR_NAME
    write(old / ".gitignore", "# Automatically created by devlint.\n*\n")
    result = run("src", cwd=project)
    assert "warning" not in result.stderr
    assert (old / "CACHEDIR.TAG").read_text().startswith(SIGNATURE)
    write(project / "src" / ".gitignore", "# Automatically created by devlint.\n*\n")  # the old bug's
    before = snapshot(project / "src")
    result = run("src", "--cache-dir", "src", cwd=project)
    assert "not a devlint cache" in result.stderr and snapshot(project / "src") == before


# -- 2. the cache writes only into its own folder ----------------------------------------------------
def test_a_new_cache_folder_gets_the_standard_marker_and_a_gitignore(project):
    run("src", "--cache-dir", "deep/er/cache", cwd=project)
    cache = project / "deep" / "er" / "cache"
    tag = (cache / "CACHEDIR.TAG").read_text()
    assert tag.startswith(SIGNATURE + "\n") and "devlint" in tag
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert list(cache.glob("results-*.json"))
    assert sorted(p.name for p in (project / "deep").iterdir()) == ["er"]  # no stray temporary folder


@pytest.mark.parametrize("target", ["src", ".", "empty"])
def test_an_existing_folder_without_the_marker_is_neither_read_nor_written(project, target):
    (project / "empty").mkdir()
    uncached = run("src", "--no-cache", "--output-format", "json", cwd=project)
    before = snapshot(project)
    result = run("src", "--cache-dir", target, "--output-format", "json", cwd=project)
    assert snapshot(project) == before
    assert findings(result) == findings(uncached) and result.exit_code == uncached.exit_code
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == [f"devlint: warning: {target} is not a devlint cache (no CACHEDIR.TAG written by "
                        "devlint); the cache is not used: name a new folder with --cache-dir"]


def test_a_folder_without_the_marker_is_not_read(tmp_path, monkeypatch):
    a = write(tmp_path / "a.py", BUGGY)
    config = Config()
    cache = ResultCache(str(tmp_path / "cache"), settings_key(config))
    runner.check_files([str(a)], config, write=False, cache=cache)
    cache.save()
    (tmp_path / "cache" / "CACHEDIR.TAG").unlink()
    write(tmp_path / "cache" / "notes.txt", "the user's")  # so not an old cache folder either
    checked = _count_checks(monkeypatch)
    cache = ResultCache(str(tmp_path / "cache"), settings_key(config))
    runner.check_files([str(a)], config, write=False, cache=cache)
    assert checked == [str(a)] and cache.warnings


def test_two_runs_creating_the_same_cache_both_succeed(tmp_path):
    a = write(tmp_path / "a.py", BUGGY)
    config = Config()
    first, second = (ResultCache(str(tmp_path / "cache"), settings_key(config)) for _ in range(2))
    for each in (first, second):
        runner.check_files([str(a)], config, write=False, cache=each)
    first.save()
    second.save()
    assert first.warnings == second.warnings == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "cache"]


def test_a_symlinked_cache_folder_that_is_a_devlint_cache_is_used(project):
    run("src", "--cache-dir", "real-cache", cwd=project)
    os.symlink(project / "real-cache", project / "linked-cache")
    result = run("src", "--cache-dir", "linked-cache", cwd=project)
    assert "warning" not in result.stderr


# -- 3. the key covers the kind of file and every setting -------------------------------------------
def test_a_notebook_with_the_bytes_of_a_python_file_gets_its_own_result(tmp_path):
    write(tmp_path / "same.py", NOTEBOOK)  # a dict display: valid Python, nothing to report
    write(tmp_path / "same.ipynb", NOTEBOOK)
    uncached = findings(run(".", "--no-cache", "--output-format", "json", cwd=tmp_path))
    assert [(Path(f["path"]).name, f["code"]) for f in uncached] == [("same.ipynb", "DL001")]
    for _ in range(3):
        assert findings(run(".", "--output-format", "json", cwd=tmp_path)) == uncached
    for name in ("same.py", "same.ipynb", "same.py"):  # one file a run: each fills what the other reads
        alone = findings(run(name, "--output-format", "json", cwd=tmp_path))
        assert alone == [{**f, "path": name} for f in uncached if Path(f["path"]).name == name]


def test_the_key_differs_by_kind_of_file():
    data, codes = BUGGY.encode(), ("DL001",)
    keys = {ResultCache.key(data, codes, kind, "/p/a") for kind in (".py", ".pyi", ".ipynb")}
    assert len(keys) == 3


# Config fields that cached findings do not depend on, and why. Any other field must change the key.
NOT_IN_THE_KEY = {
    "fix": "a result with fixes applied (fixed_source) is never cached; without any, --fix reports what a check does",
    "unsafe_fixes": "the same: it only decides which fixes are applied, and applied fixes are never cached",
    "add_noqa": "--add-noqa results are never cached",
    "root": "it only changes which rules apply to a file (per-file-ignores): the codes are in each entry's key",
    # The selection is in the key as the codes it resolves to.
    "select": "codes", "extend_select": "codes", "ignore": "codes",
}


def test_every_setting_that_changes_findings_changes_the_key():
    base = Config()
    changed = {
        "select": Config(select=("DL002",)),
        "extend_select": Config(extend_select=("DL100",)),
        "ignore": Config(ignore=("DL001",)),
        "fix_options": Config(fix_options=FixOptions(device_name="dev")),
        "fix_options.expression": Config(fix_options=FixOptions(device_expression="accelerator")),
        "fix_options.map_location": Config(fix_options=FixOptions(map_location="cpu")),
        "per_file_ignores": Config(per_file_ignores=(("x/*", ("DL001",)),)),
        "max_file_size": Config(max_file_size=10),
        "ignore_noqa": Config(ignore_noqa=True),
    }
    for name, other in changed.items():
        assert settings_key(other) != settings_key(base), name
    for field in fields(Config):
        assert field.name in changed or field.name in NOT_IN_THE_KEY, (
            f"Config.{field.name} is new: add it to settings_key() or say here why findings do not depend on it")


@pytest.mark.parametrize("options", [("--fix",), ("--fix", "--unsafe-fixes"), ("--unsafe-fixes",)])
def test_fix_and_unsafe_fixes_report_what_a_plain_run_cached(project, options):
    twin = project.parent / "twin"
    shutil.copytree(project, twin)
    run("src", cwd=project)
    warm = run("src", *options, "--output-format", "json", cwd=project)
    cold = run("src", *options, "--no-cache", "--output-format", "json", cwd=twin)
    assert findings(warm) == findings(cold) and warm.exit_code == cold.exit_code
    assert snapshot(project / "src") == snapshot(twin / "src")


# -- 4. --add-noqa is not answered from the cache ----------------------------------------------------
def test_add_noqa_after_a_plain_run_adds_every_directive(project):
    expected = project.parent / "expected"
    write(expected / "c.py", UNSAFE_ONLY)
    write(expected / "a.py", BUGGY)
    run(str(expected), "--add-noqa", "--no-cache", cwd=project)
    run("src", cwd=project)  # c.py's DL004 (no safe fix) is cached
    result = run("src", "--add-noqa", cwd=project)
    assert result.exit_code == 0
    assert (project / "src" / "c.py").read_text() == (expected / "c.py").read_text() != UNSAFE_ONLY
    assert (project / "src" / "a.py").read_text() == (expected / "a.py").read_text()
    assert "Added 4 noqa directives." in result.stdout  # a, b, c and the notebook
    assert findings(run("src", "--output-format", "json", cwd=project)) == []


# -- 5. corrupt caches -------------------------------------------------------------------------------


def _results_file(project: Path) -> Path:
    (path,) = (project / CACHE_DIR_NAME).glob("results-*.json")
    return path


@pytest.mark.parametrize("content", [
    "[]", "[1, 2]", "null", "7", '"text"', "{}", '{"version": null}', '{"entries": {}}',
    '{"version": "VERSION", "entries": []}', '{"version": "VERSION", "entries": "x"}',
    '{"version": "VERSION", "entries": {"k": "x"}}', '{"version": "VERSION", "entries": {"k": {}}}',
    '{"version": "VERSION", "entries": {"k": [1, 2, 3]}}', "", "\x00\xff", '{"version": "VERSION", "entries": {',
    "[" * 100_000 + "]" * 100_000,
])
def test_a_results_file_of_the_wrong_shape_is_ignored(project, content):
    uncached = run("src", "--no-cache", "--output-format", "json", cwd=project)
    run("src", cwd=project)
    _results_file(project).write_text(content.replace("VERSION", cache_module.__version__), errors="surrogateescape")
    result = run("src", "--output-format", "json", cwd=project)
    assert findings(result) == findings(uncached) and result.exit_code == uncached.exit_code
    assert "Traceback" not in result.output
    assert findings(run("src", "--output-format", "json", cwd=project)) == findings(uncached)  # rewritten


ENTRY_CONFIG = Config(select=("ALL",), ignore=("DL015",))


def _an_entry(tmp_path) -> tuple[ResultCache, str, list]:
    # CUDA_VISIBLE_DEVICES is set first: a device definition may then go after the imports (fixes with edits)
    source = ("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nimport torch\nx = torch.zeros(1).cuda()\n"
              'z = torch.zeros(2, device="cuda:1")\nstate = torch.load(path)\nw = torch.cuda.FloatTensor(2)\n')
    a = write(tmp_path / "a.py", source)
    cache = ResultCache(str(tmp_path / "cache"), settings_key(ENTRY_CONFIG))
    (result,) = runner.check_files([str(a)], ENTRY_CONFIG, write=False, cache=cache)
    ((key, entry),) = cache.entries.items()
    assert cache.get(key, ENTRY_CONFIG.codes()) == result.findings and len(result.findings) >= 4
    return cache, key, entry


def _findings_of(entry) -> list:
    """The findings of a stored entry ([checksum, findings as JSON text]) as JSON values."""
    return json.loads(entry[1])


MUTATIONS = {
    "code unknown": lambda f: f.update(code="DL999"),
    "code not selected": lambda f: f.update(code="DL015", name="cuda-only-api"),
    "code a number": lambda f: f.update(code=1),
    "name wrong": lambda f: f.update(name="other-rule"),
    "message missing": lambda f: f.pop("message"),
    "message a list": lambda f: f.update(message=["x"]),
    "line zero": lambda f: f["start"].update(line=0),
    "line negative": lambda f: f["end"].update(line=-3),
    "line a bool": lambda f: f["start"].update(line=True),
    "line a float": lambda f: f["start"].update(line=2.0),
    "line a string": lambda f: f["start"].update(line="2"),
    "column negative": lambda f: f["start"].update(column=-1),
    "end before start": lambda f: f.update(end={"line": 1, "column": 0}),
    "position a list": lambda f: f.update(start=[1, 0]),
    "position with an extra key": lambda f: f["start"].update(extra=1),
    "extra key": lambda f: f.update(extra=1),
    "fix a string": lambda f: f.update(fix="x"),
    "applicability unknown": lambda f: f["fix"].update(applicability="always"),
    "applicability missing": lambda f: f["fix"].pop("applicability"),
    "title a number": lambda f: f["fix"].update(title=3),
    "edits a dict": lambda f: f["fix"].update(edits={}),
    "edit a string": lambda f: f["fix"].update(edits=["x"]),
    "edit content missing": lambda f: f["fix"]["edits"][0].pop("content"),
    "edit content a number": lambda f: f["fix"]["edits"][0].update(content=1),
    "edit backwards": lambda f: f["fix"]["edits"][0].update(start={"line": 9, "column": 0}),
    "needs_device a string": lambda f: f["fix"].update(needs_device="yes"),
    "suppress_lines a string": lambda f: f.update(suppress_lines="12"),
    "suppress_lines zero": lambda f: f.update(suppress_lines=[0]),
    "cell zero": lambda f: f.update(cell=0),
    "cell a string": lambda f: f.update(cell="1"),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_every_field_of_an_entry_is_validated(tmp_path, mutation):
    """Even an entry whose checksum was recomputed for the mutated findings is refused."""
    cache, key, entry = _an_entry(tmp_path)
    bad = _findings_of(entry)
    target = next(f for f in bad if f.get("fix") and f["fix"]["edits"]) if "fix" in mutation or "edit" in mutation \
        or "applicability" in mutation or "title" in mutation or "needs_device" in mutation else bad[0]
    MUTATIONS[mutation](target)
    cache.entries[key] = cache_module.make_entry(key, bad)  # correctly signed, wrongly shaped
    assert cache.get(key, ENTRY_CONFIG.codes()) is None
    assert key not in cache.entries  # re-checked and replaced


def test_a_changed_but_well_formed_entry_is_a_miss(tmp_path):
    cache, key, entry = _an_entry(tmp_path)
    codes = ENTRY_CONFIG.codes()
    moved = _findings_of(entry)
    moved[0]["start"]["line"] += 1
    moved[0]["end"]["line"] += 1
    cache.entries[key] = [entry[0], json.dumps(moved, separators=(",", ":"))]  # the old checksum
    assert cache.get(key, codes) is None
    cache.entries["0" * 64] = entry  # another file's result, under this one's key
    assert cache.get("0" * 64, codes) is None


def _mutate(value, rng: random.Random, depth: int = 0):
    """One random change somewhere inside a JSON value."""
    choices = [None, True, False, 0, -1, 1, 2**70, 1.5, "", "DL001", "safe", [], {}, [1], {"line": 1}]
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        action = rng.random()
        if action < 0.15:
            value.pop(key)
        elif action < 0.3:
            value[rng.choice(["extra", "line", "code", "fix"])] = rng.choice(choices)
        else:
            value[key] = _mutate(value[key], rng, depth + 1)
        return value
    if isinstance(value, list) and value and rng.random() < 0.8:
        index = rng.randrange(len(value))
        action = rng.random()
        if action < 0.15:
            value.pop(index)
        elif action < 0.25:
            value.append(rng.choice(choices))
        else:
            value[index] = _mutate(value[index], rng, depth + 1)
        return value
    if isinstance(value, bool) or value is None:
        return rng.choice(choices)
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, -value, 0, str(value), float(value), rng.choice(choices)])
    if isinstance(value, str):
        return rng.choice([value[:-1], value + "x", value.upper(), "", 1, rng.choice(choices)])
    return rng.choice(choices)


@pytest.mark.parametrize("seed", range(40))
def test_fuzzed_caches_never_crash_and_never_change_the_findings(project, seed):
    rng = random.Random(seed)
    uncached = run("src", "--no-cache", "--output-format", "json", cwd=project)
    run("src", cwd=project)
    path = _results_file(project)
    text = path.read_text()
    if seed % 4 == 0:  # raw bytes: flip, cut, insert
        raw = bytearray(text.encode())
        for _ in range(rng.randint(1, 5)):
            where = rng.randrange(len(raw))
            kind = rng.random()
            if kind < 0.4:
                raw[where] = rng.randrange(256)
            elif kind < 0.6:
                del raw[where:]
                if not raw:
                    break
            else:
                raw[where:where] = bytes(rng.choice(b'{}[]",:0123456789-etrufalsn ') for _ in range(3))
        path.write_bytes(bytes(raw))
    else:  # well-formed JSON, changed inside
        data = json.loads(text)
        for _ in range(rng.randint(1, 4)):
            data = _mutate(data, rng)
        if seed % 4 == 1 and isinstance(data, dict) and isinstance(data.get("entries"), dict) and data["entries"]:
            keys = list(data["entries"])  # swap two entries' results
            a, b = rng.choice(keys), rng.choice(keys)
            data["entries"][a], data["entries"][b] = data["entries"][b], data["entries"][a]
        path.write_text(json.dumps(data))
    result = run("src", "--output-format", "json", cwd=project)
    assert "Traceback" not in result.output
    assert findings(result) == findings(uncached) and result.exit_code == uncached.exit_code
    again = run("src", "--output-format", "json", cwd=project)
    assert findings(again) == findings(uncached) and "warning" not in again.stderr


def test_a_corrupt_entry_gives_one_warning_and_is_checked_again(project, monkeypatch):
    run("src", cwd=project)
    path = _results_file(project)
    data = json.loads(path.read_text())
    for key in data["entries"]:
        data["entries"][key] = [1]
    path.write_text(json.dumps(data))
    result = run("src", "--output-format", "json", cwd=project)
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "corrupt" in warnings[0]


def test_the_entry_layout_follows_the_model():
    """The validator knows every field of a finding: a new field needs a check in devlint/cache.py."""
    from devlint.model import Edit, Finding, Fix, Position

    assert {f.name for f in fields(Finding)} == cache_module._FINDING_KEYS
    assert {f.name for f in fields(Fix)} == cache_module._FIX_KEYS
    assert {f.name for f in fields(Edit)} == cache_module._EDIT_KEYS
    assert {f.name for f in fields(Position)} == cache_module._POSITION_KEYS


def test_every_finding_of_the_fixtures_is_served_from_the_cache(tmp_path, monkeypatch):
    """The validation refuses nothing devlint writes: a warm run over every fixture checks no file."""
    root = Path(__file__).resolve().parent
    paths = [str(p) for p in sorted(root.glob("fixtures/**/*.py")) + sorted(root.glob("fixtures_notebooks/*.ipynb"))
             + sorted(root.parent.glob("examples/*.py"))]
    for config in (Config(select=("ALL",)), Config(select=("ALL",), ignore_noqa=True)):
        cache = ResultCache(str(tmp_path / "cache"), settings_key(config))
        cold = runner.check_files(paths, config, write=False, cache=cache)
        cache.save()
        stored = sum(bool(r.findings) for r in cold if r.error is None and r.notice is None)
        assert stored >= 8
        checked = _count_checks(monkeypatch)
        cache = ResultCache(str(tmp_path / "cache"), settings_key(config))
        warm = runner.check_files(paths, config, write=False, cache=cache)
        assert [r.findings for r in warm] == [r.findings for r in cold]
        assert all(r.error is not None for r in cold if r.path in checked)  # only errors are checked again
        assert cache.warnings == []
        monkeypatch.undo()


@pytest.mark.parametrize("seed", range(20))
def test_the_validator_never_raises_on_a_signed_mutated_entry(tmp_path, seed):
    """What the checksum lets through (an entry re-signed after a change) still cannot crash a run."""
    rng = random.Random(seed)
    cache, key, entry = _an_entry(tmp_path)
    for _ in range(50):
        mutated = _findings_of(entry)
        for _ in range(rng.randint(1, 3)):
            mutated = _mutate(mutated, rng)
        cache.entries[key] = cache_module.make_entry(key, mutated)
        got = cache.get(key, ENTRY_CONFIG.codes())
        assert got is None or all(f.code in ENTRY_CONFIG.codes() and f.start <= f.end for f in got)


def test_fuzzed_entries_inside_their_text_are_misses(project):
    """Changes inside an entry's findings text, checksum kept: every one is a miss."""
    uncached = run("src", "--no-cache", "--output-format", "json", cwd=project)
    rng = random.Random(7)
    for _ in range(10):
        run("src", cwd=project)
        path = _results_file(project)
        data = json.loads(path.read_text())
        for key, (checksum, text) in list(data["entries"].items()):
            if text != "[]":
                data["entries"][key] = [checksum, json.dumps(_mutate(json.loads(text), rng), separators=(",", ":"))]
        path.write_text(json.dumps(data))
        result = run("src", "--output-format", "json", cwd=project)
        assert findings(result) == findings(uncached) and result.exit_code == uncached.exit_code
