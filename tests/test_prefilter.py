"""The cheap pre-pass never changes what is found: same findings with and without it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from devlint import engine
from devlint.config import Config
from devlint.context import FileContext
from devlint.prefilter import summarise
from devlint.rules import ALL_RULES
from tests.helpers import parses

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(ROOT.glob("tests/fixtures/DL*/*.py")) + sorted(ROOT.glob("examples/*.py")) + sorted(
    ROOT.glob("devlint/**/*.py")
)
SNIPPETS = [s for s in [example for rule in ALL_RULES for example in rule.VALID] + [
    case.code for rule in ALL_RULES for case in rule.INVALID
] if parses(s)]


def _both_ways(source: str, monkeypatch) -> tuple[list, list]:
    config = Config(select=("ALL",))
    with_prefilter = engine.lint_text(source, config)
    monkeypatch.setattr(engine, "_may_match", lambda text, rules: True)
    # ... and without the scope-free rejection of receivers that cannot be tensors
    monkeypatch.setattr(FileContext, "possible_kinds", property(lambda ctx: ctx.kinds))
    without = engine.lint_text(source, config)
    monkeypatch.undo()
    return with_prefilter, without


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_findings_on_files(path, monkeypatch):
    first, second = _both_ways(path.read_text(), monkeypatch)
    assert first == second


@pytest.mark.parametrize("source", SNIPPETS)
def test_same_findings_on_examples(source, monkeypatch):
    first, second = _both_ways(source, monkeypatch)
    assert first == second


def test_files_without_candidates_are_skipped():
    rules = Config(select=("ALL",)).rules()
    plain = summarise("import json\nx = json.load(f)\nmodel.eval()\n")
    assert not any(rule.could_match(plain) for rule in rules)
    assert summarise("x = (\n") is None  # unreadable by ast: the full parse decides


def test_dl013_asks_for_a_loop_that_rebinds_its_variable_to_a_moved_copy():
    from devlint.rules.rebound_loop_variable_move import ReboundLoopVariableMove as rule

    assert not rule.could_match(summarise("y = x.to(d)\nfor t in ts:\n    u = t.float()\n    t = other.cuda()\n"))
    for source in ("for t in ts:\n    t = t.to(d).float()\n", "async def f():\n    async for k, t in ts:\n        t = t.cuda()\n"):
        assert rule.could_match(summarise(source)), source


@pytest.mark.parametrize(
    "source",
    [
        "import torch as th\nth.load(f)\n",
        "from torch import load as tl\ntl(f)\n",
        "from torch import *\nload(f)\n",
        "torch.load(f)\n",
        "x.cuda()\n",
        "t.float()\n",
        "[t.to(d) for t in ts]\n",
    ],
)
def test_candidates_pass_the_prefilter(source):
    summary = summarise(source)
    assert any(rule.could_match(summary) for rule in ALL_RULES)


@pytest.mark.slow
def test_files_the_prepass_skips_in_the_torch_sources_have_no_findings(monkeypatch):
    """A real corpus both ways: a file the pre-pass skips, analysed in full with every rule, has no finding.

    (A file the pre-pass lets through is analysed the same way with or without it.) The torch==2.13.0
    sources are a hard case: `"cuda"` strings, imports from torch and `.type(...)` calls everywhere.
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from corpus import in_sample, python_files, sample_share, torch_sources

    config = Config(select=("ALL",))
    rules = config.rules()
    skipped = []
    root, every = torch_sources(), sample_share()  # a fixed quarter, or all with DEVLINT_FULL_CORPUS=1
    for path in python_files(root):
        if not in_sample(os.path.relpath(path, root), every):
            continue
        text = Path(path).read_text(encoding="utf-8")
        if not engine._may_match(text, rules):
            skipped.append((path, text))
    monkeypatch.setattr(engine, "_may_match", lambda text, rules: True)
    found = {path: engine.lint_text(text, config) for path, text in skipped}
    assert len(skipped) > 1000 // every  # the pre-pass does skip most of the files
    assert {path: findings for path, findings in found.items() if findings} == {}


def test_the_prepass_does_not_print_the_users_syntax_warnings():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = summarise('import torch\npattern = "\\d+"\nx = torch.ones(1).cuda()\n')
    assert summary is not None and "cuda" in summary.attribute_calls
    assert [str(w.message) for w in caught] == []


def _reference_depth(text: str) -> int:
    """The LibCST depth as the pre-pass first counted it: every node `ast.iter_child_nodes` gives,
    leaves (`Load`, `Add`, `Eq`) included, an f-string's literal parts excluded."""
    import ast

    from devlint.complexity import DepthCounter

    weight = DepthCounter(text).weight
    deepest, stack = 0, [(ast.parse(text), 0)]
    while stack:
        node, depth = stack.pop()
        depth += weight(node, depth)
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in ast.iter_child_nodes(node)
                     if not (isinstance(node, ast.JoinedStr) and isinstance(child, ast.Constant)))
    return deepest


DEPTH_CASES = [
    "x\n",
    "x = a\n",
    "a = -b\n",
    "f(a or b or c or d)\n",
    "y = a < b <= c\n",
    "s = f'{x!r:>{width}} and {y}' 'tail' 'more'\n",
    "t = ('a' 'b' 'c' 'd' 'e')\n",
    "z = [i * 2 for i in range(3) if not i]\n",
    "del a[0], b.c\n",
    "g = lambda q: (q + 1) ** 2\n",
    "x.to('cuda').cuda()[0].numpy()\n",
    "def f(*, a: int = 1) -> None:\n    global g\n    return a and not g\n",
    "(" * 90 + "x" + ")" * 90 + "\n",
    "y = " + " + ".join(["'s'"] * 150) + "\n",
    "y = " + " ".join(["'s'"] * 400) + "\n",
]


@pytest.mark.parametrize("source", DEPTH_CASES + [p.read_text() for p in SOURCES[:40]])
def test_the_depth_counts_every_level_the_first_count_did(source):
    # (the pre-pass no longer visits the leaves, one level each: a file at a limit stays at it)
    assert summarise.__wrapped__(source).depth == _reference_depth(source)
