"""`devlint server` driven over JSON-RPC as an editor drives it (tests/lsp_client.py): the server runs as
a subprocess; what it answers is compared with what the `devlint` command says about the same text."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main
from tests.lsp_client import LspClient, apply_workspace_edit

BUGS = '''\
import os

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x) + torch.zeros(2)


model = Net().cuda()
model.load_state_dict(torch.load("checkpoint.pt"))
inputs = torch.randn(8, 4)
inputs.to("cuda")
scaler = torch.cuda.amp.GradScaler()
wrapped = nn.DataParallel(model, device_ids=[0, 1])
os.environ["CUDA_VISIBLE_DEVICE"] = "0"
legacy = torch.cuda.FloatTensor(3)
outputs = model(inputs)  # noqa: DL001
print(outputs.numpy())
'''
# The project selects DL100 too: the settings come from its pyproject.toml, and line 24's noqa is unused.
PYPROJECT = '[tool.devlint]\nextend-select = ["DL100"]\nper-file-ignores = {"legacy/*.py" = ["DL001"]}\n'


def cli(project: Path, name: str, text: str, *options: str):
    """`devlint FILE OPTIONS` in the project, on a file holding `text`: (exit code, output, the file's text).
    FILE is cli/NAME, or NAME itself when it names a folder (where per-file-ignores apply)."""
    path = project / name if "/" in name else project / "cli" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    old = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(main, [str(path), "--no-cache", *options], catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.output, path.read_text()


def expected_ranges(project: Path, name: str, text: str) -> list[tuple]:
    """`devlint --output-format json` as (code, LSP range) pairs (ASCII text: columns are UTF-16 units)."""
    _, output, _ = cli(project, name, text, "--output-format", "json")
    return sorted((f["code"], ((f["line"] - 1, f["column"] - 1), (f["end_line"] - 1, f["end_column"] - 1)))
                  for f in json.loads(output))


def ranges(diagnostics: list[dict]) -> list[tuple]:
    return sorted((d["code"], ((d["range"]["start"]["line"], d["range"]["start"]["character"]),
                               (d["range"]["end"]["line"], d["range"]["end"]["character"])))
                  for d in diagnostics if "code" in d)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    # On disk: a clean file. The server must check the editor's text, never this.
    (root / "bugs.py").write_text("import torch\n")
    return root


@pytest.fixture(scope="module")
def server(project):
    client = LspClient(cwd=project)
    client.initialize(project, debounce=0.3)
    yield client
    client.close()


def uri(project: Path, name: str) -> str:
    return (project / name).as_uri()


def actions_at(server, document: str, line: int, only=None, diagnostics=()) -> list[dict]:
    """As Neovim asks: the cursor at the start of `line`, with the diagnostics of that line."""
    context = {"diagnostics": [d for d in diagnostics if d["range"]["start"]["line"] == line]}
    if only is not None:
        context["only"] = only
    return server.request("textDocument/codeAction", {
        "textDocument": {"uri": document}, "range": {"start": {"line": line, "character": 0},
                                                      "end": {"line": line, "character": 0}},
        "context": context}) or []


def opened(server, project, name, text) -> tuple[str, list[dict]]:
    document = uri(project, name)
    server.open(document, text)
    return document, server.diagnostics(document, version=1)


def test_diagnostics_on_open_are_the_command_line_findings_of_the_buffer(server, project):
    document, diagnostics = opened(server, project, "bugs.py", BUGS)
    assert ranges(diagnostics) == expected_ranges(project, "bugs.py", BUGS)
    codes = {d["code"] for d in diagnostics}
    assert {"DL001", "DL002", "DL003", "DL004", "DL005", "DL006", "DL007", "DL008", "DL010", "DL011", "DL100"} <= codes
    for found in diagnostics:
        assert found["severity"] == 2 and found["source"] == "devlint"
        assert found["codeDescription"]["href"].endswith(f"/docs/rules/{found['code']}.md")
        assert found["data"]["name"]
        # The unused noqa is faded (Unnecessary), as ruff shows it; nothing else is.
        assert found.get("tags") == ([1] if found["code"] == "DL100" else None)
    names = {d["code"]: d["data"]["name"] for d in diagnostics}
    assert names["DL001"] == "cuda-call" and names["DL100"] == "unused-noqa"


def test_per_file_ignores_apply_as_in_the_command(server, project):
    text = "import torch\nx = torch.load('a.pt')\ny = torch.zeros(2).cuda()\n"
    _, diagnostics = opened(server, project, "legacy/old.py", text)
    assert [d["code"] for d in diagnostics] == ["DL002"]
    assert ranges(diagnostics) == expected_ranges(project, "legacy/cli_old.py", text)


def test_a_safe_quick_fix_gives_the_text_of_fix(server, project):
    document, diagnostics = opened(server, project, "quick.py", BUGS)
    # model = Net().cuda(): the fix needs a device definition too
    actions = actions_at(server, document, 15, diagnostics=diagnostics)
    fix = next(a for a in actions if a["title"].startswith("DL001:"))
    assert fix["kind"] == "quickfix" and fix["isPreferred"] is True
    assert fix["diagnostics"][0]["code"] == "DL001"
    fixed = apply_workspace_edit({document: BUGS}, fix["edit"])[document]
    assert fixed == cli(project, "quick.py", BUGS, "--fix", "--select", "DL001", "--ignore", "DL100")[2]


def test_an_unsafe_fix_is_labelled_and_a_display_only_one_is_not_offered(server, project):
    document, diagnostics = opened(server, project, "unsafe.py", BUGS)
    unsafe = next(a for a in actions_at(server, document, 12, diagnostics=diagnostics)
                  if a["title"].startswith("DL010"))
    assert "(unsafe)" in unsafe["title"] and not unsafe.get("isPreferred")
    fixed = apply_workspace_edit({document: BUGS}, unsafe["edit"])[document]
    command = cli(project, "unsafe.py", BUGS, "--fix", "--unsafe-fixes", "--select", "DL010", "--ignore", "DL100")
    assert fixed == command[2]
    display_only = actions_at(server, document, 20, diagnostics=diagnostics)  # DL007's device_ids=[0, 1]
    assert [a["title"] for a in display_only if a["kind"] == "quickfix"] == ["Disable DL007 for this line"]


def test_fix_all_is_fix(server, project):
    document, diagnostics = opened(server, project, "fixall.py", BUGS)
    actions = actions_at(server, document, 0, only=["source.fixAll"])
    assert [a["kind"] for a in actions] == ["source.fixAll.devlint"]
    fixed = apply_workspace_edit({document: BUGS}, actions[0]["edit"])[document]
    assert fixed == cli(project, "fixall.py", BUGS, "--fix")[2] != BUGS
    quick = actions_at(server, document, 15, only=["quickfix"], diagnostics=diagnostics)
    assert quick and all(a["kind"] == "quickfix" for a in quick)
    # The light bulb (asked at each cursor move, triggerKind Automatic) is not given a whole --fix run.
    bulb = server.request("textDocument/codeAction", {
        "textDocument": {"uri": document}, "range": {"start": {"line": 15, "character": 0},
                                                      "end": {"line": 15, "character": 0}},
        "context": {"diagnostics": [], "triggerKind": 2}})
    assert bulb is None or all(a["kind"] == "quickfix" for a in bulb)


def test_disable_for_this_line_writes_what_add_noqa_writes(server, project):
    document, diagnostics = opened(server, project, "noqa.py", BUGS)
    action = next(a for a in actions_at(server, document, 16, diagnostics=diagnostics)
                  if a["title"] == "Disable DL002 for this line")
    fixed = apply_workspace_edit({document: BUGS}, action["edit"])[document]
    added = cli(project, "noqa.py", BUGS, "--add-noqa", "--select", "DL002", "--ignore", "DL100")[2]
    assert fixed == added and fixed.splitlines()[16].endswith("# noqa: DL002")


def test_hover_on_a_noqa_code_shows_the_rule(server, project):
    document, _ = opened(server, project, "hover.py", BUGS)
    line = BUGS.splitlines()[23]
    hover = server.request("textDocument/hover", {"textDocument": {"uri": document},
                                                  "position": {"line": 23, "character": line.index("DL001") + 2}})
    rule = CliRunner().invoke(main, ["rule", "DL001"]).output
    assert hover["contents"]["kind"] == "markdown" and hover["contents"]["value"].startswith(rule.strip())
    assert hover["range"]["start"] == {"line": 23, "character": line.index("DL001")}
    nothing = server.request("textDocument/hover", {"textDocument": {"uri": document},
                                                    "position": {"line": 2, "character": 3}})
    assert nothing is None


def test_a_change_is_published_for_its_version_only(server, project):
    document, _ = opened(server, project, "change.py", BUGS)
    server.change(document, "import torch\nx = torch.load('a.pt')\n", 2)
    assert [d["code"] for d in server.diagnostics(document, version=2)] == ["DL002"]
    # Two changes inside the delay: one analysis, of the newest text.
    server.change(document, "import torch\ny = torch.zeros(2).cuda()\n", 3)
    server.change(document, "import torch\n", 4)
    assert server.diagnostics(document, version=4) == []
    assert not any(m["params"]["uri"] == document and m["params"].get("version") == 3 for m in server.pending)
    # An incremental change (a range and its new text), as editors send them: the server applies it.
    server.notify("textDocument/didChange", {"textDocument": {"uri": document, "version": 5}, "contentChanges": [
        {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}},
         "text": "z = torch.ones(1).cuda()\n"}]})
    assert [(d["code"], d["range"]["start"]["line"]) for d in server.diagnostics(document, version=5)] == [("DL001", 1)]
    # Saving checks again at once (the disk's other files may have changed): the same version's findings.
    server.notify("textDocument/didSave", {"textDocument": {"uri": document}})
    assert [d["code"] for d in server.diagnostics(document, version=5, timeout=5)] == ["DL001"]


def test_a_syntax_error_is_one_diagnostic_and_the_server_goes_on(server, project):
    document, diagnostics = opened(server, project, "broken.py", "import torch\nx = (\ny = torch.zeros(2).cuda()\n")
    assert len(diagnostics) == 1 and diagnostics[0]["severity"] == 1
    assert diagnostics[0]["message"].startswith("SyntaxError") and "code" not in diagnostics[0]
    server.change(document, "import torch\ny = torch.zeros(2).cuda()\n", 2)
    assert [d["code"] for d in server.diagnostics(document, version=2)] == ["DL001"]
    # PyTorch 0.3's `async=`: the syntax error and the DL017 finding that explains it, as the command says.
    old = "import torch\nx = torch.zeros(2)\ny = x.cuda(async=True)\n"
    _, both = opened(server, project, "old.py", old)
    assert sorted((d["severity"], d.get("code")) for d in both) == [(1, None), (2, "DL017")]


def test_a_document_in_another_language_is_not_checked(server, project):
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri(project, "notes.toml"), "languageId": "toml",
                                                            "version": 1, "text": "x = (\n"}})
    document, diagnostics = opened(server, project, "after_toml.py", "import torch\n")
    assert diagnostics == []
    assert not any(m["method"] == "textDocument/publishDiagnostics" and m["params"]["uri"].endswith("notes.toml")
                   for m in server.pending)


def test_close_clears_the_diagnostics(server, project):
    document, diagnostics = opened(server, project, "close.py", BUGS)
    assert diagnostics
    server.notify("textDocument/didClose", {"textDocument": {"uri": document}})
    assert server.diagnostics(document) == []


def test_utf16_columns(server, project):
    text = 'import torch\ns = "\U0001f600é"; t = torch.zeros(2).cuda()\n'
    _, diagnostics = opened(server, project, "emoji.py", text)
    (found,) = diagnostics
    column = text.splitlines()[1].index(".cuda") + 1  # in characters: the emoji is one, UTF-16 counts two
    assert found["range"]["start"] == {"line": 1, "character": column + 1}


def test_an_open_buffer_is_what_other_files_see(server, project):
    """main.py's DL003 rests on models.make returning a tensor: the open models.py buffer, not the disk."""
    (project / "models.py").write_text("def make():\n    return [1]\n")
    models, _ = opened(server, project, "models.py", "import torch\n\n\ndef make():\n    return torch.zeros(3)\n")
    document, diagnostics = opened(server, project, "main.py", "from models import make\n\nt = make()\nt.cpu()\n")
    assert [d["code"] for d in diagnostics] == ["DL003"]
    server.change(models, "def make():\n    return [1]\n", 2)  # main.py is checked again
    assert server.diagnostics(document, version=1) == []


def test_a_file_changed_on_disk_checks_its_dependents_again(server, project):
    (project / "factory.py").write_text("import torch\n\n\ndef make():\n    return torch.zeros(3)\n")
    document, diagnostics = opened(server, project, "uses_factory.py",
                                   "from factory import make\n\nt = make()\nt.cpu()\n")
    assert [d["code"] for d in diagnostics] == ["DL003"]
    (project / "factory.py").write_text("def make():\n    return [1]\n")
    server.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri(project, "factory.py"), "type": 2}]})
    assert server.diagnostics(document, version=1) == []


