"""Output formats for people and CI beyond text and JSON: full, json-lines, github, gitlab, junit, sarif.

Each renderer takes the run's FileResults and returns text; none touches the disk.

Notebooks: a finding's line and column count within its cell (`cell`, 1-based among all cells, as
ruff). `full` quotes the cell's code and shows the cell's diff; json and json-lines carry `cell`.
The formats that can only point into the file (github, gitlab, junit, sarif) point at line 1,
column 1 of the notebook, a position that is clearly a fallback (ruff's convention), and name the
cell and the position within it in the message: `demo.ipynb:cell 3:2:5: DL001 ...`.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import urllib.parse
import xml.etree.ElementTree as ET

from devlint import __version__
from devlint.fingerprints import KEY as FINGERPRINT_KEY
from devlint.fingerprints import fingerprints
from devlint.model import Applicability, FileResult, Finding
from devlint.report import error_line, finding_dict, finding_line, render_text

FORMATS = ("full", "json-lines", "github", "gitlab", "junit", "sarif")


def render(fmt: str, results: list[FileResult]) -> str:
    return {
        "full": render_full,
        "json-lines": render_json_lines,
        "github": render_github,
        "gitlab": render_gitlab,
        "junit": render_junit,
        "sarif": render_sarif,
    }[fmt](results)


def _findings(results: list[FileResult]):
    return [(r, f) for r in results for f in r.findings]


def _source(result: FileResult, finding: Finding) -> str | None:
    """The text the finding's positions count in: the file, or for a notebook the cell's code."""
    if finding.cell is None:
        return result.original_source
    if result.original_source is None:
        return None
    from devlint.notebook_json import cell_source

    return cell_source(result.original_source, finding.cell)


def _in_cell(finding: Finding) -> bool:
    return finding.cell is not None


def _fallback_region(finding: Finding):
    """Where a file-position format points: the finding, or line 1 column 1 of a notebook."""
    if _in_cell(finding):
        return 1, 1, 1, 1
    return finding.start.line, finding.start.column + 1, finding.end.line, finding.end.column + 1


# -- full --------------------------------------------------------------------------------------------
def render_full(results: list[FileResult], other_errors: int = 0, other_warnings: int = 0,
                summary: bool = True) -> str:
    """Each finding with its code, caret, fix and diff, and where the rule is documented; then the
    summary (left out with `summary=False`, `-q`)."""
    from devlint.docs import rule_url

    blocks = []
    for result, finding in _findings(results):
        source = _source(result, finding)
        lines = (source or "").splitlines()
        block = [finding_line(result.path, finding)]
        width = len(str(finding.end.line))
        for number in range(finding.start.line, min(finding.end.line, len(lines)) + 1):
            text = lines[number - 1]
            block.append(f"{number:>{width}} | {text}")
            start = finding.start.column if number == finding.start.line else len(text) - len(text.lstrip())
            end = finding.end.column if number == finding.end.line else len(text)
            block.append(f"{'':>{width}} | {' ' * start}{'^' * max(1, end - start)}")
        if finding.fix is not None:
            level = "" if finding.fix.applicability is Applicability.SAFE else f" ({finding.fix.applicability.value})"
            block.append(f"= help: {finding.fix.title}{level}")
            if finding.fix.edits and source is not None:
                block.append(_fix_diff(source, finding).rstrip("\n"))
        block.append(f"= docs: `devlint rule {finding.code}` explains the rule; online: {rule_url(finding.code)}")
        blocks.append("\n".join(block))
    if not summary:
        return "".join(block + "\n\n" for block in blocks)
    text = render_text(results, fixing=False, unsafe_fixes=False, other_errors=other_errors,
                       other_warnings=other_warnings)
    shown = {finding_line(r.path, f) for r, f in _findings(results)}
    summary = "\n".join(line for line in text.splitlines() if line not in shown) + "\n"
    return "\n\n".join(blocks) + ("\n\n" if blocks else "") + summary


def _fix_diff(source: str, finding: Finding) -> str:
    from devlint.rendering import line_offsets, offset

    offsets = line_offsets(source)
    fixed = source
    for edit in sorted(finding.fix.edits, key=lambda e: (e.start, e.end), reverse=True):
        fixed = fixed[: offset(offsets, edit.start)] + edit.content + fixed[offset(offsets, edit.end):]
    if not source.endswith(("\n", "\r")):  # a notebook cell's last line: keep the diff's lines apart
        source, fixed = source + "\n", fixed + "\n"
    diff = difflib.unified_diff(source.splitlines(True), fixed.splitlines(True), n=1)
    return "".join(line for line in diff if not line.startswith(("---", "+++")))


# -- json-lines ----------------------------------------------------------------------------------------
def render_json_lines(results: list[FileResult]) -> str:
    return "".join(json.dumps(finding_dict(r.path, f)) + "\n" for r, f in _findings(results))


# -- GitHub Actions workflow commands ----------------------------------------------------------------------
def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(results: list[FileResult]) -> str:
    lines = []
    for result, finding in _findings(results):
        line, col, end_line, end_col = _fallback_region(finding)
        properties = ",".join([
            f"title={_escape_property(f'devlint ({finding.code})')}",
            f"file={_escape_property(result.path)}",
            f"line={line}",
            f"col={col}",
            f"endLine={end_line}",
            f"endColumn={end_col}",
        ])
        text = finding_line(result.path, finding) if _in_cell(finding) else f"{finding.code} {finding.message}"
        lines.append(f"::error {properties}::{_escape_data(text)}")
    for result in results:
        if result.error is not None:
            where = f"file={_escape_property(result.path)}"
            if result.error.line is not None:
                where += f",line={result.error.line}"
            lines.append(f"::error title=devlint,{where}::{_escape_data(result.error.message)}")
    return "".join(line + "\n" for line in lines)


# -- GitLab Code Quality -----------------------------------------------------------------------------------
def render_gitlab(results: list[FileResult]) -> str:
    issues = []
    seen: dict[str, int] = {}
    for result, finding in _findings(results):
        lines = (_source(result, finding) or "").splitlines()
        text = lines[finding.start.line - 1].strip() if finding.start.line <= len(lines) else ""
        line, _, end_line, _ = _fallback_region(finding)
        cell = f"cell {finding.cell}:{finding.start.line}:{finding.start.column + 1}: " if _in_cell(finding) else ""
        # Not the line number: a fingerprint must survive code moving up or down.
        base = hashlib.sha256(f"{result.path}\0{finding.code}\0{finding.message}\0{text}".encode("utf-8", "surrogateescape")).hexdigest()
        seen[base] = seen.get(base, 0) + 1
        fingerprint = base if seen[base] == 1 else hashlib.sha256(f"{base}\0{seen[base]}".encode()).hexdigest()
        issues.append({
            "description": f"{cell}{finding.code} {finding.message}",
            "check_name": finding.code,
            "fingerprint": fingerprint,
            "severity": "major",
            "location": {"path": result.path, "lines": {"begin": line, "end": end_line}},
        })
    return json.dumps(issues, indent=2) + "\n"


# -- JUnit XML ---------------------------------------------------------------------------------------------
def render_junit(results: list[FileResult]) -> str:
    suite = ET.Element("testsuite", name="devlint")
    failures = errors = tests = 0
    for result in results:
        if result.error is not None:
            case = ET.SubElement(suite, "testcase", classname=result.path, name="devlint")
            ET.SubElement(case, "error", message=result.error.message).text = error_line(result)
            errors += 1
            tests += 1
        elif not result.findings:
            ET.SubElement(suite, "testcase", classname=result.path, name="devlint")
            tests += 1
        for finding in result.findings:
            cell = f"cell {finding.cell}:" if _in_cell(finding) else ""
            name = f"{finding.code}:{cell}{finding.start.line}:{finding.start.column + 1}"
            case = ET.SubElement(suite, "testcase", classname=result.path, name=name)
            ET.SubElement(case, "failure", message=finding.message, type=finding.code).text = finding_line(
                result.path, finding)
            failures += 1
            tests += 1
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suites = ET.Element("testsuites", name="devlint", tests=str(tests), failures=str(failures), errors=str(errors))
    suites.append(suite)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


# -- SARIF 2.1.0 -------------------------------------------------------------------------------------------
def _uri(path: str) -> str:
    # A file name that is not valid UTF-8 reaches us with surrogate escapes: quote its raw bytes.
    return urllib.parse.quote(os.fsencode(path.replace("\\", "/")))


def _region(start, end) -> dict:
    return {"startLine": start.line, "startColumn": start.column + 1, "endLine": end.line, "endColumn": end.column + 1}


def _line_text(result: FileResult, finding: Finding) -> str:
    lines = (_source(result, finding) or "").splitlines()
    return lines[finding.start.line - 1] if finding.start.line <= len(lines) else ""


def render_sarif(results: list[FileResult]) -> str:
    # SARIF describes every rule (its documentation is the class docstring): this imports the rule
    # modules, and LibCST with them; the other formats stay light for fully cached runs.
    from devlint.docs import rule_url
    from devlint.rules import ALL_RULES

    index = {rule.code: i for i, rule in enumerate(ALL_RULES)}
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary()},
            "fullDescription": {"text": rule.summary()},
            "help": {"text": rule.documentation(), "markdown": rule.documentation()},
            "helpUri": rule_url(rule.code),
            "defaultConfiguration": {"level": "error"},
            "properties": {"defaultEnabled": rule.default_enabled},
        }
        for rule in ALL_RULES
    ]
    sarif_results = []
    found = _findings(results)
    prints = fingerprints((r.path, f.code, _line_text(r, f)) for r, f in found)
    for (result, finding), fingerprint in zip(found, prints):
        region = (_region(finding.start, finding.end) if not _in_cell(finding)
                  else dict(zip(("startLine", "startColumn", "endLine", "endColumn"), _fallback_region(finding))))
        location = {"physicalLocation": {"artifactLocation": {"uri": _uri(result.path)}, "region": region}}
        entry = {
            "ruleId": finding.code,
            "ruleIndex": index[finding.code],
            "level": "error",
            "message": {"text": finding_line(result.path, finding) if _in_cell(finding) else finding.message},
            "locations": [location],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
        }
        if _in_cell(finding):
            entry["properties"] = {"cell": finding.cell, "cellRegion": _region(finding.start, finding.end)}
        fix = finding.fix
        # A notebook's fix edits count within a cell, not the file's JSON: no replacement to offer there.
        if (fix is not None and fix.edits and fix.applicability is not Applicability.DISPLAY_ONLY
                and not _in_cell(finding)):
            entry["fixes"] = [{
                # The fixer also defines `device` once per file where this is set (see --fix).
                "properties": {"needsDeviceDefinition": fix.needs_device},
                "description": {"text": fix.title + ("" if fix.applicability is Applicability.SAFE else " (unsafe)")},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(result.path)},
                    "replacements": [
                        {"deletedRegion": _region(e.start, e.end), "insertedContent": {"text": e.content}}
                        for e in fix.edits
                    ],
                }],
            }]
        sarif_results.append(entry)
    notifications = [
        {"level": "error", "message": {"text": result.error.message},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(result.path)}}}]}
        for result in results if result.error is not None
    ]
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "devlint", "version": __version__,
                                "rules": rules}},
            "results": sarif_results,
            "invocations": [{"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}],
        }],
    }
    return json.dumps(document, indent=2) + "\n"
