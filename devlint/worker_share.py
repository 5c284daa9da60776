"""Values the worker processes of one run share, so that each is computed once, not once per worker.

The project index answers a flag's callers by summarising every project file that mentions the
name (devlint.analysis.project_calls): the same hundred files for every worker, about a second
each on the torch sources, work that did not get faster with more cores (issue 28). A worker puts
each summary here under its content key (the digest of the file's bytes), and a worker that needs it
later loads it instead of parsing the file again.

The folder is private to the run (mkdtemp: mode 0700), created by devlint before its workers start
and removed when they are done; each value is written whole under a temporary name and renamed
into place, so a reader sees a complete value or none. Anything unreadable is computed again. Outside
a run with workers (FOLDER None) nothing is stored.
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
