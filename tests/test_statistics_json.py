"""`--statistics` honours `--output-format json` with ruff's keys (issue 23)."""

from __future__ import annotations

import json

import pytest

from tests.test_cli import run, write
from tests.test_config import LOAD, project


def test_json_statistics_have_ruffs_keys(tmp_path):
    path = write(tmp_path / "a.py", LOAD + "z = torch.ones(1).cuda()\n")
    result = run(str(path), "--isolated", "--statistics", "--output-format", "json")
    assert result.exit_code == 1
    assert json.loads(result.output) == [  # the keys and meaning of `ruff check --statistics --output-format json`
        {"code": "DL001", "name": "cuda-call", "count": 2, "fixable": True, "fixable_count": 2},
        {"code": "DL002", "name": "torch-load-without-map-location", "count": 1, "fixable": False,
         "fixable_count": 0},
    ]


def test_json_statistics_without_findings_is_an_empty_list(tmp_path):
    path = write(tmp_path / "a.py", "x = 1\n")
    result = run(str(path), "--isolated", "--statistics", "--output-format", "json")
    assert result.exit_code == 0 and json.loads(result.output) == []


def test_the_output_format_of_the_configuration_counts_too(tmp_path):
    root = project(tmp_path, 'output-format = "json"')
    result = run("src", "--statistics", "--no-cache", cwd=root)
    assert [row["code"] for row in json.loads(result.output)] == ["DL001", "DL002"]


def test_text_and_full_print_the_table(tmp_path):
    path = write(tmp_path / "a.py", LOAD)
    for fmt in ("text", "full"):
        result = run(str(path), "--isolated", "--statistics", "--output-format", fmt)
        assert result.output.splitlines()[0] == "    1\tDL001\t[*] cuda-call"


@pytest.mark.parametrize("fmt", ["json-lines", "github", "gitlab", "junit", "sarif"])
def test_a_format_without_statistics_is_refused(tmp_path, fmt):
    path = write(tmp_path / "a.py", LOAD)
    result = run(str(path), "--isolated", "--statistics", "--output-format", fmt)
    assert result.exit_code == 2 and result.stdout == ""
    assert f"--output-format {fmt} has no statistics form" in result.stderr and "Traceback" not in result.stderr
