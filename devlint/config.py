"""The effective settings of a run and rule selection (`--select`, `--ignore`, prefixes, ALL)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

import pathspec

from devlint.context import FixOptions
from devlint.rules import ALL_RULES


class ConfigError(Exception):
    """Bad settings; the message names the option or file and what is wrong."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] | None = None  # None: the rules that are on by default
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix: bool = False
    unsafe_fixes: bool = False
    fix_options: FixOptions = field(default_factory=FixOptions)
    # (glob, codes) pairs; globs are gitignore-style and relative to `root`.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    root: str = "."
    max_file_size: int = 10 * 1024 * 1024
    ignore_noqa: bool = False
    add_noqa: bool = False

    def rules(self):
        """The selected rule classes, in code order."""
        return self._selected

    @cached_property
    def _selected(self):
        chosen = {r.code for r in ALL_RULES if r.default_enabled} if self.select is None else set()
        for code in (*(self.select or ()), *self.extend_select):
            chosen |= _matching(code, "--select")
        for code in self.ignore:
            chosen -= _matching(code, "--ignore")
        for _, codes in self.per_file_ignores:
            validate_codes(codes, "per-file-ignores")
        return tuple(r for r in ALL_RULES if r.code in chosen)

    def rules_for(self, path: str):
        """The selected rules minus those `per-file-ignores` turns off for this file."""
        rules = self._selected
        if not self.per_file_ignores:
            return rules
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root)).replace(os.sep, "/")
        ignored: set[str] = set()
        for spec, codes in self._per_file_specs:
            if spec.match_file(relative):
                for code in codes:
                    ignored |= _matching(code, "per-file-ignores")
        return tuple(r for r in rules if r.code not in ignored)

    @cached_property
    def _per_file_specs(self):
        return [(pathspec.GitIgnoreSpec.from_lines([glob]), codes) for glob, codes in self.per_file_ignores]


def validate_codes(codes, where: str) -> None:
    """Raise ConfigError naming `where` for the first unknown code or prefix."""
    for code in codes:
        _matching(code, where)


def _matching(selector: str, option: str) -> set[str]:
    selector = selector.strip().upper()
    if selector == "ALL":
        return {r.code for r in ALL_RULES}
    codes = {r.code for r in ALL_RULES if r.code.startswith(selector) or r.name.upper() == selector}
    if not codes:
        known = ", ".join(r.code for r in ALL_RULES)
        raise ConfigError(f"{option}: unknown rule code or prefix {selector!r} (known: {known}, ALL)")
    return codes


def split_codes(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())
