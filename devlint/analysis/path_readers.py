"""Calls of a function of the file that only reads the path it is given (DL002's writers of a path).

devlint.analysis.origins counts a call that takes a path and is named like a writer
(`load_checkpoint("m.pt")`: "checkpoint") as one that may write the file, which keeps every load of it
flagged. A function of the file whose body shows what it does with that parameter needs no guess:

    def load_checkpoint(filepath):
        checkpoint = torch.load(filepath)
        ...

`only_reads(ctx, call, arg)` holds when `call` calls a function of this file by a name bound once (its
`def`, without decorators, which may wrap it in anything), `arg` fills one of its parameters (by
position or keyword, in a call without `*args`/`**kwargs`), that parameter is never re-bound in the
function, and every read of it is the file argument of a loader (`torch.load(filepath)`,
`np.load(filepath)`), a check that reads nothing (`os.path.exists(filepath)`, `os.path.isfile`), or
`print(filepath)`: the function hands the path to nothing that may write it.
"""

from __future__ import annotations

import libcst as cst

_READERS = frozenset({"torch.load", "torch.serialization.load", "torch.jit.load", "numpy.load", "pickle.load",
                      "json.load"})
_LOOKS = frozenset({"os.path.exists", "os.path.isfile", "os.path.getsize", "print", "os.path.basename"})


def only_reads(ctx, call: cst.Call, arg: cst.Arg) -> bool:
    """Does `call` call a function of this file that only reads the path `arg` gives it?"""
    function = _function(ctx, call.func)
    if function is None or function.decorators or any(a.star for a in call.args):
        return False
    param = _parameter(function, call, arg)
    if param is None:
        return False
    bound = ctx.bindings(param.name)
    if len(bound) != 1 or bound[0].node is not param:
        return False  # (re-bound in the function: the name is not only the path)
    return all(_read(ctx, access.node) for access in bound[0].references)


def _function(ctx, func: cst.CSTNode) -> cst.FunctionDef | None:
    if not isinstance(func, cst.Name):
        return None
    assignments = ctx.bindings(func)
    if len(assignments) != 1 or not isinstance(assignments[0].node, cst.FunctionDef):
        return None
    return assignments[0].node


def _parameter(function: cst.FunctionDef, call: cst.Call, arg: cst.Arg) -> cst.Param | None:
    params = function.params
    positional = list(params.posonly_params) + list(params.params)
    if arg.keyword is None:
        index = next((i for i, a in enumerate(a for a in call.args if a.keyword is None) if a is arg), None)
        return positional[index] if index is not None and index < len(positional) else None
    named = [p for p in list(params.params) + list(params.kwonly_params) if p.name.value == arg.keyword.value]
    return named[0] if len(named) == 1 else None


def _read(ctx, node: cst.CSTNode) -> bool:
    argument = ctx.parent(node)
    call = ctx.parent(argument) if isinstance(argument, cst.Arg) else None
    if not isinstance(call, cst.Call) or argument.value is not node:
        return False
    names = set(ctx.qualified_names(call.func))
    if names & _READERS:  # (the file is the first argument: `f` of torch.load, `file` of numpy's and pickle's)
        first = next((a for a in call.args if a.keyword is None), None)
        return argument is first if argument.keyword is None else argument.keyword.value in {"f", "file", "fp"}
    return bool(names & _LOOKS)
