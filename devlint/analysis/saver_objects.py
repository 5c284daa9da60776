"""Paths that an object built on a fresh folder hands back (DL002, through devlint.analysis.fresh_folders).

`h = ModelCheckpoint(tmp_path, "run")`, `h(engine, to_save)`, `torch.load(h.last_checkpoint)`: an object
given a folder created empty this run as its one place for files names, by an attribute or a method, a
file it wrote there during this run. Such a path counts as inside the fresh folder when all of these hold:

- the path is `obj.attr` or `obj.method(...)` (positional arguments only), and `obj` is a plain name whose
  binding that the read sees (devlint.analysis.derived.last_binding: the last plain assignment before it in
  the same scope, certainly run) is a call of a class (a callee named in CamelCase: a function such as
  `make_saver(tmp_path)` may hand back an object built elsewhere, on another folder) with a fresh folder
  among its arguments and no other argument that may name a place (below);
- that call does not make a path itself (`Path(tmp_path)`, a callee named like a path, a copy or a
  download; a method of the folder), so `obj.parent` cannot climb out;
- the attribute or method is not named like a file from elsewhere or a way out of the folder
  (`pretrained_path`, `resume_from`, `cache_file`, `download()`, `parent`), and the method gets no
  argument that may name a place, nor a string;
- every use of the name in its scope reads an attribute, calls the object or a method of it, or hands it
  to a call (`trainer.add_event_handler(event, h)`, `Trainer(callbacks=[h])`): never a method or a call
  named like a copy or a download (devlint.analysis.fresh_folders' words), never a call that also gets an
  argument that may name a place, never a string given to the object or its methods
  (`h.resume("last")`), never an assignment to one of its attributes (`h.dirname = ...`), never bound
  to another name.

An argument "may name a place" unless it is a fresh path, a number, `True`/`False`/`None`, a lambda, a
comparison, a string that is a plain word (no `/`, `\\`, `~`, `:` or `.`: `"PREFIX"`, `"{epoch}"`), a
name bound once to one of those, a name or attribute none of whose words names a place (`path`, `dir`,
`file`, `url`, `ckpt`, `weights`, `resume`, `from`, ...: `engine`, `to_save`, `require_empty`), a call whose
callee is not named like a path (`get_path()`, `os.path.join`) and whose arguments name no place
(`Net()`, `Engine(lambda e, b: None)`), or a container of those. A keyword named like a place
(`resume_from=x`) needs a literal or a fresh value; one named like a download (`download=True`) keeps the
finding unless it is False or None.
"""

from __future__ import annotations

import re
from typing import Callable

import libcst as cst

from devlint.facts import FileFacts
from devlint.syntax import dotted_name, name_words, string_value

# Words of a name that may hold a path (an argument that may point the object at a file elsewhere).
PLACE_WORDS = frozenset({"path", "paths", "dir", "dirs", "dirname", "dirpath", "folder", "folders", "root",
                         "file", "files", "filename", "fname", "filepath", "url", "uri", "ckpt", "checkpoint",
                         "weights", "pretrained", "resume", "src", "source", "cache", "home", "location", "archive",
                         "restore", "from"})
# Words of a callee that makes a path (`UPath(tmp_path)`, `PurePosixPath(...)`), not an object that keeps one.
PATH_MAKERS = frozenset({"path", "paths", "dir", "dirname", "folder", "str", "join", "local", "fspath"})
# Words of a callee whose result may be a path (`get_path()`, `os.path.join(...)`, `find_file(...)`).
PATH_RESULTS = PATH_MAKERS | frozenset({"dirpath", "file", "filename", "fname", "filepath", "url", "uri",
                                        "location", "glob", "listdir", "cwd", "home", "expanduser"})
# Words of an attribute or method whose file may come from elsewhere, or that leads out of the folder.
ELSEWHERE_WORDS = frozenset({"pretrained", "resume", "resumed", "init", "initial", "base", "remote", "url", "hub",
                             "cache", "cached", "source", "src", "origin", "original", "reference", "golden",
                             "expected", "asset", "assets", "external", "shared", "home", "default", "parent",
                             "parents", "anchor", "drive", "cwd", "with", "relative", "load", "loaded", "restore",
                             "from", "input", "import", "imported"})
