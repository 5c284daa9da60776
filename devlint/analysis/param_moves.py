"""May a call move the object it is given to a device? (placement: `train(model, loader)`)

A module passed to a function may come back moved: `def train(model): model.cuda()`, Lightning's
`trainer.fit(model)`, accelerate's `prepare(model)`. devlint.analysis.placement asks `may_move(ctx, call,
arg)` for every call an object that is not a tensor (tensors do not move in place) is passed to between
its binding and a use; the answer is no only where the callee is read and shown to leave it in place:

- a plain `def` (no decorator) of this file or a top-level one of the project (devlint.analysis.project's
  `definition`), read with `ast`, whose body calls no moving method on anything (`.cuda()`, `.to(...)`,
  `.xpu()`, `.apply(fn)`, ...: an alias of the parameter could be moved), and in which the parameter is
  only read for its attributes and methods (`model.train()`, `model.parameters()`), called
  (`model(x)`), compared, or passed on to a function of the same file that, by the same rule, leaves it in
  place, or to a builtin that keeps no reference (`print`, `len`, `isinstance`);
- not when the parameter is stored, returned, put in a container, bound to another name, or passed to any
  other call: the object may be moved where devlint does not look.

A call with `*args`/`**kwargs`, an argument that fills no parameter, a callee devlint cannot find (a
method, an external library) may move it. Only a direct argument is followed: an object first put in a
container or bound to another name (`train(*[model])`, `h(engine, {"model": model})`) is judged as before,
by the moves of this file that may reach it. Each project file read is recorded in the checked file's
view (devlint.depends), so a cached result is checked again when the callee changes.
"""

from __future__ import annotations

import ast
import textwrap

import libcst as cst

from devlint.analysis.class_moves import MOVING_METHODS
from devlint.prefilter import parsed_or_none

_MOVING = MOVING_METHODS | {"apply", "_apply"}
_KEEPING_BUILTINS = frozenset({"print", "len", "isinstance", "type", "id", "repr", "str", "hasattr", "callable"})
MAX_DEPTH = 8


def may_move(ctx, call: cst.Call, arg: cst.Arg) -> bool:
    """May `call` move (to a device) the object `arg` passes it?"""
    memo = ctx.__dict__.setdefault("_devlint_param_moves", {})
    if id(arg) not in memo:
        memo[id(arg)] = (arg, _may_move(ctx, call, arg))  # (the node kept alive: its id stays its own)
    return memo[id(arg)][1]


def _may_move(ctx, call: cst.Call, arg: cst.Arg) -> bool:
    if any(a.star for a in call.args):
        return True
    found = _callee(ctx, call.func)
    if found is None:
        return True
    functions, function = found
    param = _parameter(function, [a for a in call.args if a.keyword is None], arg)
    return param is None or _moves(functions, function, param, 0, set())


def _callee(ctx, func: cst.CSTNode):
    """(the top-level functions of the callee's file by name, the callee), read with `ast`, or None."""
    if isinstance(func, cst.Name) and func.value not in ctx.imported_names:
        assignments = ctx.bindings(func)
        if len(assignments) != 1 or not isinstance(assignments[0].node, cst.FunctionDef):
            return None
        definition = assignments[0].node
        if definition.decorators:
            return None
        tree = parsed_or_none(textwrap.dedent(ctx.module.code_for_node(definition)))
        if tree is None or not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
            return None
        top = ctx.enclosing(definition, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) is None
        functions = _functions(_own_tree(ctx)) if top else {}
        return functions, tree.body[0]
    view = ctx.project
    name = ctx.project_name(func)
    if view is None or name is None or not (isinstance(func, cst.Name) or ctx.is_imported_module(_root(func))):
        return None
    found = view.definition(name)
    if found is None:
        return None
    path, name = found
    functions = _project_functions(view, path)
    return (functions, functions[name]) if functions is not None and name in functions else None


def _project_functions(view, path: str) -> dict | None:
    """The top-level functions of a project file, read once per checked file (its view), its digest
    recorded as an observation."""
    memo = view.__dict__.setdefault("_devlint_param_moves", {})
    if path not in memo:
        data, _ = view.read(path)
        tree = parsed_or_none(data) if data is not None else None
        memo[path] = _functions(tree) if tree is not None else None
    return memo[path]


def _root(node: cst.CSTNode) -> cst.CSTNode:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


def _own_tree(ctx):
    memo = ctx.__dict__.setdefault("_devlint_param_moves_tree", [])
    if not memo:
        memo.append(parsed_or_none(ctx.module.code))
    return memo[0]


def _functions(tree) -> dict:
    if tree is None:
        return {}
    found: dict = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node if isinstance(node, ast.FunctionDef) and node.name not in found else None
    return {k: v for k, v in found.items() if v is not None}


def _parameter(function: ast.FunctionDef, positional: list, arg) -> str | None:
    """The name of the parameter `arg` fills (a LibCST Arg, or an ast argument given as (index, keyword))."""
    params = function.args.posonlyargs + function.args.args
    if isinstance(arg, tuple):
        index, keyword = arg
    else:
        index = next((i for i, a in enumerate(positional) if a is arg), None)
        keyword = arg.keyword.value if arg.keyword is not None else None
    if keyword is None:
        return params[index].arg if index is not None and index < len(params) else None
    named = [p.arg for p in params + function.args.kwonlyargs if p.arg == keyword]
    return named[0] if named else None


def _moves(functions: dict, function: ast.FunctionDef, param: str, depth: int, seen: set) -> bool:
    """May `function` move the object its parameter `param` holds (the module docstring)?"""
    if depth > MAX_DEPTH or function.decorator_list:
        return True
    if (id(function), param) in seen:
        return False  # (a recursion: judged where it started)
    seen.add((id(function), param))
    parents = {id(child): node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MOVING:
            return True
        if isinstance(node, ast.Name) and node.id == param and isinstance(node.ctx, ast.Load) and not _kept(
                functions, parents, node, depth, seen):
            return True
    return False


def _kept(functions: dict, parents: dict, node: ast.Name, depth: int, seen: set) -> bool:
    """Does this read of the parameter leave the object where it is?"""
    parent = parents.get(id(node))
    if isinstance(parent, (ast.Attribute, ast.Compare)):
        return True  # `model.train()`, `model.weight`, `model is None` (moving methods: found above)
    if isinstance(parent, ast.Call) and parent.func is node:
        return True  # `model(x)`
    if isinstance(parent, ast.keyword):
        call, index, keyword = parents.get(id(parent)), None, parent.arg
    elif isinstance(parent, ast.Call) and node in parent.args:
        call, index, keyword = parent, parent.args.index(node), None
    else:
        return False  # stored, returned, bound to another name, put in a container
    if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args) or keyword is None and \
            any(isinstance(a, ast.Starred) for a in call.args[:index]):
        return False
    callee = call.func.id if isinstance(call.func, ast.Name) else None
    if callee in _KEEPING_BUILTINS and callee not in functions:
        return True
    target = functions.get(callee) if callee is not None else None
    if target is None:
        return False
    name = _parameter(target, [], (index, keyword))
    return name is not None and not _moves(functions, target, name, depth + 1, seen)
