"""The effective settings of a run and rule selection (`--select`, `--ignore`, prefixes, ALL)."""

from __future__ import annotations

from dataclasses import dataclass, field

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

    def rules(self):
        """The selected rule classes, in code order."""
        chosen = {r.code for r in ALL_RULES if r.default_enabled} if self.select is None else set()
        for code in (*(self.select or ()), *self.extend_select):
            chosen |= _matching(code, "select")
        for code in self.ignore:
            chosen -= _matching(code, "ignore")
        return tuple(r for r in ALL_RULES if r.code in chosen)


def _matching(selector: str, option: str) -> set[str]:
    selector = selector.strip().upper()
    if selector == "ALL":
        return {r.code for r in ALL_RULES}
    codes = {r.code for r in ALL_RULES if r.code.startswith(selector) or r.name.upper() == selector}
    if not codes:
        known = ", ".join(r.code for r in ALL_RULES)
        raise ConfigError(f"--{option}: unknown rule code or prefix {selector!r} (known: {known}, ALL)")
    return codes


def split_codes(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())
