"""`[tool.devlint]` in pyproject.toml: find it, read it, check every key, and merge with the CLI.

Keys are the long CLI option names. CLI flags win over the file; `--isolated` ignores it.
"""

from __future__ import annotations

import os
import sys

from devlint.config_error import ConfigError

_STR, _BOOL, _CODES, _GLOBS = "a string", "true or false", "a list of rule codes", "a list of glob patterns"
KEYS = {
    "select": _CODES,
    "extend-select": _CODES,
    "ignore": _CODES,
    "exclude": _GLOBS,
    "extend-exclude": _GLOBS,
    "per-file-ignores": "a table of glob = [rule codes]",
    "unsafe-fixes": _BOOL,
    "output-format": _STR,
    "device-name": _STR,
    "device-expression": _STR,
    "map-location": _STR,
    "max-file-size": "a whole number of bytes",
}


class FileSettings:
    """The settings a file gives (a plain class, not a dataclass: the replay of a warm run reads them,
    and importing dataclasses costs it a fifth of its time)."""

    __slots__ = ("path", "root", "values")

    def __init__(self, path: str | None, root: str, values: dict) -> None:
        self.path = path  # the pyproject.toml read, if any
        self.root = root  # folder globs and per-file-ignores are relative to
        self.values = values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileSettings) and (self.path, self.root, self.values) == (
            other.path, other.root, other.values)

    def __repr__(self) -> str:
        return f"FileSettings(path={self.path!r}, root={self.root!r}, values={self.values!r})"


def find_pyproject(paths: list[str]) -> str | None:
    """The nearest pyproject.toml with a [tool.devlint] table, looking up from the paths given.

    The search stops at the project root (a folder holding .git) or the file system root.
    """
    starts = [os.path.abspath(p) for p in paths] or [os.getcwd()]
    start = os.path.commonpath(starts)
    folder = start if os.path.isdir(start) else os.path.dirname(start)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate) and _has_devlint_table(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if os.path.exists(os.path.join(folder, ".git")) or parent == folder:
            return None
        folder = parent


def _has_devlint_table(path: str) -> bool:
    try:
        return "devlint" in _tool_table(_read(path), path)
    except ConfigError:
        return True  # report the broken file rather than silently skipping it


def _read(path: str) -> dict:
    # (imported here: a project without a settings file never parses TOML; start-up, issue 28)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}{_quote_line(path, str(exc))}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte {exc.object[exc.start:exc.start + 1]!r} "
                          f"at offset {exc.start})") from None


def _quote_line(path: str, message: str) -> str:
    """`: select = DL001`: the line a TOML error points at, as written (when it can be read back)."""
    import re

    found = re.search(r"\(at line (\d+), column \d+\)", message)
    if found is None:
        return ""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ""
    number = int(found.group(1))
    line = lines[number - 1].strip() if 1 <= number <= len(lines) else ""
    return f": {line[:120]}" if line else ""


def _tool_table(data: dict, path: str) -> dict:
    """`[tool]`, which TOML lets a file make anything (`tool = 5`)."""
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: 'tool' must be a table, not {tool!r}")
    return tool


def load(path: str, named: bool = False) -> FileSettings:
    """The [tool.devlint] table of `path`; `named`: the file was given with --config, so a file
    without the table (keys at the top level, as in a ruff.toml) is an error, not silently no settings."""
    data = _read(path)
    tool = _tool_table(data, path)
    if named and "devlint" not in tool:
        stray = [key for key in data if key in KEYS]
        hint = (f" (found {', '.join(stray)} at the top level: move {'it' if len(stray) == 1 else 'them'} "
                "under [tool.devlint])" if stray else "")
        raise ConfigError(f"{path}: --config file has no [tool.devlint] table{hint}")
    table = tool.get("devlint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.devlint] must be a table, not {table!r}")
    for key, value in table.items():
        if key not in KEYS:
            close = [k for k in KEYS if k.replace("-", "_") == key or k == key.replace("_", "-")]
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(KEYS)})"
            raise ConfigError(f"{path}: [tool.devlint] unknown key {key!r}{hint}")
        if not _valid(KEYS[key], value):
            raise ConfigError(f"{path}: [tool.devlint] {key} must be {KEYS[key]}, not {value!r}{_culprit(value)}")
    return FileSettings(path, os.path.dirname(os.path.abspath(path)), dict(table))


def _culprit(value) -> str:
    """The entry that is wrong in a list or table that is almost right: ` (3 is not a string)`."""
    if isinstance(value, dict):
        for entry in value.values():
            if isinstance(entry, str):
                return f" ({entry!r} is not a list: write [{entry!r}])"
            if isinstance(entry, list) and (hint := _culprit(entry)):
                return hint
        return ""
    if isinstance(value, list):
        wrong = [entry for entry in value if not isinstance(entry, str)]
        return f" ({wrong[0]!r} is not a string)" if wrong else ""
    return ""


def _valid(kind: str, value) -> bool:
    if kind in (_CODES, _GLOBS):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _STR:
        return isinstance(value, str)
    if kind.startswith("a whole number"):
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return isinstance(value, dict) and all(
        isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()
    )


def resolve(paths: list[str], config_path: str | None, isolated: bool) -> FileSettings:
    if isolated:
        return FileSettings(None, os.getcwd(), {})
    if config_path is not None:
        if not os.path.isfile(config_path):
            raise ConfigError(f"{config_path}: --config file not found")
        return load(config_path, named=True)
    found = find_pyproject(paths)
    return load(found) if found else FileSettings(None, os.getcwd(), {})
