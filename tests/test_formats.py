"""CI output formats: SARIF (validated against the official schema), GitHub, GitLab, JUnit, JSON lines, full."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from devlint.config import Config
from devlint.formats import render
from devlint.rules import ALL_RULES
from devlint.runner import check_file
from tests.test_cli import EXAMPLE, run, write

# The official OASIS schema (SARIF 2.1.0, errata 01), kept in the repository so that CI validates too.
SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture()
def results(tmp_path):
    broken = write(tmp_path / "broken.py", "def f(:\n")
    clean = write(tmp_path / "clean.py", "x = 1\n")
    return [check_file(str(p), Config(), write=False) for p in (EXAMPLE, broken, clean)]


def test_sarif_validates_and_carries_rules_and_fixes(results):
    jsonschema = pytest.importorskip("jsonschema")
    document = json.loads(render("sarif", results))
    if SCHEMA.exists():
        jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(document)
    run_ = document["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.code for r in ALL_RULES]
    assert all("## What it does" in r["help"]["markdown"] for r in rules)
    first = run_["results"][0]
    assert first["ruleId"] == "DL001" and rules[first["ruleIndex"]]["id"] == "DL001"
    assert first["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 5, "startColumn": 25, "endLine": 5, "endColumn": 31}
    replacement = first["fixes"][0]["artifactChanges"][0]["replacements"][0]
    edit = json.loads(run(str(EXAMPLE), "--output-format", "json", "--no-cache").stdout)[0]["fix"]["edits"][0]
    assert replacement["insertedContent"]["text"] == edit["content"]
    assert replacement["deletedRegion"]["startColumn"] == edit["location"]["column"]
    assert run_["invocations"][0]["executionSuccessful"] is False
    assert "broken.py" in run_["invocations"][0]["toolExecutionNotifications"][0]["locations"][0][
        "physicalLocation"]["artifactLocation"]["uri"]


def test_sarif_of_the_readme_example_via_the_cli_validates(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    out = tmp_path / "devlint.sarif"
    result = run(str(EXAMPLE), "--output-format", "sarif", "-o", str(out))
    assert result.exit_code == 1
    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(json.loads(out.read_text()))


def test_github_annotations_one_per_finding(results):
    lines = render("github", results).splitlines()
    findings = [line for line in lines if "::DL" in line]
    assert len(findings) == 4
    assert findings[0].startswith("::error title=devlint (DL001),file=")
    assert ",line=5,col=25,endLine=5,endColumn=31::DL001 " in findings[0]
    assert any("broken.py" in line and "SyntaxError" in line for line in lines)


def test_github_escapes_properties_and_data():
    from devlint.formats import _escape_data, _escape_property

    assert _escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert _escape_data("50%\nnext") == "50%25%0Anext"


def test_gitlab_fingerprints_are_unique_and_survive_line_shifts(tmp_path):
    source = "import torch\nx = torch.zeros(1).cuda()\nx = torch.zeros(1).cuda()\n"
    path = write(tmp_path / "a.py", source)
    before = json.loads(render("gitlab", [check_file(str(path), Config(), write=False)]))
    write(path, "\n" + source)
    after = json.loads(render("gitlab", [check_file(str(path), Config(), write=False)]))
    assert len({i["fingerprint"] for i in before}) == 2
    assert [i["fingerprint"] for i in before] == [i["fingerprint"] for i in after]
    assert [i["location"]["lines"]["begin"] for i in after] == [3, 4]
    assert before[0]["check_name"] == "DL001" and before[0]["severity"] == "major"


def test_sarif_fingerprints_are_unique_stable_and_survive_line_shifts(tmp_path):
    # Code scanning matches alerts between runs by partialFingerprints: a fingerprint from the line
    # number would reopen every dismissed alert below an added import.
    jsonschema = pytest.importorskip("jsonschema")
    source = "import torch\nx = torch.zeros(1).cuda()\nx = torch.zeros(1).cuda()\ny = torch.load('w.pt')\n"
    path = write(tmp_path / "a.py", source)

    def prints():
        document = json.loads(render("sarif", [check_file(str(path), Config(), write=False)]))
        jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(document)
        return [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"],
                 r["partialFingerprints"]["devlint/v1"]) for r in document["runs"][0]["results"]]

    before = prints()
    write(path, "import os\n\n" + source)
    after = prints()
    assert [line for _, line, _ in before] == [2, 3, 4] and [line for _, line, _ in after] == [4, 5, 6]
    assert len({fingerprint for _, _, fingerprint in before}) == 3  # the same statement twice: two alerts
    assert [f for _, _, f in before] == [f for _, _, f in after]
    write(path, source.replace("'w.pt'", "'v.pt'"))
    assert prints()[2][2] != before[2][2]  # another line's text: another finding


def test_junit_counts(results):
    root = ET.fromstring(render("junit", results).split("\n", 1)[1])
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "4", "1")
    assert len(suite.findall("testcase/failure")) == 4


def test_json_lines(results):
    lines = render("json-lines", results).splitlines()
    assert [json.loads(line)["code"] for line in lines] == ["DL001", "DL002", "DL003", "DL004"]


def test_full_shows_the_code_a_caret_under_the_span_and_the_fix(results):
    text = render("full", results)
    assert "5 | model = nn.Linear(4, 2).cuda()\n  |                         ^^^^^^\n" in text
    assert "= help: Replace `.cuda()` with `.to(device)`" in text
    assert "+model = nn.Linear(4, 2).to(device)" in text
    assert text.rstrip().endswith("fixable with the `--fix` option.")