_PLAIN_WORD = re.compile(r"[^/\\~:.]*")
_LITERAL_NAMES = frozenset({"True", "False", "None"})
MAX_DEPTH = 6

Fresh = Callable[[cst.CSTNode], bool]


def object_path(ctx: FileFacts, expr: cst.CSTNode, fresh: Fresh, import_words: tuple[str, ...]) -> bool:
    """Is `expr` (`obj.attr` or `obj.method(...)`) a path an object built on a fresh folder hands back?
    `fresh` judges a path; `import_words` are the words of a call that may bring a file in."""
    call = expr if isinstance(expr, cst.Call) else None
    member = call.func if call is not None else expr
    if not isinstance(member, cst.Attribute) or not isinstance(member.value, cst.Name):
        return False
    if _worded(member.attr.value, ELSEWHERE_WORDS, import_words):
        return False
    if call is not None and any(a.keyword or a.star or _may_name_place(ctx, a.value, fresh, strict=True)
                                for a in call.args):
        return False
    from devlint.analysis.derived import last_binding

    binding = last_binding(ctx, member.value)
    value = ctx.assigned_value(binding.node) if binding is not None else None
    return (isinstance(value, cst.Call) and _built_on_fresh(ctx, value, fresh, import_words)
            and all(_harmless_use(ctx, access.node, expr, fresh, import_words) for access in binding.references))


def _built_on_fresh(ctx: FileFacts, call: cst.Call, fresh: Fresh, import_words) -> bool:
    """`Saver(tmp_path, "run", keep=3)`: a fresh folder among the arguments, nothing else that may name a
    place, and a callee that neither makes a path nor brings a file in."""
    func = call.func
    name = dotted_name(func) or ""
    if not name or any(a.star for a in call.args) or fresh(call):
        return False
    if isinstance(func, cst.Attribute) and fresh(func.value):
        return False  # (a method of the folder: `tmp_path.joinpath(...)`, a path)
    if not name.rsplit(".", 1)[-1][:1].isupper() or any(
            _worded(part, PATH_MAKERS, import_words) for part in name.split(".")):
        return False  # (a function may hand back an object built elsewhere, on another folder)
    folders = [a for a in call.args if fresh(a.value)]
    return bool(folders) and not any(_argument_may_name_place(ctx, a, fresh, import_words)
                                     for a in call.args if a not in folders)


def _harmless_use(ctx: FileFacts, use: cst.CSTNode, load: cst.CSTNode, fresh: Fresh, import_words) -> bool:
    """Does this use of the object leave it keeping its files in the fresh folder (see the module's list)?"""
    if _inside(ctx, use, load):
        return True
    top = use
    parent = ctx.parent(top)
    while isinstance(parent, (cst.Attribute, cst.Subscript)) and parent.value is top:
        top, parent = parent, ctx.parent(parent)
    if top is not use and _assigned_to(ctx, top):
        return False  # `h.dirname = "/data"`, `del h.files[0]`
    if isinstance(parent, cst.Call) and parent.func is top:  # `h(engine, to_save)`, `h.save(model)`
        method = top.attr.value if isinstance(top, cst.Attribute) else ""
        return not _worded(method, frozenset(), import_words) and not any(
            a.star or _argument_may_name_place(ctx, a, fresh, import_words, strict=True) for a in parent.args)
    if top is not use:
        return True  # (an attribute read)
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr)) or _assigned_to(ctx, use):
        return False  # bound to another name, or re-bound
    handed = _handed_to(ctx, use)
    if handed is None:
        return not isinstance(parent, cst.Arg)
    return not _worded(dotted_name(handed.func) or "", frozenset(), import_words) and not any(
        a.star or _argument_may_name_place(ctx, a, fresh, import_words)
        for a in handed.args if not _inside(ctx, use, a))


def _handed_to(ctx: FileFacts, use: cst.CSTNode) -> cst.Call | None:
    """The call that gets the object as an argument, directly or in a list, tuple, set or dict literal."""
    node = use
    for ancestor in ctx.ancestors(use):
        if isinstance(ancestor, cst.Arg) and ancestor.value is node:
            call = ctx.parent(ancestor)
            return call if isinstance(call, cst.Call) else None
        if not isinstance(ancestor, (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.Element, cst.DictElement)):
            return None
        node = ancestor
    return None


