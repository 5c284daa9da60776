"""The product through its command line: output, exit codes, bad input, fixing and files on disk."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint import __version__
from devlint.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "train.py"
EXPECTED_EXAMPLE = [
    ("DL001", 5, 25),
    ("DL002", 6, 23),
    ("DL003", 9, 1),
    ("DL004", 9, 11),
]


def run(*args: str, cwd: Path | None = None):
    runner = CliRunner()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


BUGGY = "import torch\nx = torch.zeros(3).cuda()\n"
CLEAN = "import torch\nx = torch.zeros(3)\n"


# -- the README example -----------------------------------------------------------------------------
def test_example_text_output_and_exit_code():
    result = run(str(EXAMPLE))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    found = [line.split(": ", 1)[0] for line in lines if ": DL" in line]
    assert found == [f"{EXAMPLE}:{line}:{col}" for _, line, col in EXPECTED_EXAMPLE]
    codes = [line.split(": ", 1)[1].split()[0] for line in lines if ": DL" in line]
    assert codes == [code for code, _, _ in EXPECTED_EXAMPLE]
    assert "Found 4 errors." in result.output


def test_example_json_output():
    result = run(str(EXAMPLE), "--output-format", "json")
    assert result.exit_code == 1
    findings = json.loads(result.output)
    assert [(f["code"], f["line"], f["column"]) for f in findings] == EXPECTED_EXAMPLE
    first = findings[0]
    assert set(first) >= {"code", "name", "message", "path", "line", "column", "end_line", "end_column", "fix"}
    assert first["name"] == "cuda-call"
    assert first["path"] == str(EXAMPLE)
    assert (first["end_line"], first["end_column"]) == (5, 31)
    assert first["fix"]["applicability"] == "safe"
    assert first["fix"]["edits"][0]["content"] == "nn.Linear(4, 2).to(device)"


def test_clean_file_exits_zero(tmp_path):
    result = run(str(write(tmp_path / "ok.py", CLEAN)))
    assert result.exit_code == 0
    assert "All checks passed!" in result.output


def test_readme_documents_the_example_output():
    readme = (ROOT / "README.md").read_text()
    result = run("examples/train.py", cwd=ROOT)
    for line in result.output.splitlines():
        if ": DL" in line:
            assert line in readme


# -- bad input -------------------------------------------------------------------------------------
def test_syntax_error_names_file_line_column_and_other_files_are_still_checked(tmp_path):
    broken = write(tmp_path / "broken.py", "import torch\ndef f(:\n    pass\n")
    buggy = write(tmp_path / "buggy.py", BUGGY)
    result = run(str(broken), str(buggy))
    assert result.exit_code == 2
    assert f"{broken}:2:7: error: SyntaxError" in result.stderr
    assert f"{buggy}:2:20: DL001" in result.stdout
    assert "Traceback" not in result.output


def test_missing_path_is_an_error_but_others_are_checked(tmp_path):
    buggy = write(tmp_path / "buggy.py", BUGGY)
    result = run(str(tmp_path / "nope.py"), str(buggy))
    assert result.exit_code == 2
    assert f"{tmp_path / 'nope.py'}: error: no such file or directory" in result.stderr
    assert "DL001" in result.stdout


def test_undecodable_file(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = '\xff\xfe'\n")
    result = run(str(bad))
    assert result.exit_code == 2
    assert f"{bad}: error: cannot decode as utf-8" in result.stderr


def test_unknown_rule_code_is_a_usage_error(tmp_path):
    result = run(str(write(tmp_path / "a.py", BUGGY)), "--select", "DL999")
    assert result.exit_code == 2
    assert "unknown rule code or prefix 'DL999'" in result.stderr


def test_directory_named_like_a_python_file(tmp_path):
    (tmp_path / "x.py").mkdir()
    result = run(str(tmp_path / "x.py"))
    assert result.exit_code == 0  # a folder argument is walked, and this one holds nothing


# -- selection and exit codes ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, codes",
    [
        ((), ["DL001", "DL002", "DL003", "DL004"]),
        (("--select", "DL002"), ["DL002"]),
        (("--select", "DL00"), ["DL001", "DL002", "DL003", "DL004"]),
        (("--select", "ALL", "--ignore", "DL001,DL003"), ["DL002", "DL004"]),
        (("--ignore", "DL0"), []),
        (("--select", "DL001", "--extend-select", "DL003"), ["DL001", "DL003"]),
    ],
)
def test_select_and_ignore(args, codes):
    result = run(str(EXAMPLE), "--output-format", "json", *args)
    assert [f["code"] for f in json.loads(result.output)] == codes
    assert result.exit_code == (1 if codes else 0)


def test_exit_zero():
    assert run(str(EXAMPLE), "--exit-zero").exit_code == 0


def test_version():
    result = run("--version")
    assert result.exit_code == 0
    assert __version__ in result.output


def test_rule_command_prints_the_docs():
    result = run("rule", "DL002")
    assert result.exit_code == 0
    assert "torch-load-without-map-location" in result.output
    assert "## Not flagged" in result.output
    listing = run("rule")
    assert "DL001" in listing.output and "DL003" in listing.output
    assert run("rule", "DL999").exit_code == 2


def test_noqa(tmp_path):
    source = (
        "import torch\n"
        "a = torch.zeros(1).cuda()  # noqa: DL001\n"
        "b = torch.zeros(1).cuda()  # noqa\n"
        "c = torch.zeros(1).cuda()  # noqa: DL002\n"
        "d = torch.zeros(1).cuda()  # NOQA:DL001,DL003\n"
    )
    result = run(str(write(tmp_path / "a.py", source)), "--output-format", "json")
    assert [f["line"] for f in json.loads(result.output)] == [4]


# -- discovery -------------------------------------------------------------------------------------
def test_folders_honour_gitignore_and_skip_virtualenvs(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "generated/\nskip_me.py\n")
    write(tmp_path / "src" / "a.py", BUGGY)
    write(tmp_path / "src" / "skip_me.py", BUGGY)
    write(tmp_path / "generated" / "b.py", BUGGY)
    write(tmp_path / ".venv" / "lib" / "c.py", BUGGY)
    write(tmp_path / "build" / "d.py", BUGGY)
    write(tmp_path / "notes.txt", BUGGY)
    result = run("--output-format", "json", cwd=tmp_path)
    assert sorted(Path(f["path"]).as_posix() for f in json.loads(result.output)) == ["src/a.py"]
    explicit = run(str(tmp_path / "src" / "skip_me.py"), "--output-format", "json")
    assert len(json.loads(explicit.output)) == 1  # files named on the command line are always checked


# -- fixing ----------------------------------------------------------------------------------------
def test_fix_rewrites_and_second_fix_changes_nothing(tmp_path):
    path = write(tmp_path / "train.py", EXAMPLE.read_text())
    result = run(str(path), "--fix")
    assert result.exit_code == 0, result.output
    fixed = path.read_text()
    assert "nn.Linear(4, 2).to(device)" in fixed
    assert 'torch.load("checkpoint.pt", map_location="cpu")' in fixed
    assert "inputs = inputs.to(device)" in fixed
    assert fixed.count("device = torch.device(") == 1
    compile(fixed, str(path), "exec")
    again = run(str(path), "--fix")
    assert again.exit_code == 0
    assert path.read_text() == fixed


def test_diff_writes_nothing(tmp_path):
    path = write(tmp_path / "train.py", EXAMPLE.read_text())
    before = path.read_bytes()
    result = run(str(path), "--diff")
    assert result.exit_code == 1
    assert "+model = nn.Linear(4, 2).to(device)" in result.output
    assert "-model = nn.Linear(4, 2).cuda()" in result.output
    assert path.read_bytes() == before


def test_unsafe_fixes_are_counted_and_applied_only_on_request(tmp_path):
    path = write(tmp_path / "a.py", "import torch\nx = torch.zeros(1).cuda(1)\n")
    result = run(str(path), "--fix")
    assert result.exit_code == 1
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option" in result.output
    assert ".cuda(1)" in path.read_text()
    result = run(str(path), "--fix", "--unsafe-fixes")
    assert result.exit_code == 0
    assert "x = torch.zeros(1).to(device)" in path.read_text()


def test_noqa_findings_are_never_rewritten(tmp_path):
    source = "import torch\nx = torch.zeros(1).cuda()  # noqa: DL001\n"
    path = write(tmp_path / "a.py", source)
    assert run(str(path), "--fix").exit_code == 0
    assert path.read_text() == source


def test_exit_non_zero_on_fix(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    assert run(str(path), "--fix", "--exit-non-zero-on-fix").exit_code == 1
    assert run(str(path), "--fix", "--exit-non-zero-on-fix").exit_code == 0


def test_show_fixes(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    result = run(str(path), "--fix", "--show-fixes")
    assert "Fixed 1 error:\n- " in result.stdout and "    1 × DL001 (cuda-call)\n" in result.stdout


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"import torch\r\nx = torch.zeros(3).cuda()\r\ny = 1\r\n", id="crlf"),
        pytest.param(b"\xef\xbb\xbfimport torch\nx = torch.zeros(3).cuda()\n", id="bom"),
        pytest.param("# -*- coding: latin-1 -*-\nimport torch\n# caf\xe9\nx = torch.zeros(3).cuda()\n".encode("latin-1"),
                     id="latin-1"),
    ],
)
def test_fix_keeps_line_endings_encoding_and_bom(tmp_path, data):
    path = tmp_path / "a.py"
    path.write_bytes(data)
    assert run(str(path), "--fix").exit_code == 0
    fixed = path.read_bytes()
    assert b".to(device)" in fixed
    if b"\r\n" in data:
        # two more lines: the definition and the blank line above it
        assert fixed.count(b"\r\n") == fixed.count(b"\n") == data.count(b"\n") + 2
    if data.startswith(b"\xef\xbb\xbf"):
        assert fixed.startswith(b"\xef\xbb\xbf") and fixed.count(b"\xef\xbb\xbf") == 1
    if b"latin-1" in data:
        assert "# caf\xe9".encode("latin-1") in fixed


def test_fix_keeps_file_mode_and_leaves_no_temporary_files(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    path.chmod(0o751)
    run(str(path), "--fix")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_read_only_file_under_fix_is_reported(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    tmp_path.chmod(0o555)
    path.chmod(0o444)
    try:
        result = run(str(path), "--fix")
    finally:
        tmp_path.chmod(0o755)
    assert result.exit_code == 2
    assert f"{path}: error: read-only file; fixes not written" in result.stderr
    assert path.read_text() == BUGGY


def test_unwritable_file_under_fix_is_reported_and_left_whole(tmp_path, monkeypatch):
    path = write(tmp_path / "a.py", BUGGY)
    other = write(tmp_path / "b.py", BUGGY)

    def refuse(src, dst):
        if str(dst).endswith("a.py"):
            raise PermissionError(13, "Permission denied")
        return real_replace(src, dst)

    real_replace = os.replace
    monkeypatch.setattr(os, "replace", refuse)
    result = run(str(path), str(other), "--fix")
    assert result.exit_code == 2
    assert f"{path}: error: cannot write fixes: Permission denied" in result.stderr
    assert path.read_text() == BUGGY
    assert ".to(device)" in other.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]


# -- a real process ------------------------------------------------------------------------------------
def test_subprocess_end_to_end(tmp_path):
    good = write(tmp_path / "good.py", CLEAN)
    bad = write(tmp_path / "bad.py", BUGGY)
    broken = write(tmp_path / "broken.py", "x = (\n")
    proc = subprocess.run([sys.executable, "-m", "devlint", str(good), str(bad), str(broken)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert f"{bad}:2:20: DL001" in proc.stdout
    assert f"{broken}:" in proc.stderr and "SyntaxError" in proc.stderr
    assert "Traceback" not in proc.stderr
    clean = subprocess.run([sys.executable, "-m", "devlint", str(good)], capture_output=True, text=True)
    assert clean.returncode == 0


# -- -q/--quiet and -s/--silent, as ruff -------------------------------------------------------------
def test_quiet_prints_the_findings_only(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    result = run(str(path), "-q", "--no-cache")
    assert result.exit_code == 1
    assert result.stdout == f"{path}:2:20: DL001 [*] `.cuda()` hard-codes the CUDA device; use `.to(device)`\n"
    clean = run(str(write(tmp_path / "ok.py", CLEAN)), "--quiet", "--no-cache")
    assert (clean.exit_code, clean.stdout, clean.stderr) == (0, "", "")


def test_quiet_keeps_errors_and_drops_warnings(tmp_path):
    write(tmp_path / "notes.md", "x\n")
    broken = write(tmp_path / "broken.py", "def f(:\n")
    result = run(str(tmp_path / "notes.md"), str(broken), str(tmp_path / "nope.py"), "-q", "--no-cache")
    assert result.exit_code == 2
    assert "warning" not in result.stderr
    assert f"{broken}:1:7: error: SyntaxError" in result.stderr
    assert f"{tmp_path / 'nope.py'}: error: no such file or directory" in result.stderr
    assert result.stdout == ""


def test_quiet_with_other_formats_fix_and_diff(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    full = run(str(path), "-q", "--no-cache", "--output-format", "full").stdout
    assert "DL001" in full and "= docs:" in full and "Found" not in full and "fixable" not in full
    rows = json.loads(run(str(path), "-q", "--no-cache", "--output-format", "json").stdout)
    assert [r["code"] for r in rows] == ["DL001"]
    diff = run(str(path), "-q", "--diff", "--no-cache")
    assert "+x = torch.zeros(3).to(device)" in diff.stdout and "Would fix" not in diff.stderr
    fixed = run(str(path), "-q", "--fix", "--show-fixes", "--no-cache")
    assert fixed.exit_code == 0
    assert fixed.stdout == f"Fixed 1 error:\n- {path}:\n    1 \u00d7 DL001 (cuda-call)\n"


def test_silent_prints_nothing_and_exits_as_usual(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    for args in ([], ["--output-format", "json"], ["--statistics"], ["--diff"], ["--fix", "--show-fixes"]):
        write(path, BUGGY)
        result = run(str(path), "-s", "--no-cache", *args)
        assert (result.exit_code, result.stdout, result.stderr) == (1 if args != ["--fix", "--show-fixes"] else 0,
                                                                    "", ""), args
    broken = run(str(write(tmp_path / "b.py", "def f(:\n")), str(tmp_path / "nope.py"), "--silent", "--no-cache")
    assert (broken.exit_code, broken.stdout, broken.stderr) == (2, "", "")


def test_silent_still_writes_the_output_file_and_reports_bad_usage(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    out = tmp_path / "report.json"
    result = run(str(path), "-s", "--no-cache", "--output-format", "json", "-o", str(out))
    assert (result.exit_code, result.stdout) == (1, "")
    assert [r["code"] for r in json.loads(out.read_text())] == ["DL001"]
    bad = run(str(path), "-s", "--select", "DL999")
    assert bad.exit_code == 2 and "DL999" in bad.stderr  # exit 2 alone would say nothing


def test_quiet_and_silent_on_stdin():
    runner = CliRunner()
    quiet = runner.invoke(main, ["-", "-q", "--stdin-filename", "a.py"], input=BUGGY)
    assert (quiet.exit_code, quiet.stdout) == (1, "a.py:2:20: DL001 [*] `.cuda()` hard-codes the CUDA device; "
                                                   "use `.to(device)`\n")
    silent = runner.invoke(main, ["-", "-s"], input=BUGGY)
    assert (silent.exit_code, silent.stdout) == (1, "")
    fixed = runner.invoke(main, ["-", "-s", "--fix"], input=BUGGY)  # the fixed source is the product
    assert "torch.zeros(3).to(device)" in fixed.stdout


def test_python_m_devlint_does_not_import_the_users_modules_from_the_current_folder(tmp_path):
    # `python -m` puts the current folder first on sys.path: a project's own click.py or difflib.py
    # was imported in place of the library's.
    for name in ("click", "difflib", "libcst"):
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('imported {name}.py from the current folder')\n")
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    done = subprocess.run([sys.executable, "-m", "devlint", "--no-cache", "--diff", "train.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "from the current folder" not in done.stdout + done.stderr
    assert done.returncode == 1 and "+x = torch.zeros(3).to(device)" in done.stdout
