"""Each rule's page (docs/rules/CODE.md, generated from its docstring) and the links every output
format carries to it: json/json-lines `url`, SARIF `helpUri`, full's `= docs:` line, and an OSC 8
hyperlink on the coloured code in a terminal that renders one."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from devlint import docs
from devlint.config import Config
from devlint.rules import ALL_RULES
from devlint.runner import check_file
from tests.test_cli import BUGGY, EXAMPLE, run, write

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
FIX_COMMAND = "python -m devlint.docs"


# -- the pages ---------------------------------------------------------------------------------------
def test_the_rule_pages_and_the_readme_table_are_not_stale():
    stale = docs.stale(str(ROOT))
    assert not stale, f"stale: {', '.join(stale)}; run `{FIX_COMMAND}` from the repository root"


def test_every_rule_has_a_page_holding_its_documentation():
    pages = {p.name for p in (ROOT / "docs" / "rules").glob("DL*.md")}
    assert pages == {f"{rule.code}.md" for rule in ALL_RULES}
    for rule in ALL_RULES:
        page = (ROOT / docs.rule_path(rule.code)).read_text(encoding="utf-8")
        assert page.splitlines()[2] == f"# {rule.code}: {rule.name}"
        assert rule.documentation().strip() in page
        assert f"`devlint rule {rule.code}`" in page


def test_the_readme_table_links_each_code_to_its_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split(docs.START, 1)[1].split(docs.END, 1)[0]
    for rule in ALL_RULES:
        assert f"| [{rule.code}](docs/rules/{rule.code}.md) | `{rule.name}` |" in table
    index = (ROOT / "docs" / "rules" / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:  # the index links to the pages beside it
        assert f"| [{rule.code}]({rule.code}.md) |" in index
    for target in re.findall(r"\]\((docs/rules/[^)]+)\)", readme):
        assert (ROOT / target).is_file(), target


def test_the_generator_writes_checks_and_removes_pages_of_rules_that_are_gone(tmp_path, monkeypatch, capsys):
    (tmp_path / "README.md").write_text(f"# x\n\n{docs.START}\nold\n{docs.END}\n\nrest\n", encoding="utf-8")
    write(tmp_path / "docs" / "rules" / "DL999.md", "a rule that no longer exists\n")
    monkeypatch.chdir(tmp_path)
    assert docs.main(["--check"]) == 1
    assert "docs/rules/DL001.md is stale" in capsys.readouterr().err
    written = docs.main([])
    assert written == 0 and docs.stale(".") == []
    assert not (tmp_path / "docs" / "rules" / "DL999.md").exists()
    assert (tmp_path / "README.md").read_text(encoding="utf-8").endswith(f"{docs.END}\n\nrest\n")
    assert docs.main(["--check"]) == 0
    assert docs.write(".") == []  # a second run changes nothing


def test_the_url_names_the_repository_of_the_readme_and_of_pyproject():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert urls["Repository"] == docs.REPOSITORY
    assert urls["Documentation"].startswith(docs.REPOSITORY + "/")
    assert f"repo: {docs.REPOSITORY}" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert docs.rule_url("DL001") == f"{docs.REPOSITORY}/blob/main/docs/rules/DL001.md"


def test_importing_the_links_imports_no_rule():
    import subprocess

    code = "import sys, devlint.docs, devlint.report; print(any(m.startswith(('libcst', 'devlint.rules')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "False"


# -- the links in each format --------------------------------------------------------------------------
@pytest.fixture()
def example():
    return [check_file(str(EXAMPLE), Config(), write=False)]


def test_json_and_json_lines_carry_the_url_as_ruff():
    for fmt in ("json", "json-lines"):
        result = run(str(EXAMPLE), "--output-format", fmt, "--no-cache")
        text = result.stdout
        rows = json.loads(text) if fmt == "json" else [json.loads(line) for line in text.splitlines()]
        assert [r["url"] for r in rows] == [docs.rule_url(r["code"]) for r in rows]
        assert rows[0]["url"].endswith("/docs/rules/DL001.md")


def test_sarif_rules_have_a_help_uri_and_still_validate(example):
    jsonschema = pytest.importorskip("jsonschema")
    from devlint.formats import render

    document = json.loads(render("sarif", example))
    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(document)
    rules = document["runs"][0]["tool"]["driver"]["rules"]
    assert [r["helpUri"] for r in rules] == [docs.rule_url(rule.code) for rule in ALL_RULES]


def test_full_ends_each_finding_with_the_command_and_the_page(example):
    from devlint.formats import render

    text = render("full", example)
    for code in ("DL001", "DL002", "DL003", "DL004"):
        assert f"= docs: `devlint rule {code}` explains the rule; online: {docs.rule_url(code)}\n" in text


def test_formats_without_a_link_field_stay_as_they_are(example):
    from devlint.formats import render

    for fmt in ("github", "gitlab", "junit"):  # no field for a link: see the README's CI section
        assert "docs/rules" not in render(fmt, example)


# -- terminal hyperlinks ---------------------------------------------------------------------------------
_TERMINAL_VARIABLES = ("FORCE_HYPERLINK", "CI", "VTE_VERSION", "TERM_PROGRAM", "TERM", "DOMTERM", "WT_SESSION",
                       "KONSOLE_VERSION", "NO_COLOR", "FORCE_COLOR")


@pytest.fixture()
def terminal(monkeypatch):
    for name in _TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    return monkeypatch


def _link(code: str) -> str:
    return f"\x1b]8;;{docs.rule_url(code)}\x1b\\{code}\x1b]8;;\x1b\\"


def test_a_terminal_known_to_render_links_gets_the_code_as_a_hyperlink(tmp_path, terminal):
    path = write(tmp_path / "a.py", BUGGY)
    terminal.setenv("TERM_PROGRAM", "WezTerm")
    linked = run(str(path), "--no-cache").stdout
    assert _link("DL001") in linked
    assert click_unstyle(linked).startswith(f"{path}:2:20: DL001 [*] ")


def test_no_hyperlink_on_an_unknown_terminal_in_ci_without_colour_or_when_turned_off(tmp_path, terminal):
    path = write(tmp_path / "a.py", BUGGY)
    assert "\x1b]8" not in run(str(path), "--no-cache").stdout  # a terminal not known to render them
    terminal.setenv("TERM_PROGRAM", "vscode")
    terminal.setenv("FORCE_HYPERLINK", "0")
    assert "\x1b]8" not in run(str(path), "--no-cache").stdout
    terminal.delenv("FORCE_HYPERLINK")
    terminal.setenv("CI", "true")
    assert "\x1b]8" not in run(str(path), "--no-cache").stdout
    terminal.delenv("CI")
    terminal.setenv("NO_COLOR", "1")
    plain = run(str(path), "--no-cache").stdout
    assert "\x1b" not in plain and f"{path}:2:20: DL001 [*] " in plain
    terminal.delenv("NO_COLOR")
    out = tmp_path / "report.txt"
    run(str(path), "--no-cache", "-o", str(out))  # a file gets neither colour nor links
    assert "\x1b" not in out.read_text()


def test_force_hyperlink_turns_them_on_with_colour(tmp_path, terminal):
    path = write(tmp_path / "a.py", BUGGY)
    terminal.setenv("FORCE_HYPERLINK", "1")
    assert _link("DL001") in run(str(path), "--no-cache").stdout


def click_unstyle(text: str) -> str:
    import click

    return click.unstyle(re.sub(r"\x1b\]8;;[^\x1b]*\x1b\\", "", text))
