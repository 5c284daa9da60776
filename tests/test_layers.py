"""The layers are checked: import-linter's contracts in pyproject.toml ([tool.importlinter]) must be
kept. A module that imports from a layer above its own, or a new import loop, fails here; the
message is the contract, then import-linter's report of the imports that break it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _contract() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    start = text.index("# The layers of devlint")
    following = re.search(r"^\[(?!\[?tool\.importlinter)", text[start:], re.MULTILINE)
    return text[start:start + following.start()] if following else text[start:]


def test_the_imports_keep_the_layers_and_make_no_loop():
    done = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
         "pyproject.toml", "--no-cache", "--no-logo"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, (
        "an import breaks devlint's layers (see CONTRIBUTING.md). The contract:\n\n"
        f"{_contract()}\nimport-linter says:\n{done.stdout}{done.stderr}"
    )


def test_no_contract_ignores_an_import():
    # An ignored import is a loop or an upward import the contract no longer sees: analyses that rest on
    # each other go through devlint.facts.answer instead (CONTRIBUTING.md).
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "ignore_imports" not in text[text.index("[tool.importlinter]"):]


def test_an_analysis_asked_before_its_module_is_loaded_says_so():
    from devlint.facts import answer

    try:
        answer("no such question")
    except LookupError as error:
        assert "no such question" in str(error)
    else:
        raise AssertionError("an unanswered question must fail loudly, not answer None")
