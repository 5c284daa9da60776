"""Functions that never return without CUDA: a call of one is an early exit for the code after it.

devlint.analysis.guards takes `if not torch.cuda.is_available(): sys.exit(...)` as a guard for what
follows it. Programs often put that refusal in a set-up helper that every entry point calls first:

    def init_distributed_mode(args):          # utils.py
        if "RANK" in os.environ: ...
        elif torch.cuda.is_available(): ...
        else:
            print("Does not support training without GPU.")
            sys.exit(1)
        dist.init_process_group(backend="nccl", ...)
        torch.cuda.set_device(args.gpu)

    def main(args):                           # train.py
        utils.init_distributed_mode(args)
        model = Net().cuda()                  # runs only with CUDA: not flagged

A call is such a guard when it is a statement of its own (`setup()`, `args = setup()`) and calls a plain
`def` (no decorator, not a generator or `async`) of the same file or of the project
(devlint.analysis.project) that

- *refuses* explicitly: some branch that ends in `sys.exit(...)`, `exit()`, `quit()`, `os._exit(...)`
  or `raise` is the side of a CUDA condition where CUDA is missing (the `else` of `if
  torch.cuda.is_available():`, the body of `if not torch.cuda.is_available():`, of `if not args.cuda:`);
  a helper that merely calls `torch.cuda.set_device` does not declare the program GPU-only, and its
  callers' `.cuda()` stay flagged, the only default finding that says the program needs CUDA;
- and cannot *return* without CUDA: every path through its statements to a `return` or to its end passes
  the CUDA side of a condition, an `assert` of one, such a refusal, or a call that raises without CUDA
  (`torch.cuda.set_device(...)` with an index that is not a negative literal, `current_device()`,
  `synchronize()`, `get_device_name(...)`, `get_device_properties(...)`, `get_device_capability(...)`).
  `if`/`elif`/`else` branches are followed; loops, `try` and `with` give no certainty (the body may not
  run, or its error may be swallowed), and a `return` inside them before certainty answers no.

A first look skips, unparsed, a helper that names neither CUDA nor a GPU or holds no `raise` or exit call
(an index test such as `if args.device_id < 0: sys.exit(1)` alone is not read as a refusal: the finding
stays). Another file is read once per content; every file read is recorded in the checked file's project view
(devlint.depends), so the result cache checks the file again when the helper changes.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from devlint.facts import FileFacts
from devlint.parsing import parse_module
from devlint.syntax import dotted_name

_EXITS = {"sys.exit", "exit", "quit", "os._exit", "builtins.exit", "builtins.quit"}
_RAISES_WITHOUT_CUDA = {
    "torch.cuda.set_device", "torch.cuda.current_device", "torch.cuda.synchronize", "torch.cuda.get_device_name",
    "torch.cuda.get_device_properties", "torch.cuda.get_device_capability",
}
_BY_DIGEST: dict[tuple[str, str], bool] = {}
Guards = Callable[[FileFacts], object]  # a file's CUDA guards: `.implies(condition)` -> (truth, falsity) mean CUDA


def requires_cuda(ctx: FileFacts, statement: cst.BaseSmallStatement, guards_of: Guards) -> bool:
    """Is `statement` a call (or an assignment of one) of a function that never returns without CUDA?
    `guards_of` is devlint.analysis.guards.guards_of, which asks this module (passed in: no import loop)."""
    call = statement.value if isinstance(statement, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    if not isinstance(call, cst.Call):
        return False
    memo = ctx.memo.setdefault("cuda_required", {})
    if call not in memo:
        memo[call] = False  # (a helper that calls itself proves nothing)
        memo[call] = _requires_cuda(ctx, call, guards_of)
    return memo[call]


def _requires_cuda(ctx: FileFacts, call: cst.Call, guards_of: Guards) -> bool:
    func = call.func
    if isinstance(func, cst.Name):
        if func.value not in ctx.imported_names:
            function = _own_function(ctx, func.value)
            return function is not None and _memo_function(ctx, function, guards_of)
    elif not isinstance(func, cst.Attribute):
        return False
    view = ctx.project
    name = ctx.project_name(func)
    if view is None or name is None:
        return False
    found = view.definition(name)
    return found is not None and _project_function(view, *found, guards_of)


def _own_function(ctx: FileFacts, name: str) -> cst.FunctionDef | None:
    """The file's one `def name` at module level, when nothing else in the file binds `name` (no scope
    analysis: it costs more than a whole check of a file that needs none)."""
    if name in ctx.binding_sites:
        return None
    functions = [f for f in ctx.nodes(cst.FunctionDef) if f.name.value == name]
    if len(functions) != 1 or ctx.parent(functions[0]) is not ctx.module:
        return None
    return functions[0]


def _memo_function(ctx: FileFacts, function: cst.FunctionDef, guards_of: Guards) -> bool:
    memo = ctx.memo.setdefault("cuda_required_functions", {})
    if function not in memo:
        memo[function] = False
        memo[function] = _may_refuse(function) and never_returns_without_cuda(ctx, function, guards_of)
    return memo[function]


def _may_refuse(function: cst.FunctionDef) -> bool:
    """A cheap first look: does the function name CUDA or a GPU and hold a `raise` or an exit call?"""
    cuda = exits = False
    stack = [function.body]
    while stack and not (cuda and exits):
        node = stack.pop()
        if isinstance(node, cst.Raise):
            exits = True
        elif isinstance(node, cst.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in ("exit", "quit", "_exit"):
            exits = True
        elif isinstance(node, cst.Name) and ("cuda" in node.value.lower() or "gpu" in node.value.lower()):
            cuda = True
        stack.extend(node.children)
    return cuda and exits


def _project_function(view, path: str, name: str, guards_of: Guards) -> bool:
    data, observed = view.read(path)
    if data is None:
        return False
    if (observed, name) not in _BY_DIGEST:
        _BY_DIGEST[observed, name] = _analyse(data, name, guards_of)
    return _BY_DIGEST[observed, name]


def _analyse(data: bytes, name: str, guards_of: Guards) -> bool:
    lowered = data.lower()
    if (b"cuda" not in lowered and b"gpu" not in lowered) or not (b"exit" in data or b"raise" in data):
        return False  # (no file is parsed again for a helper that cannot refuse)
    try:
        module = parse_module(data)
    except Exception:  # noqa: BLE001  (an unreadable helper proves nothing)
        return False
    ctx = FileFacts(module)
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == name]
    return len(functions) == 1 and _may_refuse(functions[0]) and never_returns_without_cuda(ctx, functions[0], guards_of)


def never_returns_without_cuda(ctx: FileFacts, function: cst.FunctionDef, guards_of: Guards) -> bool:
    """Does `function` refuse to run without CUDA, and reach no `return` or end without CUDA? (module docstring)"""
    if function.decorators or function.asynchronous or _yields(function):
        return False
    walk = _Walk(ctx, guards_of(ctx))
    end = walk.block(function.body, False)
    return walk.refuses and not walk.uncertain_return and end is not False


class _Walk:
    """Follows a function's statements with one fact: is CUDA certain here?"""

    def __init__(self, ctx: FileFacts, guards) -> None:
        self.ctx = ctx
        self.guards = guards
        self.refuses = False
        self.uncertain_return = False

    def block(self, suite: cst.BaseSuite, certain: bool) -> bool | None:
        """Certainty where the suite falls through; None where it never does (every path exits or returns)."""
        if isinstance(suite, cst.SimpleStatementSuite):  # `if not ok: sys.exit(1)` on one line
            return self.smalls(suite.body, certain)
        for statement in suite.body:
            certain = self.statement(statement, certain)
            if certain is None:
                return None
        return certain

    def smalls(self, statements, certain: bool) -> bool | None:
        for small in statements:
            if isinstance(small, cst.Return):
                self.uncertain_return |= not certain
                return None
            if isinstance(small, cst.Raise) or _exit_call(self.ctx, small):
                return None
            if isinstance(small, cst.Assert) and self.guards.implies(small.test)[0]:
                certain = True
            elif _raises_without_cuda(self.ctx, small):
                certain = True
        return certain

    def statement(self, statement: cst.CSTNode, certain: bool) -> bool | None:
        if isinstance(statement, cst.SimpleStatementLine):
            return self.smalls(statement.body, certain)
        if isinstance(statement, cst.If):
            return self._if(statement, certain)
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return certain
        if not certain and _returns_inside(statement):
            self.uncertain_return = True
        return certain

    def _if(self, statement: cst.If, certain: bool) -> bool | None:
        truth, falsity = self.guards.implies(statement.test)
        body = self.block(statement.body, certain or truth)
        if body is None and falsity and _ends_in_exit(self.ctx, statement.body):
            self.refuses = True  # `if not torch.cuda.is_available(): sys.exit(...)`
        orelse = statement.orelse
        if orelse is None:
            other = certain or falsity
        elif isinstance(orelse, cst.If):
            other = self._if(orelse, certain or falsity)
        else:
            other = self.block(orelse.body, certain or falsity)
            if other is None and truth and _ends_in_exit(self.ctx, orelse.body):
                self.refuses = True  # `if torch.cuda.is_available(): ... else: sys.exit(...)`
        ends = [end for end in (body, other) if end is not None]
        return all(ends) if ends else None


def _exit_call(ctx: FileFacts, small: cst.CSTNode) -> bool:
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return False
    func = small.value.func
    names = ctx.qualified_names(func) or {dotted_name(func) or ""}
    return bool(names & _EXITS)


def _ends_in_exit(ctx: FileFacts, block: cst.BaseSuite) -> bool:
    """Does the block end in `raise` or an exit call (a `return` is a normal return, not a refusal)?"""
    statements = list(block.body)
    last = statements[-1] if statements else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    return isinstance(last, cst.Raise) or _exit_call(ctx, last)


def _raises_without_cuda(ctx: FileFacts, small: cst.CSTNode) -> bool:
    call = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    if not isinstance(call, cst.Call) or not ctx.qualified_names(call.func) & _RAISES_WITHOUT_CUDA:
        return False
    first = call.args[0].value if call.args else None
    negative = isinstance(first, cst.UnaryOperation) and isinstance(first.operator, cst.Minus)
    return not negative  # `torch.cuda.set_device(-1)` does nothing


def _returns_inside(statement: cst.CSTNode) -> bool:
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Return):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(node.children)
    return False


def _yields(function: cst.FunctionDef) -> bool:
    stack = list(function.body.children)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Yield, cst.Await)):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(node.children)
    return False
