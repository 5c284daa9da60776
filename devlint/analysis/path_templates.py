"""A path expression as its folder and a file-name template (for devlint.analysis.listed_files).

`folder + "/{m}--{t}--kg.pt".format(m=..., t=...)`, `f"{folder}/ckpt_{e}.pt"`, `os.path.join(folder,
"ckpt_%d.pt" % e)`, `Path(folder) / ("ckpt_" + str(e) + ".pt")`: each names a file of `folder` whose name
has the literal parts `ckpt_`, `.pt` around a field. `split_path` gives the folder as path components
(devlint.analysis.cache_folders' components of origins' `path_key`, with `args.X` too: an attribute of a
name bound once that nothing in the file assigns) and the name as a pattern: a tuple of literal parts and
None for each field. A name (of a path or of a template) is followed to the value of the one binding
its read sees, also in a loop body that binds it again later (`path = root + "/{e}.pt"; path =
path.format(e=e)` in a loop: the first binding runs again before each read of the second).
"""

from __future__ import annotations

import re

import libcst as cst

from devlint.facts import FileFacts
from devlint.syntax import dotted_name, string_value

HOLE = object()  # a field whose text is not known
MAX_DEPTH = 12
_SAME = frozenset({"str", "os.fspath", "pathlib.Path", "Path", "pathlib.PurePath", "pathlib.PosixPath"})
_JOINS = frozenset({"os.path.join", "posixpath.join", "ntpath.join"})
_FIELD = re.compile(r"\{[^{}]*\}")
_PERCENT = re.compile(r"%(\([^)]*\))?[-#0 +]*\d*(\.\d+)?[sdifrxXoeEgGc]")


def pieces(ctx: FileFacts, expr: cst.CSTNode, depth: int = 0) -> list:
    """The expression as text pieces (str) and fields (HOLE, or a node that names a folder or file)."""
    if depth > MAX_DEPTH:
        return [expr]
    text = string_value(expr)
    if text is not None:
        return [text]
    if isinstance(expr, cst.FormattedString):
        found: list = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                found.append(part.value)
            elif part.format_spec is None and part.conversion is None:
                found.extend(pieces(ctx, part.expression, depth + 1))
            else:
                found.append(HOLE)
        return found
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Add):
            return pieces(ctx, expr.left, depth + 1) + pieces(ctx, expr.right, depth + 1)
        if isinstance(expr.operator, cst.Divide):
            return pieces(ctx, expr.left, depth + 1) + ["/"] + pieces(ctx, expr.right, depth + 1)
        if isinstance(expr.operator, cst.Modulo):
            return _fields(pieces(ctx, expr.left, depth + 1), _PERCENT, expr)
    if isinstance(expr, cst.Call) and not any(a.star for a in expr.args):
        func = expr.func
        names = ctx.qualified_names(func) | {dotted_name(func) or ""}
        args = [a.value for a in expr.args if a.keyword is None]
        if isinstance(func, cst.Attribute) and func.attr.value == "format":
            return _fields(pieces(ctx, func.value, depth + 1), _FIELD, expr)
        if names & _SAME and len(expr.args) == 1 and args:
            return pieces(ctx, args[0], depth + 1)
        joined = names & _JOINS and args and len(args) == len(expr.args)
        if joined or isinstance(func, cst.Attribute) and func.attr.value == "joinpath":
            parts = args if joined else [func.value] + args
            found = pieces(ctx, parts[0], depth + 1)
            for part in parts[1:]:
                more = pieces(ctx, part, depth + 1)
                if more and isinstance(more[0], str) and more[0].startswith("/"):
                    return [expr]  # (an absolute part starts the path again)
                found += ["/"] + more
            return found
        if isinstance(func, cst.Attribute) and func.attr.value == "as_posix" and not expr.args:
            return pieces(ctx, func.value, depth + 1)
    if isinstance(expr, cst.Name) and expr.value not in ctx.imported_names:
        binding = seen_binding(ctx, expr)
        value = ctx.assigned_value(binding.node) if binding is not None else None
        if value is not None:
            found = pieces(ctx, value, depth + 1)
            if any(isinstance(p, str) for p in found):
                return found
    return [expr]


def _fields(found: list, pattern: re.Pattern, expr: cst.CSTNode) -> list:
    """The literal pieces with their format fields made holes (`{m}`, `%d`); escaped braces: unknown."""
    if not any(isinstance(piece, str) for piece in found):
        return [expr]  # (not a string template: `i % n`, `obj.format(...)`)
    result: list = []
    for piece in found:
        if not isinstance(piece, str):
            result.append(piece)
            continue
        if pattern is _FIELD and ("{{" in piece or "}}" in piece) or pattern is _PERCENT and "%%" in piece:
            return [expr]
        texts = pattern.split(piece) if pattern is _FIELD else _PERCENT.sub("\0", piece).split("\0")
        for index, text in enumerate(texts):
            if index:
                result.append(HOLE)
            if text:
                result.append(text)
    return result


def split_path(ctx: FileFacts, expr: cst.CSTNode, key_of) -> tuple[list, tuple | None] | None:
    """(the folder's components, the name's pattern or None when it has no literal part) of a path
    expression, None when it has no "/" nor join at all (a whole path: see `whole_path`).
    `key_of(ctx, node)`: the path key of a field (see `field_key`)."""
    segments = _segments(pieces(ctx, expr))
    if len(segments) < 2:
        return None
    from devlint.analysis.cache_folders import _components

    folder: list = []
    for index, segment in enumerate(segments[:-1]):
        if not segment:
            if index == 0:
                folder.append(("literal", "/"))
            continue
        if len(segment) == 1 and isinstance(segment[0], str):
            if segment[0] != ".":
                folder.append(("literal", segment[0]))
        elif len(segment) == 1 and segment[0] is not HOLE and (key := key_of(ctx, segment[0])) is not None:
            folder.extend(_components(key))
        else:
            folder.append(("name", id(segment)))  # (a part we cannot tell)
    return folder, name_pattern(segments[-1])


