"""The project index (devlint/analysis/project.py): facts from the other files of a project.

The golden project tests/fixtures_project/multifile/ is checked one file at a time with its path (as
pre-commit, stdin with --stdin-filename and an editor check it): the `# error:` markers must equal the
findings. The rest: every import form, cycles, shadowing, the result cache's dependencies, worker
processes, and exactness (a file that imports nothing from the project is checked as before).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from devlint import engine, runner
from devlint.cache import ResultCache, settings_key
from devlint.config import Config
from devlint.engine import check_source, project_view
from devlint.model import Applicability
from devlint.analysis.project import ProjectIndex, ProjectView
from devlint.analysis.project_files import summarise_file
from devlint.rules import ALL_RULES
from devlint.analysis.vocabulary import VOCABULARY
from tests.helpers import count_checks, expected_markers, parses

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "fixtures_project" / "multifile"
CHECKED = [PROJECT / "pkg" / "train.py", PROJECT / "scripts" / "run.py"]
ALL = Config(select=("ALL",))


def _check(path: Path, config: Config = ALL):
    result = check_source(str(path), path.read_bytes(), config)
    assert result.error is None, result.error
    return result


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: str(p.relative_to(PROJECT)))
def test_markers_match_findings_when_checked_alone(path):
    found = {(f.start.line, f.code) for f in _check(path).findings}
    assert found == expected_markers(path.read_text())


def test_without_a_path_nothing_is_known_from_the_project():
    """stdin without --stdin-filename: the file's own facts only (today's findings)."""
    path = CHECKED[0]
    result = check_source("-", path.read_bytes(), ALL)
    assert {f.code for f in result.findings} == {"DL001"}  # (the module-classes and overrides are unknown)
    assert all(f.fix.applicability is Applicability.SAFE for f in result.findings)


def _applicability(path: Path) -> dict[int, Applicability]:
    return {f.start.line: f.fix.applicability for f in _check(path).findings if f.code == "DL001"}


def test_dl001_fix_is_unsafe_on_a_project_class_that_overrides_cuda():
    text = CHECKED[0].read_text().splitlines()
    by_line = _applicability(CHECKED[0])
    line = {fragment: next(i for i, t in enumerate(text, 1) if fragment in t)
            for fragment in ("a = WithTable()", "b = b.cuda()", "c = OnlySuper()", "d = Deep()")}
    assert by_line[line["a = WithTable()"]] is Applicability.UNSAFE  # defines cuda()
    assert by_line[line["b = b.cuda()"]] is Applicability.UNSAFE  # inherits it (a name bound to one)
    assert by_line[line["c = OnlySuper()"]] is Applicability.SAFE  # only `return super().cuda(device)`
    assert by_line[line["d = Deep()"]] is Applicability.SAFE  # no override anywhere up its bases
    titles = {f.start.line: f.fix.title for f in _check(CHECKED[0]).findings if f.code == "DL001"}
    assert "from another file of the project, overrides `cuda()`" in titles[line["a = WithTable()"]]


def test_dl001_a_class_of_the_file_built_on_an_overriding_project_class():
    text = CHECKED[1].read_text().splitlines()
    by_line = _applicability(CHECKED[1])
    local = next(i for i, t in enumerate(text, 1) if "Local().cuda()" in t)
    plain = next(i for i, t in enumerate(text, 1) if "Net().cuda()" in t)
    assert by_line == {local: Applicability.UNSAFE, plain: Applicability.SAFE}


def test_dl001_an_unrelated_override_in_the_file_keeps_todays_unsafe_fix(tmp_path):
    project = _copy(tmp_path)
    script = project / "scripts" / "other.py"
    script.write_text(
        "import torch\nfrom pkg.models import Deep\n\n\nclass Own(torch.nn.Module):\n"
        "    def cuda(self, device=None):\n        print('moving')\n        return super().cuda(device)\n\n\n"
        "d = Deep().cuda()\n"
    )
    findings = _check(script).findings
    assert [(f.start.line, f.fix.applicability) for f in findings] == [(11, Applicability.UNSAFE)]
    assert "this file defines a `cuda()` override" in findings[0].fix.title


# -- the index itself -------------------------------------------------------------------------------
def _view(path: Path) -> ProjectView:
    return ProjectView(str(path), VOCABULARY, ProjectIndex())


@pytest.mark.parametrize("qualified, kind", [
    ("pkg.models.Net", "module"),  # absolute, through pkg/base.py
    (".models.Deep", "module"),  # relative, two files down to nn.Module
    ("pkg.PublicNet", "module"),  # re-exported by pkg/__init__.py
    ("pkg.models.Plain", None),  # subclasses a project class that is not a module
    ("pkg.data.make_batch", "tensor"),
    ("pkg.models.make_batch", "tensor"),  # `x = torch.randn(...)`, `return x.float()`
    (".data.make_model", "module"),
    (".data.make_deep", "module"),  # `models.Deep().float()` (a module's method returns it)
    (".data.either", None),  # a tensor or a module
    (".data.make_dict", None),
    (".data.passthrough", None),
    (".data.countdown", "tensor"),  # a direct recursive call returns what the other returns do
    (".cycle_a.ping", None),  # mutually recursive across two files: unknown, and it ends
    (".data.nothing_here", None),
    ("numpy.zeros", None),  # outside the project
    ("torch.zeros", None),  # torch is never the project's (the inference knows it already)
])
def test_call_kinds(qualified, kind):
    view = _view(PROJECT / "pkg" / "train.py")
    assert view.call_kind(qualified) == kind


def test_values_and_classes():
    view = _view(PROJECT / "pkg" / "train.py")
    assert view.value_kind("pkg.data.BATCH") == "tensor"
    assert view.value_kind("pkg.data.make_batch") is None
    assert view.overrides_cuda(view.class_of(".models.Inherits"))
    assert not view.overrides_cuda(view.class_of(".models.OnlySuper"))
    assert view.class_of(".data.make_batch") is None
    # what answered: the files read, with the digests of what they held
    assert set(view.used) == {str(PROJECT / "pkg" / name) for name in
                              ("data.py", "models.py", "base.py")}


def test_a_module_imported_whole(tmp_path):
    project = _copy(tmp_path)
    script = project / "pkg" / "other.py"
    script.write_text("import torch\nimport pkg.data\nfrom . import models as mm\n\n"
                      "def go(device):\n    b = pkg.data.make_batch()\n    b.to(device)\n"
                      "    n = mm.Net()\n    n.to(device)\n")
    assert [(f.start.line, f.code) for f in _check(script).findings] == [(7, "DL003")]


def test_only_the_files_needed_are_read(tmp_path):
    project = _copy(tmp_path)
    (project / "pkg" / "unrelated.py").write_text("def f(:\n")  # never imported: never read
    index = ProjectIndex()
    view = ProjectView(str(project / "pkg" / "train.py"), VOCABULARY, index)
    assert view.call_kind(".data.make_batch") == "tensor"
    assert set(index._files) == {str(project / "pkg" / "data.py")}


def test_broken_or_odd_project_files_answer_unknown(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "broken.py").write_text("def make(:\n")
    (tmp_path / "twice.py").write_text("import torch\ndef make():\n    return torch.zeros(1)\nmake = None\n")
    (tmp_path / "star.py").write_text("from twice import *\nfrom stars2 import *\n")
    (tmp_path / "stars2.py").write_text("from star import *\nimport torch\ndef good():\n    return torch.ones(1)\n")
    (tmp_path / "gen.py").write_text("import torch\ndef make():\n    yield torch.zeros(1)\n"
                                     "@some.decorator\ndef deco():\n    return torch.zeros(1)\n"
                                     "@torch.no_grad()\ndef fine():\n    return torch.zeros(1)\n")
    view = _view(tmp_path / "main.py")
    assert view.call_kind("broken.make") is None
    assert view.call_kind("twice.make") is None  # bound twice at the top of its file
    assert view.call_kind("star.good") == "tensor"  # through star imports that import each other
    assert view.call_kind("star.missing") is None
    assert view.call_kind("gen.make") is None and view.call_kind("gen.deco") is None
    assert view.call_kind("gen.fine") == "tensor"


def test_torch_itself_is_never_the_project(tmp_path):
    """Checking torch's own sources: `from .module import Module` inside torch/nn/modules is torch's
    Module, an external name the inference knows, not a project class with no bases."""
    folder = tmp_path / "torch" / "nn" / "modules"
    folder.mkdir(parents=True)
    for package in (tmp_path / "torch", tmp_path / "torch" / "nn", folder):
        (package / "__init__.py").write_text("")
    (folder / "module.py").write_text("class Module:\n    pass\n")
    (folder / "linear.py").write_text("from .module import Module\nclass Linear(Module):\n    pass\n")
    view = _view(folder / "conv.py")
    assert view.resolve(".linear.Linear") == ("external", "torch.nn.modules.linear.Linear")
    assert view.call_kind(".linear.Linear") is None  # (an external name: the inference's own business)


def test_summaries_are_plain_data():
    import pickle

    facts = summarise_file("m.py", (PROJECT / "pkg" / "models.py").read_bytes(), "pkg.models")
    assert pickle.loads(pickle.dumps(facts)) == facts


# -- the result cache -------------------------------------------------------------------------------
def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(PROJECT, target)
    return target


def _run(paths, cache, jobs=1):
    return runner.check_files([str(p) for p in paths], ALL, write=False, jobs=jobs, cache=cache)


def test_cache_rechecks_a_file_when_a_fact_it_used_changes(tmp_path, monkeypatch):
    project = _copy(tmp_path)
    train, models, data = project / "pkg" / "train.py", project / "pkg" / "models.py", project / "pkg" / "data.py"
    config_key = settings_key(ALL)

    def run_once():
        cache = ResultCache(str(tmp_path / "cache"), config_key)
        results = _run([train], cache)
        cache.save()
        return results[0].findings

    first = run_once()
    checked = count_checks(monkeypatch)
    assert run_once() == first and checked == []  # a warm run over an unchanged tree checks nothing

    # WithTable loses its cuda() override: train.py is checked again and its fix becomes safe
    models.write_text(models.read_text().replace("    def cuda(self, device=None):\n"
                                                 "        self.table = self.table.cuda(device)\n"
                                                 "        return super().cuda(device)\n", ""))
    second = run_once()
    assert checked == [str(train)]
    assert [f.fix.applicability for f in second if f.code == "DL001"].count(Applicability.UNSAFE) \
        < [f.fix.applicability for f in first if f.code == "DL001"].count(Applicability.UNSAFE)

    # make_batch() of pkg/data.py stops returning a tensor: its two DL003 findings go
    data.write_text(data.read_text().replace("    return torch.zeros(n, 3)", "    return [n, 3]"))
    third = run_once()
    assert checked == [str(train), str(train)]
    assert sum(f.code == "DL003" for f in third) == sum(f.code == "DL003" for f in second) - 2

    # Base (so Net, Deep, ...) stops subclassing nn.Module, two files away: checked again
    base = project / "pkg" / "base.py"
    base.write_text(base.read_text().replace("class Base(nn.Module):", "class Base:"))
    assert run_once() == third and checked == [str(train)] * 3
    assert project_view(str(train)).call_kind(".models.Deep") is None
    assert run_once() == third and len(checked) == 3


def test_a_dependency_that_disappears_is_a_miss(tmp_path, monkeypatch):
    project = _copy(tmp_path)
    train = project / "pkg" / "train.py"
    cache = ResultCache(str(tmp_path / "cache"), settings_key(ALL))
    _run([train], cache)
    cache.save()
    (project / "pkg" / "data.py").unlink()
    checked = count_checks(monkeypatch)
    results = _run([train], ResultCache(str(tmp_path / "cache"), settings_key(ALL)))
    assert checked == [str(train)] and results[0].error is None


def test_workers_answer_the_same(tmp_path, monkeypatch):
    project = _copy(tmp_path)
    paths = sorted(project.rglob("*.py"))
    alone = {str(p): _check(p).findings for p in paths}
    monkeypatch.setattr(runner, "MIN_FILES_FOR_WORKERS", 1)
    results = _run(paths, None, jobs=2)
    assert {r.path: r.findings for r in results} == alone
    assert any(r.findings for r in results)


# -- exactness: a file that imports nothing from the project is checked as without the index ---------
SOURCES = sorted(ROOT.glob("tests/fixtures/DL*/*.py")) + sorted(ROOT.glob("examples/*.py"))
SNIPPETS = [s for s in [example for rule in ALL_RULES for example in rule.VALID] + [
    case.code for rule in ALL_RULES for case in rule.INVALID
] if parses(s)]


def _with_and_without(text: str, path: str) -> tuple[list, list, dict]:
    view = project_view(path)
    with_index = engine.lint_text(text, ALL, project=view)
    return with_index, engine.lint_text(text, ALL), view.used


def test_same_findings_without_project_imports_on_files():
    for path in SOURCES:
        with_index, without, used = _with_and_without(path.read_text(), str(path))
        assert used == {}, path
        assert with_index == without, path


def test_same_findings_without_project_imports_on_examples(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text("import torch\nclass Net(torch.nn.Module):\n    pass\n"
                                        "def make():\n    return torch.zeros(1)\n")
    # (named as a test file: text checked without a path is taken to be one that pytest may collect,
    # so that a `tmp_path` parameter is pytest's fresh folder there too: devlint.analysis.fresh_folders)
    for source in SNIPPETS:
        with_index, without, used = _with_and_without(source, str(tmp_path / "test_snippet.py"))
        if not used:  # (a snippet importing `models` or `make` would see the project's)
            assert with_index == without, source
