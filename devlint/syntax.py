"""Small syntax helpers shared by the rules: dotted names, argument lookup, name tokens."""

from __future__ import annotations

import dataclasses
import re

import libcst as cst
from libcst.helpers import get_full_name_for_node


def dotted_name(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a Name/Attribute chain (a call's func included), else None."""
    try:
        return get_full_name_for_node(node)
    except Exception:  # libcst raises on node kinds it does not name
        return None


def find_arg(call: cst.Call, keyword: str, position: int | None) -> cst.Arg | None:
    """The argument given for a parameter, by keyword or by (0-based) position."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) > position and not any(a.star == "*" for a in call.args[: call.args.index(positional[position])]):
            return positional[position]
    return None


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def has_double_star_args(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def is_none(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def string_value(node: cst.CSTNode | None) -> str | None:
    """The value of a plain (non f-) string literal, else None."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(identifier: str) -> list[str]:
    """`use_cuda` -> [use, cuda]; `noCUDA` -> [no, cuda]; `TEST_CUDA` -> [test, cuda]."""
    words: list[str] = []
    for part in identifier.split("_"):
        words.extend(w.lower() for w in _CAMEL.split(part) if w)
    return words


def last_component(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def module_torch_alias(module: cst.Module) -> str | None:
    """The name a top-level `import torch` / `import torch as th` binds, or None."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    name = dotted_name(alias.name) or ""
                    if alias.asname is None and name.split(".")[0] == "torch":
                        return "torch"
                    if alias.asname is not None and name == "torch":
                        return dotted_name(alias.asname.name)
    return None


# Tokens and whitespace carry no meaning for the rules; not walking them halves the work.
_SKIPPED = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comma,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.ImportStar,
    cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp,
)
_FIELDS: dict[type, tuple[str, ...]] = {}
# what a field's value is, by its type: a meaningful child node (_NODE), a sequence of values (_MANY) or
# anything else (0). Asked once per type: `isinstance` against LibCST's node classes (abstract base
# classes) runs ABCMeta's Python-level check whenever it is false, about ten million times in a
# run over the torch sources, a tenth of its whole time.
_NODE, _MANY = 1, 2
_KINDS: dict[type, int] = {}


def _kind(of: type) -> int:
    if issubclass(of, cst.CSTNode):
        found = 0 if issubclass(of, _SKIPPED) else _NODE
    else:
        found = _MANY if issubclass(of, (list, tuple)) else 0
    _KINDS[of] = found
    return found


def walk(root: cst.CSTNode):
    """(node, parent) for every meaningful node under `root`, without LibCST's visitor machinery.

    LibCST's visitors rebuild every node they pass through; reading the dataclass fields does not.
    Order follows field order, which is not always source order: compare positions, not order.
    """
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(root, None)]
    push, pop = stack.append, stack.pop
    fields_of = _FIELDS
    kinds = _KINDS
    while stack:
        node, parent = pop()
        yield node, parent
        names = fields_of.get(type(node))
        if names is None:
            # (last field first: pushed in reverse, the children come off the stack in field order)
            names = fields_of[type(node)] = tuple(reversed([f.name for f in dataclasses.fields(node)]))
        for name in names:
            value = getattr(node, name)
            kind = kinds.get(type(value))
            if kind is None:
                kind = _kind(type(value))
            if kind == _NODE:
                push((value, node))
            elif kind == _MANY:
                for item in reversed(value):
                    item_kind = kinds.get(type(item))
                    if item_kind is None:
                        item_kind = _kind(type(item))
                    if item_kind == _NODE:
                        push((item, node))


def descendants(root: cst.CSTNode):
    """Every meaningful node under `root`, `root` included (`walk` without the parents)."""
    return (node for node, _ in walk(root))


def calls_in(root: cst.CSTNode):
    """Every call under `root` (`root` included)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            yield node
        stack.extend(node.children)


def with_keyword(call: cst.Call, name: str, value: str) -> cst.Call:
    """`call` with the argument `name=value` (source text) added last, keeping its layout: on its own line
    in a call laid out one argument per line, taking over a trailing comma."""
    new_arg = cst.Arg(cst.parse_expression(value), keyword=cst.Name(name),
                      equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_arg])
    last = args[-1]
    own_line = "\n" in cst.Module([]).code_for_node(last.whitespace_after_arg)
    if not isinstance(last.comma, cst.Comma) and own_line:
        # `load(\n    path\n)`: the new argument goes on its own line, before the closing paren
        separator = cst.Comma(whitespace_after=call.whitespace_before_args)
        args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
        new_arg = new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
    elif isinstance(last.comma, cst.Comma):
        # A trailing comma: the new argument takes it (and the newline before `)`), the old
        # last one takes the separator used between earlier arguments.
        previous = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else None
        separator = previous or cst.Comma(whitespace_after=call.whitespace_before_args)
        args[-1] = last.with_changes(comma=separator)
        new_arg = new_arg.with_changes(comma=last.comma)
    return call.with_changes(args=[*args, new_arg])