def name_pattern(segment: list) -> tuple | None:
    """The literal parts of a name, None standing for each field; None when it has no literal part."""
    if not any(isinstance(p, str) for p in segment):
        return None
    parts: list = []
    for piece in segment:
        if isinstance(piece, str):
            if parts and isinstance(parts[-1], str):
                parts[-1] += piece
            else:
                parts.append(piece)
        elif not parts or parts[-1] is not None:
            parts.append(None)
    return tuple(parts)


def _segments(found: list) -> list[list]:
    segments: list[list] = [[]]
    for piece in found:
        if not isinstance(piece, str):
            segments[-1].append(piece)
            continue
        texts = piece.split("/")
        for index, text in enumerate(texts):
            if index:
                segments.append([])
            if text:
                segments[-1].append(text)
    return segments


def field_key(ctx: FileFacts, node: cst.CSTNode):
    """origins' `path_key`, or ("member", key of `x`, "X") for `x.X` where `x` has a path key and nothing in
    the file binds an attribute named `X` (a command-line option `args.out`)."""
    from devlint.analysis.origins import _hashable, path_key
    from devlint.analysis.self_paths import _bound_here

    key = path_key(ctx, node)
    if key is not None or not isinstance(node, cst.Attribute) or not isinstance(node.value, cst.Name):
        return key
    root = path_key(ctx, node.value)
    name = node.attr.value
    if root is None or root[0] != "binding":
        return None
    dynamic = ctx.memoised("_devlint_attributes_set_by_name", _attributes_set_by_name)
    if dynamic is None or name in dynamic or any(a.attr.value == name and _bound_here(ctx, a) for a in ctx.nodes(cst.Attribute)):
        return None
    return ("member", _hashable(root), name)


def _attributes_set_by_name(ctx: FileFacts) -> frozenset | None:
    """The attribute names `setattr`/`delattr` bind in the file when each is a literal or a loop variable
    over literal strings (`for p in ["a", "b"]: setattr(args, p, ...)`); None when one may be any name
    (or the file writes through `obj.__dict__` / `vars(obj)`: devlint.analysis.self_paths)."""
    from devlint.analysis.self_paths import _sets_attributes_by_name

    names: set = set()
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value in ("setattr", "delattr")]
    for call in calls:
        if len(call.args) < 2:
            return None
        found = _literal_strings(ctx, call.args[1].value)
        if found is None:
            return None
        names |= found
    if any(isinstance(c.func, cst.Attribute) and c.func.attr.value in ("__setattr__", "__delattr__")
           for c in ctx.nodes(cst.Call)):
        return None
    if not calls and _sets_attributes_by_name(ctx):
        return None  # (a write through `obj.__dict__` or `vars(obj)`)
    return frozenset(names)


def _literal_strings(ctx: FileFacts, expr: cst.CSTNode, depth: int = 0) -> set | None:
    text = string_value(expr)
    if text is not None:
        return {text}
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)) and depth:
        found: set = set()
        for element in expr.elements:
            more = _literal_strings(ctx, element.value, depth + 1)
            if more is None or isinstance(element, cst.StarredElement):
                return None
            found |= more
        return found
    if isinstance(expr, cst.Name) and depth < 4:
        assignments = ctx.bindings(expr)
        if len(assignments) != 1 or not isinstance(assignments[0].node, cst.Name):
            return None
        node = assignments[0].node
        value = ctx.assigned_value(node)
        loop = ctx.parent(node)
        if value is None and isinstance(loop, (cst.For, cst.CompFor)) and loop.target is node:
            value = loop.iter
        return None if value is None else _literal_strings(ctx, value, depth + 1)
    return None


def seen_binding(ctx: FileFacts, name: cst.Name):
    """The binding a read of `name` sees: its only one, the one devlint.analysis.flow's `last_binding`
    finds, or the last earlier plain assignment that dominates the read when every loop that runs a later
    binding again also runs that one again first."""
    from devlint.analysis.flow import _dominates, last_binding

    assignments = ctx.bindings(name)
    if len(assignments) == 1:
        return assignments[0]
    found = last_binding(ctx, name)
    if found is not None or not assignments:
        return found
    use = ctx.positions.get(name)
    scope = ctx.scope(name)
    if use is None or scope is None or name.value in ("self", "cls") or any(
            item.name.value == name.value for kind in (cst.Global, cst.Nonlocal)
            for statement in ctx.nodes(kind) for item in statement.names):
        return None
    use = (use.start.line, use.start.column)
    earlier, later = [], []
    for assignment in assignments:
        node = assignment.node
        at = ctx.effective_position(node) if isinstance(node, cst.Name) else None
        if assignment.scope is not scope or at is None or ctx.assigned_value(node) is None:
            return None
        (earlier if at <= use else later).append((at, assignment))
    if not earlier:
        return None
    last = max(earlier, key=lambda item: item[0])[1]
    if not _dominates(ctx, last, name):
        return None
    around = {id(a) for a in ctx.ancestors(last.node) if isinstance(a, (cst.For, cst.While))}
    for _, assignment in later:
        loops = [a for a in ctx.ancestors(name) if isinstance(a, (cst.For, cst.While))
                 and any(b is a for b in ctx.ancestors(assignment.node))]
        if any(id(loop) not in around for loop in loops):
            return None
    return last
