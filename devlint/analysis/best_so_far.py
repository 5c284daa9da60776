"""A best-so-far save that the first turn of a training loop always makes (DL002's round trip).

    best = -math.inf
    for epoch in range(args.epochs):
        score = evaluate(model)
        if score > best:
            best = score
            torch.save(model.state_dict(), "best.pt")
    model.load_state_dict(torch.load("best.pt"))

A save in a loop body is not a round trip by itself (devlint.analysis.round_trip): the loop may run no
turn, the branch may never be taken. Here it is taken on the first turn: `best` starts at an infinity
that every score beats. `first_turn_saves(ctx, save, load)` holds for such a save, and for one that is a
statement of the loop body itself (saved every turn), when

- the loop is a `for` over `range(...)`, a statement of a block that holds the load, earlier than it
  (as a round trip's save is), with no function or class between;
- the `if` is a statement of the loop body whose test is `x > best`, `x >= best`, `best < x`, ... or
  `op(x, best)` with `op` an `operator.gt`/`ge`/`lt`/`le` (directly or through a name bound once in the
  function), and the save is a statement of its body; no `break` or `continue` comes before either in
  its block (a `return` or an exception leaves the load unrun too);
- `best` is bound by a plain assignment earlier in the loop's block to an infinity (`-math.inf`,
  `float("inf")`, `np.inf`, `-float("inf")`, `torch.inf`) and re-bound between it and the loop's end
  only inside that `if` (which runs after the first comparison);
- a conditional expression (`-math.inf if higher_is_better else math.inf`, `operator.gt if
  higher_is_better else operator.lt`) is read on each side of its test, one name bound once in the
  function, both expressions taking the same side: the comparison must hold on every side.

Not in a notebook's top level: its cells run one by one at the reader's will, and the cell that trains
(the loop) is the one a reader skips, to load a checkpoint saved elsewhere (often on a GPU) instead.

Two runs are read as outside the program's use and not guarded against: a training loop that runs
no turn (`--epochs 0`: `range(...)` of a count devlint cannot see is taken to run, but not a literal
empty one such as `range(0)`), and a score that is NaN, or the starting infinity itself, on every
turn. In both the program would load a best model it never trained, from an earlier run.
"""

from __future__ import annotations

import operator

import libcst as cst

from devlint.analysis.top_level import is_notebook
from devlint.syntax import descendants, string_value

_BOUNDARIES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_INFINITIES = frozenset({"math.inf", "numpy.inf", "numpy.Inf", "numpy.infty", "torch.inf", "cmath.inf"})
_INFINITE_TEXT = {"inf": 1, "+inf": 1, "infinity": 1, "+infinity": 1, "-inf": -1, "-infinity": -1}
_OPERATORS = {"operator.gt": operator.gt, "operator.ge": operator.ge, "operator.lt": operator.lt,
              "operator.le": operator.le}
_COMPARE = {cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge, cst.LessThan: operator.lt,
            cst.LessThanEqual: operator.le}
_SCORE = 0.0  # any finite score: every comparison with an infinity decides the same for all of them


def first_turn_saves(ctx, save: cst.Call, load: cst.Call) -> bool:
    """Does the save run on the first turn of a loop that precedes `load` (the module docstring)?"""
    statement = ctx.parent(save)
    line = ctx.parent(statement) if isinstance(statement, cst.Expr) and statement.value is save else None
    branch = _block_statement(ctx, line)
    if branch is None or not _reached(branch[1], line):
        return False
    if isinstance(branch[0], cst.For):  # saved on every turn
        if_node, loop = None, branch[0]
    elif isinstance(branch[0], cst.If):
        if_node = branch[0]
        outer = _block_statement(ctx, if_node)
        if outer is None or not isinstance(outer[0], cst.For) or not _reached(outer[1], if_node):
            return False
        loop = outer[0]
    else:
        return False
    if not _counted(ctx, loop) or not _earlier(ctx, loop, load):
        return False
    if is_notebook(ctx) and ctx.enclosing(loop, (cst.FunctionDef, cst.Lambda)) is None:
        return False  # (a notebook's training cell: the one a reader skips, loading a checkpoint from elsewhere)
    return if_node is None or _always_true(ctx, if_node, loop)


