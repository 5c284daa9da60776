"""Bytes <-> text for Python sources, keeping encoding, BOM and line endings; atomic writes."""

from __future__ import annotations

import codecs
import io
import os
import tempfile
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
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "unknown encoding" in str(exc):
            raise SourceError(str(exc).replace("unknown encoding: ", "unknown encoding declared: ")) from None
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


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` by `data` so that a reader (or a crash) never sees a partial file."""
    directory = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=".devlint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
