"""Parameters every call of their function fills with a fresh path (DL002, through devlint.analysis.fresh_folders).

`def _check_saves(device, folder): ... torch.load(folder / "m.pt")`, called only as
`_check_saves("cpu", tmp_path / "1")` and `_check_saves(device, dirname)` (a fixture of `mkdtemp()`): inside
the function, `folder` is a folder created empty this run. It counts as one when:

- the function is a plain `def` of the module or of another function (not a method, no decorator, not a
  test that pytest calls with fixtures: its name does not start with `test`), and it cannot be called from
  another file: its name starts with `_`, or it is defined inside a function;
- the file binds its name once (that `def`), and every other occurrence of the name is the callee of a
  direct call `name(...)`, with at least one: a function handed elsewhere (`executor(fn, args=...)`,
  `map(fn, ...)`, a callback) may be called with anything, so it keeps the finding;
- each call passes the parameter, by position or keyword, without `*args`/`**kwargs`, a value that is
  fresh where the call is (devlint.analysis.fresh_folders, which may follow this rule again to the
  caller's own parameters); a call that leaves the parameter to its default keeps the finding.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from devlint.facts import FileFacts

Fresh = Callable[[cst.CSTNode], bool]


def every_call_passes_fresh(ctx: FileFacts, param: cst.Param, fresh: Fresh) -> bool:
    """Does every call of the function that has `param` pass a fresh path for it (and is there one)?"""
    memo = ctx.__dict__.setdefault("_devlint_fresh_parameters", {})
    if id(param) not in memo:
        memo[id(param)] = False  # (a recursion through the same parameter proves nothing)
        memo[id(param)] = _every_call_passes_fresh(ctx, param, fresh)
    return memo[id(param)]


def _every_call_passes_fresh(ctx: FileFacts, param: cst.Param, fresh: Fresh) -> bool:
    function = ctx.parent(ctx.parent(param))
    if not isinstance(function, cst.FunctionDef) or function.decorators or function.asynchronous:
        return False
    name = function.name.value
    owner = ctx.enclosing(function, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
    if isinstance(owner, (cst.ClassDef, cst.Lambda)) or name.startswith("test"):
        return False
    if owner is None and not (name.startswith("_") and not name.endswith("__")):
        return False  # (a public function of the module: other files may call it)
    if len(ctx.binding_sites.get(name, ())) > 0 or name in ctx.imported_names or sum(
            d.name.value == name for d in ctx.nodes(cst.FunctionDef)) != 1:
        return False
    calls = []
    for node in ctx.nodes(cst.Name):
        if node.value != name or node is function.name:
            continue
        call = ctx.parent(node)
        if not isinstance(call, cst.Call) or call.func is not node:
            return False
        calls.append(call)
    return bool(calls) and all(_passes_fresh(function, param, call, fresh) for call in calls)


def _passes_fresh(function: cst.FunctionDef, param: cst.Param, call: cst.Call, fresh: Fresh) -> bool:
    if any(a.star for a in call.args):
        return False
    params = function.params
    if param is params.star_arg or param is params.star_kwarg:
        return False
    positional = list(params.posonly_params) + list(params.params)
    index = next((i for i, p in enumerate(positional) if p is param), None)
    given = [a for a in call.args if a.keyword is None]
    if index is not None and index < len(given):
        return fresh(given[index].value)
    if any(p is param for p in params.posonly_params):
        return False
    by_name = [a for a in call.args if a.keyword is not None and a.keyword.value == param.name.value]
    return len(by_name) == 1 and fresh(by_name[0].value)
