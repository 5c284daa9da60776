"""A file found by listing a folder under the program's own naming scheme (DL002).

A program that keeps a result file between runs names it by a scheme and finds it again by listing the
folder: `torch.save(triples, folder + "/{m}--{t}--triples.pt".format(m=..., t=...))`, later
`found = list(Path(folder).glob("*--*--triples.pt"))` and `torch.load(found[0])`. The load is CPU data when

- its path is a file of a listing of a folder `F` with a name pattern `P`: `glob.glob(os.path.join(F, P))`
  (or `f"{F}/{P}"`, `F + "/" + P`), `glob.iglob`, `Path(F).glob(P)` (not `rglob`, `**`, `[...]`, nor a pattern
  in the folder part), or `os.path.join(F, name)` with `name` from `os.listdir(F)` kept by a filter that gives
  a pattern (`f.endswith(".pt") and f.startswith("ckpt_")`, `"--kg" in f`, `fnmatch`; no filter: no pattern), reached as `xs[i]`, `max(xs, key=...)`, `next(iter(xs))`, a loop or comprehension
  variable over `xs`, through `list`/`sorted`/`tuple`/`reversed`, a filtering comprehension, and names bound
  to those (devlint.analysis.path_templates' `seen_binding`);
- `F` has a path identity (origins' `path_key`, or `args.X`: devlint.analysis.path_templates' `field_key`;
  `args` of two functions is one object where the file's calls pass it on: devlint.analysis.param_aliases);
- a call of the file saves there under a name template that takes in every name of `P` (the template with
  any text for each field matches them: `"{m}--{t}--triples.pt".format(...)`, `f"{m}--{t}--triples.pt"`,
  `"%s--%s--triples.pt" % (m, t)`, `m + "--" + t + "--triples.pt"`; or `f"ckpt_{e}.pt"` for `ckpt_1*.pt`),
  and every call that may write a matching file there saves CPU data with `torch.save`
  (devlint.analysis.cpu_containers' `deep_cpu`): a save under a name of `P` (a literal `model.pt` for
  `*.pt`), a save whose template may give a name of `P` (`f"ckpt_{e}.pt"` for `ckpt_1*.pt`), a call that
  gets a path of `F` with a name we cannot tell, `F` itself or a folder above it (a copy, a download, an
  archive extracted there). A deletion (`os.remove`, `unlink`, `shutil.rmtree`) puts no file there, and a
  call that only reads or builds paths writes nothing (as in devlint.analysis.cache_folders).

When `P` is exactly the template of one such save (each `*` of `P` one field of the template), a save
whose name has literal text of its own and could give a name of `P` only through the text of its fields
(`f"{dataset}.pt"` for `*--*--triples.pt`) is taken as another scheme: its fields are names, numbers,
times, not the text of another template. A download or an archive unpacked into the folder
(`urlretrieve`, `extractall`, `unpack_archive`, a `*download*` call) is not taken to bring a file of that
scheme either: a file named by the program's own scheme holds what the program saves under it, on any
machine. A copy, a move, a save of names we cannot tell or a call we cannot see still count: they may put
this program's other files under a name of `P`. A pattern wider than every template saved there (`*.pt` for
`ckpt_{e}.pt`) keeps the load flagged: the folder may hold other files. A value loaded from such a file
and saved there again holds what the file held (by induction over the runs that wrote it: assumed CPU
data while the file is judged, devlint.analysis.listed_files' `settle`). A file a user put in the
folder under a name of the scheme is the risk every "writer found" rule takes (devlint.analysis.origins),
and, as there, paths of other roots (a parameter of another function) are not this folder.
"""

from __future__ import annotations

import re

import libcst as cst

from devlint.analysis.param_aliases import same_member
from devlint.analysis.path_templates import HOLE, field_key, pieces, seen_binding, split_path
from devlint.facts import FileFacts, answers
from devlint.syntax import dotted_name, string_value

MAX_DEPTH = 12
_GLOBS = frozenset({"glob.glob", "glob.iglob"})
_KEEPING = frozenset({"list", "sorted", "tuple", "reversed", "iter"})
_PICKING = frozenset({"max", "min", "next"})
_FETCHES = frozenset({"urlretrieve", "extractall", "unpack_archive", "extract_archive"})
_DELETIONS = frozenset({"remove", "unlink", "rmtree", "rmdir", "removedirs"})


