"""Render results: text (one line per finding + summary) and JSON; compute the exit code.

The other formats (devlint.formats) build on these pieces; devlint.output chooses among all of them."""

from __future__ import annotations

import json
import re

import click

from devlint.model import Applicability, FileResult, Finding

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown_path(path: str) -> str:
    """A path as a line of text shows it: control characters escaped as Python writes them (`a\\nb.py`).

    A newline in a file name split its finding into two lines that parse as something else, and an
    escape character would drive the terminal."""
    return _CONTROL.sub(lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), path)


def finding_line(path: str, finding: Finding, color: bool = False, hyperlink: bool = False) -> str:
    """`path:line:col: CODE [*] message`; with `color`, styled as ruff does (bold path, red code, cyan [*]);
    with `hyperlink` too, the code is a terminal hyperlink (OSC 8) to the rule's page, as ruff's."""
    marker = " [*]" if finding.fix and finding.fix.applicability is Applicability.SAFE and finding.fix.edits else ""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    path = shown_path(path)
    if color:
        return (f"{click.style(path, bold=True)}{click.style(':', fg='cyan')}{cell}{finding.start.line}"
                f"{click.style(':', fg='cyan')}{finding.start.column + 1}{click.style(':', fg='cyan')} "
                f"{click.style(_linked(finding.code, hyperlink), fg='red', bold=True)}{click.style(marker, fg='cyan')} "
                f"{finding.message}")
    return f"{path}:{cell}{finding.start.line}:{finding.start.column + 1}: {finding.code}{marker} {finding.message}"


def _linked(code: str, hyperlink: bool) -> str:
    if not hyperlink:
        return code
    from devlint.docs import rule_url  # no LibCST

    return f"\x1b]8;;{rule_url(code)}\x1b\\{code}\x1b]8;;\x1b\\"


def plural(count: int, noun: str, plural_noun: str | None = None) -> str:
    """`1 error`, `2 errors`, `1 hidden fix`, `2 hidden fixes`."""
    return f"{count} {noun if count == 1 else plural_noun or noun + 's'}"


def error_line(result: FileResult) -> str:
    error = result.error
    where = shown_path(result.path)
    if error.line is not None:
        where += f":{error.line}"
        if error.column is not None:
            where += f":{error.column}"
    return f"{where}: error: {error.message}"


def render_fixes(results: list[FileResult], color: bool = False) -> str:
    """`--show-fixes`, as ruff: `Fixed 2 errors:` then per file `- path:` and `    1 × DL001 (cuda-call)`."""
    total = sum(len(r.applied) for r in results)
    if not total:
        return ""
    lines = [f"Fixed {plural(total, 'error')}:"]
    for result in results:
        if not result.applied:
            continue
        counts: dict[tuple[str, str], int] = {}
        for applied in result.applied:
            counts[(applied.code, applied.name)] = counts.get((applied.code, applied.name), 0) + 1
        path = shown_path(result.path)
        lines.append(f"- {click.style(path, bold=True) if color else path}:")
        for (code, name), count in sorted(counts.items()):
            shown = click.style(code, fg="red", bold=True) if color else code
            lines.append(f"    {count} \u00d7 {shown} ({name})")
    return "\n".join(lines) + "\n"


def render_text(results: list[FileResult], *, fixing: bool, unsafe_fixes: bool, other_errors: int = 0,
                other_warnings: int = 0, color: bool = False, show_fixes: bool = False, summary: bool = True,
                hyperlinks: bool = False) -> str:
    """One line per finding, then a summary that is honest about what was not checked.

    `summary=False` (`-q`) leaves the summary out: the findings (and the `--show-fixes` block) only.

    `other_errors` counts paths that never became results (a missing path); `other_warnings` named
    files left out (README.md). `All checks passed!` only when every requested file was checked and
    is clean; a run that checked nothing says so."""
    lines = [finding_line(r.path, f, color, hyperlinks and color) for r in results for f in r.findings]
    findings = [f for r in results for f in r.findings]
    fixed = sum(len(r.applied) for r in results)
    errors = other_errors + sum(1 for r in results if r.error)
    partial = sum(1 for r in results if r.notice and not r.error and r.notice.endswith(PARTLY_CHECKED))
    skipped = other_warnings + sum(1 for r in results if r.notice and not r.error) - partial
    wanted, summary = summary, []
    unchecked = _unchecked(errors, skipped, partial)
    if findings:
        total = len(findings) + fixed
        summary.append(f"Found {plural(total, 'error')} ({fixed} fixed, {len(findings)} remaining)." if fixed
                       else f"Found {plural(total, 'error')}.")
        if unchecked:
            summary.append(unchecked[0].upper() + unchecked[1:] + ".")
        safe = sum(1 for f in findings if _applicable(f, Applicability.SAFE))
        unsafe = sum(1 for f in findings if _applicable(f, Applicability.UNSAFE))
        if safe and not fixing:
            summary.append(f"[*] {safe} fixable with the `--fix` option.")
        if unsafe and not unsafe_fixes:
            summary.append(f"({plural(unsafe, 'hidden fix', 'hidden fixes')} can be enabled with the "
                           "`--unsafe-fixes` option.)")
    elif fixed:
        summary.append(f"Found {plural(fixed, 'error')} ({fixed} fixed, 0 remaining).")
        if unchecked:
            summary.append(unchecked[0].upper() + unchecked[1:] + ".")
    elif errors:
        summary.append(f"Checks did not complete: {unchecked}.")
    elif skipped or partial:
        summary.append(f"All checks passed, but {unchecked}.")
    elif not findings and not fixed:
        summary.append("All checks passed!" if results else "No Python files found; nothing was checked.")
    if color:
        summary = [_style_summary(line, bool(findings or errors)) for line in summary]
    fixes = render_fixes(results, color) if show_fixes else ""
    if fixes:  # between the findings and the summary, as ruff
        lines += ([""] if lines else []) + fixes.splitlines() + ([""] if wanted else [])
    if not wanted:
        return "".join(line + "\n" for line in lines)
    return "\n".join(lines + summary) + "\n"


