"""Hostile options and odd inputs from the adversarial trial (issue 13): each once gave a wrong
answer, a traceback or a lost file. Every case gets one line naming the problem and exit 2, or the
right result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main
from devlint.cores import usable_cores
from tests.helpers import record_jobs

BUGGY = "import torch\nx = torch.zeros(3).cuda()\n"


def run(*args: str, cwd: Path, input: str | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    finally:
        os.chdir(old)


def project(tmp_path: Path, pyproject: bytes | str | None = None) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(BUGGY)
    if pyproject is not None:
        data = pyproject.encode() if isinstance(pyproject, str) else pyproject
        (tmp_path / "pyproject.toml").write_bytes(data)
    return tmp_path


@pytest.mark.parametrize("table", [
    'ignore = [""]',
    'ignore = [" "]',
    'select = [""]',
    'extend-select = ["DL001", ""]',
    'per-file-ignores = { "*.py" = [""] }',
])
def test_an_empty_rule_code_is_refused_not_read_as_every_rule(tmp_path, table):
    # "" is a prefix of every code: ignore = [""] silently turned every rule off ("All checks passed!").
    root = project(tmp_path, f"[tool.devlint]\n{table}\n")
    result = run("--no-cache", ".", cwd=root)
    assert result.exit_code == 2
    assert "empty rule code" in result.output
    assert "All checks passed" not in result.output


def test_a_tool_key_that_is_not_a_table_is_a_config_error(tmp_path):
    root = project(tmp_path, "tool = 5\n")
    result = run("--no-cache", ".", cwd=root)
    assert result.exit_code == 2
    assert "pyproject.toml: 'tool' must be a table" in result.output
    assert "Traceback" not in result.output


def test_a_pyproject_that_is_not_utf8_is_a_config_error(tmp_path):
    root = project(tmp_path, b'[tool.devlint]\nselect = ["\xff"]\n')
    result = run("--no-cache", ".", cwd=root)
    assert result.exit_code == 2
    assert "pyproject.toml: invalid TOML: not UTF-8" in result.output


@pytest.mark.parametrize("jobs", ["3000", "99999999999999999999"])
def test_workers_are_capped_by_files_and_cores(tmp_path, monkeypatch, jobs):
    root = project(tmp_path)
    for i in range(20):
        (root / f"m{i}.py").write_text(BUGGY)
    seen = record_jobs(monkeypatch)
    result = run("--no-cache", "-j", jobs, ".", cwd=root)
    assert result.exit_code == 1
    assert "Found 21 errors." in result.output
    assert 1 <= seen["jobs"] <= min(21, usable_cores())


NON_UTF8_NAME = os.fsdecode(b"bad\xff.py")


@pytest.mark.parametrize("args", [["--output-format", "sarif"], ["--output-format", "gitlab"],
                                  ["-o", "report.txt"], ["--output-format", "json"]])
def test_a_file_name_that_is_not_utf8_is_reported_not_a_traceback(tmp_path, args):
    root = project(tmp_path)
    (root / "train.py").unlink()
    (root / NON_UTF8_NAME).write_text(BUGGY)
    proc = subprocess.run([sys.executable, "-m", "devlint", "--no-cache", *args, "."], cwd=root,
                          capture_output=True)
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr
    report = (root / "report.txt").read_bytes() if "-o" in args else proc.stdout
    # The name's own bytes, or for SARIF the percent-encoded URI of those bytes.
    assert b"bad\xff.py" in report or b"bad%FF.py" in report or b"bad\\udcff.py" in report


def test_noqa_is_honoured_in_a_file_with_cr_only_line_endings(tmp_path):
    root = project(tmp_path)
    source = b"import torch\rx = torch.zeros(3).cuda()  # noqa: DL001\ry = 2\r"
    (root / "train.py").write_bytes(source)
    result = run("--no-cache", "--fix", "train.py", cwd=root)
    assert result.exit_code == 0, result.output
    assert (root / "train.py").read_bytes() == source


def test_stdin_with_diff_prints_the_diff(tmp_path):
    result = run("-", "--diff", "--stdin-filename", "train.py", cwd=tmp_path, input=BUGGY)
    assert result.exit_code == 1
    assert "-x = torch.zeros(3).cuda()" in result.output
    assert "+x = torch.zeros(3).to(device)" in result.output
    clean = run("-", "--diff", cwd=tmp_path, input="x = 1\n")
    assert (clean.exit_code, clean.output) == (0, "")


def test_stdin_with_add_noqa_is_a_usage_error(tmp_path):
    result = run("-", "--add-noqa", cwd=tmp_path, input=BUGGY)
    assert result.exit_code == 2
    assert "--add-noqa" in result.output and "stdin" in result.output
    assert "All checks passed" not in result.output


@pytest.mark.parametrize("name", ["train.py", "./train.py", "sub/../train.py"])
def test_output_file_may_not_name_a_checked_file(tmp_path, name):
    root = project(tmp_path)
    (root / "sub").mkdir()
    result = run("--no-cache", "-o", name, ".", cwd=root)
    assert result.exit_code == 2
    assert "is one of the files being checked" in result.output
    assert (root / "train.py").read_text() == BUGGY


def test_a_bom_with_a_non_utf8_coding_cookie_is_refused_as_python_refuses_it(tmp_path):
    # Python: "SyntaxError: encoding problem: iso-8859-1 with BOM". devlint once dropped the BOM and "fixed" it.
    data = b"\xef\xbb\xbf# -*- coding: latin-1 -*-\nimport torch\nx = torch.zeros(1).cuda()\n"
    path = tmp_path / "bom.py"
    path.write_bytes(data)
    result = run("--no-cache", "--fix", "bom.py", cwd=tmp_path)
    assert result.exit_code == 2
    assert "bom.py" in result.output and "BOM with a coding declaration" in result.output
    assert path.read_bytes() == data


def test_a_notebook_cell_only_libcst_cannot_parse_is_a_notice_not_the_users_syntax_error(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import torch\nx = torch.zeros(1).cuda()"),
                      nbformat.v4.new_code_cell("(g): int")]  # valid Python that LibCST refuses
    nbformat.write(notebook, str(tmp_path / "nb.ipynb"))
    result = run("--no-cache", "nb.ipynb", cwd=tmp_path)
    # only that cell is left out: the other cell is still checked (its `.cuda()` is a finding)
    assert result.exit_code == 1
    assert "DL001" in result.output
    assert "valid Python that LibCST cannot parse" in result.output
    assert "SyntaxError" not in result.output


@pytest.mark.parametrize("source, fixed_line", [
    # LibCST renders `except (E) :` without the space, and its positions follow the rendering:
    # the edit would land one character off. Once this broke the file; now that fix is display-only.
    ("import torch\ntry:\n    pass\nexcept (ImportError) : x = torch.zeros(1).cuda()\ny = torch.zeros(1).cuda()\n",
     "except (ImportError) : x = torch.zeros(1).cuda()"),
    # A leading form feed is not rendered either, but positions count it: fixed in place.
    ("import torch\n\fx = torch.zeros(1).cuda()\n", "\fx = torch.zeros(1).to(device)"),
])
def test_an_edit_never_lands_where_libcst_positions_are_not_the_files(source, fixed_line):
    from tests.helpers import fix

    fixed = fix(source, select="DL001")
    compile(fixed, "fixed.py", "exec")
    assert fixed_line in fixed.split("\n")
    assert fix(fixed, select="DL001") == fixed


@pytest.mark.parametrize("source", [
    # the definition goes after `import torch`, below a line LibCST does not render byte for byte
    "try:\n    import x\nexcept (ImportError) :\n    pass\nimport torch\ny = torch.zeros(1).cuda()\n",
    # `import torch` is added on top; trailing blanks without a newline are lost by LibCST
    "try:\n    import x\nexcept (ImportError) :\n    pass\ny = torch.zeros(1).cuda()\n   \n  ",
    "\fimport torch\nx = 1\ny = torch.zeros(1).cuda()\n\n\n",
])
def test_the_device_definition_is_spliced_and_no_other_byte_changes(source):
    import difflib

    from tests.helpers import fix

    fixed = fix(source, select="DL001")
    assert ".to(device)" in fixed
    # Every line of the source, with its fix, is in the result; everything else is inserted definitions.
    before = [line.replace(".cuda()", ".to(device)") for line in source.split("\n")]
    after = fixed.split("\n")
    for tag, _, _, b1, b2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        assert tag in ("equal", "insert"), (tag, after[b1:b2])
        if tag == "insert":
            assert all(line in ("", "import torch") or line.startswith("device = ") for line in after[b1:b2])


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_a_coding_cookie_is_read_whatever_the_line_endings(tmp_path, newline):
    # Python reads the cookie of a CR-only file; devlint once decoded it as UTF-8 and failed.
    data = newline.join([b"# -*- coding: latin-1 -*-", b"# caf\xe9", b"import torch",
                         b"x = torch.zeros(3).cuda()", b""])
    compile(data, "cookie.py", "exec")
    (tmp_path / "cookie.py").write_bytes(data)
    result = run("--no-cache", "--fix", "cookie.py", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    fixed = (tmp_path / "cookie.py").read_bytes()
    assert b"# caf\xe9" + newline in fixed and b".to(device)" in fixed


# -- issue 29: options that were ignored or crashed ------------------------------------------------
@pytest.mark.parametrize("expression", ["-" * 30000 + "1", "not " * 20000 + "x", "-" * 300 + "1", "x" + ".a" * 400])
@pytest.mark.parametrize("where", ["option", "config"])
def test_a_deeply_nested_device_expression_is_a_usage_error_not_a_traceback(tmp_path, expression, where):
    # It ended in a MemoryError or RecursionError traceback, exit 1.
    if where == "option":
        root = project(tmp_path)
        result = run("--no-cache", "--fix", "--device-expression", expression, ".", cwd=root)
    else:
        root = project(tmp_path, f'[tool.devlint]\ndevice-expression = "{expression}"\n')
        result = run("--no-cache", "--fix", ".", cwd=root)
    assert result.exit_code == 2, result.output
    assert "device-expression" in result.output and ("nested" in result.output or "longer than" in result.output)
    assert len(result.output) < 400  # the expression is not printed whole
    assert (root / "train.py").read_text() == BUGGY


def test_a_device_expression_of_ordinary_depth_is_still_written(tmp_path):
    root = project(tmp_path)
    expression = 'torch.device(f"cuda:{rank}" if torch.cuda.is_available() else "cpu")'
    assert run("--no-cache", "--fix", "--device-expression", expression, ".", cwd=root).exit_code == 0
    assert f"device = {expression}" in (root / "train.py").read_text()


def test_output_file_may_not_be_a_hard_link_of_a_checked_file(tmp_path):
    # A hard link has its own real path: the report replaced the source it shares an inode with.
    root = project(tmp_path)
    os.link(root / "train.py", root / "report.txt")
    result = run("--no-cache", "-o", "report.txt", "train.py", cwd=root)
    assert result.exit_code == 2
    assert "report.txt is one of the files being checked" in result.output
    assert (root / "train.py").read_text() == BUGGY


@pytest.mark.parametrize("args, complaint", [
    (["-", "train.py"], "`-` (read stdin) cannot be combined with other paths"),
    (["train.py", "-"], "`-` (read stdin) cannot be combined with other paths"),
    (["--isolated", "--config", "missing.toml", "train.py"], "cannot be used with --config"),
    (["--stdin-filename", "other.py", "train.py"], "--stdin-filename names the source read from stdin"),
])
def test_options_one_of_which_would_be_ignored_are_a_usage_error(tmp_path, args, complaint):
    # Each ran as if the ignored part was not there (exit 1 with train.py's finding, or "-: no such file").
    root = project(tmp_path)
    result = run("--no-cache", *args, cwd=root, input=BUGGY)
    assert result.exit_code == 2
    assert complaint in result.output
    assert "DL001" not in result.output


def test_stdin_filename_alone_or_with_dash_still_reads_stdin(tmp_path):
    for args in (["--stdin-filename", "x.py"], ["--stdin-filename", "x.py", "-"]):
        result = run("--no-cache", *args, cwd=tmp_path, input=BUGGY)
        assert result.exit_code == 1 and "x.py:2:" in result.output


def test_a_newline_in_a_file_name_is_escaped_in_the_text_output(tmp_path):
    root = project(tmp_path)
    os.rename(root / "train.py", root / "a\nb.py")
    (root / "bad\r.py").write_bytes(b"x = (\n")
    result = run("--no-cache", ".", cwd=root)
    lines = result.output.splitlines()
    assert "a\\nb.py:2:20: DL001 [*] `.cuda()` hard-codes the CUDA device; use `.to(device)`" in lines
    assert any(line.startswith("bad\\r.py:") and "error" in line for line in lines)
    assert not any(line in ("a", "b.py", "bad") or line.startswith("b.py:") for line in lines)


def test_the_diff_of_a_file_with_cr_only_line_endings_has_one_line_per_line(tmp_path):
    root = project(tmp_path)
    (root / "train.py").write_bytes(BUGGY.replace("\n", "\r").encode())
    result = run("--no-cache", "--diff", "train.py", cwd=root)
    assert result.exit_code == 1
    lines = result.output.split("\n")
    assert "-x = torch.zeros(3).cuda()" in lines and "+x = torch.zeros(3).to(device)" in lines
    assert "\r" not in result.output
    assert (root / "train.py").read_bytes() == BUGGY.replace("\n", "\r").encode()  # --diff writes nothing


def test_the_diff_of_a_last_line_without_a_newline_does_not_run_into_the_next(tmp_path):
    root = project(tmp_path)
    (root / "train.py").write_text(BUGGY.rstrip("\n"))
    result = run("--no-cache", "--diff", "train.py", cwd=root)
    lines = result.output.split("\n")
    assert lines[lines.index("-x = torch.zeros(3).cuda()") + 1] == "\\ No newline at end of file"


@pytest.mark.parametrize("other", ["--fix", "--ignore-noqa", "--statistics"])
def test_add_noqa_with_an_option_it_cannot_honour_is_a_usage_error_as_in_ruff(tmp_path, other):
    # --fix --add-noqa silenced every finding instead of fixing the fixable ones.
    root = project(tmp_path)
    result = run("--no-cache", "--add-noqa", other, ".", cwd=root)
    assert result.exit_code == 2
    assert f"--add-noqa cannot be used with {other}" in result.output
    assert (root / "train.py").read_text() == BUGGY
