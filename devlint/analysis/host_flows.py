"""Values without tensors that flow through containers (for origins' `host_value`).

Beyond a display of host values and `list`/`tuple`/`sorted`/`set`/`dict`/`frozenset` of one (judged in
origins), the result holds no tensor off the CPU when what it is built from does not:
- `dict.fromkeys(keys)` / `dict.fromkeys(keys, value)`, `itertools.chain(a, b)`,
  `itertools.chain.from_iterable(xs)`, `reversed(xs)`, `zip(a, b)`, `enumerate(xs)`;
- a part of a host container: `d.values()`, `d.keys()`, `d.items()`, `d.copy()`, `d.get(k)`;
- a comprehension whose element is its own loop variable (or a tuple of them) over a host iterable:
  `[t for ts in d.values() for t in ts]`, `(s for s in sets)`.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts

_BUILDERS = frozenset({"dict.fromkeys", "itertools.chain", "itertools.chain.from_iterable", "reversed", "zip",
                       "enumerate"})
_PARTS = frozenset({"values", "keys", "items", "copy", "get"})


def call_flows_host(ctx: FileFacts, call: cst.Call, judge, depth: int) -> bool:
    """`judge(ctx, expr, depth)`: origins' `host_value`."""
    if any(a.star or a.keyword is not None for a in call.args):
        return False
    func = call.func
    root = func.value if isinstance(func, cst.Attribute) else func
    spelled = set() if isinstance(root, cst.Name) and ctx.bindings(root) else {_dotted(func)}
    names = ctx.qualified_names(func) | spelled  # (as imported, or as spelled where the file binds no such name)
    if names & _BUILDERS and call.args:
        return all(judge(ctx, a.value, depth + 1) for a in call.args)
    if isinstance(func, cst.Attribute) and func.attr.value in _PARTS and len(call.args) <= 1:
        return judge(ctx, func.value, depth + 1)
    return False


def comprehension_flows_host(ctx: FileFacts, comp, element: cst.CSTNode, judge, depth: int) -> bool:
    """`[t for ts in d.values() for t in ts]`: the element is a loop variable, every iterable host."""
    loops = []
    current = comp.for_in
    while current is not None:
        loops.append(current)
        current = current.inner_for_in
    targets = set()
    for loop in loops:
        names = _names(loop.target)
        if names is None:
            return False
        if not isinstance(loop.iter, cst.Name) or loop.iter.value not in targets:
            if not judge(ctx, loop.iter, depth + 1):
                return False  # (an iterable over one of the loop variables is a part of a host value)
        targets |= names
    element_names = _names(element)
    return element_names is not None and element_names <= targets


def _names(target: cst.CSTNode) -> set | None:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        found: set = set()
        for element in target.elements:
            inner = _names(element.value)
            if inner is None:
                return None
            found |= inner
        return found
    return None


def _dotted(func: cst.CSTNode) -> str:
    from devlint.syntax import dotted_name

    return dotted_name(func) or ""
