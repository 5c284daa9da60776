"""Findings (and a syntax error) as LSP diagnostics."""

from __future__ import annotations

from lsprotocol import types

from devlint.server import lint
from devlint.server.positions import Lines

SOURCE = "devlint"


def diagnostic(finding: lint.Finding, lines: Lines) -> types.Diagnostic:
    """Code, message, rule name (in `data`, with the fix's applicability), severity warning, and the
    rule's page as the code's link; DL100 (a `# noqa` that silences nothing) is faded."""
    start = lines.to_client(finding.start.line, finding.start.column)
    end = lines.to_client(finding.end.line, finding.end.column)
    if end == start:  # an empty range is invisible in most editors: underline the character
        end = lines.to_client(finding.start.line, finding.start.column + 1)
    fix = finding.fix
    return types.Diagnostic(
        range=types.Range(start, end),
        message=finding.message,
        severity=types.DiagnosticSeverity.Warning,
        code=finding.code,
        code_description=types.CodeDescription(href=lint.rule_url(finding.code)),
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary] if finding.code == lint.UNUSED_NOQA else None,
        data={"name": finding.name, "fix": None if fix is None else fix.applicability.value},
    )


def error_diagnostic(error: lint.FileError, lines: Lines) -> types.Diagnostic:
    """The one diagnostic for a text devlint could not check (a syntax error: as ruff, one diagnostic,
    at the interpreter's position, to the end of that line)."""
    line = error.line or 1
    column = max((error.column or 1) - 1, 0)
    start = lines.to_client(line, column)
    end = lines.line_end(line)
    if end.character <= start.character:
        end = types.Position(start.line, start.character + 1)
    return types.Diagnostic(range=types.Range(start, end), message=error.message,
                            severity=types.DiagnosticSeverity.Error, source=SOURCE)


def diagnostics(outcome: lint.Outcome, lines: Lines, cell: int | None = None) -> list[types.Diagnostic]:
    """A document's diagnostics; in a notebook, those of one cell (1-based among all cells)."""
    found = [diagnostic(f, lines) for f in outcome.findings if f.cell == cell]
    if outcome.error is not None and cell is None:
        found.append(error_diagnostic(outcome.error, lines))
    return found
