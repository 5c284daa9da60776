"""Every rule's documented examples are tests: VALID are not flagged, INVALID are, fixes are exact."""

from __future__ import annotations

import importlib
import pkgutil
import re

import libcst as cst
import pytest

import devlint.rules
from devlint.config import Config
from devlint.engine import check_source
from devlint.rules import ALL_RULES
from tests.helpers import codes, fix

VALID = [pytest.param(rule, source, id=f"{rule.code}-valid-{i}") for rule in ALL_RULES for i, source in enumerate(rule.VALID)]
INVALID = [pytest.param(rule, case, id=f"{rule.code}-invalid-{i}") for rule in ALL_RULES for i, case in enumerate(rule.INVALID)]


@pytest.mark.parametrize("rule, source", VALID)
def test_valid_example_is_not_flagged(rule, source):
    assert [c for _, c in _codes(source) if c == rule.code] == []


@pytest.mark.parametrize("rule, case", INVALID)
def test_invalid_example_is_flagged(rule, case):
    assert [c for _, c in _codes(case.code) if c == rule.code] == [rule.code] * case.count


@pytest.mark.parametrize("rule, case", INVALID)
def test_invalid_example_fix(rule, case):
    select = getattr(rule, "EXAMPLES_SELECT", rule.code)
    fixed = fix(case.code, select=select, unsafe=case.unsafe)
    if case.fixed is not None:
        assert fixed == case.fixed
    cst.parse_module(fixed)
    assert fix(fixed, select=select, unsafe=case.unsafe) == fixed  # idempotent


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_every_not_flagged_case_in_the_docs_is_a_valid_example(rule):
    doc = rule.documentation()
    section = doc.split("## Not flagged", 1)[1].split("\n## ", 1)[0]
    bullets = [b for b in re.split(r"\n- ", "\n" + section.strip()) if b.strip()]
    assert bullets, "a rule documents what it does not flag"
    valid_text = _squash("\n".join(rule.VALID))
    for bullet in bullets:
        snippets = re.findall(r"`([^`]+)`", bullet)
        missing = [s for s in snippets if not all(_squash(part) in valid_text for part in s.split("..."))]
        assert not missing, f"{rule.code}: documented as not flagged but no VALID example shows {missing}"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_docs_have_the_fixed_headings(rule):
    doc = rule.documentation()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety",
                    "## Not flagged"):
        assert heading in doc, f"{rule.code} lacks {heading}"


def test_every_rule_module_is_registered():
    modules = {m.name for m in pkgutil.iter_modules(devlint.rules.__path__) if not m.name.startswith("_")}
    registered = {r.__module__.rsplit(".", 1)[-1] for r in ALL_RULES}
    assert modules == registered
    for name in modules:
        importlib.import_module(f"devlint.rules.{name}")


def test_codes_and_names_are_fixed():
    assert [(r.code, r.name) for r in ALL_RULES][:3] == [
        ("DL001", "cuda-call"),
        ("DL002", "torch-load-without-map-location"),
        ("DL003", "discarded-tensor-move"),
    ]


def _codes(source: str) -> list[tuple[int, str]]:
    """As tests.helpers.codes; for an example that does not parse (DL017's `x.cuda(async=True)`),
    the findings reported beside its syntax error."""
    try:
        return codes(source)
    except cst.ParserSyntaxError:
        result = check_source("-", source.encode(), Config(select=("ALL",)))
        assert result.error is not None and result.error.message.startswith("SyntaxError")
        return [(f.start.line, f.code) for f in result.findings]


def _squash(text: str) -> str:
    """Whitespace-insensitive comparison of documented snippets with example code."""
    return "".join(text.split())
