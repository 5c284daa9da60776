"""How the project uses a name: the calls of a function, and whether anything could change it unseen.

A flag parameter with a literal default (`def one_hot(idx, size, cuda=True)`) is a constant when no
call in the project passes it; a module-level constant (`USE_CUDA = True`) stays one when no file
assigns it from outside (`config.USE_CUDA = args.cuda`). devlint.analysis.flags asks `uses(name)`:

- `calls`: each call whose callee is written `name(...)` or `<anything>.name(...)`: how many positional
  arguments it passes, its keywords, and whether it unpacks `*args`/`**kwargs`. Matching by the last
  name alone over-approximates the callers (another object's method of the same name counts too):
  more callers can only make a parameter look passed;
- `referenced`: the name is used other than as the callee of a call (`map(one_hot, xs)`,
  `partial(one_hot, cuda=False)`, `fn = one_hot`, `getattr(m, "one_hot")`): calls devlint cannot see;
  so is every name a computed `getattr(m, name)` may reach, when its result is kept, passed or
  returned (`fn = getattr(m, name)`), since the function found is then called where devlint cannot look.
  A computed lookup called on the spot (`getattr(m, op)(x)`) is one call of whichever function it
  finds, with that call's arguments: it counts as a call of every name it may reach, and so passes
  a flag only by position, keyword or unpacking like any other call;
- `stored`: an attribute of that name is assigned or deleted on anything but `self`/`cls`
  (`config.USE_CUDA = False`, `setattr(config, "USE_CUDA", v)`).

The files are the project's `.py` files, listed as devlint.analysis.importers lists them (from the project root;
without a root marker, the top package's folder and its packages). The checked file itself is read from
the text being checked. Every file read (its digest) and every folder listed is recorded in the
ProjectView's observations (devlint.depends), so a cached result is checked again when any caller
changes, or a file is added or removed. A project too large to list answers None (unknown).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

from devlint.prefilter import parsed_or_none
from devlint import depends, worker_share
from devlint.analysis.file_words import DYNAMIC_WORDS as _DYNAMIC_WORDS  # noqa: F401  (asked by other analyses)
from devlint.analysis.file_words import WORD as _WORD  # noqa: F401  (asked by other analyses)
from devlint.analysis.file_words import FileWords
from devlint.analysis.importers import MAX_FILES, _SKIPPED
from devlint.analysis.project import _ROOT_MARKERS


@dataclass(frozen=True)
class Call:
    positional: int  # positional arguments passed (starred ones excluded)
    keywords: frozenset  # keyword names passed
    unpacks: bool  # a `*args` or `**kwargs`: may pass anything


@dataclass(frozen=True)
class Uses:
    calls: tuple = ()
    referenced: bool = False
    stored: bool = False


@dataclass(frozen=True)
class FileUses:
    """What one file does with every name, read in one parse."""

    calls: dict  # callee name -> tuple of Call
    referenced: frozenset  # names used other than as a callee
    stored: frozenset  # attribute names assigned or deleted (not on self/cls)
    # the root names of the objects a computed `getattr(m, name)` reads and a computed `setattr`,
    # `vars(m)[k] = v` or `m.__dict__` writes ("*": not a plain name chain), and the names imports bind
    dynamic_get: frozenset
    dynamic_set: frozenset
    modules: frozenset
    # (root, Call) of each computed `getattr(m, name)(...)` called where it is looked up
    dynamic_calls: tuple = ()
    # for devlint.analysis.project_callers: callee name -> how many calls are a bare `name(...)`;
    # name -> how the file binds it anywhere ("def" for a `def`/`class`, "from:<module>" for `from
    # <module> import name`, "other" for anything else); whether a star import or `globals()`-style call
    # may bind any name
    bare_calls: dict = None
    binders: dict = None
    opaque: bool = False

    def uses(self, name: str, module: str | None) -> Uses:
        """`module`: the stem of the module defining `name` at its top level (a function, a constant),
        reached by a computed name only through that module (`getattr(models, f)`, `sys.modules`);
        None for a method, reached through any object that is not an imported module."""
        def reaches(roots: frozenset) -> bool:
            if module is not None:
                return bool(roots & {module, "sys", "*"})
            return bool(roots - self.modules)
        calls = self.calls.get(name, ()) + tuple(c for root, c in self.dynamic_calls if reaches(frozenset({root})))
        return Uses(calls, name in self.referenced or reaches(self.dynamic_get),
                    name in self.stored or reaches(self.dynamic_set))


def uses(name: str, own_code: str, view, module: str | None = None) -> Uses | None:
    """How the project (the checked file's text `own_code`, and the other files `view` can list) uses
    `name`; None when it cannot be known (a project too large to list, a file that does not parse)."""
    index = view.index if view is not None else None
    own = _memo_summary(index, _own_key(own_code), own_code)
    if own is None:
        return None
    found = [own.uses(name, module)]
    if view is not None:
        files = _project_files(view)
        if files is None:
            return None
        read = []  # (path, digest, words, whether it may use the name), up to the first unreadable file
        for path in files:
            if path != view.path:
                observed, words = _words(view.index, path)
                read.append((path, observed, words, words is not None and (words.mentions(name) or words.dynamic())))
                if words is None:
                    break
        needed = [(observed, words) for _, observed, words, needs in read if needs]
        _summarise_shared(index, [(observed, words.data) for observed, words in needed])
        for path, observed, words, needs in read:
            view.observed[f"{depends.READ}:{path}"] = observed
            if words is None:
                return None  # (unreadable or too large: it may call anything)
            if not needs:
                continue
            # (the bytes the digest was made of: what the summary describes is what is recorded)
            summary = _memo_summary(index, observed, words.data)
            if summary is None:
                return None
            found.append(summary.uses(name, module))
    return Uses(
        calls=tuple(c for u in found for c in u.calls),
        referenced=any(u.referenced for u in found),
        stored=any(u.stored for u in found),
    )


_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)


def _own_key(text: str) -> str:
    """The checked file's summary is keyed by the digest of its text's UTF-8 bytes, the key it has as
    another file's project file (shared by the run's workers), when those bytes parse as the text does:
    no BOM, no surrogates, no coding cookie but UTF-8's. Otherwise by its own key."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return "own:" + depends.digest(text.encode("utf-8", "surrogatepass"))
    head = "\n".join(re.split(r"\r\n|\r|\n", text, maxsplit=2)[:2])  # (the lines a cookie may be on)
    cookies = [_codec(name) for name in _COOKIE.findall(head)]
    if text.startswith("\ufeff") or ("coding" in head and (not cookies or set(cookies) != {"utf-8"})):
        return "own:" + depends.digest(data)
    return depends.digest(data)


