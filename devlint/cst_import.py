"""LibCST's import with its node classes' generated methods compiled once per interpreter (issue 28).

`import libcst` took 0.13-0.2 s of every run that checks a file, on the serial path of a run with
workers and in each one-file run (pre-commit), and most of it is `dataclasses` at work: for each of
LibCST's ~200 frozen node classes it writes the source of `__init__`, `__repr__`, `__eq__`,
`__hash__`, `__setattr__` ... and compiles it, about 1,000 compiles (one per class, about 130, on
Python 3.13). What such a compile makes depends on nothing but the source text and the interpreter,
so, as Python keeps a module's bytecode in `__pycache__`, the code is kept in one file per
interpreter in the user's cache folder (`~/.cache/devlint`, or under `PYTHONPYCACHEPREFIX` where it
is set; not written under `PYTHONDONTWRITEBYTECODE` or `-B`) and loaded instead of compiled next
time: 40-90 ms less on this machine's Pythons 3.10 to 3.13. The checker's import (kept_code, from
devlint.documents.load_checker) keeps the texts of devlint's own analyses and rules too, about 60
more (5 ms). A text not in the file is compiled as before; a missing, unreadable, damaged or
foreign file is as no file, and is written again. Nothing but the compile is skipped: the classes,
their methods and what they do are dataclasses' own.

Not beside devlint's own bytecode: `pip uninstall` removes the bytecode of the package's modules,
not a file it does not know, which would keep `site-packages/devlint/` alive. One file serves every
installation of the same interpreter (each virtualenv, each LibCST release): it keeps the texts of
the releases seen, within a bound.
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import importlib.util
import marshal
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType, ModuleType

_NAME = "libcst-dataclasses"
_DIGEST_SIZE = 16
# The file keeps at most this many imports' texts (LibCST releases change a few of them each).
_KEPT_IMPORTS = 3


def load() -> ModuleType:
    """`import libcst`, through the kept code where there is some."""
    if "libcst" not in sys.modules:
        with kept_code():
            import libcst  # noqa: F401
    return sys.modules["libcst"]


@contextmanager
def kept_code() -> Iterator[None]:
    """Within: a dataclass made compiles its generated methods' source only where the kept file does
    not hold it, and the file is written again after the block when something was compiled. (The
    checker's import takes LibCST's ~1,000 texts and devlint's own analyses' and rules' ~60.)"""
    path = cache_path()
    known = read(path) if path is not None else {}
    used: dict[str, object] = {}
    compiled = 0

    def exec_kept(source, /, *args, **kwargs):
        # dataclasses calls exec(text, globals, namespace) for the functions it generates (the
        # rest of exec's arguments pass through, however given)
        nonlocal compiled
        if type(source) is str:
            code = known.get(source)
            if code is None:
                # (exec of a text from dataclasses' frame inherits no __future__ flag: neither may this)
                code = known[source] = compile(source, "<string>", "exec", dont_inherit=True)
                compiled += 1  # (once per text: a third of them come again, as the same method of another class)
            used[source] = code
            source = code
        return builtins.exec(source, *args, **kwargs)

    before = vars(dataclasses).get("exec", _NONE)
    dataclasses.exec = exec_kept  # (a module global is found before the builtin)
    try:
        yield
    finally:
        if before is _NONE:
            del dataclasses.exec
        else:
            dataclasses.exec = before
    if path is not None and compiled and not sys.dont_write_bytecode:
        # another installation's texts stay (its LibCST, another release), as long as the file
        # stays within a few imports' worth
        write(path, known if len(known) <= _KEPT_IMPORTS * len(used) else used)


_NONE = object()


def cache_path() -> str | None:
    """Where the kept code lives, named for this interpreter's bytecode as importlib names a module's
    (`cpython-312`, its magic number, the optimisation level)."""
    tag = sys.implementation.cache_tag
    if tag is None:  # an interpreter that keeps no bytecode
        return None
    level = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    name = f"{_NAME}.{tag}-{importlib.util.MAGIC_NUMBER.hex()}{level}.marshal"
    if sys.pycache_prefix:
        return os.path.join(sys.pycache_prefix, "devlint", name)
    folder = _user_cache_folder()
    return os.path.join(folder, "devlint", name) if folder else None


def _user_cache_folder() -> str | None:
    """The platform's folder for a user's caches (as pip's and Black's)."""
    if sys.platform == "win32":
        return os.environ.get("LOCALAPPDATA") or None
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches")
    folder = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(folder):  # (the XDG rule: a relative path is ignored)
        return folder
    home = os.path.expanduser("~")
    return os.path.join(home, ".cache") if os.path.isabs(home) else None


def _header() -> bytes:
    # importlib's magic number changes with the bytecode and marshal formats, also between releases
    # that share a cache tag
    return importlib.util.MAGIC_NUMBER + b"devlint-dataclasses\n"


def read(path: str) -> dict:
    """The kept {source text: code}, or {} when the file is missing, unreadable or not whole."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return {}
    header = _header()
    body = data[len(header) + _DIGEST_SIZE:]
    if not data.startswith(header) or data[len(header):len(header) + _DIGEST_SIZE] != _digest(body):
        return {}
    try:
        kept = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return {}
    whole = isinstance(kept, dict) and all(type(k) is str and type(v) is CodeType for k, v in kept.items())
    return kept if whole else {}


def write(path: str, kept: dict) -> None:
    """Write the file whole or not at all (a reader never sees half of it); an unwritable place
    (a read-only home) keeps nothing."""
    from devlint.cache_folder import write_atomically

    body = marshal.dumps(kept)
    folder, name = os.path.split(path)
    try:
        os.makedirs(folder, exist_ok=True)
        write_atomically(folder, name, _header() + _digest(body) + body)
    except OSError:
        pass


def _digest(body: bytes) -> bytes:
    # a damaged file must not reach marshal, which does not promise to survive one
    return hashlib.blake2b(body, digest_size=_DIGEST_SIZE).digest()
