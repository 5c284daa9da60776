"""A function handed to a launcher together with the arguments to call it with (devlint.analysis.param_paths).

    def _worker(rank, folder):
        torch.load(folder / "m.pt")
    torch.multiprocessing.spawn(_worker, args=(tmp_path,), nprocs=2)
    threading.Thread(target=_check, args=(tmp_path / "a",)).start()
    launch(_worker, args=(dirname,), nprocs=n)          # a project's or a fixture's own launcher

Launchers that run a function in a process or a thread take it with the arguments to call it with:
`torch.multiprocessing.spawn(fn, args=...)`, torch_xla's `xmp.spawn`, `multiprocessing.Process(target=fn,
args=...)`, `threading.Thread(target=fn, args=...)`, a project's own `launch(fn, args=...)`. The arguments
fill the function's last positional parameters: a spawn puts the process index first, Thread and Process
do not. `uses(ctx, function)` answers, for every occurrence of the function's name in the file
(devlint.analysis.direct_calls.references), a direct call `name(...)` or a `HandOff` that says what each
positional parameter receives; None when one occurrence is neither (a callback, `fn = name`), so the
answer holds every way the file runs the function. A hand-off is a call that

- gets the function once, as its first positional argument or as `target=`, `fn=`, `func=` or `function=`,
  and no other argument names it;
- gets `args=` a literal tuple without `*` (`args=(folder,)`; not a name, not `(folder)`), no `*`/`**`
  argument, no `kwargs=`, `kwds=`, `kwargs_dict=` but `{}` or None (they would fill parameters by name), and
  is not `functools.partial` (which passes `args=` on to the function by name);

and the function has only positional parameters without defaults (a default would let Thread leave the
last one unfilled: which parameter gets which value could not be told), no `*args`/`**kwargs`, none named
`args`, and exactly as many as the tuple (each gets its element) or one more (the first is a spawn's index:
nothing this module knows). Any other count stays unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from devlint.analysis.direct_calls import references
from devlint.syntax import descendants

FUNCTION_KEYWORDS = frozenset({"target", "fn", "func", "function"})
# Keywords that fill the function's parameters by name (`kwargs=`, `kwds=`, `kwargs_dict=`): the tuple
# alone no longer says who gets what, unless they are empty.
NAMED_ARGUMENTS = ("kwarg", "kwds")
PARTIALS = frozenset({"functools.partial", "functools.partialmethod"})


@dataclass(frozen=True)
class HandOff:
    """A launcher call that runs the function with `values`: per positional parameter, the expression it
    receives, or None (a spawn's process index)."""

    call: cst.Call
    values: tuple[cst.BaseExpression | None, ...]

    def value_for(self, function: cst.FunctionDef, param: cst.Param) -> cst.BaseExpression | None:
        positional = list(function.params.posonly_params) + list(function.params.params)
        index = next((i for i, p in enumerate(positional) if p is param), None)
        return self.values[index] if index is not None else None


def uses(ctx, function: cst.FunctionDef) -> list[cst.Call | HandOff] | None:
    """Every direct call of `function` and every hand-off of it to a launcher, or None when the file
    refers to it another way (or it may be reached unseen: devlint.analysis.direct_calls)."""
    names = references(ctx, function)
    if names is None:
        return None
    found: list[cst.Call | HandOff] = []
    for node in names:
        parent = ctx.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            found.append(parent)
            continue
        handoff = _handoff(ctx, function, node)
        if handoff is None:
            return None
        found.append(handoff)
    return found


def _handoff(ctx, function: cst.FunctionDef, name: cst.Name) -> HandOff | None:
    arg = ctx.parent(name)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(call, cst.Call) or arg.value is not name:
        return None
    keyword = arg.keyword.value if arg.keyword is not None else None
    first_positional = next((a for a in call.args if a.keyword is None), None)
    if not (keyword in FUNCTION_KEYWORDS or keyword is None and arg is first_positional):
        return None
    if any(a.star for a in call.args) or any(_named_arguments(a) for a in call.args):
        return None
    if ctx.qualified_names(call.func) & PARTIALS:
        return None
    if any(isinstance(n, cst.Name) and n.value == name.value and n is not name for n in descendants(call)):
        return None  # (the function also among the arguments: which one gets the tuple?)
    given = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "args"]
    if len(given) != 1 or not isinstance(given[0], cst.Tuple):
        return None
    elements = given[0].elements
    if any(isinstance(e, cst.StarredElement) for e in elements):
        return None
    count = _positional_count(function)
    if count is None or count not in (len(elements), len(elements) + 1):
        return None
    values = tuple(e.value for e in elements)
    return HandOff(call, (None,) + values if count == len(elements) + 1 else values)


def _named_arguments(arg: cst.Arg) -> bool:
    if arg.keyword is None or not any(word in arg.keyword.value.lower() for word in NAMED_ARGUMENTS):
        return False
    empty = isinstance(arg.value, cst.Dict) and not arg.value.elements or (
        isinstance(arg.value, cst.Name) and arg.value.value == "None")
    return not empty


def _positional_count(function: cst.FunctionDef) -> int | None:
    """How many positional parameters the function takes, when a launcher must fill each of them."""
    params = function.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        return None
    positional = list(params.posonly_params) + list(params.params)
    if any(p.default is not None for p in positional):
        return None
    if any(p.name.value == "args" for p in positional + list(params.kwonly_params)):
        return None
    return len(positional)
