"""Which bindings of a plain name may reach a use of it, without LibCST's scope analysis.

Resolving scopes costs several times the parse of a file (devlint.context), and the flag judgement
(devlint.analysis.flags) asks about a few names in many files. This answer over-approximates, which is
the safe direction there (one more binding can only make a name look less constant):

- the scope is the nearest function, lambda or comprehension around the use that binds the name
  (and does not declare it `global`), else the module;
- the module's bindings include those of class bodies and of functions that declare the name
  `global` or `nonlocal`;
- None (unknown) when anything binds the name in a way devlint does not list here: an import, a `def`
  or `class` of that name, a `match` capture.
"""

from __future__ import annotations

import libcst as cst

_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def reaching_sites(ctx, use: cst.Name) -> list[cst.CSTNode] | None:
    """The binding sites (target `Name`s, `Param`s; devlint.context.FileContext.binding_sites) of
    `use.value` that may reach `use`; None when the name may be bound in another way."""
    name = use.value
    by_region = _regions(ctx, name)
    if by_region is None:
        return None
    for ancestor in ctx.ancestors(use):
        if isinstance(ancestor, _SCOPES) and ancestor in by_region:
            return by_region[ancestor]
    return by_region.get(None, [])


def _regions(ctx, name: str) -> dict | None:
    memo = ctx.__dict__.setdefault("_reaching_regions", {})
    if name not in memo:
        memo[name] = _compute(ctx, name)
    return memo[name]


def _compute(ctx, name: str) -> dict | None:
    if name in ctx.imported_names or _defined(ctx, name) or _captured(ctx, name):
        return None
    outside = {id(_scope_of(ctx, node)) for kind in (cst.Global, cst.Nonlocal) for node in ctx.nodes(kind)
               if any(n.name.value == name for n in node.names)}
    regions: dict = {}
    for site in ctx.binding_sites.get(name, ()):
        region = _region(ctx, site)
        if region is not None and id(region) in outside:
            region = None
        regions.setdefault(region, []).append(site)
    return regions


def _region(ctx, site: cst.CSTNode):
    if isinstance(site, cst.Param):
        return ctx.enclosing(site, (cst.FunctionDef, cst.Lambda))
    walrus = isinstance(ctx.parent(site), cst.NamedExpr)  # binds in the function around a comprehension
    for ancestor in ctx.ancestors(site):
        if isinstance(ancestor, cst.ClassDef):
            return None  # (a class body's names: merged with the module's, an over-approximation)
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)) or (
                isinstance(ancestor, _COMPREHENSIONS) and not walrus):
            return ancestor
    return None


def _scope_of(ctx, node: cst.CSTNode):
    return ctx.enclosing(node, (cst.FunctionDef, cst.Lambda))


def _defined(ctx, name: str) -> bool:
    return any(node.name.value == name for kind in (cst.FunctionDef, cst.ClassDef) for node in ctx.nodes(kind))


def _captured(ctx, name: str) -> bool:
    """A `match` pattern binds it (`case Point(x=cuda):`, `case [*cuda]`, `case {**cuda}`)."""
    for kind in ("MatchAs", "MatchStar"):
        for node in ctx.nodes(getattr(cst, kind, type(None))):
            if node.name is not None and node.name.value == name:
                return True
    for node in ctx.nodes(getattr(cst, "MatchMapping", type(None))):
        if node.rest is not None and node.rest.value == name:
            return True
    return False
