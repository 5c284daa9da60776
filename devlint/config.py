"""The effective settings of a run and rule selection (`--select`, `--ignore`, prefixes, ALL)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

# Nothing here may import LibCST (directly or through a rule module): a fully cached run only reads
# the settings, hashes files and prints what the cache holds. Rule classes are imported on demand.
from devlint.config_error import ConfigError  # noqa: F401  (re-exported: where it was always imported from)
from devlint.device_options import FixOptions  # noqa: F401  (below the analyses, which read it)
from devlint.rule_table import RULES, rule_classes


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
    max_file_size: int = 1024 * 1024  # ~0.6-0.9 GB to check at the limit: see benchmarks/memory.py
    ignore_noqa: bool = False
    add_noqa: bool = False

    def rules(self):
        """The selected rule classes, in code order (importing them loads LibCST)."""
        return rule_classes(self._selected)

    def codes(self) -> tuple[str, ...]:
        """The selected rule codes, in code order; imports no rule module."""
        return self._selected

    @cached_property
    def _selected(self) -> tuple[str, ...]:
        chosen = {r.code for r in RULES if r.default_enabled} if self.select is None else set()
        for code in self.select or ():
            chosen |= _matching(code, "--select")
        for code in self.extend_select:
            chosen |= _matching(code, "--extend-select")
        for code in self.ignore:
            chosen -= _matching(code, "--ignore")
        for _, codes in self.per_file_ignores:
            validate_codes(codes, "per-file-ignores")
        return tuple(r.code for r in RULES if r.code in chosen)

    def rules_for(self, path: str):
        """The selected rules minus those `per-file-ignores` turns off for this file."""
        return rule_classes(self.codes_for(path))

    def codes_for(self, path: str) -> tuple[str, ...]:
        """The codes of `rules_for(path)`; imports no rule module."""
        codes = self._selected
        if not self.per_file_ignores:
            return codes
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root)).replace(os.sep, "/")
        ignored: set[str] = set()
        for spec, listed in self._per_file_specs:
            if spec.match_file(relative):
                for code in listed:
                    ignored |= _matching(code, "per-file-ignores")
        return tuple(c for c in codes if c not in ignored)

    @cached_property
    def _per_file_specs(self):
        import pathspec

        return [(pathspec.GitIgnoreSpec.from_lines([glob]), codes) for glob, codes in self.per_file_ignores]


def validate_codes(codes, where: str) -> None:
    """Raise ConfigError naming `where` for the first unknown code or prefix."""
    for code in codes:
        _matching(code, where)


def _matching(selector: str, option: str) -> set[str]:
    """The codes a selector (code, prefix, rule name or ALL; any case) stands for; the error echoes
    the selector as it was given."""
    wanted = selector.strip().upper()
    if not wanted:  # every code starts with "": an empty entry would select or ignore every rule
        raise ConfigError(f"{option}: empty rule code {selector!r} (remove the empty entry)")
    if wanted == "ALL":
        return {r.code for r in RULES}
    codes = {r.code for r in RULES if r.code.startswith(wanted) or r.name.upper() == wanted}
    if not codes:
        known = ", ".join(r.code for r in RULES)
        raise ConfigError(f"{option}: unknown rule code or prefix {selector!r} (known: {known}, ALL)")
    return codes


def split_codes(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())
