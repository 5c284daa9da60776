"""Shared test helpers: lint or fix a snippet through the real engine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from devlint.config import Config
from devlint.context import FixOptions
from devlint.engine import fix_text, lint_text

ROOT = Path(__file__).resolve().parent.parent
# Real code for tests that compare two ways of computing the same thing: the golden fixtures and
# devlint's own sources.
REAL_FILES = sorted(ROOT.glob("tests/fixtures/DL*/*.py")) + sorted(ROOT.glob("devlint/**/*.py"))


def lint(source: str, select: str = "ALL", **options):
    return lint_text(source, Config(select=(select,), fix_options=FixOptions(**options)))


def codes(source: str, select: str = "ALL") -> list[tuple[int, str]]:
    return [(f.start.line, f.code) for f in lint(source, select)]


def fix(source: str, select: str = "ALL", unsafe: bool = False, **options) -> str:
    config = Config(select=(select,), fix=True, unsafe_fixes=unsafe, fix_options=FixOptions(**options))
    return fix_text(source, config)[0]


def parses(source: str) -> bool:
    """Whether Python reads `source` (DL017's examples do not: they show code only --fix makes valid)."""
    try:
        compile(source, "<example>", "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def count_checks(monkeypatch) -> list[str]:
    """The paths the runner checks (not served from the cache) from now on in this test."""
    from devlint import runner

    checked: list[str] = []
    real = runner.check_file

    def counting(path, config, **kwargs):
        checked.append(path)
        return real(path, config, **kwargs)

    monkeypatch.setattr(runner, "check_file", counting)
    return checked


def run_python(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`python ARGS` in `cwd` as the runtime proofs run programs (`-m devlint run --virtual-gpu prog.py`,
    `prog.py` with CUDA_VISIBLE_DEVICES=""): no bytecode files, no colour, no warnings in the output."""
    quiet = {"PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **quiet, **env}, timeout=240)


# A golden fixture marks each expected finding on its line: `x.cuda()  # error: DL001` (or `DL001, DL004`).
MARKER = re.compile(r"#\s*error:\s*(?P<codes>DL\d+(?:\s*,\s*DL\d+)*)")


def expected_markers(source: str) -> set[tuple[int, str]]:
    """(line, code) of every `# error: CODE` marker in `source`."""
    expected = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = MARKER.search(line)
        if match:
            expected |= {(number, code.strip()) for code in match.group("codes").split(",")}
    return expected


def record_jobs(monkeypatch) -> dict:
    """Spy on the number of workers the CLI hands to check_files: the dict's "jobs" after a run."""
    from devlint import cli

    seen: dict = {}
    real = cli.check_files

    def spy(files, config, **options):
        seen["jobs"] = options["jobs"]
        return real(files, config, **options)

    monkeypatch.setattr(cli, "check_files", spy)
    return seen
