"""A fully cached run only reads, hashes and reports: it imports no rule module and so not LibCST,
reports exactly what a cold run reports, and still notices every change. Also: the static rule table
agrees with the rule classes, and the faster .gitignore matching answers exactly as pathspec does."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import random
import subprocess
import sys
from pathlib import Path

import pathspec
import pytest

import devlint.rules
from devlint import files
from devlint.cache import ResultCache, settings_key
from devlint.config import Config
from devlint.rule import Rule
from devlint.rules import RULES
from tests.test_cli import BUGGY, CLEAN, write

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "tests" / "fixtures_notebooks" / "train.ipynb"


# -- the rule table ----------------------------------------------------------------------------------
def test_the_rule_table_agrees_with_the_rule_classes():
    """RULES is what selection and cache keys use without importing the rules: it must say what the
    classes say. After changing a rule's code, name or default, update its row in devlint/rules/__init__.py."""
    for info in RULES:
        cls = getattr(importlib.import_module(f"devlint.rules.{info.module}"), info.class_name)
        assert issubclass(cls, Rule)
        assert (cls.code, cls.name, cls.default_enabled) == (info.code, info.name, info.default_enabled), (
            f"devlint/rules/__init__.py: the row for {info.class_name} is stale"
        )
    assert [r.code for r in RULES] == sorted(r.code for r in RULES), "the table is in code order"
    assert len({r.code for r in RULES}) == len({r.name for r in RULES}) == len(RULES)


def test_every_rule_class_has_a_row_and_the_lazy_lists_follow_the_table():
    listed = {(info.module, info.class_name) for info in RULES}
    found = set()
    for module in pkgutil.iter_modules(devlint.rules.__path__):
        if module.name.startswith("_"):
            continue
        imported = importlib.import_module(f"devlint.rules.{module.name}")
        for name, value in vars(imported).items():
            if inspect.isclass(value) and issubclass(value, Rule) and value is not Rule \
                    and value.__module__ == imported.__name__:
                found.add((module.name, name))
    assert found == listed
    assert [r.code for r in devlint.rules.ALL_RULES] == [info.code for info in RULES]
    assert list(devlint.rules.RULES_BY_CODE) == [info.code for info in RULES]
    assert Config(select=("ALL",)).rules() == devlint.rules.ALL_RULES


def test_selection_by_codes_matches_selection_by_classes():
    for config in (Config(), Config(select=("ALL",)), Config(select=("DL0",), ignore=("DL002",)),
                   Config(extend_select=("unused-noqa",)),
                   Config(per_file_ignores=(("tests/*", ("DL001",)),), root=".")):
        assert tuple(r.code for r in config.rules()) == config.codes()
        for path in ("a.py", "tests/a.py"):
            assert tuple(r.code for r in config.rules_for(path)) == config.codes_for(path)
    defaults = Config().codes()
    assert all(info.code in defaults for info in RULES if info.default_enabled)
    assert not any(info.code in defaults for info in RULES if not info.default_enabled)


def test_the_settings_key_is_unchanged_by_the_table():
    """Caches written before the table existed stay valid: same key, same rules, settings, version."""
    for config in (Config(), Config(select=("ALL",), ignore_noqa=True), Config(per_file_ignores=(("x/*", ("DL1",)),))):
        old = repr((sorted(r.code for r in config.rules()), config.per_file_ignores, config.fix_options,
                    config.ignore_noqa, config.max_file_size))
        assert settings_key(config) == old


# -- a warm run in a fresh interpreter -----------------------------------------------------------------
PROBE = """
import json, sys
from devlint.cli import main
report = sys.argv[1]
try:
    main(sys.argv[2:], prog_name="devlint")
    code = 0
except SystemExit as exit:
    code = exit.code
with open(report, "w") as handle:
    json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
"""


def devlint_in_subprocess(project: Path, *args: str) -> tuple[dict, subprocess.CompletedProcess]:
    """Run the CLI in a new interpreter; (exit code and the modules it imported, the process)."""
    report = project.parent / "probe.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", PROBE, str(report), *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)
    assert report.exists(), done.stderr
    probe = json.loads(report.read_text())
    report.unlink()
    return probe, done


