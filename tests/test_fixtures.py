"""Golden fixtures: `# error: DLxxx` markers must equal the findings; output and fix diff are snapshots.

Every unmarked line of a fixture asserts "not flagged".
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from devlint.config import Config
from devlint.engine import check_source, fix_text, lint_text
from devlint.report import finding_line
from tests.helpers import expected_markers

FIXTURES = Path(__file__).parent / "fixtures"
# unparsed/: files that do not parse until --fix (DL017), kept apart from the fixtures other tests
# read as Python
CASES = sorted(p for p in FIXTURES.glob("DL*/*.py")) + sorted(FIXTURES.glob("unparsed/DL*/*.py"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_markers_match_findings(path):
    source = path.read_text()
    found = {(f.start.line, f.code) for f in _lint(source, Config(select=("ALL",)))}
    assert found == expected_markers(source)


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_snapshot(path, request):
    source = path.read_text()
    config = Config(select=("ALL",), fix=True, unsafe_fixes=True)
    findings = _lint(source, replace(config, fix=False))
    fixed, _, remaining = fix_text(source, config)
    cst.parse_module(fixed)
    assert fix_text(fixed, config)[0] == fixed, "a second --fix must change nothing"
    rendered = "\n".join(finding_line(path.name, f) for f in findings)
    diff = "".join(difflib.unified_diff(source.splitlines(True), fixed.splitlines(True), path.name, path.name))
    titles = "\n".join(f"{f.code} {f.fix.applicability.value}: {f.fix.title}" for f in findings if f.fix)
    snapshot = f"# findings\n{rendered}\n\n# fixes\n{titles}\n\n# diff (--fix --unsafe-fixes)\n{diff}"
    stored = path.with_suffix(".py.snap")
    if request.config.getoption("--update-snapshots"):
        stored.write_text(snapshot)
    assert stored.exists(), f"no snapshot for {path.name}: run pytest --update-snapshots and review it"
    assert snapshot == stored.read_text()


def _lint(source: str, config: Config):
    """The findings; for a fixture that does not parse (DL017), those reported beside its syntax error."""
    try:
        return lint_text(source, config)
    except cst.ParserSyntaxError:
        result = check_source("-", source.encode(), config)
        assert result.error is not None and result.error.message.startswith("SyntaxError")
        return result.findings
