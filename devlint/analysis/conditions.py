"""What a condition implies, as a pair: (its truth implies P, its falsity implies P).

The logic of `not`, `and`, `or` and the walrus is the same whatever P is (CUDA is there, for the
guards of `devlint/analysis/guards.py`; the torch is old, for the version gates of `devlint/analysis/versions.py`): subclasses answer
comparisons and the other atoms.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts
from devlint.syntax import dotted_name

NOTHING = (False, False)


def flip(pair: tuple[bool, bool]) -> tuple[bool, bool]:
    return (pair[1], pair[0])


def assigned_values(ctx: FileFacts) -> dict[str, list[cst.BaseExpression]]:
    """Every `name = <expr>` / `self.name = <expr>` (annotated or not) in the file, by dotted target."""
    found: dict[str, list[cst.BaseExpression]] = {}
    for node in ctx.nodes(cst.Assign):
        for target in node.targets:
            name = dotted_name(target.target)
            if name:
                found.setdefault(name, []).append(node.value)
    for node in ctx.nodes(cst.AnnAssign):
        name = dotted_name(node.target)
        if name and node.value is not None:
            found.setdefault(name, []).append(node.value)
    return found


class Implications:
    """`implies(condition)`, bounded in depth: names are followed through their assignments."""

    MAX_DEPTH = 8

    def __init__(self, ctx: FileFacts) -> None:
        self.ctx = ctx
        self._depth = 0

    def implies(self, expr: cst.BaseExpression) -> tuple[bool, bool]:
        if self._depth > self.MAX_DEPTH:
            return NOTHING
        self._depth += 1
        try:
            return self._implies(expr)
        finally:
            self._depth -= 1

    def _implies(self, expr: cst.BaseExpression) -> tuple[bool, bool]:
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return flip(self.implies(expr.expression))
        if isinstance(expr, cst.BooleanOperation):
            left, right = self.implies(expr.left), self.implies(expr.right)
            if isinstance(expr.operator, cst.And):
                return (left[0] or right[0], left[1] and right[1])
            return (left[0] and right[0], left[1] or right[1])
        if isinstance(expr, cst.NamedExpr):
            return self.implies(expr.value)
        if isinstance(expr, cst.Comparison):
            return self._comparison(expr)
        return self._atom(expr)

    def _holds_at(self, node: cst.CSTNode, holds_for_child) -> bool:
        """Does `holds_for_child(parent, child)` hold for some ancestor of `node`?"""
        child = node
        for parent in self.ctx.ancestors(node):
            if holds_for_child(parent, child):
                return True
            child = parent
        return False

    def _comparison(self, expr: cst.Comparison) -> tuple[bool, bool]:
        return NOTHING

    def _atom(self, expr: cst.BaseExpression) -> tuple[bool, bool]:
        return NOTHING