def _assigned_to(ctx: FileFacts, node: cst.CSTNode) -> bool:
    parent = ctx.parent(node)
    return (isinstance(parent, cst.AssignTarget) and parent.target is node
            or isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node
            or isinstance(parent, cst.Del) or isinstance(parent, (cst.Element, cst.Tuple, cst.List))
            and _assigned_to(ctx, parent))


def _inside(ctx: FileFacts, node: cst.CSTNode, root: cst.CSTNode) -> bool:
    return node is root or any(a is root for a in ctx.ancestors(node))


def _worded(identifier: str, words: frozenset, import_words) -> bool:
    """Is the identifier named like one of `words`, or does it contain a word of a copy or a download?"""
    lowered = identifier.lower()
    return bool(set(name_words(identifier)) & words) or any(w in lowered for w in import_words)


# -- an argument that may name a place ---------------------------------------------------------------------
def _argument_may_name_place(ctx: FileFacts, arg: cst.Arg, fresh: Fresh, import_words, strict=False) -> bool:
    value = arg.value
    if arg.keyword is not None and not fresh(value):
        keyword = arg.keyword.value
        literal = isinstance(value, (cst.Integer, cst.Float)) or (
            isinstance(value, cst.Name) and value.value in _LITERAL_NAMES)
        if _worded(keyword, frozenset(), import_words) and not (
                isinstance(value, cst.Name) and value.value in ("False", "None")):
            return True  # `download=True`
        if set(name_words(keyword)) & PLACE_WORDS and not literal and string_value(value) is None:
            return True  # `resume_from=x`
    return _may_name_place(ctx, value, fresh, strict)


def _may_name_place(ctx: FileFacts, expr: cst.CSTNode, fresh: Fresh, strict: bool, depth: int = 0) -> bool:
    """May `expr` be a path outside the fresh folder (a file the object could bring in)? `strict`: any
    string may (one handed to the object after it was built; not the keys and items of a container, nor
    the arguments of a call that makes the value)."""
    if depth > MAX_DEPTH:
        return True
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.Lambda, cst.Comparison)):
        return False
    if fresh(expr):
        return False
    text = string_value(expr)
    if text is not None:
        return strict or not _PLAIN_WORD.fullmatch(text)
    if isinstance(expr, (cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Name):
        if expr.value in _LITERAL_NAMES:
            return False
        assignments = ctx.bindings(expr)
        value = ctx.assigned_value(assignments[0].node) if len(assignments) == 1 else None
        if value is not None:
            return _may_name_place(ctx, value, fresh, strict, depth + 1)
        return bool(set(name_words(expr.value)) & PLACE_WORDS)
    if isinstance(expr, cst.Attribute):
        return any(bool(set(name_words(part)) & PLACE_WORDS) for part in (dotted_name(expr) or "path").split("."))
    if isinstance(expr, cst.Subscript):
        keys = [string_value(e.slice.value) for e in expr.slice if isinstance(e.slice, cst.Index)]
        return _may_name_place(ctx, expr.value, fresh, strict, depth + 1) or any(
            k is not None and set(name_words(k)) & PLACE_WORDS for k in keys)
    if isinstance(expr, cst.Call):
        name = dotted_name(expr.func)
        if name is None or any(set(name_words(part)) & PATH_RESULTS for part in name.split(".")):
            return True
        return any(a.star or _may_name_place(ctx, a.value, fresh, False, depth + 1) for a in expr.args) or any(
            a.keyword is not None and set(name_words(a.keyword.value)) & PLACE_WORDS for a in expr.args)
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return any(_may_name_place(ctx, e.value, fresh, False, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(not isinstance(e, cst.DictElement) or _may_name_place(ctx, e.key, fresh, False, depth + 1)
                   or _may_name_place(ctx, e.value, fresh, False, depth + 1) for e in expr.elements)
    if isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
        return (_may_name_place(ctx, expr.left, fresh, strict, depth + 1)
                or _may_name_place(ctx, expr.right, fresh, strict, depth + 1))
    if isinstance(expr, cst.UnaryOperation):
        return _may_name_place(ctx, expr.expression, fresh, strict, depth + 1)
    if isinstance(expr, cst.IfExp):
        return (_may_name_place(ctx, expr.body, fresh, strict, depth + 1)
                or _may_name_place(ctx, expr.orelse, fresh, strict, depth + 1))
    return True