def _codec(name: str) -> str | None:
    import codecs

    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _words(index, path: str) -> tuple[str, FileWords | None]:
    """(the digest of the file at `path`, or ABSENT; the identifiers it mentions, None when unreadable),
    kept per process while the file's size and time stay the same: a project-wide run reads each file
    once, not once per file that asks."""
    memo = index.__dict__.setdefault("_file_words", {})
    try:
        info = os.stat(path)
        stamp = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode)
    except (OSError, ValueError):
        return depends.ABSENT, None
    known = memo.get(path)
    if known is not None and known[0] == stamp:
        return known[1], known[2]
    data, _ = depends.read_regular(path)
    if data is None:
        return depends.ABSENT, None
    # Python reads identifiers in NFKC form (`ｏｎｅ_ｈｏｔ(...)` calls `one_hot`): so does FileWords
    found = (depends.digest(data), FileWords(data))
    memo[path] = (stamp, *found)
    return found


def _summaries(index) -> dict:
    return index.__dict__.setdefault("_file_uses", {}) if index is not None else {}


def _summarise_shared(index, needed: list) -> None:
    """Summarise each (digest, source) of `needed` into the memo. The run's workers ask about the same
    files at about the same time: each starts at its own place in the list, and goes past a summary
    another worker is computing, coming back for it at the end, so that each summary is computed by
    one worker and loaded by the others."""
    start = worker_share.place(len(needed))
    later = [(key, source) for key, source in needed[start:] + needed[:start]
             if _memo_summary(index, key, source, wait=False) is worker_share.BUSY]
    for key, source in later:
        _memo_summary(index, key, source)


def _memo_summary(index, key: str, source, *, wait: bool = True) -> FileUses | None:
    """The summary of `source` (whose digest is `key`); worker_share.BUSY when `wait` is false and
    another worker is computing it."""
    memo = _summaries(index)
    if key not in memo:
        if len(memo) > 20_000:
            memo.clear()
        if key.startswith("own:"):
            found = _summarise(source)
        else:  # a project file's summary, by the digest of its bytes, is shared by the run's workers
            found = worker_share.obtain("uses", key, lambda: _summarise(source), wait=wait)
            if found is worker_share.BUSY:
                return found
        memo[key] = found
    return memo[key]


_REFLECTION = {"getattr", "setattr", "delattr", "hasattr"}