def listed_file_on_cpu(ctx: FileFacts, load: cst.Call, path: cst.CSTNode) -> bool:
    memo = ctx.__dict__.setdefault("_devlint_listed_files", {})
    if load not in memo:
        # A save of what this load read, judged while it is, saves what the file held: CPU data if every
        # other value saved there is (by induction over the runs that wrote the file).
        settle(ctx, memo, load, lambda: _judge(ctx, load, path))
    return memo[load]


def settle(ctx: FileFacts, memo: dict, key, compute) -> None:
    """memo[key] = compute(), assumed True while it runs (a cycle through what a file held and what
    is saved in it again). Answers found while an assumption held are forgotten when it fails."""
    tentative = ctx.__dict__.setdefault("_devlint_tentative", [])
    depth = ctx.__dict__.get("_devlint_assuming", 0)
    start = len(tentative)
    memo[key] = True
    ctx.__dict__["_devlint_assuming"] = depth + 1
    try:
        found = compute()
    finally:
        ctx.__dict__["_devlint_assuming"] = depth
    if not found:
        for other_memo, other in tentative[start:]:
            other_memo.pop(other, None)
        del tentative[start:]
    memo[key] = found
    if depth:
        tentative.append((memo, key))
    else:
        tentative.clear()


def loaded_host(ctx: FileFacts, call: cst.Call) -> bool:
    """Is `torch.load(f)` a load of such a file (so its value holds what the scheme's writers saved)?"""
    from devlint.syntax import find_arg

    path = find_arg(call, "f", 0)
    return path is not None and listed_file_on_cpu(ctx, call, path.value)


def _judge(ctx: FileFacts, load: cst.Call, path: cst.CSTNode) -> bool:
    listing = _element(ctx, path, 0)
    if listing is None:
        return False
    folder, pattern = listing
    if any(c[0] == "name" for c in folder) or not folder:
        return False
    found = _writers(ctx, load, folder, pattern)
    if found is None:
        return False
    files, others, scheme, covered = found
    writers = files + ([] if scheme else others)
    if not covered or not writers or not all(v for _, v in writers):
        return False  # (no save whose names take in every name of P: the folder may hold other files)
    from devlint.analysis.self_paths import has_attribute, same_class_writer

    return not any(has_attribute(k) for k in folder) or same_class_writer(ctx, path, [c for c, _ in writers])


# -- the listing a path comes from ------------------------------------------------------------------------
def _bound_from(ctx: FileFacts, name: cst.Name):
    """What the binding a read of `name` certainly sees binds it from: ("value", the assigned value) or
    ("loop", the iterable of the loop whose variable it is); None for anything else."""
    binding = seen_binding(ctx, name)
    if binding is None or not isinstance(binding.node, cst.Name):
        return None
    value = ctx.assigned_value(binding.node)
    if value is not None:
        return "value", value
    loop = ctx.parent(binding.node)
    if isinstance(loop, (cst.For, cst.CompFor)) and loop.target is binding.node:
        return "loop", loop.iter
    return None


