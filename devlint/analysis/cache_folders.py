"""A file of a cache folder whose every writer saves CPU data (DL002).

A processing cache saves many files into one folder under names it computes, and loads them back
under names computed the same way: `torch.save(t, os.path.join(folder, f"{k}.pt"))` in a loop, and
`torch.load(os.path.join(folder, f"{k}.pt"))` in another. Neither path has an identity of its own
(`k` is a loop variable), but the pair has one: the folder, with a name pattern. A load is CPU data when

- its path is `os.path.join(D, NAME)` (or `D / NAME`, `D.joinpath(NAME)`) with a folder `D` that has a path
  identity (devlint.analysis.origins' `path_key`: a literal, one binding, an attribute of the instance
  never re-bound, an expression of those) and a `NAME` that is a literal or an f-string (its pattern: the
  literal parts, any text between);
- every call of the file that names a path which may be that file may not write it, or saves CPU data
  there (devlint.analysis.cpu_containers' `deep_cpu`) with `torch.save`; a path may be the file when it is
  inside `D` with a name that can match the pattern (or an unknown name), or is a folder above `D`
  followed by parts we cannot tell (a copy or download into `os.path.join(root, sub)`). A call that only
  reads or builds paths (`os.path.exists`, `os.makedirs`, `os.path.join`, `print`, `glob`, a loader) writes
  nothing; any other call that gets such a path may (a copy, a download, an unknown helper), and so does a
  method of such a path other than those (`p.write_bytes(...)`);
- at least one `torch.save` of CPU data into `D` has a name that can match (when `D` rests on an attribute
  of the instance, in the class of the load: devlint.analysis.self_paths).

A file a user put in the folder under a name of the pattern is the risk every "writer found" rule
takes (devlint.analysis.origins); a folder listed (`os.listdir(D)`) with a name read from the listing has
no pattern and is never cleared. A file of a listing filtered by a pattern: devlint.analysis.listed_files.
"""

from __future__ import annotations

import re

import libcst as cst

from devlint.facts import FileFacts, answer
from devlint.analysis.cpu_containers import deep_cpu
from devlint.analysis.origins import JOINS, LOADERS, SAVERS, _hashable, path_key
from devlint.analysis.self_paths import has_attribute, same_class_writer
from devlint.syntax import dotted_name, find_arg, string_value

# Calls that read or build paths, or show them, and write no file.
_READERS = frozenset({"exists", "isfile", "isdir", "islink", "listdir", "makedirs", "mkdir", "glob", "iglob", "print",
                      "join", "joinpath", "scandir", "walk", "stat", "getsize", "getmtime", "basename", "dirname",
                      "abspath", "realpath", "relpath", "normpath", "expanduser", "split", "splitext", "isabs",
                      "fspath", "str", "Path", "PurePath", "format", "info", "debug", "warning", "warn", "error",
                      "len", "is_file", "is_dir", "iterdir", "rglob", "resolve", "as_posix", "with_suffix",
                      "with_name", "relative_to"})
# A path's own string methods (`args.out.lower()`, `p.endswith(".pt")`): they read the text, not the disk.
_TEXT_METHODS = frozenset({"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "startswith", "endswith",
                           "rsplit", "count", "find", "rfind", "index", "rindex", "encode"})


def in_cpu_cache_folder(ctx: FileFacts, load: cst.Call, path: cst.CSTNode) -> bool:
    if answer("listed_file_loaded")(ctx, load):
        return True  # (a file of a listing of the folder under a pattern: devlint.analysis.listed_files)
    parts = _parts(ctx, path)
    if parts is None or len(parts) < 2:
        return False
    keys = [path_key(ctx, p) for p in parts[:-1]]
    pattern = _pattern(ctx, parts[-1])
    if None in keys or pattern is None:
        return False
    folder = [c for k in keys for c in _components(k)]
    cpu_writers = []
    for call in ctx.nodes(cst.Call):
        if call is load:
            continue
        for expr, as_receiver in _paths_of(call):
            relation = _relation(ctx, expr, folder, pattern)
            if relation is None:
                continue
            verdict = _writes(ctx, call, expr, as_receiver)
            if verdict is False:
                return False
            if verdict is True and relation == "file":
                cpu_writers.append(call)
    if not cpu_writers:
        return False
    return not any(has_attribute(k) for k in folder) or same_class_writer(ctx, path, cpu_writers)


def _paths_of(call: cst.Call):
    for arg in call.args:
        yield arg.value, False
    if isinstance(call.func, cst.Attribute):
        yield call.func.value, True


