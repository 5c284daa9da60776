"""A result cache: a file whose content, devlint version and effective settings have not changed
is not checked again. One JSON file per (version, settings) in `.devlint_cache/`, as ruff does;
entries are keyed by a hash of the file's bytes, its kind and the rules that apply to it.

The cache folder is devlint's alone: devlint creates it with a CACHEDIR.TAG (the standard marker,
https://bford.info/cachedir/, that backup tools skip) naming devlint and a `.gitignore` holding `*`,
and writes only into a folder holding that marker. An existing folder without it (`--cache-dir src`)
is neither read nor written, and `devlint clean` removes nothing else.

Every entry carries a checksum of its findings and the key, and is validated field by field: a
changed, moved or malformed entry is a miss (the file is checked again). A corrupt, unreadable or
unwritable cache is ignored with one warning: it never fails a run and never changes what is reported.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from dataclasses import asdict

from devlint import __version__
from devlint.cache_folder import (  # noqa: F401  (re-exported: where they were always imported from)
    CACHE_DIR_NAME, GITIGNORE, TAG, TAG_NAME, _has_tag, _is_legacy, default_directory, is_cache_dir, not_a_cache,
    project_root, remove_quietly, usual_mode, write_atomically,
)
from devlint.code_fingerprint import fingerprint
from devlint.model import Applicability, Edit, Finding, Fix, Position
from devlint.rules import INFO_BY_CODE

# The layout of a results file; part of its name, so that another layout is never read.
# 3: keys hold the file's place; dependencies are devlint.depends observations.
# 4: keys hold the digest of the file's bytes (devlint.depends.digest), not the bytes; digests are SHA-256.
FORMAT = 4


def kind(path: str) -> str:
    """The kind of file, as the checker tells them apart: the same bytes are checked differently."""
    if path.endswith(".ipynb"):
        return ".ipynb"
    return ".pyi" if path.endswith(".pyi") else ".py"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """The fingerprint of devlint's own modules (devlint.code_fingerprint), once per process."""
    return fingerprint(os.path.dirname(os.path.abspath(__file__)))


