"""Functions that only run where CUDA is present, because every call of them does.

Programs often refuse to run without a GPU once, at the top of an entry point, and call their helpers
after that:

    def train_one_epoch(model, loader):
        for x, y in loader:
            x = x.cuda()                     # runs only with CUDA: not flagged
            ...

    def main(args):
        utils.init_distributed_mode(args)    # exits without CUDA (devlint.analysis.cuda_required)
        train_one_epoch(model, loader)

A function's body is guarded when every call of it is, by any guard devlint.analysis.guards knows (an
early exit before it, an `if torch.cuda.is_available():` around it, a guarded caller of its caller). The
function must be a plain `def` (no decorator but `@torch.no_grad()`-style ones, not a method, not a test that pytest calls: its name does
not start with `test`) that the file binds once, whose every occurrence in the file is the callee of a
direct call `name(...)`, with at least one: a function handed elsewhere (a callback, `map(fn, ...)`,
`fn = name`, a launcher's `spawn(fn, args=(...))`: the launcher may keep it) may be called from anywhere (a top-level `def` that re-defines a name imported above it
binds it for every later call: devlint.analysis.direct_calls). A function of the module's top level may
be called from another file: no other file may reference its name other than by calling it
(devlint.analysis.project_calls), and each call of its name there (`name(...)` or `anything.name(...)`)
must be guarded in that file (devlint.analysis.guarded_elsewhere, for up to four files), unless it is
a bare `name(...)` in a file whose every binding of the name is provably another function (its own
`def`, or an import from another module that defines one: devlint.analysis.project_callers). Every
file read is recorded for the result cache (a new caller in another file is a change). A function nested in another is called only
from there. A call inside the function itself (recursion) proves nothing.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from devlint.analysis.direct_calls import direct_calls
from devlint.facts import FileFacts

IsGuarded = Callable[[cst.CSTNode], bool]
# Decorators that change how a function runs, not who may call it.
TRANSPARENT = frozenset({"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.set_grad_enabled",
                         "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"})


def every_call_guarded(ctx: FileFacts, function: cst.FunctionDef, is_guarded: IsGuarded, guards_of) -> bool:
    """Is every call of `function` guarded (and is there one)? `is_guarded` is devlint.analysis.guards'
    own question, and `guards_of` its guards of any file, passed in (guards asks this module)."""
    memo = ctx.memo.setdefault("guarded_callers", {})
    if function not in memo:
        memo[function] = False  # (a cycle of callers proves nothing)
        memo[function] = _every_call_guarded(ctx, function, is_guarded, guards_of)
    return memo[function]


def _every_call_guarded(ctx: FileFacts, function: cst.FunctionDef, is_guarded: IsGuarded, guards_of) -> bool:
    if function.asynchronous or not all(_transparent(ctx, d.decorator) for d in function.decorators):
        return False
    name = function.name.value
    calls = direct_calls(ctx, function)
    if calls is None or any(a is function for call in calls for a in ctx.ancestors(call)):
        return False  # (called unseen, or only through itself: recursion proves nothing)
    if not calls or not all(is_guarded(call) for call in calls):
        return False
    nested = ctx.enclosing(function, (cst.FunctionDef,)) is not None
    return nested or _guarded_elsewhere(ctx, name, guards_of)


def _transparent(ctx: FileFacts, decorator: cst.BaseExpression) -> bool:
    """`@torch.no_grad()`, `@torch.inference_mode()`: the function is still called only where it was."""
    target = decorator.func if isinstance(decorator, cst.Call) else decorator
    return bool(ctx.qualified_names(target) & TRANSPARENT)


def _guarded_elsewhere(ctx: FileFacts, name: str, guards_of) -> bool:
    """Is every call of `name` in another file of the project guarded there? A call there counts unless
    it provably calls another function (devlint.analysis.project_callers: the file's own `def` of the
    name, or one it imports from another module that defines it); a few files whose every call of the
    name is guarded pass (devlint.analysis.guarded_elsewhere). This file's own `obj.name(...)` calls are
    another object's method (`model.train()` beside `def train`)."""
    from devlint.analysis.flags import flags_of
    from devlint.analysis.guarded_elsewhere import guarded_in
    from devlint.analysis.project_callers import reaching_calls

    flags = flags_of(ctx)
    uses = flags.project_uses(name, flags.module_stem)
    if uses is None or uses.referenced or uses.stored:
        return False
    own = sum(1 for call in ctx.nodes(cst.Call) if isinstance(call.func, (cst.Name, cst.Attribute))
              and (call.func.value if isinstance(call.func, cst.Name) else call.func.attr.value) == name)
    calls = reaching_calls(name, ctx.source, ctx.project, flags.module_stem)
    if calls is None or calls.pop(None) != own:
        return False
    return not calls or guarded_in(ctx.project, calls, name, guards_of)
