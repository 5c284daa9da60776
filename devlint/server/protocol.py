"""The LSP wiring: pygls handlers that turn the client's messages into the store's calls and the
analyses into diagnostics, code actions and hovers. Nothing here writes a file."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from devlint import __version__
from devlint.server import actions, lint
from devlint.server.configuration import Configurations
from devlint.server.diagnostics import diagnostics, error_diagnostic
from devlint.server.documents import DEFAULT_DELAY, Documents, Snapshot
from devlint.server.hover import hover
from devlint.server.positions import Lines

_NOTEBOOKS = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage("python")],
                                                             notebook="*")],
    save=True,
)


@dataclass
class Analysis:
    outcome: lint.Outcome | None  # None: the document's settings are broken (the user was told)
    config: lint.Config | None
    depends_on: frozenset = frozenset()


class DevlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("devlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=_NOTEBOOKS)
        self.delay = DEFAULT_DELAY
        self.documents: Documents | None = None
        self.configs = Configurations(self._show_error, self._root)
        self.published_cells: dict[str, list[str]] = {}  # notebook uri -> cell uris given diagnostics

    # -- from the analysis thread ----------------------------------------------------------------------
    def _show_error(self, message: str) -> None:
        params = types.ShowMessageParams(type=types.MessageType.Error, message=message)
        self.store().loop.call_soon_threadsafe(self.window_show_message, params)

    def _log(self, message: str, kind=types.MessageType.Info) -> None:
        params = types.LogMessageParams(type=kind, message=message)
        self.store().loop.call_soon_threadsafe(self.window_log_message, params)

    def _root(self) -> str | None:
        root = self.workspace.root_path if self.documents is not None else None
        return root if root and os.path.isdir(root) else None

    def store(self) -> Documents:
        if self.documents is None:
            self.documents = Documents(asyncio.get_running_loop(), self.analyse, self.publish, self.delay)
        return self.documents

    def analyse(self, snapshot: Snapshot) -> Analysis:
        try:
            lint.forget_probes()  # which files exist: as the disk is now (the facts of files are re-read by stamp)
            config = self.configs.for_document(snapshot.path)
            if config is None:
                return Analysis(None, None)
            if snapshot.is_notebook:
                path = snapshot.path or "untitled.ipynb"
                outcome = lint.check_notebook(path, [(code, text) for _, code, text in snapshot.cells], config)
            else:
                outcome = lint.check(snapshot.path or "-", snapshot.text, config)
            if outcome.notice:
                self._log(f"devlint: {snapshot.path or snapshot.uri}: {outcome.notice}")
            return Analysis(outcome, config, outcome.depends_on)
        except Exception as exc:  # a bug in devlint must not take the server down
            self._log(f"devlint: internal error on {snapshot.uri}: {type(exc).__name__}: {exc}",
                      types.MessageType.Error)
            return Analysis(lint.Outcome(), None)

    # -- on the message loop ---------------------------------------------------------------------------
    def publish(self, snapshot: Snapshot, analysis: Analysis) -> None:
        encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        outcome = analysis.outcome or lint.Outcome()
        if not snapshot.is_notebook:
            found = diagnostics(outcome, Lines(snapshot.text, encoding))
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=snapshot.uri, diagnostics=found, version=snapshot.version))
            return
        published = []
        first_code = next((i for i, (_, code, _) in enumerate(snapshot.cells, 1) if code), None)
        for index, (cell_uri, _, text) in enumerate(snapshot.cells, start=1):
            lines = Lines(text, encoding)
            found = diagnostics(outcome, lines, cell=index)
            if outcome.error is not None and index == first_code:  # the notebook as a whole was not checked
                found.append(error_diagnostic(outcome.error, lines))
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=found))
            published.append(cell_uri)
        for gone in set(self.published_cells.get(snapshot.uri, ())) - set(published):
            self.clear(gone)
        self.published_cells[snapshot.uri] = published

    def clear(self, uri: str) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def text_snapshot(self, uri: str) -> Snapshot:
        document = self.workspace.get_text_document(uri)
        return Snapshot(uri, document.version or 0, _path(uri), text=document.source)

    def notebook_snapshot(self, uri: str) -> Snapshot | None:
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return None
        cells = tuple((cell.document, cell.kind == types.NotebookCellKind.Code,
                       self.workspace.get_text_document(cell.document).source) for cell in notebook.cells)
        return Snapshot(uri, notebook.version, _path(uri), cells=cells)


def _path(uri: str) -> str | None:
    path = to_fs_path(uri)
    return unquote(path) if path else None


server = DevlintServer()


@server.feature(types.INITIALIZE)
def initialize(ls: DevlintServer, params: types.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, dict) and isinstance(options.get("debounce"), (int, float)) and options["debounce"] >= 0:
        ls.delay = float(options["debounce"])  # seconds; tests and the benchmark set it


@server.feature(types.INITIALIZED)
def initialized(ls: DevlintServer, params: types.InitializedParams) -> None:
    capabilities = ls.client_capabilities.workspace
    watched = capabilities and capabilities.did_change_watched_files
    if watched and watched.dynamic_registration:
        # Settings and the project index follow the disk: told of each change, not polled.
        watchers = [types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                    types.FileSystemWatcher(glob_pattern="**/*.py")]
        ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
            id="devlint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: DevlintServer, params: types.DidOpenTextDocumentParams) -> None:
    document = params.text_document
    # A client that sends every document (a pyproject.toml, a README) gets findings for Python only.
    python = document.language_id == "python" or (_path(document.uri) or "").endswith((".py", ".pyi"))
    if python and ls.workspace.get_notebook_document(cell_uri=document.uri) is None:
        ls.store().opened(ls.text_snapshot(document.uri))


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: DevlintServer, params: types.DidChangeTextDocumentParams) -> None:
    if params.text_document.uri in ls.store().latest:
        ls.store().changed(ls.text_snapshot(params.text_document.uri))


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: DevlintServer, params: types.DidSaveTextDocumentParams) -> None:
    if os.path.basename(_path(params.text_document.uri) or "") == "pyproject.toml":
        _settings_changed(ls)
    ls.store().saved(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: DevlintServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.store().closed(params.text_document.uri)
    ls.store().executor.submit(actions.forget, params.text_document.uri)
    ls.clear(params.text_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_open(ls: DevlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    snapshot = ls.notebook_snapshot(params.notebook_document.uri)
    if snapshot is not None:
        ls.store().opened(snapshot)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_change(ls: DevlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    snapshot = ls.notebook_snapshot(params.notebook_document.uri)
    if snapshot is not None:
        ls.store().changed(snapshot)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_save(ls: DevlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.store().saved(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_close(ls: DevlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    ls.store().closed(params.notebook_document.uri)
    ls.store().executor.submit(actions.forget, params.notebook_document.uri)
    for cell_uri in ls.published_cells.pop(params.notebook_document.uri, ()):
        ls.clear(cell_uri)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def watched_files(ls: DevlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    paths = [path for path in (_path(change.uri) for change in params.changes) if path]
    if any(os.path.basename(path) == "pyproject.toml" for path in paths):
        _settings_changed(ls)
    else:
        ls.store().recheck_dependents(paths)


def _settings_changed(ls: DevlintServer) -> None:
    ls.configs.changed()
    ls.store().recheck_all()


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL]))
async def code_action(ls: DevlintServer, params: types.CodeActionParams):
    owner = _owner(ls, params.text_document.uri)
    known = await ls.store().current(owner)
    if known is None or known[1].outcome is None:
        return None
    snapshot, analysis = known
    edits = ls.client_capabilities.workspace and ls.client_capabilities.workspace.workspace_edit
    request = actions.Request(params, ls.workspace.position_encoding or types.PositionEncodingKind.Utf16,
                              bool(edits and edits.document_changes))
    try:
        return await ls.store().run(actions.code_actions, snapshot, analysis.outcome, analysis.config, request) or None
    except Exception as exc:  # no actions rather than a failed request
        ls.window_log_message(types.LogMessageParams(types.MessageType.Error, f"devlint: code actions failed: {exc}"))
        return None


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def on_hover(ls: DevlintServer, params: types.HoverParams):
    uri = params.text_document.uri
    owner = _owner(ls, uri)
    known = await ls.store().current(owner)
    if known is None:
        return None
    snapshot, analysis = known
    findings = analysis.outcome.findings if analysis.outcome is not None else []
    encoding = ls.workspace.position_encoding or types.PositionEncodingKind.Utf16
    if snapshot.is_notebook:
        cell = next((i for i, (cell_uri, _, _) in enumerate(snapshot.cells, 1) if cell_uri == uri), None)
        if cell is None:
            return None
        return await ls.store().run(hover, snapshot.cells[cell - 1][2], findings, params.position, encoding, cell)
    return await ls.store().run(hover, snapshot.text, findings, params.position, encoding)


@server.feature(types.SHUTDOWN)
def shutdown(ls: DevlintServer, params) -> None:
    if ls.documents is not None:
        ls.documents.stop()


def _owner(ls: DevlintServer, uri: str) -> str:
    """The document a uri's analysis belongs to: a cell's notebook, else itself."""
    notebook = ls.workspace.get_notebook_document(cell_uri=uri)
    return notebook.uri if notebook is not None else uri


def serve() -> None:
    logging.basicConfig(level=logging.WARNING)  # pygls's own log: to stderr, never into the protocol's stdout
    server.start_io()