def _summarise(source: str | bytes) -> FileUses | None:
    tree = parsed_or_none(source)
    if tree is None:
        return None
    callees: set[int] = set()
    calls: dict[str, list[Call]] = {}
    referenced: set[str] = set()
    stored: set[str] = set()
    dynamic_get: set[str] = set()
    dynamic_set: set[str] = set()
    nodes = list(ast.walk(tree))
    # `getattr(m, op)(x)`: the lookup -> the call of its result
    called_on_spot = {id(n.func): n for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Call)}
    dynamic_calls: list[tuple[str, Call]] = []
    modules = {(a.asname or a.name).split(".")[0] for node in nodes if isinstance(node, (ast.Import, ast.ImportFrom))
               for a in node.names}
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if called is None:
            continue
        callees.add(id(func))
        calls.setdefault(called, []).append(_call(node))
        if called in _REFLECTION and len(node.args) >= 2:
            # `getattr(m, "one_hot")` calls what devlint cannot follow; a computed name may be any
            key = node.args[1]
            getting = called in {"getattr", "hasattr"}
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                (referenced if getting else stored).add(key.value)
            elif called == "getattr" and id(node) in called_on_spot:
                dynamic_calls.append((_root(node.args[0]), _call(called_on_spot[id(node)])))
            else:
                (dynamic_get if getting else dynamic_set).add(_root(node.args[0]))
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" and node.args:
            dynamic_set.add(_root(node.args[0]))  # `vars(config)[k] = v` may assign any attribute
        elif isinstance(node, ast.Attribute) and node.attr == "__dict__" and not (
                isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}):
            dynamic_set.add(_root(node.value))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in callees:
            referenced.add(node.id)
        elif isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Load):
                if id(node) not in callees:
                    referenced.add(node.attr)
            elif not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}):
                stored.add(node.attr)
    bare_calls: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            bare_calls[node.func.id] = bare_calls.get(node.func.id, 0) + 1
    return FileUses({k: tuple(v) for k, v in calls.items()}, frozenset(referenced), frozenset(stored),
                    frozenset(dynamic_get), frozenset(dynamic_set), frozenset(modules), tuple(dynamic_calls),
                    bare_calls, *_binders(nodes, modules))


# calls that may bind any name of the file: `globals()[k] = f`, `exec(code)`; `vars()` without an
# argument, or of a module (`vars(sys.modules[__name__])`): `vars(args)` of a namespace binds nothing
_OPAQUE_CALLS = frozenset({"globals", "exec", "eval", "locals"})


def _binders(nodes, modules: set) -> tuple[dict, bool]:
    """How the file binds each name, in any scope (see FileUses), and whether it may bind any name unseen."""
    found: dict[str, set] = {}
    opaque = False

    def add(name: str, how: str) -> None:
        found.setdefault(name, set()).add(how)

    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name, "def")
        elif isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    opaque = True
                elif alias.asname in (None, alias.name):
                    add(alias.name, f"from:{source}")
                else:
                    add(alias.asname, "other")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.asname or alias.name.split(".")[0], "other")
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            add(node.id, "other")
        elif isinstance(node, ast.arg):
            add(node.arg, "other")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                add(name, "other")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            add(node.name, "other")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            add(node.name, "other")
        elif isinstance(node, ast.MatchMapping) and node.rest:
            add(node.rest, "other")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                node.func.id in _OPAQUE_CALLS or node.func.id == "vars" and (
                    not node.args or _root(node.args[0]) in modules | {"*"})):
            opaque = True
    return {k: frozenset(v) for k, v in found.items()}, opaque


def _call(node: ast.Call) -> Call:
    call = Call(
        positional=sum(1 for a in node.args if not isinstance(a, ast.Starred)),
        keywords=frozenset(k.arg for k in node.keywords if k.arg is not None),
        unpacks=any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords),
    )
    # Most calls look alike (`f(x)`, `f(x, y)`): one object each, so that a summary shared between
    # the run's workers pickles each once (a third of the bytes, loaded three times as fast).
    if len(_CALLS) > 50_000:
        _CALLS.clear()
    return _CALLS.setdefault(call, call)


_CALLS: dict = {}


def _root(node) -> str:
    """`config` for `config`, `config.sub`, `config[0].x`; "*" for anything else (a call's result)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else "*"


def _project_files(view) -> list[str] | None:
    """The project's `.py` files, each folder listed recorded as an observation."""
    roots = view.index.search_roots(view.path, view.observed)
    root = next((r for r in roots if any(view.index.exists(os.path.join(r, m), view.observed)
                                         for m in _ROOT_MARKERS)), None)
    marked = root is not None
    root = root if marked else roots[0]
    listings = view.index.listings
    key = f"calls:{int(marked)}:{root}"
    if key not in listings:
        listings[key] = _walk(root, marked)
    found = listings[key]
    if found is None:
        return None
    paths, folders = found
    for folder, listed in folders:
        view.observed[f"{depends.LIST}:{folder}"] = listed
    return paths


def _walk(root: str, marked: bool):
    paths: list[str] = []
    folders: list[tuple[str, str]] = []
    for folder, subfolders, names in os.walk(root):
        folders.append((folder, depends.listing(folder)))
        subfolders[:] = sorted(f for f in subfolders if not f.startswith(".") and f not in _SKIPPED and (
            marked or os.path.isfile(os.path.join(folder, f, "__init__.py"))))
        paths += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
        if len(paths) > MAX_FILES:
            return None
    return paths, folders
