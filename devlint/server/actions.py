"""Code actions: each finding's fix, "Disable for this line", and `source.fixAll.devlint`.

A safe fix is the preferred quick fix; an unsafe one is offered with "(unsafe)" in its title and never
preferred; a display-only fix offers nothing to apply. Fix all applies the safe fixes with the passes of
`devlint --fix`, so the text it gives is the text `--fix` writes. Run on the analysis thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types

from devlint.server import lint
from devlint.server.diagnostics import diagnostic
from devlint.server.documents import Snapshot
from devlint.server.positions import Lines

FIX_ALL = "source.fixAll.devlint"


@dataclass(frozen=True)
class Request:
    """What the actions need besides the document: the request, and how this client takes edits."""

    params: types.CodeActionParams
    encoding: str
    versioned_edits: bool  # the client takes documentChanges (edits refused on a changed document)


def code_actions(snapshot: Snapshot, outcome: lint.Outcome, config: lint.Config,
                 request: Request) -> list[types.CodeAction]:
    uri = request.params.text_document.uri
    only = request.params.context.only
    if snapshot.is_notebook:
        cell = next((i for i, (cell_uri, _, _) in enumerate(snapshot.cells, 1) if cell_uri == uri), None)
        if cell is None:
            return []
        text, version = snapshot.cells[cell - 1][2], None
    else:
        cell, text, version = None, snapshot.text, snapshot.version
    lines = Lines(text, request.encoding)
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        first = lines.from_client(request.params.range.start)
        last = lines.from_client(request.params.range.end)
        # The client's diagnostics for the request (an editor sends those of the cursor's line) or the range.
        asked = {(d.code, d.range.start.line, d.range.start.character) for d in request.params.context.diagnostics}
        for finding in outcome.findings:
            if finding.cell != cell:
                continue
            shown = diagnostic(finding, lines)
            if not _overlaps(finding, first, last) and (shown.code, shown.range.start.line,
                                                        shown.range.start.character) not in asked:
                continue
            if cell is None:  # a notebook's fixes span cells: there, fix all (below) applies them
                fixed = _fix_action(snapshot, finding, config, shown, lines, request, version)
                if fixed is not None:
                    actions.append(fixed)
            if finding.code != lint.UNUSED_NOQA:
                edit = _edit(uri, version, lines.edits_to(lint.disable_line(text, finding)), request)
                actions.append(types.CodeAction(title=f"Disable {finding.code} for this line",
                                                kind=types.CodeActionKind.QuickFix, diagnostics=[shown], edit=edit))
    # Fix all is a whole `--fix` run (seconds on a big file): offered when asked for by kind (on save) or from
    # a menu the user opened, not for the light bulb an editor asks about at every cursor move.
    asked_for = only is not None or request.params.context.trigger_kind != types.CodeActionTriggerKind.Automatic
    if asked_for and _wanted(FIX_ALL, only) and any(_safe(f) for f in outcome.findings):
        edit = _fix_all_edit(snapshot, config, request)
        if edit is not None:
            actions.append(types.CodeAction(title="Fix all devlint problems (safe fixes)", kind=FIX_ALL, edit=edit))
    return actions


def _fix_action(snapshot, finding, config, shown, lines: Lines, request: Request, version):
    fix = finding.fix
    if fix is None or fix.applicability is lint.Applicability.DISPLAY_ONLY:
        return None
    fixed = lint.fix_one(snapshot.path or "-", snapshot.text, finding, config)
    if fixed is None:
        return None
    safe = fix.applicability is lint.Applicability.SAFE
    title = f"{finding.code}: {fix.title}" if safe else f"{finding.code} (unsafe): {fix.title}"
    return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[shown],
                            is_preferred=safe, edit=_edit(request.params.text_document.uri, version,
                                                          lines.edits_to(fixed), request))


_FIXED: dict[str, tuple[Snapshot, object]] = {}  # uri -> (the version fixed, its fix-all text or sources)


def _fixed_once(snapshot: Snapshot, compute):
    """Fix all's result for this version, computed once (a save asks again for the text it just fixed)."""
    known = _FIXED.get(snapshot.uri)
    if known is None or known[0] is not snapshot:
        known = _FIXED[snapshot.uri] = (snapshot, compute())
    return known[1]


def forget(uri: str) -> None:
    _FIXED.pop(uri, None)


def _fix_all_edit(snapshot: Snapshot, config: lint.Config, request: Request) -> types.WorkspaceEdit | None:
    if not snapshot.is_notebook:
        fixed = _fixed_once(snapshot, lambda: lint.fix_all(snapshot.path or "-", snapshot.text, config))
        if fixed is None:
            return None
        return _edit(snapshot.uri, snapshot.version, Lines(snapshot.text, request.encoding).edits_to(fixed), request)
    path = snapshot.path or "untitled.ipynb"
    sources = _fixed_once(snapshot, lambda: lint.fix_notebook(path, [(code, text) for _, code, text in snapshot.cells],
                                                              config))
    if sources is None:
        return None
    changes = {}
    for (cell_uri, _, text), new in zip(snapshot.cells, sources):
        if new != text:
            changes[cell_uri] = Lines(text, request.encoding).edits_to(new)
    return types.WorkspaceEdit(changes=changes) if changes else None


def _edit(uri: str, version: int | None, edits: list[types.TextEdit], request: Request) -> types.WorkspaceEdit:
    if request.versioned_edits and version is not None:
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})


def _safe(finding: lint.Finding) -> bool:
    return finding.fix is not None and bool(finding.fix.edits) and finding.fix.applicability is lint.Applicability.SAFE


def _wanted(kind: str, only) -> bool:
    """LSP's `only`: a kind is asked for by itself or by a kind it refines (`source.fixAll`)."""
    return only is None or any(kind == o or kind.startswith(f"{o}.") for o in only)


def _overlaps(finding: lint.Finding, first: tuple[int, int], last: tuple[int, int]) -> bool:
    return (finding.start.line, finding.start.column) <= last and first <= (finding.end.line, finding.end.column)