def _relation(ctx: FileFacts, expr: cst.CSTNode, folder: list, pattern) -> str | None:
    """"file": a path in the folder whose name can match; "maybe": a path that may be in it (the folder
    itself, an unknown name, a folder above it, or one that leaves its parts at one that may be the same:
    not two different literals); None: not the loaded file (another root, another literal part, a name
    that cannot match)."""
    parts = _parts(ctx, expr)
    if parts is None:
        return None
    components: list = []
    for part in parts[:-1]:
        key = path_key(ctx, part)
        if key is None:
            break
        components.extend(_components(key))
    else:
        last = path_key(ctx, parts[-1])
        if last is not None and (len(parts) == 1 or last[0] != "literal"):
            components.extend(_components(last))
        else:
            components.append(("name", parts[-1]))
    if not components or components[0][0] == "name":
        return None  # a path we cannot tell (as for a whole path: no writer found)
    for index, key in enumerate(components):
        if index == len(folder):
            last = index == len(components) - 1
            name = (_pattern(ctx, key[1]) if key[0] == "name" else (key[1],) if key[0] == "literal" else None) if (
                last) else None
            return "maybe" if name is None else "file" if _may_match(name, pattern) else None
        if key[0] != "name" and _hashable(key) == _hashable(folder[index]):
            continue
        if index == 0 or key[0] == "literal" and folder[index][0] == "literal":
            return None  # another root (as for a whole path), or another literal part
        return "maybe"
    return "maybe"  # the folder itself, a folder above it (a copy, a download, an extraction may fill it)


def _components(key) -> list:
    """A path key as its folder steps: joins taken apart, literals split at "/"."""
    if key[0] == "join":
        return _components(key[1]) + _components(key[2])
    if key[0] == "literal":
        root = [("literal", "/")] if key[1].startswith("/") else []  # (an absolute path is not a relative one)
        return root + [("literal", piece) for piece in key[1].split("/") if piece not in ("", ".")] or [key]
    return [key]


def _writes(ctx: FileFacts, call: cst.Call, expr: cst.CSTNode, as_receiver: bool) -> bool | None:
    """True: saves CPU data at the path; False: may write something else there; None: writes nothing."""
    names = ctx.qualified_names(call.func)
    if names & LOADERS:
        return None
    last = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    if isinstance(call.func, cst.Attribute):
        last = call.func.attr.value
    if not as_receiver and names & SAVERS:
        target = find_arg(call, "f", 1)
        if target is None or target.value is not expr:
            return False
        obj = find_arg(call, "obj", 0)
        return obj is not None and deep_cpu(ctx, obj.value)
    if last in _READERS or as_receiver and isinstance(call.func, cst.Attribute) and last in _TEXT_METHODS:
        return None
    if last == "open" and not as_receiver:
        mode = find_arg(call, "mode", 1)
        text = string_value(mode.value) if mode is not None else "r"
        return None if text is not None and not set(text) & set("wax+") else False
    return False


def _parts(ctx: FileFacts, expr: cst.CSTNode) -> list | None:
    """The components of a path built by `os.path.join`, `/` or `.joinpath` (itself as one part otherwise)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
        left = _parts(ctx, expr.left)
        return None if left is None else left + [expr.right]
    if isinstance(expr, cst.Call) and not any(a.star or a.keyword for a in expr.args):
        names = ctx.qualified_names(expr.func)
        if names & JOINS and expr.args:
            first = _parts(ctx, expr.args[0].value)
            return None if first is None else first + [a.value for a in expr.args[1:]]
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "joinpath":
            first = _parts(ctx, expr.func.value)
            return None if first is None else first + [a.value for a in expr.args]
    return [expr]


def _pattern(ctx: FileFacts, expr: cst.CSTNode) -> tuple | None:
    """The literal parts of a file name, None standing for any text: `f"{k}.pt"` -> (None, ".pt")."""
    text = string_value(expr)
    if text is not None:
        return (text,)
    if isinstance(expr, cst.FormattedString):
        parts: list = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value)
            elif not parts or parts[-1] is not None:
                parts.append(None)
        return tuple(parts)
    return None


def _may_match(one: tuple, other: tuple) -> bool:
    """Can a name of one pattern also be a name of the other? (Two patterns with holes: compared by their
    fixed start and end.)"""
    if None not in one:
        return re.fullmatch(_regex(other), one[0]) is not None
    if None not in other:
        return re.fullmatch(_regex(one), other[0]) is not None
    start = lambda p: p[0] if p[0] is not None else ""  # noqa: E731
    end = lambda p: p[-1] if p[-1] is not None else ""  # noqa: E731
    return (start(one).startswith(start(other)) or start(other).startswith(start(one))) and (
        end(one).endswith(end(other)) or end(other).endswith(end(one)))


def _regex(pattern: tuple) -> str:
    return "".join(".*" if p is None else re.escape(p) for p in pattern)