def test_bad_settings_are_one_message_and_a_fixed_file_is_reloaded(server, project):
    folder = project / "bad"
    folder.mkdir()
    (folder / "pyproject.toml").write_text('[tool.devlint]\nselect = "DL001"\n')
    first, diagnostics = opened(server, project, "bad/a.py", "import torch\nx = torch.zeros(2).cuda()\n")
    assert diagnostics == []
    message = server.wait_for("window/showMessage")
    assert message["type"] == 1 and "pyproject.toml" in message["message"] and "select must be" in message["message"]
    second, _ = opened(server, project, "bad/b.py", "import torch\n")
    (folder / "pyproject.toml").write_text('[tool.devlint]\nselect = ["DL001"]\n')
    server.notify("workspace/didChangeWatchedFiles",
                  {"changes": [{"uri": (folder / "pyproject.toml").as_uri(), "type": 2}]})
    assert [d["code"] for d in server.diagnostics(first, version=1)] == ["DL001"]
    assert not any(m["method"] == "window/showMessage" for m in server.pending)  # said once


def test_notebook_cells_then_a_clean_shutdown(project):
    client = LspClient(cwd=project)
    try:
        capabilities = {"notebookDocument": {"synchronization": {}}}
        result = client.initialize(project, capabilities=capabilities)
        assert result["capabilities"]["notebookDocumentSync"]["notebookSelector"]
        notebook = uri(project, "nb.ipynb")
        cells = [("markdown", "# Train\n"), ("code", "import torch\n"),
                 ("code", "x = torch.zeros(2)\ny = x.cuda()\n")]
        cell_uris = [f"{notebook}#cell{i}" for i in range(len(cells))]
        client.notify("notebookDocument/didOpen", {
            "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1,
                                 "cells": [{"kind": 1 if kind == "markdown" else 2, "document": cell_uri}
                                           for (kind, _), cell_uri in zip(cells, cell_uris)]},
            "cellTextDocuments": [{"uri": cell_uri, "languageId": "markdown" if kind == "markdown" else "python",
                                   "version": 1, "text": text} for (kind, text), cell_uri in zip(cells, cell_uris)]})
        source = json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": text,
                                        **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                                       for kind, text in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        _, output, _ = cli(project, "nb.ipynb", source, "--output-format", "json")
        expected = [(f["cell"], f["code"], ((f["line"] - 1, f["column"] - 1), (f["end_line"] - 1, f["end_column"] - 1)))
                    for f in json.loads(output)]
        diagnostics = client.diagnostics(cell_uris[2])
        assert [(3, *found) for found in ranges(diagnostics)] == expected and expected
        (fix_all,) = actions_at(client, cell_uris[2], 1, only=["source.fixAll"])
        texts = apply_workspace_edit({u: t for u, (_, t) in zip(cell_uris, cells)}, fix_all["edit"])
        _, _, fixed = cli(project, "nb.ipynb", source, "--fix")
        assert [texts[u] for u in cell_uris] == ["".join(c["source"]) for c in json.loads(fixed)["cells"]]
        # A cell edited in the notebook: its findings follow.
        client.notify("notebookDocument/didChange", {
            "notebookDocument": {"uri": notebook, "version": 2},
            "change": {"cells": {"textContent": [{"document": {"uri": cell_uris[2], "version": 2}, "changes": [
                {"text": "x = torch.zeros(2)\n"}]}]}}})
        assert client.diagnostics(cell_uris[2]) == []
        assert client.shutdown() == 0
        assert b"Traceback" not in client.process.stderr.read()
        assert not (project / ".devlint_cache").exists()  # the server writes nothing (no cache either)
    finally:
        client.close()


