"""One module per rule. The table of rules (codes, names, defaults, where each class lives, the run-time
errors each prevents) is devlint.rule_table, in the base layer, so that the settings read it without
importing a rule; its names are re-exported here, where rules have always been asked for."""

from __future__ import annotations

from devlint import rule_table
from devlint.rule_table import (  # noqa: F401  (re-exported)
    INFO_BY_CODE,
    RULES,
    RUNTIME_ERRORS,
    RuleInfo,
    RuntimeErrorRow,
    rule_class,
    rule_classes,
    rules_for_error,
)


def __getattr__(name: str):
    # ALL_RULES and RULES_BY_CODE import every rule module on first use (devlint.rule_table).
    return getattr(rule_table, name)


def __dir__() -> list[str]:
    return sorted({*globals(), "ALL_RULES", "RULES_BY_CODE"})