# The end of a notebook's notice when only some of its cells were left out (devlint.documents.notebook).
PARTLY_CHECKED = "(the other cells were checked)"


def _unchecked(errors: int, skipped: int, partial: int = 0) -> str:
    """`1 file could not be checked and 2 files were skipped (see the errors and warnings above)`."""
    parts = []
    if errors:
        parts.append(f"{plural(errors, 'file')} could not be checked")
    if skipped:
        parts.append(f"{plural(skipped, 'file')} {'was' if skipped == 1 else 'were'} skipped")
    if partial:
        parts.append(f"{plural(partial, 'notebook')} had cells skipped")
    if not parts:
        return ""
    seen = " and ".join(kind for kind, count in (("errors", errors), ("warnings", skipped + partial)) if count)
    return f"{' and '.join(parts)} (see the {seen} above)"


def _style_summary(line: str, failed: bool) -> str:
    if line.startswith("[*]"):
        return click.style("[*]", fg="cyan") + line[3:]
    if line.startswith("All checks passed!"):
        return click.style(line, fg="green", bold=True)
    if line.startswith(("Found", "Checks did not complete")):
        return click.style(line, bold=True)
    if line.startswith("All checks passed, but") or "skipped" in line:
        return click.style(line, fg="yellow", bold=True)
    return line


def _applicable(finding: Finding, level: Applicability) -> bool:
    return finding.fix is not None and finding.fix.applicability is level and bool(finding.fix.edits)


def finding_dict(path: str, finding: Finding) -> dict:
    from devlint.docs import rule_url  # no LibCST

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
        "url": rule_url(finding.code),
    }


def render_json(results: list[FileResult]) -> str:
    return json.dumps([finding_dict(r.path, f) for r in results for f in r.findings], indent=2) + "\n"


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


def would_fix_line(results: list[FileResult]) -> str:
    """What `--diff` ends with (on stderr), as ruff: `Would fix 3 errors.`; `No errors would be fixed.`"""
    count = sum(len(r.applied) for r in results if r.fixed_source is not None)
    if not count:
        return "No errors would be fixed."
    return f"Would fix {plural(count, 'error')}."


def render_diff(result: FileResult) -> str:
    """A unified diff with one line of output per line of the file.

    Lines end where Python's do (LF, CRLF, or a lone CR: the last printed a CR-only file as one line
    that overwrote itself); a lone CR is shown as a line break. A last line without its line break is
    followed by git's `\\ No newline at end of file` rather than run into the next line of the diff."""
    import difflib  # (only --diff needs it: start-up, issue 28)

    path = shown_path(result.path)
    before = _diff_lines(result.original_source or "")
    after = _diff_lines(result.fixed_source or "")
    shown = []
    for line in difflib.unified_diff(before, after, fromfile=path, tofile=path):
        shown.append(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n")
    return "".join(shown)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def _diff_lines(text: str) -> list[str]:
    """The lines of `text` as Python splits them (not str.splitlines, which splits at form feeds too)."""
    return [line[:-1] + "\n" if line.endswith("\r") else line for line in _LINE.findall(text)]


def exit_code(results: list[FileResult], other_errors: int, *, exit_zero: bool) -> int:
    if other_errors or any(r.error for r in results):
        return EXIT_ERROR
    if any(r.findings for r in results) and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