def _element(ctx: FileFacts, expr: cst.CSTNode, depth: int):
    """(folder components, name pattern) of the listing whose file `expr` is, or None."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, cst.Name):
        bound = _bound_from(ctx, expr)
        if bound is None:
            return None
        how, source = bound
        return _element(ctx, source, depth + 1) if how == "value" else _collection(ctx, source, depth + 1)
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        return _collection(ctx, expr.value, depth + 1)
    joined = _listed_name(ctx, expr, depth)
    if joined is not None:
        return joined
    if isinstance(expr, cst.Call) and expr.args and not any(a.star for a in expr.args):
        name = dotted_name(expr.func) or ""
        first = expr.args[0]
        if first.keyword is not None:
            return None
        if name in _PICKING and name not in ctx.imported_names and not ctx.bindings(expr.func):
            return _collection(ctx, first.value, depth + 1)
        if ctx.qualified_names(expr.func) & {"str", "pathlib.Path", "Path", "os.fspath"} and len(expr.args) == 1:
            return _element(ctx, first.value, depth + 1)
    return None


def _collection(ctx: FileFacts, expr: cst.CSTNode, depth: int):
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, cst.Name):
        binding = seen_binding(ctx, expr)
        value = ctx.assigned_value(binding.node) if binding is not None else None
        return None if value is None else _collection(ctx, value, depth + 1)
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
        return _collection(ctx, expr.value, depth + 1)
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)) and isinstance(expr.elt, cst.Name) and isinstance(
            expr.for_in.target, cst.Name) and expr.for_in.target.value == expr.elt.value and expr.for_in.inner_for_in is None:
        return _collection(ctx, expr.for_in.iter, depth + 1)  # (a filter keeps files of the listing)
    if not isinstance(expr, cst.Call) or not expr.args or any(a.star for a in expr.args):
        return None
    func = expr.func
    first = expr.args[0]
    if dotted_name(func) in _KEEPING and not ctx.bindings(func) and first.keyword is None:
        return _collection(ctx, first.value, depth + 1)
    if ctx.qualified_names(func) & _GLOBS and first.keyword is None:
        if any(a.keyword is not None and a.keyword.value in ("root_dir", "dir_fd") for a in expr.args):
            return None
        split = split_path(ctx, first.value, field_key)
        return None if split is None else _glob_listing(split[0], _glob_segment(ctx, first.value))
    if isinstance(func, cst.Attribute) and func.attr.value == "glob" and len(expr.args) == 1 and first.keyword is None:
        from devlint.analysis.cache_folders import _components

        text = pieces(ctx, first.value)
        if any(isinstance(p, str) and "/" in p for p in text):
            return None
        folder_text = pieces(ctx, func.value)
        key = field_key(ctx, folder_text[0]) if len(folder_text) == 1 and folder_text[0] is not HOLE and not isinstance(
            folder_text[0], str) else None
        if key is None:
            inner = split_path(ctx, func.value, field_key)
            if inner is None or inner[1] is None or None in inner[1] or len(inner[1]) != 1:
                return None
            folder = inner[0] + [("literal", inner[1][0])]
        else:
            folder = _components(key)
        return _glob_listing(folder, text)
    return None


def _listed_name(ctx: FileFacts, expr: cst.CSTNode, depth: int):
    """`os.path.join(F, name)` (or `F / name`, `f"{F}/{name}"`) with `name` a name of a filtered listing of the
    same folder: `[f for f in os.listdir(F) if f.endswith(".pt")]`, `fnmatch.filter(os.listdir(F), P)`."""
    split = split_path(ctx, expr, field_key)
    text = pieces(ctx, expr)
    if split is None or len(text) < 2 or isinstance(text[-1], str) or text[-1] is HOLE or not (
            isinstance(text[-2], str) and text[-2].endswith("/")):
        return None
    name = text[-1]
    listing = _names(ctx, name, depth + 1) if isinstance(name, (cst.Name, cst.Subscript, cst.Call)) else None
    if listing is None or listing[1] is None or listing[0] != split[0]:
        return None  # (a name of an unfiltered listing has no pattern: any file of the folder)
    return listing


def _names(ctx: FileFacts, expr: cst.CSTNode, depth: int, element: bool = True):
    """(folder components, pattern) of the names of `os.listdir(F)` filtered by a pattern that `expr` is one
    of (`element`) or a list of."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, cst.Name):
        bound = _bound_from(ctx, expr)
        if bound is None or bound[0] == "loop" and not element:
            return None
        how, source = bound
        return _names(ctx, source, depth + 1, element and how == "value")
    if element:
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            return _names(ctx, expr.value, depth + 1, False)
        if isinstance(expr, cst.Call) and len(expr.args) >= 1 and dotted_name(expr.func) in _PICKING and not ctx.bindings(
                expr.func) and expr.args[0].keyword is None:
            return _names(ctx, expr.args[0].value, depth + 1, False)
        return None
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)) and isinstance(expr.elt, cst.Name) and isinstance(
            expr.for_in.target, cst.Name) and expr.for_in.target.value == expr.elt.value and expr.for_in.inner_for_in is None:
        inner = _names(ctx, expr.for_in.iter, depth + 1, False)
        if inner is None or len(expr.for_in.ifs) != 1:
            return None
        pattern = _filter_pattern(ctx, expr.for_in.ifs[0].test, expr.elt.value)
        return None if pattern is None or inner[1] is not None else (inner[0], pattern)
    if not isinstance(expr, cst.Call) or not expr.args or any(a.star or a.keyword for a in expr.args):
        return None
    names = ctx.qualified_names(expr.func)
    if dotted_name(expr.func) in _KEEPING and not ctx.bindings(expr.func):
        return _names(ctx, expr.args[0].value, depth + 1, False)
    if names & {"os.listdir"} and len(expr.args) == 1:
        folder_text = pieces(ctx, expr.args[0].value)
        if len(folder_text) == 1 and not isinstance(folder_text[0], str) and folder_text[0] is not HOLE:
            from devlint.analysis.cache_folders import _components

            key = field_key(ctx, folder_text[0])
            return None if key is None else (_components(key), None)
        split = split_path(ctx, expr.args[0].value, field_key)
        if split is None or split[1] is None or None in split[1] or len(split[1]) != 1:
            return None
        return (split[0] + [("literal", split[1][0])], None)
    if names & {"fnmatch.filter"} and len(expr.args) == 2:
        inner = _names(ctx, expr.args[0].value, depth + 1, False)
        text = string_value(expr.args[1].value)
        listing = None if inner is None or inner[1] is not None or text is None else _glob_listing(inner[0], [text])
        return listing
    return None