class ResultCache:
    kind = staticmethod(kind)

    def __init__(self, directory: str, settings_key: str) -> None:
        self.directory = directory
        # The interpreter is in the name too: the tokenizer and parser the rules rely on change with it;
        # so is devlint's own code, which changes without a new version in a development install.
        digest = hashlib.sha256(f"{__version__}\0{FORMAT}\0{sys.implementation.cache_tag}\0{settings_key}"
                                f"\0{code_fingerprint()}"
                                .encode("utf-8", "surrogatepass")).hexdigest()[:20]
        self.path = os.path.join(directory, f"results-{digest}.json")
        self.warnings: list[str] = []
        self.entries: dict[str, object] = {}
        self.changed = False
        self.usable = True
        self._corrupt = 0
        if os.path.lexists(directory) and not is_cache_dir(directory):
            self._refuse()
            return
        try:
            with open(self.path, "rb") as handle:
                data = json.loads(handle.read())
            if not isinstance(data, dict) or data.get("version") != __version__ or data.get("format") != FORMAT \
                    or not isinstance(data.get("entries"), dict):
                raise ValueError("unexpected layout")
            self.entries = data["entries"]
        except FileNotFoundError:
            pass
        except (OSError, ValueError, RecursionError, MemoryError) as exc:
            self.warnings.append(f"{self.path}: ignoring an unreadable cache ({_short(exc)})")

    def _refuse(self) -> None:
        self.usable = False
        self.entries = {}
        self.warnings.append(f"{not_a_cache(self.directory)}; the cache is not used: "
                             "name a new folder with --cache-dir")

    @staticmethod
    def key(digest: str, codes: tuple[str, ...], kind: str, place: str) -> str:
        """`place`: the file's absolute path (devlint.runner.place), which decides where its imports
        resolve; `digest`: devlint.depends.digest of the bytes that are checked, read once."""
        head = f"{kind}\0{','.join(codes)}\0{place}\0{digest}"
        return hashlib.sha256(head.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str, codes: tuple[str, ...]) -> list[Finding] | None:
        """The cached findings for `key`, if an entry holds valid ones for these rule codes (whatever
        the files it depends on hold now: see `dependencies`)."""
        raw = self.entries.get(key)
        if raw is None:
            return None
        findings = _entry_findings(key, raw, codes)
        if findings is None:
            self._corrupt += 1
            self.entries.pop(key, None)
        return findings

    def dependencies(self, key: str) -> dict[str, str] | None:
        """What the entry's findings rest on besides the file's bytes (devlint.depends: the project
        files whose facts they used, with their digests, and the paths looked for, found or not):
        the entry holds only while each observation still holds; None for a damaged list (the
        entry is dropped). Call after a successful `get`."""
        raw = self.entries.get(key)
        if type(raw) is list and len(raw) == 3:
            try:
                found = json.loads(raw[2])
            except ValueError:
                found = None
            # (JSON keys are strings)
            if type(found) is dict and all(type(v) is str for v in found.values()):
                return found
            self.entries.pop(key, None)
            return None
        return {}

    def put(self, key: str, findings: list[Finding], dependencies: dict[str, str] | None = None) -> None:
        self.entries[key] = make_entry(key, [asdict(f) for f in findings], dependencies)
        self.changed = True

    def save(self) -> None:
        if self._corrupt:
            count = self._corrupt
            self.warnings.append(f"{self.path}: ignored {count} corrupt cache entr{'y' if count == 1 else 'ies'} "
                                 "(checked again)")
            self._corrupt = 0
        if not self.changed or not self.usable:
            return
        try:
            if not self._claim_directory():
                self._refuse()
                return
            # What a damaged file added besides entries of the stored shape is not kept.
            entries = {key: value for key, value in self.entries.items()
                       if type(value) is list and len(value) in (2, 3) and all(type(v) is str for v in value)}
            import tempfile  # (only a run that writes the cache needs it: start-up, issue 28)

            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".results-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"version": __version__, "format": FORMAT, "entries": entries}, handle,
                              separators=(",", ":"))
                usual_mode(tmp)
                os.replace(tmp, self.path)
            except BaseException:
                remove_quietly(tmp)
                raise
            self.changed = False
        except OSError as exc:
            self.warnings.append(f"{self.directory}: cannot write the cache ({exc.strerror or exc})")

    def _claim_directory(self) -> bool:
        """Make sure the folder is devlint's: create it (marker and .gitignore first) or find the marker."""
        directory = self.directory
        if os.path.lexists(directory):
            if _has_tag(directory):
                return True
            if _is_legacy(directory):
                write_atomically(directory, TAG_NAME, TAG)
                return True
            return False
        # Build the folder under a temporary name, then rename it into place: no one ever sees the
        # cache folder without its marker, and of two runs creating it at once one wins, cleanly.
        absolute = os.path.abspath(directory)
        parent = os.path.dirname(absolute)
        os.makedirs(parent, exist_ok=True)
        building = os.path.join(parent, f".{os.path.basename(absolute)}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
        os.mkdir(building)
        try:
            with open(os.path.join(building, TAG_NAME), "wb") as handle:
                handle.write(TAG)
            with open(os.path.join(building, ".gitignore"), "w", encoding="utf-8") as handle:
                handle.write(GITIGNORE)
            try:
                os.rename(building, absolute)
                return True
            except OSError:
                if not os.path.lexists(absolute):
                    raise
        finally:
            if os.path.lexists(building):
                for name in (TAG_NAME, ".gitignore"):
                    remove_quietly(os.path.join(building, name))
                try:
                    os.rmdir(building)
                except OSError:
                    pass
        return _has_tag(directory)  # another run created it meanwhile


def _short(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return str(exc.strerror or exc)
    if isinstance(exc, (RecursionError, MemoryError)):
        return "too deeply nested or too large"
    return str(exc)[:200]


# -- entries -----------------------------------------------------------------------------------------------
def _checksum(key: str, text: str) -> str:
    return hashlib.sha256(f"{key}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def make_entry(key: str, findings: list, dependencies: dict[str, str] | None = None) -> list:
    """The stored form of a file's findings (JSON values): [checksum, the findings as JSON text], and
    a third item, the files it depends on as JSON text, when there are any.

    The findings are kept as text so that checking the checksum is hashing a string, and only the
    entries a run looks up are parsed.
    """
    text = json.dumps(findings, separators=(",", ":"))
    if dependencies:
        depends = json.dumps(dependencies, separators=(",", ":"), sort_keys=True)
        return [_checksum(key, text + "\0" + depends), text, depends]
    return [_checksum(key, text), text]


class _Invalid(Exception):
    pass


def _entry_findings(key: str, raw: object, codes: tuple[str, ...]) -> list[Finding] | None:
    """The findings of a stored entry; None unless it is exactly what devlint wrote for `key`."""
    try:
        if type(raw) is not list or len(raw) not in (2, 3) or not all(type(v) is str for v in raw):
            return None
        if raw[0] != _checksum(key, raw[1] if len(raw) == 2 else raw[1] + "\0" + raw[2]):
            return None
        items = json.loads(raw[1])
        if type(items) is not list:
            return None
        allowed = frozenset(codes)
        return [_finding(item, allowed) for item in items]
    except (_Invalid, ValueError, TypeError, RecursionError):
        return None


_FINDING_KEYS = frozenset({"code", "name", "message", "start", "end", "fix", "suppress_lines", "cell"})
_FIX_KEYS = frozenset({"title", "applicability", "edits", "needs_device"})
_EDIT_KEYS = frozenset({"start", "end", "content"})
_POSITION_KEYS = frozenset({"line", "column"})
_APPLICABILITIES = {a.value: a for a in Applicability}


def _fields(raw: object, keys: frozenset) -> dict:
    if type(raw) is not dict or raw.keys() != keys:
        raise _Invalid
    return raw


def _str(value: object) -> str:
    if type(value) is not str:
        raise _Invalid
    return value


def _range(raw: dict) -> tuple[Position, Position]:
    """The start and end of a finding or edit: lines from 1, columns from 0, start not after end."""
    start, end = raw["start"], raw["end"]
    if type(start) is not dict or type(end) is not dict or start.keys() != _POSITION_KEYS \
            or end.keys() != _POSITION_KEYS:
        raise _Invalid
    line, column, end_line, end_column = start["line"], start["column"], end["line"], end["column"]
    if type(line) is not int or type(column) is not int or type(end_line) is not int \
            or type(end_column) is not int or line < 1 or column < 0 or (line, column) > (end_line, end_column):
        raise _Invalid
    return Position(line, column), Position(end_line, end_column)


def _finding(raw: object, codes: frozenset) -> Finding:
    raw = _fields(raw, _FINDING_KEYS)
    code = raw["code"]
    if type(code) is not str or code not in codes:
        raise _Invalid
    info = INFO_BY_CODE.get(code)
    if info is None or raw["name"] != info.name:
        raise _Invalid
    start, end = _range(raw)
    fix = raw["fix"]
    if fix is not None:
        fix = _fields(fix, _FIX_KEYS)
        applicability = _APPLICABILITIES.get(fix["applicability"]) if type(fix["applicability"]) is str else None
        if applicability is None or type(fix["edits"]) is not list or type(fix["needs_device"]) is not bool:
            raise _Invalid
        edits = tuple(Edit(*_range(_fields(edit, _EDIT_KEYS)), _str(edit["content"])) for edit in fix["edits"])
        fix = Fix(_str(fix["title"]), applicability, edits, fix["needs_device"])
    suppress_lines = raw["suppress_lines"]
    if type(suppress_lines) is not list or any(type(line) is not int or line < 1 for line in suppress_lines):
        raise _Invalid
    cell = raw["cell"]
    if cell is not None and (type(cell) is not int or cell < 1):
        raise _Invalid
    return Finding(code, info.name, _str(raw["message"]), start, end, fix, tuple(suppress_lines), cell)


def settings_key(config) -> str:
    """Everything besides the file's bytes, kind and applicable rules that changes what a check
    reports. Not here, on purpose: fix and unsafe_fixes (a result with fixes applied is never cached,
    and without any, --fix reports what a check does), add_noqa (never cached), and root (it only
    decides the rules that apply to a file, which are in each entry's key)."""
    return repr((sorted(config.codes()), config.per_file_ignores, config.fix_options,
                 config.ignore_noqa, config.max_file_size))
