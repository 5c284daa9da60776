"""A parameter that every call of its function fills with a value a test accepts (DL002): a file this run
wrote (devlint.analysis.round_trip), a path in a folder created empty this run (devlint.analysis.fresh_folders).

    torch.save(checkpoint, "checkpoint.pth")
    def load_checkpoint(filepath):
        checkpoint = torch.load(filepath)
        ...
    model = load_checkpoint("checkpoint.pth")

Inside the function, `filepath` names a file this run wrote whenever every call passes one: devlint
follows the calls only where it sees them all. `every_call_gives(ctx, param, test)` holds when

- the function is a plain `def` (not a method, no decorator, not a test that pytest calls: its name does
  not start with `test`), which no other file can call: it is defined inside another function, its name
  starts with `_`, or the file is a notebook (nothing imports a notebook);
- the file binds its name once (that `def`), and every other occurrence of the name is the callee of a
  direct call `name(...)` or a hand-off to a launcher with the arguments to call it with
  (`spawn(fn, args=(tmp_path,))`, `Thread(target=fn, args=(...))`: devlint.analysis.handoffs), with at
  least one: a function handed elsewhere (`map(fn, ...)`, a callback) may be called with anything;
- each call passes the parameter, by position or keyword, without `*args`/`**kwargs`, a value that
  `test(call, value)` accepts (devlint.analysis.round_trip asks its own question again at the call: the
  file was saved before the call, or holds CPU data only); a call that leaves it to its default does not.
  A hand-off gives the element of its `args=` tuple that lands on the parameter, asked at the launcher's call.

The function's own calls that may write the parameter's file (a copy, a save) are judged by the caller
of this module as for any load.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from devlint.analysis.handoffs import HandOff, uses
from devlint.analysis.top_level import is_notebook

Test = Callable[[cst.Call, cst.CSTNode], bool]


def every_call_gives(ctx, param: cst.Param, test: Test, question: str) -> bool:
    """Does every call of the function that has `param` pass, for it, a value `test` accepts (and is
    there one)? `question` names what `test` asks: answers are kept per parameter and question."""
    memo = ctx.__dict__.setdefault("_devlint_param_paths", {})
    key = (question, id(param))
    if key not in memo:
        memo[key] = False  # (a recursion through the same parameter proves nothing)
        memo[key] = _every_call_gives(ctx, param, test)
    return memo[key]


def _every_call_gives(ctx, param: cst.Param, test: Test) -> bool:
    function = ctx.parent(ctx.parent(param))
    if not isinstance(function, cst.FunctionDef) or function.decorators or function.asynchronous:
        return False
    params = function.params
    if param is params.star_arg or param is params.star_kwarg:
        return False
    name = function.name.value
    owner = ctx.enclosing(function, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
    if owner is None and not (name.startswith("_") and not name.endswith("__")) and not is_notebook(ctx):
        return False  # (a public function of a module: other files may call it)
    found = uses(ctx, function)
    if found is None:
        return False
    return bool(found) and all(_handed(function, param, use, test) if isinstance(use, HandOff)
                               else _gives(function, param, use, test) for use in found)


def _handed(function: cst.FunctionDef, param: cst.Param, handoff: HandOff, test: Test) -> bool:
    value = handoff.value_for(function, param)
    return value is not None and test(handoff.call, value)


def _gives(function: cst.FunctionDef, param: cst.Param, call: cst.Call, test: Test) -> bool:
    if any(a.star for a in call.args):
        return False
    params = function.params
    positional = list(params.posonly_params) + list(params.params)
    index = next((i for i, p in enumerate(positional) if p is param), None)
    given = [a for a in call.args if a.keyword is None]
    if index is not None and index < len(given):
        return test(call, given[index].value)
    if any(p is param for p in params.posonly_params):
        return False
    by_name = [a for a in call.args if a.keyword is not None and a.keyword.value == param.name.value]
    return len(by_name) == 1 and test(call, by_name[0].value)
