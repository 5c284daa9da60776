"""A small JSON-RPC client for `devlint server` (tests/test_server.py, benchmarks/server_latency.py):
starts the server as a subprocess and speaks LSP to it over its stdin and stdout, as an editor does."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class LspClient:
    def __init__(self, cwd: str | os.PathLike | None = None, command: list[str] | None = None) -> None:
        command = command or [sys.executable, "-m", "devlint", "server"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd=cwd)
        self.messages: queue.Queue = queue.Queue()
        self.transcript: list[tuple[float, str, dict]] = []  # (time, "->" or "<-", message)
        self.pending: list[dict] = []  # notifications read while waiting for something else
        self._next_id = 0
        self._start = time.monotonic()
        threading.Thread(target=self._read, daemon=True).start()

    # -- the wire ----------------------------------------------------------------------------------
    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            message = json.loads(body)
            self.transcript.append((time.monotonic() - self._start, "<-", message))
            self.messages.put(message)

    def _send(self, message: dict) -> None:
        message = {"jsonrpc": "2.0", **message}
        self.transcript.append((time.monotonic() - self._start, "->", message))
        body = json.dumps(message).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _next(self, timeout: float) -> dict:
        message = self.messages.get(timeout=timeout)
        if message is None:
            raise EOFError(f"the server exited: {self.process.stderr.read().decode(errors='replace')[-2000:]}")
        if "method" in message and "id" in message:  # a request from the server (registerCapability)
            self._send({"id": message["id"], "result": None})
        return message

    def request(self, method: str, params=None, timeout: float = 30.0):
        self._next_id += 1
        ident = self._next_id
        self._send({"id": ident, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(max(deadline - time.monotonic(), 0.01))
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")
            if "method" in message and "id" not in message:
                self.pending.append(message)

    def notify(self, method: str, params=None) -> None:
        self._send({"method": method, "params": params})

    def wait_for(self, method: str, predicate=lambda params: True, timeout: float = 30.0) -> dict:
        """The params of the first notification `method` that satisfies `predicate` (earlier ones kept)."""
        for index, message in enumerate(self.pending):
            if message["method"] == method and predicate(message["params"]):
                return self.pending.pop(index)["params"]
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(max(deadline - time.monotonic(), 0.01))
            if message.get("method") == method and "id" not in message and predicate(message["params"]):
                return message["params"]
            if "method" in message and "id" not in message:
                self.pending.append(message)

    # -- LSP conveniences ----------------------------------------------------------------------------
    def initialize(self, root: str | os.PathLike, capabilities: dict | None = None, debounce: float = 0.05):
        result = self.request("initialize", {
            "processId": os.getpid(), "rootUri": Path(root).as_uri(),
            "capabilities": capabilities if capabilities is not None else {
                "workspace": {"workspaceEdit": {"documentChanges": True},
                              "didChangeWatchedFiles": {"dynamicRegistration": True}},
                "textDocument": {"publishDiagnostics": {"versionSupport": True, "codeDescriptionSupport": True,
                                                        "tagSupport": {"valueSet": [1, 2]}}},
            },
            "initializationOptions": {"debounce": debounce},
        })
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}})

    def change(self, uri: str, text: str, version: int) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = 30.0) -> list[dict]:
        return self.wait_for("textDocument/publishDiagnostics",
                             lambda p: p["uri"] == uri and (version is None or p.get("version") == version),
                             timeout)["diagnostics"]

    def shutdown(self, timeout: float = 10.0) -> int:
        self.request("shutdown", None)
        self.notify("exit", None)
        return self.process.wait(timeout=timeout)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()


# -- what an editor does with a WorkspaceEdit --------------------------------------------------------
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def apply_text_edits(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (UTF-16 columns) to a text, as an editor does."""
    lines = _LINE.findall(text)
    if not lines or lines[-1].endswith(("\n", "\r")):
        lines.append("")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: dict) -> int:
        line = lines[position["line"]].rstrip("\r\n")
        units = column = 0
        while column < len(line) and units < position["character"]:
            units += 2 if ord(line[column]) > 0xFFFF else 1
            column += 1
        return starts[position["line"]] + column

    ordered = sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
                     reverse=True)
    for edit in ordered:
        text = text[: offset(edit["range"]["start"])] + edit["newText"] + text[offset(edit["range"]["end"]):]
    return text


def apply_workspace_edit(texts: dict[str, str], edit: dict) -> dict[str, str]:
    """The texts (by uri) after a WorkspaceEdit, `changes` or `documentChanges`."""
    updated = dict(texts)
    for uri, edits in (edit.get("changes") or {}).items():
        updated[uri] = apply_text_edits(updated[uri], edits)
    for change in edit.get("documentChanges") or ():
        uri = change["textDocument"]["uri"]
        updated[uri] = apply_text_edits(updated[uri], change["edits"])
    return updated
