"""Where the stray tensor came from: the user's line that created a tensor, or last moved it.

A GPU says that two devices met; it cannot say where the tensor on the wrong one got its device. The
virtual GPU records, for each tensor it gives a device while active, the first frame of the user's
code above the call (``sys._getframe``, walking past torch, the standard library and devlint, with a
per-code-object cache so the walk costs a few dictionary lookups), in the device table's entry (so it
dies with the tensor). When a mix raises, the error carries the stray tensor's record; the report
prints it with the line's text (``linecache``)::

    devlint: the cpu tensor was created at model.py:7 (`self.scale = torch.full((3,), 2.0)`)

Tensors made before the virtual GPU started, or in C++ (autograd's gradients), have no record.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig

from devlint.virtual_gpu._common import CPU, _name

_DEVLINT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_IS_LIBRARY: dict = {}  # code object -> whether its file is a library's (not the user's)
_LIB_DIRS: tuple[str, ...] | None = None


def _lib_dirs() -> tuple[str, ...]:
    global _LIB_DIRS
    if _LIB_DIRS is None:
        dirs = {_DEVLINT}
        paths = sysconfig.get_paths()
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            if paths.get(key):
                dirs.add(os.path.abspath(paths[key]) + os.sep)
        torch = sys.modules.get("torch")
        if torch is not None and getattr(torch, "__file__", None):
            dirs.add(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
        _LIB_DIRS = tuple(dirs)
    return _LIB_DIRS


def _library(code) -> bool:
    lib = _IS_LIBRARY.get(code)
    if lib is None:
        name = code.co_filename
        lib = name.startswith("<frozen") or (not name.startswith("<") and os.path.abspath(name).startswith(_lib_dirs()))
        _IS_LIBRARY[code] = lib
    return lib


def user_site(kind: str = "created"):
    """(kind, file, line) of the innermost frame of the user's code calling into torch now, or None."""
    f = sys._getframe(1)
    cache = _IS_LIBRARY
    while f is not None:
        code = f.f_code
        lib = cache.get(code)
        if lib is None:
            lib = _library(code)
        if not lib:
            return (kind, code.co_filename, f.f_lineno)
        f = f.f_back
    return None


def origin_of(mode, *tensors):
    """The record of the stray among the tensors of a failed mix: the CPU one when one is on the CPU
    (the usual stray in a GPU program), else the last. (device name, kind, file, line) or None."""
    known = [(t, mode.dev(t)) for t in tensors if t is not None]
    known = [(t, d) for t, d in known if d is not None]
    if not known:
        return None
    t, d = next(((t, d) for t, d in known if d == CPU), known[-1])
    site = mode.table.site(t)
    return (_name(d), *site) if site else None


_ATTRIBUTE = re.compile(r"^\s*self\.\w+\s*=")
_ASSIGNED = re.compile(r"^\s*((?:self\.)?\w+)\s*=[^=]")


def _discarded_move(file: str, created: int, error_at) -> str | None:
    """A bare `name.cuda()` / `name.to(...)` statement between the creation and the failing line of the
    same file: the move whose result was thrown away (devlint's DL003 flags it)."""
    m = _ASSIGNED.match(linecache.getline(file, created))
    if not m or not error_at or os.path.abspath(error_at[0]) != os.path.abspath(file):
        return None
    bare = re.compile(rf"^\s*{re.escape(m.group(1))}\.(?:cuda|to)\(.*\)\s*(?:#.*)?$")
    for n in range(created + 1, min(error_at[1], created + 200)):
        text = linecache.getline(file, n)
        if _ASSIGNED.match(text) and _ASSIGNED.match(text).group(1) == m.group(1):
            return None  # rebound: a later move took effect
        if bare.match(text):
            from devlint.rules import RULES

            code = next((f"{r.code} ({r.name})" for r in RULES if r.name == "discarded-tensor-move"), "")
            return f"`{text.strip()}` at line {n} throws the moved tensor away{': ' + code if code else ''}"
    return None


def describe(origin, error_at=None) -> str | None:
    """The report's line for an error's origin record; `error_at` is the (file, line) that failed."""
    if not origin:
        return None
    dev, kind, file, line = origin
    text = linecache.getline(file, line).strip()
    where = os.path.relpath(file) if os.path.isabs(file) and not os.path.relpath(file).startswith("..") else file
    msg = f"the {dev} tensor was {kind if kind == 'created' else 'moved to ' + dev} at {where}:{line}"
    if text:
        msg += f" (`{text}`)"
    if kind == "created" and _ATTRIBUTE.match(text):
        msg += ", a plain tensor attribute, which `model.to()` and `model.cuda()` do not move"
    discarded = _discarded_move(file, line, error_at)
    if discarded:
        msg += f"; {discarded}"
    return msg