def _block_statement(ctx, statement):
    """(the compound statement whose body holds `statement` directly, that body's statements)."""
    block = ctx.parent(statement) if statement is not None else None
    owner = ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if owner is None or getattr(owner, "body", None) is not block:
        return None
    return owner, list(block.body)


def _reached(body: list, statement) -> bool:
    """No `break`/`continue` in the statements before `statement` (any of them may skip it)."""
    for earlier in body:
        if earlier is statement:
            return True
        if any(isinstance(n, (cst.Break, cst.Continue)) for n in descendants(earlier)):
            return False
    return False


def _counted(ctx, loop: cst.For) -> bool:
    """`for ... in range(...)`, not a literal empty range."""
    it = loop.iter
    if not (isinstance(it, cst.Call) and _builtin(ctx, it.func, "range")):
        return False
    if not it.args or any(a.star or a.keyword for a in it.args):
        return False
    values = [_integer(a.value) for a in it.args]
    if None in values or len(values) > 3:
        return True  # a count devlint cannot see: taken to run (the module docstring)
    try:
        return len(range(*values)) > 0
    except ValueError:
        return False  # (a step of 0)


def _integer(expr) -> int | None:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _integer(expr.expression)
        return None if inner is None else -inner
    return expr.evaluated_value if isinstance(expr, cst.Integer) else None


def _earlier(ctx, statement, load: cst.Call) -> bool:
    block = ctx.parent(statement)
    body = list(getattr(block, "body", ()))
    index = next((i for i, s in enumerate(body) if s is statement), None)
    child = load
    for ancestor in ctx.ancestors(load):
        if ancestor is block:
            later = next((i for i, s in enumerate(body) if s is child), None)
            return index is not None and later is not None and later > index
        if isinstance(ancestor, _BOUNDARIES):
            return False
        child = ancestor
    return False


def _always_true(ctx, if_node: cst.If, loop: cst.For) -> bool:
    """Is the test true on the loop's first turn for any finite score, on every side of its conditions?"""
    found = [(compare, best, best_first, _start(ctx, best, loop, if_node))
             for compare, best, best_first in _comparison(ctx, if_node.test)]
    found = [f for f in found if f[3] is not None]
    if len(found) != 1:
        return False
    compare, _, best_first, start = found[0]
    tests = [t for t in (_test_of(start), _test_of(compare)) if t is not None]
    if tests and not _one_unchanged_condition(ctx, tests, loop):
        return False
    for side in (True, False) if tests else (None,):
        sign = _infinity(ctx, _side(start, side))
        op = _operator(ctx, _side(compare, side))
        if sign is None or op is None:
            return False
        bound = sign * float("inf")
        if not (op(bound, _SCORE) if best_first else op(_SCORE, bound)):
            return False
    return True