def test_without_pygls_one_message_and_exit_3():
    program = ("import sys; sys.modules['pygls'] = None; sys.argv = ['devlint', 'server']; "
               "from devlint.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "devlint: error: `devlint server` needs pygls: install devlint[server] (pip install 'devlint[server]')"]


def test_nothing_outside_the_server_package_imports_pygls():
    package = Path(__file__).resolve().parent.parent / "devlint"
    importing = [str(path.relative_to(package)) for path in package.rglob("*.py")
                 if "server" not in path.relative_to(package).parts[:1]
                 and any(word in path.read_text() for word in ("import pygls", "from pygls", "lsprotocol"))]
    assert importing == []


def test_an_analysis_of_an_older_version_is_never_published():
    """The store (no subprocess): version 1 is analysed slowly; version 2 arrives meanwhile."""
    from devlint.server.documents import Documents, Snapshot

    release, started = threading.Event(), threading.Event()
    published = []

    def analyse(snapshot):
        if snapshot.version == 1:
            started.set()
            release.wait(5)
        return snapshot.version

    async def scenario():
        documents = Documents(asyncio.get_running_loop(), analyse, lambda s, r: published.append(r), delay=0.0)
        documents.opened(Snapshot("file:///a.txt", 1, None, text="one"))
        while not started.is_set():
            await asyncio.sleep(0.01)
        documents.changed(Snapshot("file:///a.txt", 2, None, text="two"))
        release.set()
        for _ in range(200):
            if published:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        documents.stop()

    asyncio.run(scenario())
    assert published == [2]
