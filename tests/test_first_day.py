"""Issue 17, the first day as a user: honest edges, --force-exclude, readable output, colour only on a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.files import discover

BUGGY = "import torch\nx = torch.zeros(3).cuda()\n"
UNSAFE = "import torch\nx = torch.zeros(1).cuda(1)\n"
ESC = "\x1b["


def devlint(*args: str, cwd: Path, env: dict | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=cwd, capture_output=True, text=True,
                          env={**clean, **(env or {})}, input=input, timeout=120)


# -- honest edges --------------------------------------------------------------------------------------
def test_a_missing_path_never_reads_as_success(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    proc = devlint("ok.py", "typo.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "typo.py: error: no such file or directory" in proc.stderr
    assert "All checks passed" not in proc.stdout
    assert "1 file could not be checked" in proc.stdout


def test_a_missing_path_is_counted_beside_findings(tmp_path):
    (tmp_path / "bug.py").write_text(BUGGY)
    proc = devlint("bug.py", "typo.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Found 1 error.\n1 file could not be checked (see the errors above).\n" in proc.stdout


def test_a_file_skipped_for_its_size_is_a_warning_not_a_pass(tmp_path):
    (tmp_path / "big.py").write_text(BUGGY)
    proc = devlint("big.py", "--max-file-size", "10", cwd=tmp_path)
    assert proc.returncode == 0  # as ruff: warnings do not fail the run
    assert "big.py: warning: skipped" in proc.stderr
    assert "All checks passed!" not in proc.stdout
    assert proc.stdout == "All checks passed, but 1 file was skipped (see the warnings above).\n"


@pytest.mark.parametrize("layout", ["empty", "no-python"])
def test_a_run_that_finds_no_python_file_says_so(tmp_path, layout):
    if layout == "no-python":
        (tmp_path / "notes.md").write_text("x.cuda()\n")
    proc = devlint(".", cwd=tmp_path)
    assert proc.returncode == 0
    assert "warning: no Python files found under ." in proc.stderr
    assert "All checks passed" not in proc.stdout
    assert "No Python files found" in proc.stdout


def test_a_named_non_python_file_is_skipped_with_one_line(tmp_path):
    (tmp_path / "README.md").write_text("# Title\n\nx = torch.zeros(1).cuda()\n")
    proc = devlint("README.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "README.md: warning: skipped: not a Python file (devlint checks .py, .pyi, .ipynb and files with a "
        "python shebang)"]
    assert "SyntaxError" not in proc.stderr and "DL001" not in proc.stdout
    assert "1 file was skipped" in proc.stdout


def test_a_named_script_with_a_python_shebang_is_checked(tmp_path):
    (tmp_path / "train").write_text("#!/usr/bin/env python3\n" + BUGGY)
    proc = devlint("train", cwd=tmp_path)
    assert proc.returncode == 1 and "train:3:20: DL001" in proc.stdout


def test_stdin_filename_alone_reads_stdin(tmp_path):
    (tmp_path / "other.py").write_text(BUGGY.replace("zeros", "ones"))  # must not be checked
    proc = devlint("--stdin-filename", "foo.py", cwd=tmp_path, input=BUGGY)
    assert proc.returncode == 1
    assert proc.stdout.startswith("foo.py:2:20: DL001")
    assert "other.py" not in proc.stdout


def test_help_lists_the_subcommands(tmp_path):
    for flag in ("--help", "-h"):
        proc = devlint(flag, cwd=tmp_path)
        assert proc.returncode == 0
        assert proc.stdout.startswith("Usage: python -m devlint [OPTIONS] COMMAND")
        commands = proc.stdout.split("Commands:", 1)[1]
        for name in ("check", "rule", "clean"):
            assert f"\n  {name} " in commands
    assert devlint("check", "--help", cwd=tmp_path).stdout.startswith("Usage: python -m devlint check")
    (tmp_path / "a.py").write_text(BUGGY)
    assert devlint("a.py", cwd=tmp_path).returncode == 1  # `devlint PATHS` still means `devlint check PATHS`


# -- --force-exclude -----------------------------------------------------------------------------------
def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["third_party/"]\n')
    for name in ("third_party/x.py", "build/y.py", "src/z.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(BUGGY)
    return tmp_path


def test_named_files_are_checked_unless_force_exclude(tmp_path):
    project = _project(tmp_path)
    named = devlint("third_party/x.py", "src/z.py", cwd=project)
    assert "third_party/x.py:2:20: DL001" in named.stdout
    forced = devlint("--force-exclude", "third_party/x.py", "src/z.py", cwd=project)
    assert forced.returncode == 1
    assert "third_party" not in forced.stdout and "src/z.py:2:20: DL001" in forced.stdout


def test_force_exclude_applies_the_default_excludes_and_folders_above(tmp_path, monkeypatch):
    project = _project(tmp_path)
    monkeypatch.chdir(project)
    assert discover(["build/y.py", "third_party", "src/z.py"], None, ("third_party/",), str(project)).files == \
        ["build/y.py", "src/z.py"]  # without the flag a named file is checked; a walk honours the excludes
    found = discover(["build/y.py", "third_party", "src/z.py"], None, ("third_party/",), str(project),
                     force_exclude=True)
    assert found.files == ["src/z.py"]


def test_force_exclude_with_only_excluded_files_passes_with_a_warning(tmp_path):
    project = _project(tmp_path)
    proc = devlint("--force-exclude", "third_party/x.py", cwd=project)
    assert proc.returncode == 0
    assert "warning: no Python files found under third_party/x.py" in proc.stderr


# -- output people like to read ------------------------------------------------------------------------
def test_walking_dot_prints_paths_without_dot_slash(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text(BUGGY)
    proc = devlint(".", cwd=tmp_path)
    assert proc.stdout.startswith("sub/a.py:2:20: DL001")
    assert "./" not in proc.stdout
    assert devlint(cwd=tmp_path).stdout == proc.stdout  # the default path is `.` too
    assert devlint("./sub", cwd=tmp_path).stdout.startswith("./sub/a.py:2:20")  # as typed


def test_plurals(tmp_path):
    (tmp_path / "a.py").write_text(UNSAFE)
    proc = devlint("a.py", cwd=tmp_path)
    assert "Found 1 error.\n" in proc.stdout
    assert "(1 hidden fix can be enabled with the `--unsafe-fixes` option.)" in proc.stdout
    (tmp_path / "b.py").write_text(UNSAFE)
    both = devlint("a.py", "b.py", cwd=tmp_path)
    assert "Found 2 errors.\n" in both.stdout and "(2 hidden fixes can be enabled" in both.stdout


def test_diff_ends_with_the_count_on_stderr(tmp_path):
    (tmp_path / "a.py").write_text(BUGGY + "y = torch.ones(2).cuda()\n")
    proc = devlint("--diff", "a.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.startswith("--- a.py\n+++ a.py\n")
    assert proc.stderr.rstrip("\n").splitlines()[-1] == "Would fix 2 errors."
    (tmp_path / "clean.py").write_text("x = 1\n")
    assert "No errors would be fixed." in devlint("--diff", "clean.py", cwd=tmp_path).stderr


def test_colour_only_when_asked_or_on_a_terminal(tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    piped = devlint("a.py", cwd=tmp_path)
    assert ESC not in piped.stdout
    forced = devlint("a.py", cwd=tmp_path, env={"FORCE_COLOR": "1"})
    assert ESC in forced.stdout
    assert "\x1b[31m\x1b[1mDL001\x1b[0m" in forced.stdout and "\x1b[1ma.py\x1b[0m" in forced.stdout
    assert "\x1b[36m [*]\x1b[0m" in forced.stdout and "\x1b[1mFound 1 error.\x1b[0m" in forced.stdout
    assert ESC not in devlint("a.py", cwd=tmp_path, env={"NO_COLOR": "1", "FORCE_COLOR": "1"}).stdout
    assert ESC not in devlint("a.py", "--output-format", "json", cwd=tmp_path, env={"FORCE_COLOR": "1"}).stdout
    devlint("a.py", "-o", "report.txt", cwd=tmp_path, env={"FORCE_COLOR": "1"})
    assert ESC not in (tmp_path / "report.txt").read_text()


def _on_a_terminal(tmp_path: Path, env: dict) -> str:
    main, secondary = pty.openpty()
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    clean["TERM"] = "xterm"
    proc = subprocess.Popen([sys.executable, "-m", "devlint", "a.py"], cwd=tmp_path, stdout=secondary,
                            stderr=subprocess.DEVNULL, env={**clean, **env})
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(main)
    return b"".join(chunks).decode()


@pytest.mark.skipif(not hasattr(pty, "openpty") or sys.platform == "win32", reason="needs a pseudo-terminal")
def test_colour_on_a_real_terminal_and_no_color_turns_it_off(tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    assert ESC in _on_a_terminal(tmp_path, {})
    assert ESC not in _on_a_terminal(tmp_path, {"NO_COLOR": "1"})


# -- recipes that can be followed ----------------------------------------------------------------------
README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_pre_commit_rev_is_a_commit_sha_or_a_documented_release_tag():
    import re

    section = _section("pre-commit")
    revs = re.findall(r"^\s*rev:\s*(\S+)", section, flags=re.M)
    assert revs, section
    for rev in revs:  # v0.1.0 named a tag that did not exist (`pathspec 'v0.1.0' did not match`)
        assert re.fullmatch(r"[0-9a-f]{40}", rev), rev
    assert "vX.Y.Z" in section and "sha" in section


def test_readme_ci_recipe_installs_from_the_repository():
    section = _section("CI")
    assert "pip install devlint" not in section  # no such distribution
    assert 'pip install "git+https://github.com/' in section


def test_show_fixes_prints_a_grouped_block_on_stdout(tmp_path):
    (tmp_path / "a.py").write_text(BUGGY + "y = torch.ones(2).cuda()\n"
                                   "torch.nn.Linear(2, 2).load_state_dict(torch.load('m.pt'))\n")
    proc = devlint("a.py", "--fix", "--show-fixes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("Fixed 3 errors:\n"
                           "- a.py:\n"
                           "    2 \u00d7 DL001 (cuda-call)\n"
                           "    1 \u00d7 DL002 (torch-load-without-map-location)\n"
                           "\n"
                           "Found 3 errors (3 fixed, 0 remaining).\n")
    assert "Fixed" not in proc.stderr


def test_show_fixes_keeps_a_machine_format_parsable(tmp_path):
    import json

    (tmp_path / "a.py").write_text(BUGGY)
    proc = devlint("a.py", "--fix", "--show-fixes", "--output-format", "json", cwd=tmp_path)
    assert json.loads(proc.stdout) == []
    assert "Fixed 1 error:" in proc.stderr


# -- notebooks in every format ---------------------------------------------------------------------------
def _notebook_results(tmp_path: Path):
    import json

    from devlint.config import Config
    from devlint.runner import check_file

    notebook = {
        "cells": [
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Train"]},
            {"cell_type": "code", "execution_count": 1, "id": "c", "metadata": {}, "outputs": [],
             "source": ["import torch\n", "import torch.nn as nn\n", "m = nn.Linear(4, 2).cuda()"]},
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "demo.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    return [check_file(str(path), Config(), write=False)], str(path)


def test_full_quotes_the_cell_and_its_diff(tmp_path):
    from devlint.formats import render

    results, path = _notebook_results(tmp_path)
    text = render("full", results)
    assert f"{path}:cell 2:3:21: DL001 [*]" in text
    assert "3 | m = nn.Linear(4, 2).cuda()\n  |                     ^^^^^^\n" in text
    assert "-m = nn.Linear(4, 2).cuda()\n+m = nn.Linear(4, 2).to(device)\n" in text
    assert '"source"' not in text and "cell_type" not in text  # never the raw JSON


def test_file_position_formats_name_the_cell_and_point_at_a_clear_fallback(tmp_path):
    import json

    from devlint.formats import render

    results, path = _notebook_results(tmp_path)
    github = render("github", results)
    assert ",line=1,col=1,endLine=1,endColumn=1::" in github and "cell 2%3A3%3A21" not in github
    assert github.rstrip().endswith(f"{path}:cell 2:3:21: DL001 [*] `.cuda()` hard-codes the CUDA device; use "
                                    "`.to(device)`")
    gitlab = json.loads(render("gitlab", results))[0]
    assert gitlab["description"].startswith("cell 2:3:21: DL001") and gitlab["location"]["lines"] == {
        "begin": 1, "end": 1}
    assert 'name="DL001:cell 2:3:21"' in render("junit", results)
    sarif = json.loads(render("sarif", results))["runs"][0]["results"][0]
    assert sarif["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    assert sarif["properties"] == {"cell": 2, "cellRegion": {"startLine": 3, "startColumn": 21, "endLine": 3,
                                                             "endColumn": 27}}
    assert "fixes" not in sarif  # its edits count in the cell, not in the file's JSON
    rows = [json.loads(line) for line in render("json-lines", results).splitlines()]
    assert [(r["cell"], r["line"], r["column"]) for r in rows] == [(2, 3, 21)]


def test_notebook_sarif_still_validates(tmp_path):
    import json

    jsonschema = pytest.importorskip("jsonschema")
    from devlint.formats import render

    results, _ = _notebook_results(tmp_path)
    schema = json.loads((Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(json.loads(render("sarif", results)), schema)


def test_full_names_where_each_rule_is_documented(tmp_path):
    from devlint.formats import render

    results, _ = _notebook_results(tmp_path)
    assert "= docs: `devlint rule DL001` explains the rule" in render("full", results)
    assert devlint("rule", "DL001", cwd=tmp_path).stdout.startswith("# DL001 cuda-call")


class _Terminal:
    def __init__(self, tty: bool) -> None:
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_progress_for_long_runs_on_a_terminal_only(monkeypatch):
    import time

    from devlint.cli import _Progress

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    terminal = _Terminal(True)
    with _Progress(1234, terminal, after=0.05):
        time.sleep(0.3)
    assert terminal.text.startswith("\rdevlint: checking 1,234 files (0 s)")
    assert terminal.text.endswith("\r\x1b[K")  # erased before the report
    quick = _Terminal(True)
    with _Progress(3, quick, after=5):
        pass
    assert quick.text == ""  # a short run prints nothing
    pipe = _Terminal(False)
    with _Progress(3, pipe, after=0.0):
        time.sleep(0.1)
    assert pipe.text == ""
    monkeypatch.setenv("CI", "true")
    ci = _Terminal(True)
    with _Progress(3, ci, after=0.0):
        time.sleep(0.1)
    assert ci.text == ""


@pytest.mark.parametrize("line, shown", [('map-location = "gpu"', "map-location = 'gpu': must be auto, device or cpu"),
                                         ('output-format = "xml"', "output-format = 'xml': must be one of text, json")])
def test_config_errors_echo_the_bad_value(tmp_path, line, shown):
    (tmp_path / "pyproject.toml").write_text(f"[tool.devlint]\n{line}\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    proc = devlint("a.py", cwd=tmp_path)
    assert proc.returncode == 2 and shown in proc.stderr
