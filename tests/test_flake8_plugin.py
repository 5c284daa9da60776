"""The flake8 plugin, run by the real flake8: the same findings as `devlint` at the same positions."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flake8")

ROOT = Path(__file__).resolve().parent.parent
# The golden fixtures of the rules on by default: a hundred-odd findings of fourteen rules.
FIXTURES = sorted(ROOT.glob("tests/fixtures/DL0*/*.py"))
FORMAT = "%(path)s\t%(row)d\t%(col)d\t%(code)s\t%(text)s"


def flake8(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # --isolated: no flake8 configuration of the machine or the repository; devlint's
    # [tool.devlint] is still read, as devlint reads it. One process: the suite runs on every core already.
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--jobs=1", f"--format={FORMAT}", *args, "."],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def flake8_findings(cwd: Path, *args: str) -> list[tuple]:
    done = flake8(cwd, *args)
    assert "Traceback" not in done.stderr, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    # flake8 shows `./a.py`; its columns are 1-based (it adds one to the plugin's 0-based offset).
    return sorted((path.removeprefix("./"), int(row), int(col), code, text.removeprefix(f"{code} "))
                  for path, row, col, code, text in rows)


def devlint_findings(cwd: Path) -> list[tuple]:
    done = subprocess.run([sys.executable, "-m", "devlint", "--no-cache", "--output-format", "json", "."],
                          cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    # devlint's JSON columns are 1-based too (its text output's `path:line:column:`).
    return sorted((f["path"], f["line"], f["column"], f["code"], f["message"]) for f in json.loads(done.stdout))


def test_same_findings_at_the_same_positions_as_devlint(tmp_path):
    for fixture in FIXTURES:
        shutil.copy(fixture, tmp_path / f"{fixture.parent.name}_{fixture.name}")
    expected = devlint_findings(tmp_path)
    assert len({code for _, _, _, code, _ in expected}) >= 10  # many rules, not one
    assert flake8_findings(tmp_path, "--select", "DL") == expected


def test_devlint_configuration_applies_and_flake8_selection_filters(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.devlint]\nextend-select = ["DL100"]\nper-file-ignores = { "quiet.py" = ["DL001"] }\n'
        'max-file-size = 150\n')
    (tmp_path / ".git").mkdir()  # the project's root: the search for pyproject.toml stops here
    source = "import torch\nm = torch.nn.Linear(2, 2).cuda()\nx = torch.zeros(1)  # noqa: DL001\n"
    (tmp_path / "loud.py").write_text(source)
    (tmp_path / "quiet.py").write_text(source)
    # A coding cookie: flake8 hands over decoded lines; the columns still count characters.
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9\xe9'; "
                                        b"t = torch.load('w.pt')\n")
    (tmp_path / "big.py").write_text("import torch\n" + "m = torch.nn.Linear(2, 2).cuda()\n" * 6)  # skipped
    expected = devlint_findings(tmp_path)
    assert {(path, code) for path, _, _, code, _ in expected} == {
        ("loud.py", "DL001"), ("loud.py", "DL100"), ("latin.py", "DL002")}  # quiet.py: DL001 is off there
    assert flake8_findings(tmp_path, "--select", "DL") == expected
    # flake8's own selection works as for any plugin.
    assert flake8_findings(tmp_path, "--select", "DL", "--extend-ignore", "DL100") == [
        f for f in expected if f[3] != "DL100"]


def test_bad_configuration_is_one_finding_not_a_crash(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nselect = ["DL999"]\n')
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text("import torch\nm = torch.nn.Linear(2, 2).cuda()\n")
    done = flake8(tmp_path, "--select", "DL")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    path, row, col, code, text = done.stdout.strip().split("\t")
    assert (path, row, col, code) == ("./a.py", "1", "1", "DL000")
    assert "pyproject.toml: [tool.devlint] select: unknown rule code or prefix 'DL999'" in text


def test_flake8_start_up_does_not_import_libcst():
    # flake8 imports every plugin on every run, whatever it checks: LibCST loads on the first file.
    code = "import sys, devlint.flake8_plugin; print(sorted(m for m in sys.modules if m.startswith('libcst')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
