"""The open documents, their latest versions, and the analyses run for them.

Analyses run one at a time on a worker thread, never on the message loop (the engine's state, the
project index among it, is per process and not shared between threads). A change waits `delay`
seconds for the next one (typing is one analysis, not one per key); open and save run at once. A
result is published only while its version is still the document's latest: a slow analysis of an
older text never overwrites a newer one. The project index learns each open buffer's text, so that
the other open files see it as the editor does; a file's change re-checks the open documents whose
findings rested on it.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from devlint.server import lint

DEFAULT_DELAY = 0.15  # seconds after the last keystroke


@dataclass(frozen=True)
class Snapshot:
    """One version of an open document: a text document, or a notebook with its cells."""

    uri: str
    version: int
    path: str | None  # the file's path; None for an unsaved, untitled document
    text: str = ""
    cells: tuple = ()  # a notebook's (cell uri, is code, text), in order; () for a text document

    @property
    def is_notebook(self) -> bool:
        return bool(self.cells) or (self.path or "").endswith(".ipynb")


class Documents:
    def __init__(self, loop: asyncio.AbstractEventLoop, analyse: Callable[[Snapshot], Any],
                 publish: Callable[[Snapshot, Any], None], delay: float = DEFAULT_DELAY) -> None:
        self.loop = loop
        self.analyse, self.publish, self.delay = analyse, publish, delay
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="devlint-analysis")
        self.latest: dict[str, Snapshot] = {}
        self.results: dict[str, tuple[Snapshot, Any]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._depends: dict[str, frozenset] = {}  # uri -> paths its latest result rested on

    # -- what the client says --------------------------------------------------------------------
    def opened(self, snapshot: Snapshot) -> None:
        self._update(snapshot, 0.0)

    def changed(self, snapshot: Snapshot) -> None:
        self._update(snapshot, self.delay)

    def saved(self, uri: str) -> None:
        if uri in self.latest:
            self.schedule(uri, 0.0)

    def closed(self, uri: str) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        snapshot = self.latest.pop(uri, None)
        self.results.pop(uri, None)
        self._depends.pop(uri, None)
        if snapshot is not None and _is_python_file(snapshot):
            self.executor.submit(lint.set_buffer, snapshot.path, None)  # the disk's text again
            self.recheck_dependents([snapshot.path])

    def _update(self, snapshot: Snapshot, delay: float) -> None:
        self.latest[snapshot.uri] = snapshot
        if _is_python_file(snapshot):
            self.executor.submit(lint.set_buffer, snapshot.path, lint.source_bytes(snapshot.text))
            self.recheck_dependents([snapshot.path], exclude=snapshot.uri)
        self.schedule(snapshot.uri, delay)

    def recheck_dependents(self, paths, exclude: str | None = None) -> None:
        """Check again (after the usual delay) the open documents whose findings rested on these files."""
        changed = {os.path.abspath(p) for p in paths}
        for uri, used in list(self._depends.items()):
            if uri != exclude and used & changed:
                self.schedule(uri, self.delay)

    def recheck_all(self) -> None:
        for uri in list(self.latest):
            self.schedule(uri, 0.0)

    # -- the analyses -----------------------------------------------------------------------------
    def schedule(self, uri: str, delay: float) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._timers[uri] = self.loop.call_later(delay, self._start, uri)

    def _start(self, uri: str) -> None:
        self._timers.pop(uri, None)
        snapshot = self.latest.get(uri)
        if snapshot is None:
            return
        future = self.loop.run_in_executor(self.executor, self._analyse_if_current, snapshot)
        future.add_done_callback(lambda done: self._finished(snapshot, done))

    def _analyse_if_current(self, snapshot: Snapshot):
        if self.latest.get(snapshot.uri) is not snapshot:
            return _STALE  # a newer version is waiting for its own turn
        return self.analyse(snapshot)

    def _finished(self, snapshot: Snapshot, done: asyncio.Future) -> None:
        if done.cancelled() or done.exception() is not None:
            return  # `analyse` reports its own failures; nothing to publish
        result = done.result()
        if result is _STALE or self.latest.get(snapshot.uri) is not snapshot:
            return  # never publish for an older version
        self.results[snapshot.uri] = (snapshot, result)
        self._depends[snapshot.uri] = getattr(result, "depends_on", frozenset())
        self.publish(snapshot, result)

    async def current(self, uri: str) -> tuple[Snapshot, Any] | None:
        """The latest version and its analysis (run now if the published one is older)."""
        snapshot = self.latest.get(uri)
        if snapshot is None:
            return None
        known = self.results.get(uri)
        if known is not None and known[0] is snapshot:
            return known
        result = await self.run(self.analyse, snapshot)
        return snapshot, result

    async def run(self, function, *args):
        """Run engine work on the analysis thread (never two engine calls at once)."""
        return await self.loop.run_in_executor(self.executor, function, *args)

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self.executor.shutdown(wait=False, cancel_futures=True)


_STALE = object()


def _is_python_file(snapshot: Snapshot) -> bool:
    return snapshot.path is not None and snapshot.path.endswith(".py")
