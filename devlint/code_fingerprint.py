"""Which code of devlint is running, for the name of the result cache: a result computed by other code
(an edited rule in a development install, a rebuilt wheel of the same version) must never be reused.

It is a digest of the stat of every module (about 150 `os.stat` calls, no file read): its path, size,
modification and change times and inode. The change time (ctime) is kept by the kernel and cannot be
set back, so an edit that keeps the size and restores the modification time (`cp -p`, `touch -r`)
still shows. A file changed within RACY_SECONDS of the run is hashed instead: on a file system that
keeps whole seconds, a second edit within the same second would leave every time as it was (git calls
such index entries "racy" and does the same).
"""

from __future__ import annotations

import hashlib
import os
import time

RACY_SECONDS = 2.0


def fingerprint(package: str, now: float | None = None) -> str:
    """The fingerprint of the `.py` files under `package` (`now`: the current time, for tests)."""
    now = time.time() if now is None else now
    parts = []
    for root, folders, names in os.walk(package):
        folders[:] = [f for f in folders if f != "__pycache__"]
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            relative = os.path.relpath(path, package)
            info = os.stat(path)
            if max(info.st_mtime, info.st_ctime) >= now - RACY_SECONDS:
                with open(path, "rb") as handle:
                    parts.append(f"{relative}:#{hashlib.sha256(handle.read()).hexdigest()}")
            else:
                parts.append(f"{relative}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}")
    return hashlib.sha256("\n".join(sorted(parts)).encode("utf-8", "surrogateescape")).hexdigest()[:16]