def _filter_pattern(ctx: FileFacts, test: cst.CSTNode, name: str) -> tuple | None:
    """The name pattern a filter keeps: `f.endswith(".pt")`, `f.startswith("ckpt_")`, `"--kg" in f`,
    `fnmatch.fnmatch(f, "ckpt_*.pt")`, and `and` of those on the same name."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        left, right = _filter_pattern(ctx, test.left, name), _filter_pattern(ctx, test.right, name)
        if left is None or right is None:
            return left or right  # (one side narrows it: the other may only narrow it further)
        if left[0] is not None and right[0] is None and len(right) == 2 and right[1] is not None:
            return (left[0], None, right[1]) if len(left) == 2 and left[1] is None else None
        if right[0] is not None and left[0] is None and len(left) == 2 and left[1] is not None:
            return (right[0], None, left[1]) if len(right) == 2 and right[1] is None else None
        return left
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and isinstance(test.func.value, cst.Name) and (
            test.func.value.value == name and len(test.args) == 1):
        text = string_value(test.args[0].value)
        if text is None:
            return None
        return {"endswith": (None, text), "startswith": (text, None)}.get(test.func.attr.value)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
            test.comparisons[0].operator, cst.In) and isinstance(test.comparisons[0].comparator, cst.Name) and (
            test.comparisons[0].comparator.value == name):
        text = string_value(test.left)
        return None if text is None else (None, text, None)
    if isinstance(test, cst.Call) and ctx.qualified_names(test.func) & {"fnmatch.fnmatch"} and len(test.args) == 2 and (
            isinstance(test.args[0].value, cst.Name) and test.args[0].value.value == name):
        text = string_value(test.args[1].value)
        found = None if text is None else _glob_listing([("literal", ".")], [text])
        return None if found is None else found[1]
    return None


def _glob_segment(ctx: FileFacts, expr: cst.CSTNode) -> list:
    text = pieces(ctx, expr)
    last: list = []
    for piece in text:
        if isinstance(piece, str) and "/" in piece:
            last = [piece.rsplit("/", 1)[1]] if piece.rsplit("/", 1)[1] else []
        else:
            last.append(piece)
    return last


def _glob_listing(folder: list, name: list):
    """The listing's folder and the pattern of its names: `*` and `?` (and fields) match any text."""
    if any(c[0] == "literal" and any(ch in c[1] for ch in "*?[") for c in folder):
        return None
    parts: list = []
    for piece in name:
        if isinstance(piece, str):
            if "[" in piece or "**" in piece:
                return None
            for index, text in enumerate(re.split(r"[*?]", piece)):
                if index and (not parts or parts[-1] is not None):
                    parts.append(None)
                if text:
                    if parts and isinstance(parts[-1], str):
                        parts[-1] += text
                    else:
                        parts.append(text)
        elif not parts or parts[-1] is not None:
            parts.append(None)
    return (folder, tuple(parts)) if any(isinstance(p, str) for p in parts) else None


