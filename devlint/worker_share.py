"""Values the worker processes of one run share, so that each is computed once, not once per worker.

The project index answers a flag's callers by summarising every project file that mentions the
name (devlint.analysis.project_calls): the same hundred files for every worker, about a second
each on the torch sources, work that did not get faster with more cores (issue 28). A worker puts
each summary here under its content key (the digest of the file's bytes), and a worker that needs it
later loads it instead of parsing the file again. So are the facts the project index reads of a
module (devlint.analysis.project_files: nn/modules/module.py, asked by every file with a module class).

The folder is private to the run (mkdtemp: mode 0700), created by devlint before its workers start
and removed when they are done; each value is written whole under a temporary name and renamed
into place, so a reader sees a complete value or none. Anything unreadable is computed again. Outside
a run with workers (FOLDER None) nothing is stored.

Two workers that need a value at the same time would both compute it (they did: sibling workers
asking about the same project files walked the list in step, each summarising what the other was
summarising). `obtain` claims a value before computing it (a claim file made with O_EXCL, holding the
worker's pid), so another worker waits for it, or does other work first (wait=False) and comes back.
A claim is held only while its value is computed, which never waits for another claim, so waiting ends;
a claimant that died (its pid gone) or failed to store is not waited for: the value is computed again.
"""

from __future__ import annotations

import os

FOLDER: str | None = None


def start() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="devlint-share-")


def stop(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def place(count: int) -> int:
    """Where in a list of `count` values, which every worker may need at once, this worker starts
    computing them: spread over the list by the process id (Fibonacci hashing keeps the consecutive
    ids of sibling workers far apart). 0 outside a run with workers."""
    if FOLDER is None or count < 2:
        return 0
    return int((os.getpid() * 0.6180339887498949) % 1.0 * count)


# `obtain(..., wait=False)` while another worker computes the value
BUSY = object()
_MISSING = object()


def obtain(kind: str, key: str, compute, *, wait: bool = True):
    """The value under (kind, key): loaded when a worker of the run stored it, waited for while
    another computes it, else `compute()`d here and stored. With `wait` false: BUSY instead of waiting."""
    path = _path(kind, key)
    if path is None:
        return compute()
    found = load(kind, key, _MISSING)
    if found is not _MISSING:
        return found
    if not _claim(path):
        if not wait:
            return BUSY
        found = _wait(kind, key, path)
        return compute() if found is _MISSING else found
    try:
        # (stored between the look and the claim: the claim came after its claimant let go)
        found = load(kind, key, _MISSING)
        if found is _MISSING:
            found = compute()
            store(kind, key, found)
        return found
    finally:
        _release(path)


def _claim(path: str) -> bool:
    """True when this process may compute the value at `path`: it holds the claim, or the claimant died.
    (The claim is linked into place whole, so a claim file always holds its claimant's pid.)"""
    mine = f"{path}.claim.{os.getpid()}"
    try:
        with open(mine, "w") as handle:
            handle.write(str(os.getpid()))
        os.link(mine, f"{path}.claim")
    except FileExistsError:
        return _claimant(path) in (None, os.getpid())  # (its own claim: never waited for)
    except OSError:  # (a removed folder, no links: nothing is shared)
        return True
    finally:
        try:
            os.unlink(mine)
        except OSError:
            pass
    return True


def _release(path: str) -> None:
    try:
        if _claimant(path) == os.getpid():
            os.unlink(f"{path}.claim")
    except OSError:
        pass


def _claimant(path: str) -> int | None:
    """The live process computing the value at `path`; None when none (no claim, or its claimant died)."""
    try:
        with open(f"{path}.claim", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    if not text.isdigit():
        return None
    pid = int(text)
    if pid == os.getpid():
        return pid
    try:
        os.kill(pid, 0)  # (signal 0: only asks whether the process exists)
    except OSError:  # gone (or its id taken by another user's process)
        return None
    return pid


def _wait(kind: str, key: str, path: str):
    """The value another worker is computing, once stored; _MISSING when its claimant let go without
    storing it or died."""
    import time

    pause = 0.0005
    while True:
        found = load(kind, key, _MISSING)
        if found is not _MISSING or _claimant(path) is None:
            return load(kind, key, _MISSING) if found is _MISSING else found
        time.sleep(pause)
        pause = min(pause * 2, 0.01)


def _path(kind: str, key: str) -> str | None:
    if FOLDER is None or not key.replace(":", "").replace("-", "").isalnum():
        return None
    return os.path.join(FOLDER, f"{kind}-{key.replace(':', '_')}")


def load(kind: str, key: str, missing=None):
    """The value stored under (kind, key), or `missing`."""
    path = _path(kind, key)
    if path is None:
        return missing
    import pickle  # (a run without workers, a warm one above all, never needs it)

    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)
    except Exception:  # absent, or anything unreadable: computed again
        return missing


def store(kind: str, key: str, value) -> None:
    path = _path(kind, key)
    if path is None:
        return
    import pickle

    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except Exception:  # a full disk or a removed folder: the value is only not shared
        try:
            os.unlink(temporary)
        except OSError:
            pass
