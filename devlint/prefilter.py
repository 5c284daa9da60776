"""A cheap exact pre-pass: which rules could flag anything in a file, read with the standard `ast`.

The standard-library parser is many times faster than building a LibCST tree and resolving its
metadata, and most files of a project contain nothing any rule could flag. Each rule states, from
this summary, a condition that every file it could flag meets (a superset: never a false "no").
A file `ast` cannot read (newer syntax, broken code) goes to the full parse, which decides.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

from devlint.complexity import DepthCounter


@dataclass
class Summary:
    attribute_calls: set[str] = field(default_factory=set)  # `attr` of every `x.attr(...)`
    name_calls: set[str] = field(default_factory=set)  # `f` of every `f(...)`
    call_roots: dict[str, set[str]] = field(default_factory=dict)  # attr -> root names of `root.....attr(...)`
    statement_calls: set[str] = field(default_factory=set)  # `attr` of `x.attr(...)` statements (and [... for ...])
    torch_names: set[str] = field(default_factory=set)  # names bound by importing torch or from torch
    # what those imports name, last component (`autocast` for `from torch.cuda.amp import autocast as ac`):
    # a rule looking for an aliased import asks for these, not for every call of a name from torch
    torch_imports: set[str] = field(default_factory=set)
    star_import: bool = False
    attributes: set[str] = field(default_factory=set)  # `attr` of every `x.attr` (called or not)
    # string constants, leading text of f-strings and keyword names that mention "cuda" (any case)
    cuda_strings: set[str] = field(default_factory=set)
    # strings starting with "cuda" given where a device could be: directly as a call argument or as
    # the value of an assignment (not in comparisons, containers or dictionary keys)
    device_strings: set[str] = field(default_factory=set)
    cuda_members: set[str] = field(default_factory=set)  # `attr` of `....cuda.attr` and `cuda.attr`
    # `attr`s of the calls in `v = v.a(...).b(...)` statements directly in the body of a `for v in ...` loop
    loop_rebinding_calls: set[str] = field(default_factory=set)
    depth: int = 0  # how deep LibCST's tree of the file will be (see complexity.py)


class TooComplex(Exception):
    """The interpreter itself cannot parse the file: too deeply nested (LibCST's parser would crash)."""


def parse_quietly(text: str | bytes) -> ast.Module:
    """`ast.parse` without its warnings: the user's invalid escape sequences are not devlint's to
    report (a DeprecationWarning on Python 3.11, a SyntaxWarning printed on every run from 3.12)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def parsed_or_none(source: str | bytes) -> ast.Module | None:
    """`parse_quietly`, or None where the interpreter cannot parse the source (a syntax error, a null
    byte, nesting too deep, too large): the project index's readers of other files."""
    try:
        return parse_quietly(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _device_string(node: ast.expr, summary: Summary) -> None:
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("cuda"):
        summary.device_strings.add(node.value)


# Leaves that say how a name is used or which operator applies (`Load`, `Add`, `Eq`): nothing the
# summary records, a third of all nodes, so never yielded (only the level they add is counted).
_LEAVES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
# Nodes that may add other than one LibCST level (DepthCounter.weight): the rest add one.
_WEIGHED = frozenset({ast.BoolOp, ast.JoinedStr, ast.Constant})


def _walk(tree: ast.Module, text: str, summary: Summary):
    """Every node but the leaves (depth first), recording in `summary.depth` the deepest LibCST level.

    (Reads the fields itself: through `ast.iter_child_nodes`, two generators a node, with every leaf
    yielded, summarising torch's nn, optim and utils took 1.24 s of CPU, a fifth of a cold run, of
    which 0.55 s is the parse; now 0.9 s, with the same summaries of 16,600 files.)"""
    weight = DepthCounter(text).weight
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    pop, push, AST = stack.pop, stack.append, ast.AST
    while stack:
        node, depth = pop()
        yield node
        kind = type(node)
        depth += weight(node, depth) if kind in _WEIGHED else 1
        if depth > deepest:
            deepest = depth
        strings_apart = kind is ast.JoinedStr  # an f-string's literal parts are not strings to LibCST
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, AST):
                        if isinstance(item, _LEAVES):
                            deepest = max(deepest, depth + 1)
                        elif not (strings_apart and type(item) is ast.Constant):
                            push((item, depth))
            elif isinstance(value, AST):
                if isinstance(value, _LEAVES):
                    deepest = max(deepest, depth + 1)
                elif not (strings_apart and type(value) is ast.Constant):
                    push((value, depth))
    summary.depth = deepest


def _loop_rebindings(loop: ast.For | ast.AsyncFor, summary: Summary) -> None:
    targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    for statement in loop.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id in targets):
            continue
        calls, node = [], statement.value
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            calls.append(node.func.attr)
            node = node.func.value
        if calls and isinstance(node, ast.Name) and node.id == statement.targets[0].id:
            summary.loop_rebinding_calls.update(calls)


@lru_cache(maxsize=2)  # the engine asks for the file's summary again before analysing it
def summarise(text: str) -> Summary | None:
    """None when the standard parser cannot read the file (newer syntax, or broken). Shared: do not
    modify the result."""
    try:
        tree = parse_quietly(text)
    except (RecursionError, MemoryError):
        raise TooComplex("too deeply nested or complex for the Python parser") from None
    except (SyntaxError, ValueError, OverflowError):
        return None
    summary = Summary()
    # (by exact type: the parser makes no subclasses, and a type test is cheaper than isinstance)
    for node in _walk(tree, text, summary):
        kind = type(node)
        if kind is ast.Call:
            func = node.func
            if isinstance(func, ast.Attribute):
                summary.attribute_calls.add(func.attr)
                root = func.value
                while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
                    root = root.func if isinstance(root, ast.Call) else root.value
                if isinstance(root, ast.Name):
                    summary.call_roots.setdefault(func.attr, set()).add(root.id)
            elif isinstance(func, ast.Name):
                summary.name_calls.add(func.id)
            for keyword in node.keywords:
                if keyword.arg is not None and "cuda" in keyword.arg.lower():
                    summary.cuda_strings.add(keyword.arg)
                _device_string(keyword.value, summary)
            for arg in node.args:
                _device_string(arg, summary)
        elif kind is ast.Attribute:
            summary.attributes.add(node.attr)
            owner = node.value
            if (owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)) == "cuda":
                summary.cuda_members.add(node.attr)
        elif kind is ast.Assign or kind is ast.AnnAssign:
            if node.value is not None:
                _device_string(node.value, summary)
        elif kind is ast.Constant:
            if isinstance(node.value, str) and "cuda" in node.value.lower():
                summary.cuda_strings.add(node.value)
        elif kind is ast.For or kind is ast.AsyncFor:
            _loop_rebindings(node, summary)
        elif kind is ast.Expr:
            value = node.value.elt if isinstance(node.value, ast.ListComp) else node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                summary.statement_calls.add(value.func.attr)
        elif kind is ast.Import:
            for alias in node.names:
                if alias.name.split(".")[0] == "torch":
                    summary.torch_names.add(alias.asname or alias.name.split(".")[0])
                    summary.torch_imports.add(alias.name.rsplit(".", 1)[-1])
        elif kind is ast.ImportFrom:
            if any(alias.name == "*" for alias in node.names):
                summary.star_import = True
            if node.level == 0 and (node.module or "").split(".")[0] == "torch":
                summary.torch_names.update(alias.asname or alias.name for alias in node.names)
                summary.torch_imports.update(alias.name for alias in node.names)
    return summary
