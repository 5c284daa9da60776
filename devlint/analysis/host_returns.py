"""Functions whose result holds no tensor off the CPU (for devlint.analysis.origins' `host_value`).

A call of a plain function (a `def` of the checked file bound once, or a top-level function of the
project, read through devlint.analysis.origin_files) whose result is CPU data by its definition:

- its return annotation names only types that hold no tensor: `str`, `bytes`, `int`, `float`, `bool`,
  `complex`, `None`, and containers of those (`List[str]`, `dict[str, int]`, `Tuple[str, ...]`,
  `Optional[str]`, `str | None`, `Sequence`/`Iterable`/`Mapping` of them), also written as a string;
- or (whatever its annotation: an alias such as `-> Triplet` says nothing here) it is not a generator
  and every `return` gives a value `host_value` accepts (a string expression,
  a number, a container of those, a value the placement fact puts on the CPU) and the function does
  not end without one.

Methods (`self.m(...)`) are not followed: a subclass may override them. An annotation is taken at its word.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts

_SCALARS = frozenset({"str", "bytes", "int", "float", "bool", "complex", "None", "NoneType"})
_CONTAINERS = frozenset({"List", "list", "Dict", "dict", "Tuple", "tuple", "Set", "set", "FrozenSet", "frozenset",
                         "Optional", "Union", "Sequence", "Iterable", "Mapping", "Collection", "DefaultDict",
                         "OrderedDict", "Counter", "Deque", "deque", "defaultdict", "MutableMapping",
                         "MutableSequence", "AbstractSet", "Literal"})


def call_returns_host(ctx: FileFacts, call: cst.Call, judge, project_functions) -> bool:
    """Is `call` a call of a function whose result holds no tensor off the CPU, by its definition?
    `judge(ctx, expr)`: is a returned value CPU data (origins' `host_value`); `project_functions(view,
    path)`: the names of such top-level functions of a project file (devlint.analysis.origin_files)."""
    func = call.func
    if isinstance(func, cst.Name) and func.value not in ctx.imported_names:
        assignments = ctx.bindings(func)
        if len(assignments) == 1 and isinstance(assignments[0].node, cst.FunctionDef):
            return returns_host(ctx, assignments[0].node, judge)
        return False
    view = ctx.project
    if view is None or not (isinstance(func, cst.Name) or isinstance(func, cst.Attribute)
                            and ctx.is_imported_module(_root(func))):
        return False
    name = ctx.project_name(func)
    found = view.definition(name) if name is not None else None
    return found is not None and found[1] in project_functions(view, found[0])


def returns_host(ctx: FileFacts, function: cst.FunctionDef, judge) -> bool:
    memo = ctx.__dict__.setdefault("_devlint_host_returns", {})
    if function not in memo:
        memo[function] = False  # (a recursive call while this one is judged: not known yet)
        memo[function] = _judge(ctx, function, judge)
    return memo[function]


def _judge(ctx: FileFacts, function: cst.FunctionDef, judge) -> bool:
    if function.returns is not None and no_tensor_type(function.returns.annotation):
        return True
    returns, stack = [], [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, (cst.Yield, cst.Await)):
            return False
        if isinstance(node, cst.Return):
            returns.append(node)
        stack.extend(node.children)
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    ends_with_return = bool(body) and isinstance(body[-1], cst.SimpleStatementLine) and isinstance(
        body[-1].body[-1], (cst.Return, cst.Raise))
    return bool(returns) and ends_with_return and all(
        r.value is not None and judge(ctx, r.value) for r in returns)


def no_tensor_type(annotation: cst.BaseExpression) -> bool:
    """Does the type annotation name only types that hold no tensor?"""
    if isinstance(annotation, cst.SimpleString):
        try:
            return no_tensor_type(cst.parse_expression(annotation.evaluated_value))
        except Exception:  # (not an expression)
            return False
    if isinstance(annotation, cst.Name):
        return annotation.value in _SCALARS
    if isinstance(annotation, cst.Attribute):
        return isinstance(annotation.value, cst.Name) and annotation.value.value in ("typing", "builtins") and (
            annotation.attr.value in _SCALARS)
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return no_tensor_type(annotation.left) and no_tensor_type(annotation.right)
    if isinstance(annotation, cst.Subscript):
        base = annotation.value
        base_name = base.attr.value if isinstance(base, cst.Attribute) and isinstance(base.value, cst.Name) and (
            base.value.value in ("typing", "collections", "collections.abc")) else getattr(base, "value", None)
        if base_name not in _CONTAINERS:
            return False
        if base_name == "Literal":
            return True
        for element in annotation.slice:
            inner = element.slice
            if not isinstance(inner, cst.Index):
                return False
            if isinstance(inner.value, cst.Ellipsis):
                continue
            if not no_tensor_type(inner.value):
                return False
        return True
    return False


def _root(func: cst.Attribute) -> cst.CSTNode:
    node = func
    while isinstance(node, cst.Attribute):
        node = node.value
    return node
