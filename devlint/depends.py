"""What a result depends on besides its file's bytes, observed one way when the project index
computes it and the same way when the result cache checks it again.

Each observation is keyed by `<probe>:<absolute path>`:

- `r:` the file was read for its facts: the digest of its bytes, or ABSENT when it is missing, not a
  regular file (a folder, a FIFO, a device), unreadable, or over READ_LIMIT: what the index saw then;
- `l:` the folder was listed for the project's files (devlint.analysis.project_calls): the digest of its `.py`
  files and folders (marking those that hold `__init__.py`): adding a file that calls a function is
  a change;
- `f:`, `d:`, `e:` the path was asked whether it is a regular file, a folder, or exists at all:
  "1" or "0". A file looked for and not found (`data.py` before `data/`, a `.git` that marks the
  project root) is recorded too: creating it changes where an import resolves.

Reading is bounded and never blocks: only regular files are opened (a FIFO or `/dev/zero` in a
dependency's place reads as ABSENT), and never more than READ_LIMIT bytes. Nothing here imports
LibCST: a fully cached run checks its dependencies with this module alone.
"""

from __future__ import annotations

import hashlib
import os
import stat

# The largest file the project index reads (a bigger one is not summarised: ABSENT).
READ_LIMIT = 4 * 1024 * 1024
ABSENT = "-"
READ, IS_FILE, IS_DIR, EXISTS, LIST = "r", "f", "d", "e", "l"
_TESTS = {IS_FILE: stat.S_ISREG, IS_DIR: stat.S_ISDIR, EXISTS: lambda mode: True}
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


def digest(data: bytes) -> str:
    """The content digest a file read for its facts is recorded (and checked again) with, and the
    result cache's keys are made of (SHA-256, cut to 128 bits: twice as fast as BLAKE2b where the
    CPU computes SHA-256, as most do)."""
    return hashlib.sha256(data).hexdigest()[:32]


def places(paths: list[str]) -> list[str]:
    """The absolute path of each path (os.path.abspath, asking for the current folder once): how a
    run names its own files in the `known` of `observe` and `unchanged`, and where the project index
    resolves their imports from."""
    cwd = os.getcwd()
    join, normpath, isabs = os.path.join, os.path.normpath, os.path.isabs
    return [normpath(path if isabs(path) else join(cwd, path)) for path in paths]


def read_regular(path: str, limit: int = READ_LIMIT) -> tuple[bytes | None, os.stat_result | None]:
    """(the bytes of the regular file at `path`, symbolic links followed, its stat) or (None, stat or
    None) when it is anything else, missing, unreadable or over `limit` bytes. Never blocks on a FIFO,
    never reads a device: the type is checked before opening and again on the open descriptor (the
    path may be replaced between the two)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, None
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError):
        return None, None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None, info
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return (None if size > limit else b"".join(chunks)), info
    except OSError:
        return None, None
    finally:
        os.close(fd)


def holds(probe: str, path: str) -> bool:
    """Is `path` a regular file (IS_FILE), a folder (IS_DIR), anything (EXISTS)? Links followed."""
    try:
        return _TESTS[probe](os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def listing(folder: str) -> str:
    """What a folder holds that a project listing reads: its `.py` files and its folders (with `+` for
    a package), as a digest; ABSENT when it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            names = []
            for entry in entries:
                if entry.is_dir():
                    package = os.path.isfile(os.path.join(entry.path, "__init__.py"))
                    names.append(f"{entry.name}/{'+' if package else ''}")
                elif entry.name.endswith(".py"):
                    names.append(entry.name)
    except (OSError, ValueError):
        return ABSENT
    return digest("\n".join(sorted(names)).encode("utf-8", "surrogateescape"))


def observe(name: str, known: dict[str, str] | None = None) -> str | None:
    """What the observation `name` (`<probe>:<path>`) finds now; None for a name devlint never writes.
    `known`: what reading regular files this run has just read finds (their digest, or ABSENT), by
    absolute path (not read again)."""
    probe, _, path = name.partition(":")
    if not path:
        return None
    if probe == READ:
        found = known.get(path) if known else None
        if found is not None:
            return found
        data, _ = read_regular(path)
        return ABSENT if data is None or len(data) > READ_LIMIT else digest(data)
    if probe in _TESTS:
        return "1" if holds(probe, path) else "0"
    if probe == LIST:
        return listing(path)
    return None


def unchanged(dependencies: dict[str, str] | None, seen: dict[str, str | None],
              known: dict[str, str] | None = None) -> bool:
    """Does every observation a cached result rests on still hold? `seen` memoises what this run found
    (each path is looked at once per run); `known` as for `observe`. None (a damaged list) or an
    unknown probe: no."""
    if dependencies is None:
        return False
    for name, expected in dependencies.items():
        if name not in seen:
            seen[name] = observe(name, known)
        if seen[name] is None or seen[name] != expected:
            return False
    return True