def _comparison(ctx, test) -> list:
    """[(the comparison: an operator, or the expression of one; a Name that may be `best`; whether that
    name is the left side)]."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        op = _COMPARE.get(type(target.operator))
        left, right = test.left, target.comparator
    elif isinstance(test, cst.Call) and len(test.args) == 2 and not any(a.star or a.keyword for a in test.args):
        op = _value(ctx, test.func)
        left, right = test.args[0].value, test.args[1].value
    else:
        return []
    if op is None:
        return []
    return [(op, side, side is left) for side in (left, right) if isinstance(side, cst.Name)]


def _start(ctx, best: cst.Name, loop: cst.For, if_node: cst.If):
    """The value `best` holds at the first comparison: its one plain binding earlier in the loop's block,
    with every other binding from there to the loop's end inside the `if`'s body."""
    if any(n.name.value == best.value for kind in (cst.Global, cst.Nonlocal) for d in ctx.nodes(kind)
           for n in d.names):
        return None  # (another function may re-bind it)
    assignments = ctx.bindings(best)
    block = ctx.parent(loop)
    body = list(getattr(block, "body", ()))
    at = next((i for i, s in enumerate(body) if s is loop), None)
    if at is None:
        return None
    starts = []
    for assignment in assignments:
        node = assignment.node
        line = _line_of(ctx, node)
        index = next((i for i, s in enumerate(body) if s is line), None)
        if index is not None and index < at and ctx.assigned_value(node) is not None:
            starts.append((index, node))
    if not starts:
        return None
    index, start = max(starts, key=lambda s: s[0])
    span = {id(s) for s in body[index + 1:at + 1]}
    for assignment in assignments:
        node = assignment.node
        if node is start or not any(id(a) in span for a in ctx.ancestors(node)):
            continue
        if not any(a is if_node.body for a in ctx.ancestors(node)):
            return None
    return ctx.assigned_value(start)


def _line_of(ctx, node):
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.SimpleStatementLine):
            return ancestor
        if isinstance(ancestor, (cst.BaseCompoundStatement, cst.Module)):
            return None
    return None


def _value(ctx, expr):
    """A name bound once in its function stands for its value (`is_better = operator.gt`)."""
    if isinstance(expr, cst.Name) and expr.value not in ctx.imported_names:
        assignments = ctx.bindings(expr)
        if len(assignments) == 1:
            value = ctx.assigned_value(assignments[0].node)
            if value is not None:
                return value
    return expr


def _test_of(expr):
    """The test of a conditional expression (`x if test else y`); a test that is not a plain name
    cannot be shown to take the same side twice."""
    if not isinstance(expr, cst.IfExp):
        return None
    return expr.test if isinstance(expr.test, cst.Name) else False


def _one_unchanged_condition(ctx, tests: list, loop: cst.For) -> bool:
    """Are the tests one name with one binding in the function, outside the loop (so both expressions
    read the same value)?"""
    if any(t is False for t in tests) or len({t.value for t in tests}) != 1:
        return False
    bindings = [{id(a.node) for a in ctx.bindings(t)} for t in tests]
    if len(bindings[0]) != 1 or any(b != bindings[0] for b in bindings):
        return False
    node = ctx.bindings(tests[0])[0].node
    return not any(a is loop for a in ctx.ancestors(node))


def _side(expr, side):
    if isinstance(expr, cst.IfExp) and side is not None:
        return expr.body if side else expr.orelse
    return expr


def _operator(ctx, expr):
    if callable(expr):
        return expr
    for name in _names(ctx, expr):
        if name in _OPERATORS:
            return _OPERATORS[name]
    return None


def _infinity(ctx, expr) -> int | None:
    """+1 or -1 for an expression of infinity, else None."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        inner = _infinity(ctx, expr.expression)
        return None if inner is None else -inner if isinstance(expr.operator, cst.Minus) else inner
    if isinstance(expr, cst.Call) and _builtin(ctx, expr.func, "float"):
        if len(expr.args) == 1 and not expr.args[0].keyword:
            text = string_value(expr.args[0].value)
            return _INFINITE_TEXT.get(text.strip().lower()) if text is not None else None
        return None
    return 1 if _names(ctx, expr) & _INFINITIES else None


def _names(ctx, expr) -> set:
    return set(ctx.qualified_names(expr)) if isinstance(expr, (cst.Name, cst.Attribute)) else set()


def _builtin(ctx, expr, name: str) -> bool:
    """Is `expr` the builtin `name`: a bare name that nothing in the file binds or defines?"""
    return isinstance(expr, cst.Name) and expr.value == name and name not in ctx.binding_sites \
        and name not in ctx.imported_names and not any(
            d.name.value == name for kind in (cst.FunctionDef, cst.ClassDef) for d in ctx.nodes(kind))
