"""A result cache: a file whose content, devlint version and effective settings have not changed
is not checked again. One JSON file per (version, settings) in `.devlint_cache/`, as ruff does;
entries are keyed by a hash of the file's bytes and the rules that apply to it.

A corrupt or unwritable cache is ignored with a warning: it never fails a run.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict

from devlint import __version__
from devlint.model import Applicability, Edit, Finding, Fix, Position

CACHE_DIR_NAME = ".devlint_cache"


class ResultCache:
    def __init__(self, directory: str, settings_key: str) -> None:
        self.directory = directory
        digest = hashlib.sha256(f"{__version__}\0{settings_key}".encode()).hexdigest()[:20]
        self.path = os.path.join(directory, f"results-{digest}.json")
        self.warnings: list[str] = []
        self.entries: dict[str, list] = {}
        self.changed = False
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            if data.get("version") != __version__ or not isinstance(data.get("entries"), dict):
                raise ValueError("unexpected layout")
            self.entries = data["entries"]
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError) as exc:
            self.warnings.append(f"{self.path}: ignoring an unreadable cache ({exc})")

    @staticmethod
    def key(data: bytes, codes: tuple[str, ...]) -> str:
        return hashlib.sha256(data + b"\0" + ",".join(codes).encode()).hexdigest()

    def get(self, key: str) -> list[Finding] | None:
        raw = self.entries.get(key)
        if raw is None:
            return None
        try:
            return [_finding(item) for item in raw]
        except (KeyError, TypeError, ValueError) as exc:
            self.warnings.append(f"{self.path}: ignoring a corrupt cache entry ({exc})")
            self.entries.pop(key, None)
            return None

    def put(self, key: str, findings: list[Finding]) -> None:
        self.entries[key] = [asdict(f) for f in findings]
        self.changed = True

    def save(self) -> None:
        if not self.changed:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            ignore = os.path.join(self.directory, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w", encoding="utf-8") as handle:
                    handle.write("# Automatically created by devlint.\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".results-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": __version__, "entries": self.entries}, handle)
            os.replace(tmp, self.path)
        except OSError as exc:
            self.warnings.append(f"{self.directory}: cannot write the cache ({exc.strerror or exc})")


def _position(raw: dict) -> Position:
    return Position(int(raw["line"]), int(raw["column"]))


def _finding(raw: dict) -> Finding:
    fix = raw.get("fix")
    if fix is not None:
        fix = Fix(fix["title"], Applicability(fix["applicability"]),
                  tuple(Edit(_position(e["start"]), _position(e["end"]), e["content"]) for e in fix["edits"]),
                  bool(fix["needs_device"]))
    return Finding(raw["code"], raw["name"], raw["message"], _position(raw["start"]), _position(raw["end"]), fix,
                   tuple(raw.get("suppress_lines", ())), raw.get("cell"))


def settings_key(config) -> str:
    """Everything besides the file's bytes that changes what a check reports."""
    return repr((sorted(config.codes()), config.per_file_ignores, config.fix_options,
                 config.ignore_noqa, config.max_file_size))
