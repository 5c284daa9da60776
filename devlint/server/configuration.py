"""Each document's settings: the nearest pyproject.toml's [tool.devlint], as `devlint FILE` reads it.

Read again for every analysis (a small TOML file: well under a millisecond), so an edited
pyproject.toml counts from the next check on; the server checks the open documents again when the
client says one changed. A broken file is one error message shown to the user (once, until it changes),
and the documents it governs show no findings meanwhile: never a crash.
"""

from __future__ import annotations

import os
import threading
from typing import Callable

from devlint.server import lint


class Configurations:
    def __init__(self, show_error: Callable[[str], None], root: Callable[[], str | None]) -> None:
        self.show_error = show_error  # thread-safe: called from the analysis thread
        self.root = root
        self._shown: set[str] = set()
        self._lock = threading.Lock()

    def for_document(self, path: str | None) -> lint.Config | None:
        """The document's Config; None (after one message) when its settings are broken."""
        where = path or self.root() or os.getcwd()  # an untitled buffer: the workspace's settings
        try:
            return lint.config_for(where)
        except lint.ConfigError as exc:
            message = f"devlint: {exc}"
            with self._lock:
                first = message not in self._shown
                self._shown.add(message)
            if first:
                self.show_error(message)
            return None

    def changed(self) -> None:
        """A pyproject.toml changed: a problem it still has is worth saying again."""
        with self._lock:
            self._shown.clear()