@pytest.fixture()
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    write(root / ".gitignore", "generated/\n*.tmp.py\n")
    write(root / "src" / "a.py", BUGGY)
    write(root / "src" / "b.py", "import torch\nstate = torch.load(path)\n")
    write(root / "src" / "c.py", CLEAN)
    write(root / "src" / "d.py", "import torch\nx = torch.zeros(1).cuda()  # noqa: DL001\ny = 1  # noqa: DL002\n")
    write(root / "src" / "e.tmp.py", BUGGY)
    write(root / "generated" / "f.py", BUGGY)
    (root / "nb.ipynb").write_bytes(NOTEBOOK.read_bytes())
    write(root / "pyproject.toml", '[tool.devlint]\nextend-select = ["DL100"]\n'
                                   '[tool.devlint.per-file-ignores]\n"src/b.py" = ["DL002"]\n')
    return root


def _imports_libcst(modules: list[str]) -> bool:
    return "libcst" in modules or any(m.startswith("libcst.") for m in modules)


def test_a_warm_run_imports_neither_libcst_nor_any_rule(project):
    cold, cold_run = devlint_in_subprocess(project, ".", "--output-format", "json")
    assert _imports_libcst(cold["modules"])  # the probe sees imports: a cold run needs LibCST
    warm, warm_run = devlint_in_subprocess(project, ".", "--output-format", "json")
    assert not _imports_libcst(warm["modules"])
    assert not [m for m in warm["modules"] if m.startswith("devlint.rules.")]
    assert not {"devlint.engine", "devlint.context", "devlint.rule", "multiprocessing"} & set(warm["modules"])
    assert cold["code"] == warm["code"] == 1
    assert json.loads(cold_run.stdout) == json.loads(warm_run.stdout) != []
    assert cold_run.stderr == warm_run.stderr


@pytest.mark.parametrize("fmt", ["github", "gitlab", "junit", "json-lines"])
def test_a_warm_run_in_a_ci_format_does_not_load_libcst(project, fmt):
    cold, cold_run = devlint_in_subprocess(project, ".", "--output-format", fmt)
    warm, warm_run = devlint_in_subprocess(project, ".", "--output-format", fmt)
    assert _imports_libcst(cold["modules"]) and not _imports_libcst(warm["modules"])
    assert cold_run.stdout == warm_run.stdout != ""


def test_a_changed_file_is_checked_again_and_only_then_libcst_is_loaded(project):
    devlint_in_subprocess(project, ".", "--output-format", "json")
    write(project / "src" / "c.py", "import torch\ny = torch.ones(2).cuda()\n")
    probe, done = devlint_in_subprocess(project, ".", "--output-format", "json")
    assert _imports_libcst(probe["modules"])
    assert {(Path(f["path"]).as_posix(), f["code"]) for f in json.loads(done.stdout)} >= {
        ("src/c.py", "DL001"), ("src/a.py", "DL001")}
    again, _ = devlint_in_subprocess(project, ".", "--output-format", "json")
    assert not _imports_libcst(again["modules"])


def test_importing_the_warm_path_modules_does_not_load_libcst():
    modules = ["devlint.cli", "devlint.cache", "devlint.model", "devlint.config", "devlint.files",
               "devlint.settings", "devlint.runner", "devlint.report", "devlint.source", "devlint.rules",
               "devlint.formats"]
    code = f"import sys\nfor m in {modules!r}: __import__(m)\nprint(sorted(m for m in sys.modules if 'libcst' in m))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("options", [(), ("--select", "ALL", "--statistics"),
                                     ("--ignore-noqa", "--output-format", "full")])
def test_warm_and_cold_runs_report_the_same(project, options):
    runs = [devlint_in_subprocess(project, ".", *options) for _ in range(2)]
    uncached = devlint_in_subprocess(project, ".", "--no-cache", *options)
    (cold, cold_run), (warm, warm_run), (_, plain) = *runs, uncached
    assert cold["code"] == warm["code"]
    assert cold_run.stdout == warm_run.stdout == plain.stdout
    assert cold_run.stderr == warm_run.stderr == plain.stderr


def test_the_cache_still_tells_settings_apart(project):
    devlint_in_subprocess(project, ".", "--output-format", "json")
    other, done = devlint_in_subprocess(project, ".", "--output-format", "json", "--select", "DL002")
    assert _imports_libcst(other["modules"])  # other rules: other entries, checked afresh
    assert {f["code"] for f in json.loads(done.stdout)} == {"DL002", "DL100"}  # DL100: extend-select
    (project / "pyproject.toml").write_text('[tool.devlint]\nextend-select = ["DL100"]\n')  # b.py: DL002 again
    changed, done = devlint_in_subprocess(project, ".", "--output-format", "json")
    assert _imports_libcst(changed["modules"])
    assert ("src/b.py", "DL002") in {(Path(f["path"]).as_posix(), f["code"]) for f in json.loads(done.stdout)}


