"""The README's rules table, generated from the rules' own docs (a test fails when it is stale)."""

from __future__ import annotations

import sys

from devlint.model import Applicability
from devlint.rules import ALL_RULES

START, END = "<!-- rules-table:start -->", "<!-- rules-table:end -->"


def rules_table() -> str:
    rows = ["| Code | Name | What it flags | Fix | On by default |", "| --- | --- | --- | --- | --- |"]
    for rule in ALL_RULES:
        fixes = _fix_levels(rule)
        rows.append(f"| {rule.code} | `{rule.name}` | {rule.summary()} | {fixes} | {'yes' if rule.default_enabled else 'no'} |")
    return "\n".join(rows)


def _fix_levels(rule) -> str:
    doc = rule.documentation().split("## Fix safety", 1)[-1].split("\n## ", 1)[0]
    levels = [level.value for level in Applicability if f"**{level.value}**" in doc]
    return ", ".join(levels) or "none"


def render_readme(text: str) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{rules_table()}\n{END}{tail}"


if __name__ == "__main__":  # python -m devlint.docs README.md  rewrites the table in place
    path = sys.argv[1] if len(sys.argv) > 1 else "README.md"
    with open(path, encoding="utf-8") as handle:
        updated = render_readme(handle.read())
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(updated)
