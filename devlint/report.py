"""Render results: text (one line per finding + summary) and JSON; compute the exit code."""

from __future__ import annotations

import difflib
import json

from devlint.model import Applicability, FileResult, Finding

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def finding_line(path: str, finding: Finding) -> str:
    marker = " [*]" if finding.fix and finding.fix.applicability is Applicability.SAFE and finding.fix.edits else ""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{path}:{cell}{finding.start.line}:{finding.start.column + 1}: {finding.code}{marker} {finding.message}"


def error_line(result: FileResult) -> str:
    error = result.error
    where = result.path
    if error.line is not None:
        where += f":{error.line}"
        if error.column is not None:
            where += f":{error.column}"
    return f"{where}: error: {error.message}"


def render_text(results: list[FileResult], *, fixing: bool, unsafe_fixes: bool) -> str:
    lines = [finding_line(r.path, f) for r in results for f in r.findings]
    findings = [f for r in results for f in r.findings]
    fixed = sum(len(r.applied) for r in results)
    if findings:
        noun = "error" if len(findings) + fixed == 1 else "errors"
        lines.append(f"Found {len(findings) + fixed} {noun} ({fixed} fixed, {len(findings)} remaining)." if fixed
                     else f"Found {len(findings)} {noun}.")
        safe = sum(1 for f in findings if _applicable(f, Applicability.SAFE))
        unsafe = sum(1 for f in findings if _applicable(f, Applicability.UNSAFE))
        if safe and not fixing:
            lines.append(f"[*] {safe} fixable with the `--fix` option.")
        if unsafe and not unsafe_fixes:
            lines.append(f"({unsafe} hidden fixes can be enabled with the `--unsafe-fixes` option.)")
    elif fixed:
        lines.append(f"Found {fixed} error{'s' if fixed != 1 else ''} ({fixed} fixed, 0 remaining).")
    elif not any(r.error for r in results):
        lines.append("All checks passed!")
    return "\n".join(lines) + "\n"


def _applicable(finding: Finding, level: Applicability) -> bool:
    return finding.fix is not None and finding.fix.applicability is level and bool(finding.fix.edits)


def finding_dict(path: str, finding: Finding) -> dict:
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability.value,
            "title": finding.fix.title,
            "needs_device_definition": finding.fix.needs_device,
            "edits": [
                {
                    "content": e.content,
                    "location": {"line": e.start.line, "column": e.start.column + 1},
                    "end_location": {"line": e.end.line, "column": e.end.column + 1},
                }
                for e in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "path": path,
        "line": finding.start.line,
        "column": finding.start.column + 1,
        "end_line": finding.end.line,
        "end_column": finding.end.column + 1,
        "cell": finding.cell,
        "fix": fix,
    }


def render_json(results: list[FileResult]) -> str:
    return json.dumps([finding_dict(r.path, f) for r in results for f in r.findings], indent=2) + "\n"


OUTPUT_FORMATS = ("text", "json", "full", "json-lines", "github", "gitlab", "junit", "sarif")


def render(fmt: str, results: list[FileResult], *, fixing: bool, unsafe_fixes: bool) -> str:
    if fmt == "json":
        return render_json(results)
    if fmt == "text":
        return render_text(results, fixing=fixing, unsafe_fixes=unsafe_fixes)
    from devlint import formats  # the CI formats: full, json-lines, github, gitlab, junit, sarif

    return formats.render(fmt, results)


def render_statistics(results: list[FileResult]) -> str:
    counts: dict[tuple[str, str], list[Finding]] = {}
    for result in results:
        for finding in result.findings:
            counts.setdefault((finding.code, finding.name), []).append(finding)
    lines = []
    for (code, name), found in sorted(counts.items()):
        fixable = sum(1 for f in found if _applicable(f, Applicability.SAFE))
        lines.append(f"{len(found):5}\t{code}\t{'[*] ' if fixable else '    '}{name}")
    return "\n".join(lines) + ("\n" if lines else "")


def render_diff(result: FileResult) -> str:
    before = (result.original_source or "").splitlines(keepends=True)
    after = (result.fixed_source or "").splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, fromfile=result.path, tofile=result.path))


def exit_code(results: list[FileResult], other_errors: int, *, exit_zero: bool) -> int:
    if other_errors or any(r.error for r in results):
        return EXIT_ERROR
    if any(r.findings for r in results) and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