def test_errors_are_never_cached_and_still_reported_warm(project):
    write(project / "src" / "broken.py", "def f(:\n")
    first, run1 = devlint_in_subprocess(project, ".")
    second, run2 = devlint_in_subprocess(project, ".")
    assert first["code"] == second["code"] == 2
    assert "src/broken.py:1" in run2.stderr and run1.stderr == run2.stderr


def test_the_cache_key_covers_the_rules_that_apply_to_each_file(tmp_path):
    config = Config(per_file_ignores=(("skip/*", ("DL001",)),), root=str(tmp_path))
    assert "DL001" not in config.codes_for(str(tmp_path / "skip" / "a.py"))
    assert "DL001" in config.codes_for(str(tmp_path / "keep" / "a.py"))
    data = BUGGY.encode()
    place = str(tmp_path / "a.py")  # the same place: the rules alone tell the keys apart
    assert ResultCache.key(data, config.codes_for(str(tmp_path / "skip" / "a.py")), ".py", place) != \
        ResultCache.key(data, config.codes_for(str(tmp_path / "keep" / "a.py")), ".py", place)


# -- .gitignore matching: the same answers as pathspec, faster --------------------------------------------
PATTERNS = [
    "*.py[cod]", "build/", "/dist", "!keep.py", "docs/**/gen", "**/cache/", "a/**/b.py", "\\#hash.py", "\\!bang.py",
    "name with space.py", "trailing.py   ", "trailing\\ .py", "[abc].py", "[!x]y.py", "x?.py", "**", "*", "/",
    "sub/", "sub/*.py", "!sub/keep.py", "deep/nested/dir/", "*.egg-info/", "# comment", "", "  ", "***/x",
    "[(?P<ps_d>].py", "(?P<ps_d>x", "**/", "/**/z.py", "foo/**", "!/root_only.py", ".*", "!*.pyi",
]
PATHS = ["a.py", "b.pyc", "keep.py", "sub/keep.py", "sub/x.py", "sub/", "build/", "x/build/", "dist/", "x/dist/",
         "docs/a/b/gen", "docs/gen/", "x/cache/", "cache/", "a/b.py", "a/x/y/b.py", "#hash.py", "!bang.py",
         "name with space.py", "trailing.py", "trailing .py", "a.py/", "c.py", "xy.py", "yy.py", "x1.py",
         "deep/nested/dir/", "deep/nested/dir/f.py", "pkg.egg-info/", "P.py", "(.py", "root_only.py",
         "x/root_only.py", "z.py", "q/z.py", "foo/", "foo/bar.py", ".hidden.py", ".hidden/", "x/x",
         "ps_d.py", "d.py", ").py"]


@pytest.mark.parametrize("seed", range(40))
def test_the_matcher_answers_as_pathspec(seed):
    rng = random.Random(seed)
    lines = rng.sample(PATTERNS, rng.randint(1, 12))
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    match = files._Matcher(lines)
    for path in PATHS:
        assert match(path) == spec.match_file(path), (lines, path)


def test_the_joined_regex_is_used_for_ordinary_files_and_refused_when_unsafe():
    assert files._Matcher(["*.py[cod]", "build/", "!keep.py", "/dist"]).any_pattern is not None
    # The group's text inside a character class: joining would change the class, so it is not joined.
    assert files._Matcher(["[(?P<ps_d>].py", "*.pyc"]).any_pattern is None
    assert files._Matcher(["# only a comment"]).any_pattern.search("a.py") is None


