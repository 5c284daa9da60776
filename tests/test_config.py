"""[tool.devlint] in pyproject.toml, the CLI winning over it, --config, --isolated, stdin, statistics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import BUGGY, run, write

LOAD = "import torch\nx = torch.load(p)\ny = torch.zeros(1).cuda()\n"


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "pyproject.toml", f"[project]\nname = 'x'\n\n[tool.devlint]\n{table}\n")
    write(tmp_path / "src" / "train.py", LOAD)
    return tmp_path


def codes_found(result) -> list[str]:
    return [f["code"] for f in json.loads(result.output)]


def test_select_from_the_nearest_pyproject(tmp_path):
    root = project(tmp_path, 'select = ["DL002"]\noutput-format = "json"')
    assert codes_found(run("src", cwd=root)) == ["DL002"]
    assert codes_found(run(str(root / "src" / "train.py"))) == ["DL002"]  # found from the path given


def test_cli_flags_win_over_the_file(tmp_path):
    root = project(tmp_path, 'select = ["DL002"]\noutput-format = "json"')
    assert codes_found(run("src", "--select", "DL001", cwd=root)) == ["DL001"]
    assert "Found" in run("src", "--output-format", "text", cwd=root).output


def test_isolated_and_explicit_config(tmp_path):
    root = project(tmp_path, 'select = ["DL002"]')
    assert sorted(codes_found(run("src", "--isolated", "--output-format", "json", cwd=root))) == ["DL001", "DL002"]
    other = write(tmp_path / "other.toml", '[tool.devlint]\nselect = ["DL001"]\n')
    assert codes_found(run("src", "--config", str(other), "--output-format", "json", cwd=root)) == ["DL001"]


def test_per_file_ignores_and_excludes(tmp_path):
    root = project(tmp_path, '[tool.devlint.per-file-ignores]\n"src/*.py" = ["DL002"]')
    assert codes_found(run("src", "--output-format", "json", cwd=root)) == ["DL001"]
    root2 = tmp_path / "b"
    root2.mkdir()
    project(root2, 'extend-exclude = ["legacy/"]')
    write(root2 / "legacy" / "old.py", BUGGY)
    paths = {Path(f["path"]).parts[0] for f in json.loads(run(".", "--output-format", "json", cwd=root2).output)}
    assert paths == {"src"}


def test_unsafe_fixes_and_fixer_options_from_the_file(tmp_path):
    root = project(tmp_path, 'unsafe-fixes = true\ndevice-name = "dev"\nmap-location = "cpu"')
    write(root / "src" / "train.py", "import torch\nx = torch.load(p)\ny = torch.zeros(1).cuda(1)\n")
    assert run("src", "--fix", cwd=root).exit_code == 0
    fixed = (root / "src" / "train.py").read_text()
    assert 'torch.load(p, map_location="cpu")' in fixed and "y = torch.zeros(1).to(dev)" in fixed


@pytest.mark.parametrize(
    "table, message",
    [
        ('selct = ["DL001"]', "unknown key 'selct'"),
        ('select = "DL001"', "select must be a list of rule codes"),
        ('select = ["DL999"]', "[tool.devlint] select: unknown rule code or prefix 'DL999'"),
        ('unsafe-fixes = "yes"', "unsafe-fixes must be true or false"),
        ('[tool.devlint.per-file-ignores]\n"*.py" = ["XX1"]', "per-file-ignores '*.py': unknown rule code"),
        ('map-location = "gpu"', "map-location = 'gpu': must be auto, device or cpu"),
        ("select = [", "invalid TOML"),
    ],
)
def test_bad_configuration_is_one_clear_error(tmp_path, table, message):
    root = project(tmp_path, table)
    result = run("src", cwd=root)
    assert result.exit_code == 2
    assert "pyproject.toml" in result.stderr and message in result.stderr
    assert "Traceback" not in result.output


def test_statistics(tmp_path):
    path = write(tmp_path / "a.py", LOAD + "z = torch.ones(1).cuda()\n")
    result = run(str(path), "--statistics")
    # an unused module-level load: its fix is unsafe (issue 15), so no [*]
    assert result.output.splitlines() == ["    2\tDL001\t[*] cuda-call", "    1\tDL002\t    torch-load-without-map-location"]


def test_output_file(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    out = tmp_path / "report.json"
    result = run(str(path), "--output-format", "json", "-o", str(out))
    assert result.exit_code == 1 and result.output == ""
    assert [f["code"] for f in json.loads(out.read_text())] == ["DL001"]


def test_stdin_check_and_fix():
    proc = subprocess.run([sys.executable, "-m", "devlint", "-", "--stdin-filename", "pkg/train.py"], input=BUGGY,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout.startswith("pkg/train.py:2:20: DL001")
    fixed = subprocess.run([sys.executable, "-m", "devlint", "-", "--fix"], input=BUGGY, capture_output=True, text=True)
    assert fixed.returncode == 0
    assert "x = torch.zeros(3).to(device)" in fixed.stdout
    broken = subprocess.run([sys.executable, "-m", "devlint", "-", "--fix"], input="x = (\n", capture_output=True,
                            text=True)
    assert broken.returncode == 2 and broken.stdout == "x = (\n" and "SyntaxError" in broken.stderr


def test_files_over_the_size_limit_are_skipped_with_a_notice(tmp_path):
    path = write(tmp_path / "big.py", BUGGY + "# padding\n" * 100)
    result = run(str(path), "--max-file-size", "100")
    assert result.exit_code == 0
    assert "skipped" in result.stderr and "size limit" in result.stderr


def test_add_noqa_then_nothing_is_reported_and_unused_ones_are_found(tmp_path):
    source = (
        "import torch\n"
        "x = torch.zeros(1).cuda()\n"
        "y = torch.load(\n"
        "    p,\n"
        ")\n"
        "z = torch.zeros(1).cuda()  # keep this comment\n"
        "w = torch.zeros(1).cuda()  # noqa: DL003\n"
    )
    path = write(tmp_path / "legacy.py", source)
    result = run(str(path), "--add-noqa")
    assert result.exit_code == 0 and "Added 4 noqa directives." in result.output
    text = path.read_text()
    assert "x = torch.zeros(1).cuda()  # noqa: DL001\n" in text
    assert ")  # noqa: DL002\n" in text  # the last line of the statement
    assert "# keep this comment  # noqa: DL001" in text
    assert "w = torch.zeros(1).cuda()  # noqa: DL001, DL003\n" in text
    assert run(str(path)).exit_code == 0
    assert run(str(path), "--ignore-noqa").exit_code == 1
    unused = run(str(path), "--extend-select", "DL100", "--output-format", "json")
    assert [(f["code"], f["line"]) for f in json.loads(unused.output)] == [("DL100", 7)]
    run(str(path), "--extend-select", "DL100", "--fix")
    assert "w = torch.zeros(1).cuda()  # noqa: DL001\n" in path.read_text()


def test_file_level_noqa(tmp_path):
    everything = write(tmp_path / "a.py", "# devlint: noqa\n" + LOAD)
    assert run(str(everything)).exit_code == 0
    some = write(tmp_path / "b.py", "# devlint: noqa: DL002\n" + LOAD)
    assert codes_found(run(str(some), "--output-format", "json")) == ["DL001"]


# -- issue 17: every configuration error names its source and key and echoes the value as given --------
@pytest.mark.parametrize("table, message", [
    ('select = ["dl999"]', "[tool.devlint] select: unknown rule code or prefix 'dl999' (known: DL001"),
    ('ignore = [" "]', "[tool.devlint] ignore: empty rule code ' ' (remove the empty entry)"),
    ('extend-select = ["DL001", 3]', "[tool.devlint] extend-select must be a list of rule codes, not ['DL001', 3] "
                                     "(3 is not a string)"),
    ('[tool.devlint.per-file-ignores]\n"tests/*" = "DL001"', "per-file-ignores must be a table of glob = "
                                                            "[rule codes], not {'tests/*': 'DL001'} ('DL001' is not "
                                                            "a list: write ['DL001'])"),
    ('max-file-size = "1MB"', "[tool.devlint] max-file-size must be a whole number of bytes, not '1MB'"),
    ('device-name = "my device"', "[tool.devlint] device-name: 'my device' is not a variable name"),
    ("select = DL001", "invalid TOML: Invalid value (at line 5, column 10): select = DL001"),
])
def test_a_bad_value_in_the_file_is_echoed_with_its_key(tmp_path, table, message):
    root = project(tmp_path, table)
    result = run("src", cwd=root)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"devlint: error: {root / 'pyproject.toml'}: ")
    assert message in result.stderr and len(result.stderr.splitlines()) == 1
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args, message", [
    (("--select", "dl999"), "--select: unknown rule code or prefix 'dl999'"),
    (("--ignore", "DL001,nope"), "--ignore: unknown rule code or prefix 'nope'"),
    (("--extend-select", "DL1X"), "--extend-select: unknown rule code or prefix 'DL1X'"),
    (("--device-name", "1x"), "--device-name: '1x' is not a variable name"),
    (("--map-location", "gpu"), "'gpu' is not one of 'auto', 'device', 'cpu'"),
])
def test_a_bad_value_on_the_command_line_is_echoed_with_its_option(tmp_path, args, message):
    path = write(tmp_path / "a.py", BUGGY)
    result = run(str(path), "--isolated", *args)
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output


def test_a_config_file_without_the_table_is_an_error_not_silently_no_settings(tmp_path):
    path = write(tmp_path / "a.py", BUGGY)
    flat = write(tmp_path / "devlint.toml", 'select = ["DL002"]\n')  # as a ruff.toml would be written
    result = run(str(path), "--config", str(flat))
    assert result.exit_code == 2
    assert (f"{flat}: --config file has no [tool.devlint] table (found select at the top level: move it under "
            "[tool.devlint])") in result.stderr
    other = write(tmp_path / "other.toml", "[tool.black]\nline-length = 100\n")
    assert "has no [tool.devlint] table\n" in run(str(path), "--config", str(other)).stderr