# -- the calls that may put a file of the pattern in the folder --------------------------------------------
def _writers(ctx: FileFacts, load: cst.Call, folder: list, pattern: tuple):
    """(saves of names of P, saves that may give one, is P exactly one save's template), each save with
    its verdict (CPU data or not); None when another call may put a file of P there."""
    from devlint.analysis.cache_folders import _paths_of, _writes

    files, others, scheme, covered, fetched = [], [], False, False, False
    for call in ctx.nodes(cst.Call):
        if call is load or _deletion(call):
            continue
        for expr, as_receiver in _paths_of(call):
            relation = _relation(ctx, expr, folder, pattern)
            if relation is None:
                continue
            verdict = _writes(ctx, call, expr, as_receiver)
            if verdict is None:
                continue
            if relation == "maybe":
                if not verdict and not _fetches(call):
                    return None
                fetched = fetched or not verdict
                continue
            kind, covers = relation
            (files if kind in ("file", "scheme") else others).append((call, verdict))
            scheme = scheme or kind == "scheme"
            covered = covered or covers
    if fetched and not scheme:
        return None  # (a download or an archive may bring a file of P; of P's own scheme, see the docstring)
    return files, others, scheme, covered


def _fetches(call: cst.Call) -> bool:
    """Does the call bring files from elsewhere (a download, an archive unpacked)?"""
    last = _called(call)
    return last in _FETCHES or "download" in last.lower()


def _deletion(call: cst.Call) -> bool:
    return _called(call) in _DELETIONS


def _called(call: cst.Call) -> str:
    """The last part of the callee's name (`shutil.rmtree` -> `rmtree`)."""
    last = call.func.attr.value if isinstance(call.func, cst.Attribute) else (dotted_name(call.func) or "")
    return last.rsplit(".", 1)[-1]


def _relation(ctx: FileFacts, expr: cst.CSTNode, folder: list, pattern: tuple):
    """(kind, whether its names take in every name of P) for a save under a template: kind "scheme" (a name
    of exactly P's template), "file" (every name matches P), "other" (some may); "maybe" for a path that may
    be a file of P there, the folder or one above it; None for none of those."""
    from devlint.analysis.cache_folders import _components, _may_match
    from devlint.analysis.origins import _hashable

    above = _parent_of(ctx, expr)
    if above is not None:
        return None if _relation(ctx, above, folder, pattern) is None else "maybe"
    split = split_path(ctx, expr, field_key)
    if split is None:
        text = pieces(ctx, expr)
        if len(text) != 1 or text[0] is HOLE or isinstance(text[0], str):
            return None  # (a bare name or literal: a file of the working folder, or one we cannot tell)
        key = field_key(ctx, text[0])
        if key is None:
            return None
        components, name = _components(key), "whole"
    else:
        components, name = split
    if not components or components[0][0] == "name":
        return None  # (a path we cannot tell: as for a whole path, no writer found)
    for index, part in enumerate(folder):
        if index == len(components):
            return "maybe"  # the folder itself or one above it (a copy, a download, an extraction may fill it)
        mine = components[index]
        if mine[0] != "name" and (_hashable(mine) == _hashable(part) or same_member(ctx, _hashable(mine), _hashable(part))):
            continue
        if index == 0 or mine[0] == "literal" and part[0] == "literal":
            return None
        return "maybe"
    if name == "whole":
        return "maybe" if len(components) == len(folder) else None  # (the folder itself; a path inside: unknown)
    if len(components) != len(folder):
        return None  # (a file of a folder inside it: a listing of the folder does not show it)
    if name is None:
        return "maybe"
    covers = re.fullmatch(_regex(name), _text(pattern), re.DOTALL) is not None
    if re.fullmatch(_regex(pattern), _text(name), re.DOTALL):
        return ("scheme" if covers else "file"), covers
    return ("other", covers) if _may_match(name, pattern) else None


def _parent_of(ctx: FileFacts, expr: cst.CSTNode) -> cst.CSTNode | None:
    """`x` of `os.path.dirname(x)` or `x.parent`: a folder above whatever `x` names."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "parent":
        return expr.value
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and expr.args[0].keyword is None and ctx.qualified_names(
            expr.func) & {"os.path.dirname", "posixpath.dirname", "ntpath.dirname"}:
        return expr.args[0].value
    return None


def _regex(pattern: tuple) -> str:
    return "".join(".*" if p is None else re.escape(p) for p in pattern)


def _text(pattern: tuple) -> str:
    """A name of the pattern whose fields are text no literal part holds."""
    return "".join("\0" if p is None else p for p in pattern)


answers("listed_file_loaded", loaded_host)