def _reference_discover(paths, exclude=None, extend_exclude=(), root="."):
    """The discovery before the fast matcher (pathspec on every path, os.path.realpath on every file)."""
    found, seen = [], set()
    names = files.DEFAULT_EXCLUDES if exclude is None else frozenset()
    patterns = [*(exclude or ()), *extend_exclude]
    spec = pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None
    top_root = os.path.abspath(root)

    def excluded(path, is_dir):
        name = os.path.basename(path)
        if name in names or (is_dir and name.endswith(".egg-info") and names):
            return True
        if spec is None:
            return False
        relative = os.path.relpath(os.path.abspath(path), top_root).replace(os.sep, "/")
        return spec.match_file(relative + ("/" if is_dir else ""))

    for start in paths:
        if not os.path.isdir(start):
            if os.path.lexists(start) and os.path.realpath(start) not in seen:
                seen.add(os.path.realpath(start))
                found.append(start)
            continue
        specs = {}
        top = repository = os.path.abspath(start)
        while not os.path.exists(os.path.join(repository, ".git")):
            parent = os.path.dirname(repository)
            if parent == repository:
                repository = top
                break
            repository = parent

        def enter(directory):
            directory = os.path.abspath(directory)
            if directory not in specs:
                try:
                    with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as handle:
                        specs[directory] = pathspec.GitIgnoreSpec.from_lines(handle)
                except OSError:
                    specs[directory] = None

        def ignored(path, is_dir):
            path = os.path.abspath(path)
            for directory, each in specs.items():
                if each is not None and path.startswith(directory + os.sep):
                    relative = os.path.relpath(path, directory).replace(os.sep, "/")
                    if each.match_file(relative + ("/" if is_dir else "")):
                        return True
            return False

        folder = top
        while True:
            enter(folder)
            if folder == repository:
                break
            folder = os.path.dirname(folder)
        visited = set()
        for directory, subdirs, filenames in os.walk(start, followlinks=True):
            info = os.stat(directory)
            if (info.st_dev, info.st_ino) in visited:
                subdirs[:] = []
                continue
            visited.add((info.st_dev, info.st_ino))
            enter(directory)
            subdirs[:] = sorted(d for d in subdirs if not excluded(os.path.join(directory, d), True)
                                and not ignored(os.path.join(directory, d), True))
            for name in sorted(filenames):
                path = os.path.join(directory, name)
                if name.endswith(files.PYTHON_SUFFIXES) and not excluded(path, False) and not ignored(path, False):
                    key = os.path.realpath(path)
                    if key not in seen:
                        seen.add(key)
                        found.append(path)
    return found


@pytest.mark.parametrize("seed", range(12))
def test_discovery_finds_what_it_found_before(tmp_path, seed, monkeypatch):
    rng = random.Random(seed)
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    folders = ["", "sub", "sub/deep", "build", "x/build", "docs/a", "a/x", "cache", "pkg.egg-info", "foo",
               "deep/nested/dir", ".venv/lib", "generated"]
    for folder in folders:
        for name in rng.sample(["a.py", "b.pyc", "keep.py", "x.py", "xy.py", "root_only.py", "z.py", "n.ipynb",
                                "t.pyi", "notes.txt", ".hidden.py"], 4):
            write(root / folder / name, "x = 1\n")
        if rng.random() < 0.4:
            write(root / folder / ".gitignore", "\n".join(rng.sample(PATTERNS, rng.randint(1, 6))) + "\n")
    if hasattr(os, "symlink"):
        os.symlink(root / "sub", root / "linked")  # the same files twice: reported once
        os.symlink(root, root / "sub" / "loop")
        os.symlink(root / "a.py", root / "alias.py")
    monkeypatch.chdir(tmp_path)
    exclude = rng.choice([None, [], ["sub/"], ["*.pyi", "!t.pyi"]])
    extend = rng.choice([(), ("foo/",), ("deep/**",)])
    for paths, where in ((["repo"], "."), ([str(root)], str(root)), (["repo/sub", "repo"], "repo"),
                         (["repo", "repo/a.py"], str(tmp_path))):
        assert files.discover(paths, exclude, extend, where).files == \
            _reference_discover(paths, exclude, extend, where)


def test_a_warm_run_imports_only_what_it_uses(project):
    """Start-up (issue 28): no writer's modules (tempfile, with shutil and random), no diff, no other
    output format, notebook adapter, virtual GPU or language server when a warm run writes nothing."""
    devlint_in_subprocess(project, ".")
    warm, _ = devlint_in_subprocess(project, ".")
    unused = {"tempfile", "shutil", "difflib", "pickle", "devlint.formats", "devlint.documents.notebook", "devlint.fixer",
              "devlint.virtual_gpu", "devlint.virtual_gpu_runner", "devlint.server", "devlint.analysis.project"}
    assert not unused & set(warm["modules"])
