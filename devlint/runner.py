"""The disk side of a run: read each file, check it with the core, write fixes back atomically."""

from __future__ import annotations

import os
import stat

from devlint.config import Config
from devlint.engine import check_source
from devlint.model import FileError, FileResult
from devlint.source import encode, decode, write_atomic


def check_file(path: str, config: Config, *, write: bool) -> FileResult:
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            return FileResult(path, error=FileError("is a directory"))
        if not stat.S_ISREG(info.st_mode):
            return FileResult(path, error=FileError("not a regular file"))
        if info.st_size > config.max_file_size:
            return FileResult(path, notice=f"skipped: {info.st_size} bytes is over the size limit "
                                           f"({config.max_file_size}; see --max-file-size)")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return FileResult(path, error=FileError(f"cannot read: {exc.strerror or exc}"))
    result = check_source(path, data, config)
    if write and result.fixed_source is not None and result.error is None:
        encoding = decode(data).encoding
        try:
            write_atomic(path, encode(result.fixed_source, encoding))
        except UnicodeEncodeError as exc:
            result.error = FileError(f"cannot write fixes: not representable in {encoding}: {exc.reason}")
        except OSError as exc:
            result.error = FileError(f"cannot write fixes: {exc.strerror or exc}")
    return result


def check_files(paths: list[str], config: Config, *, write: bool) -> list[FileResult]:
    return [check_file(path, config, write=write) for path in paths]
