"""Bytes <-> text for Python sources, keeping encoding, BOM and line endings; safe writes of fixes."""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import signal
import stat
import threading
import tokenize
from dataclasses import dataclass


class SourceError(Exception):
    """The bytes cannot be read as Python source; the message names the reason."""


@dataclass(frozen=True)
class DecodedSource:
    text: str
    encoding: str  # a codec name for str.encode; 'utf-8-sig' keeps a BOM


def decode(data: bytes) -> DecodedSource:
    """Decode like the interpreter does (PEP 263 cookie, BOM), without translating newlines."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise SourceError("UTF-16 source is not supported (Python reads source as UTF-8 or a PEP 263 encoding)")
    if b"\0" in data:
        raise SourceError("source contains NUL bytes")
    try:
        # Lines as the interpreter splits them: a lone CR ends the line holding a coding cookie too.
        encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)[:2] + [b""]).__next__)
    except SyntaxError as exc:
        if "unknown encoding" in str(exc):
            raise SourceError(str(exc).replace("unknown encoding: ", "unknown encoding declared: ")) from None
        if "encoding problem" in str(exc):  # Python refuses the file too: fixing it would only hide that
            raise SourceError("a UTF-8 BOM with a coding declaration for another encoding "
                              "(Python refuses this file: 'encoding problem ... with BOM')") from None
        encoding = "utf-8"  # undecodable bytes in the first lines: say where, below
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(f"cannot decode as {encoding}: invalid byte {data[exc.start:exc.start + 1]!r} on line {line}") from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None
    if encoding == "utf-8-sig":
        text = text.removeprefix("\ufeff")
    return DecodedSource(text, encoding)


def encode(text: str, encoding: str) -> bytes:
    return text.encode(encoding)


class NotWritten(Exception):
    """devlint refused to write a file's fixes; the message says why."""


# A temporary file carries the pid of the process writing it: a later run removes those whose process
# is gone (a SIGKILL leaves them behind), and only those.
_TEMPORARY = re.compile(r"\.devlint-([1-9][0-9]{0,9})-[a-z0-9_]+\.tmp")
_swept: set[str] = set()  # folders this process already cleaned


def write_fixed(path: str, data: bytes, *, expected: bytes | None = None) -> None:
    """Write `data` over the file at `path`, losing nothing else of the user's.

    - Through symbolic links: the real file gets the fix, the link stays a link.
    - A file nobody may write (no w bit) is refused, even for root: the user made it read-only.
    - `expected` is what was read and checked: when the file no longer holds it (an editor saved it
      meanwhile), the fix is refused rather than written over the edit. The comparison is made just
      before the write; a save in the microseconds between the two is the one race left (no lock).
    - A file with one link is replaced atomically: a temporary file in its folder, flushed to disk,
      given the file's mode and owner, then renamed over it. A reader or a crash sees the old bytes
      or the new ones, never a mix.
    - A file with other hard links, whose owner this process cannot give a new file (not root), or
      in a folder where no file can be created (a writable file in a read-only folder, which ruff
      fixes too), is rewritten in place instead: a rename would split it from its other names or
      change its owner, and the temporary file has no place. That write is not atomic against a
      crash, but Ctrl-C and SIGTERM wait for it to end.
    - In a worker, nothing is written once devlint is gone (see `stop_writing_without`).

    Raises NotWritten (a refusal) or OSError.
    """
    real = os.path.realpath(path)
    info = os.stat(real)
    if not info.st_mode & 0o222:
        raise NotWritten("read-only file; fixes not written")
    with _write_held():
        if info.st_nlink > 1 or not _replace(real, data, info, expected):
            _rewrite_in_place(real, data, expected)


# A worker's parent (devlint): no write starts once it is gone, and a worker that ends because it is
# gone waits for the write in hand (`_write_lock`), which is never left half done.
_parent: int | None = None
_write_lock = threading.Lock()


def stop_writing_without(parent: int) -> None:
    """In a worker: write nothing once the process `parent` (devlint) is gone (killed: its results
    would be read by nobody, and the user may already be editing the files again)."""
    global _parent
    _parent = parent


@contextlib.contextmanager
def _write_held():
    """Hold the write lock, and SIGTERM (the signal a worker gets when devlint dies, see
    devlint.runner) until the write is done; exit first if devlint is already gone."""
    blocking = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    with _write_lock:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}) if blocking else None
        try:
            if _parent is not None and os.getppid() != _parent:
                os._exit(1)
            yield
        finally:
            if blocking:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _replace(path: str, data: bytes, info: os.stat_result, expected: bytes | None) -> bool:
    """Atomic write through a temporary file; False (nothing done) when the owner cannot be kept."""
    import tempfile  # (tempfile, with shutil and random, only when a fix is written: start-up, issue 28)

    directory = os.path.dirname(path)
    _remove_stale_temporaries(directory)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".devlint-{os.getpid()}-", suffix=".tmp", dir=directory)
    except PermissionError:
        return False  # a folder the user may not create files in: rewrite the (writable) file in place
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        mine = os.stat(tmp)
        if (mine.st_uid, mine.st_gid) != (info.st_uid, info.st_gid):
            try:
                os.chown(tmp, info.st_uid, info.st_gid)  # before chmod: chown may clear set-id bits
            except PermissionError:
                os.unlink(tmp)
                return False
        os.chmod(tmp, info.st_mode & 0o7777)
        _refuse_if_changed(path, expected)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True


def _rewrite_in_place(path: str, data: bytes, expected: bytes | None) -> None:
    with open(path, "r+b") as handle:
        _refuse_if_changed(path, expected, handle)
        with _ctrl_c_held():
            handle.seek(0)
            handle.write(data)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())


_CHANGED = "changed on disk while devlint was checking it; not written"


def _refuse_if_changed(path: str, expected: bytes | None, handle=None) -> None:
    """The one re-check of both writes, just before each: NotWritten unless the file still holds
    the bytes devlint read and checked (`expected`; None: not asked). `handle`: the file, already
    open for reading at its start (a rewrite in place reads through the handle it writes with)."""
    if expected is None:
        return
    if handle is None:
        with open(path, "rb") as opened:
            current = opened.read()
    else:
        current = handle.read()
    if current != expected:
        raise NotWritten(_CHANGED)


@contextlib.contextmanager
def _ctrl_c_held():
    """Deliver a Ctrl-C that arrives inside the block only once the block is done."""
    if threading.current_thread() is not threading.main_thread() or not callable(signal.getsignal(signal.SIGINT)):
        yield  # signals are handled elsewhere, or ignored (devlint's workers)
        return
    held: list = []
    previous = signal.signal(signal.SIGINT, lambda *received: held.append(received))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            previous(*held[0])


def _remove_stale_temporaries(directory: str) -> None:
    """Remove the temporary files that killed devlint processes left in `directory` (once per folder)."""
    if directory in _swept or os.name != "posix":  # (os.kill(pid, 0) terminates the process on Windows)
        return
    _swept.add(directory)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        match = _TEMPORARY.fullmatch(name)
        if match is None or _alive(int(match[1])):
            continue
        path = os.path.join(directory, name)
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
        except OSError:
            pass  # another run removed it first, or it is not ours to remove


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # someone else's process (EPERM), or not a pid we can ask about: leave its file
    return True
