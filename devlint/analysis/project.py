"""The project index: what the other files of a project define, read with the standard-library `ast`.

A file's kinds (tensor, module, unknown) often rest on another file: `from .models import Net` then
`Net().to(device)` (a module, moved in place), `batch = make_batch()` (a tensor from a function of
`data.py`). The index answers, for a name a checked file imports from the project:

- a class: its bases, resolved through the imports of the file that defines it (any depth, across
  files), so whether it subclasses `torch.nn.Module`; and whether it, or a project class it inherits
  from, defines `cuda()` beyond `return super().cuda(...)`;
- a top-level function: the kind of what it returns, from simple evidence (a torch factory or op, an
  `nn.Module` subclass's constructor, a call of another indexed function, a tensor or module method on
  one of those, a local name whose every assignment is one of those), all returns agreeing; recursive
  and mutually recursive functions answer unknown (every step keeps an in-progress set);
- a module-level name bound once to such a value (`model = Net()`).

Imports are resolved as Python would: relative ones (`from .models import Net`, `from . import
models`) against the importing file's folder, absolute ones (`pkg.models.Net`, `import pkg.models as
m`) against the folder above the importing file's top package, its own folder when it is a script's,
and the project root (the nearest folder above holding `.git`, `pyproject.toml`, `setup.py` or
`setup.cfg`) and its `src/`. `torch` (and files inside a `torch` package) is never the project's.
A name bound more than once at the top of its file, or by anything else, is unknown.

Only the files a lookup needs are read, lazily, each parsed once per process (re-read when its size or
modification time changes): a file checked alone (pre-commit, stdin, an editor) sees the same facts as
in a whole-tree run, and each worker process builds its own index as it goes. The index is plain data
(no LibCST); the kinds inference (devlint.analysis.kinds) asks it through a `ProjectView`, which records
the files (and the digests of the contents) whose facts the answers used, and everything it looked at
on the way, found or not (devlint.depends): the result cache stores them with the file's result and
checks the file again when one of them changes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from devlint.analysis.class_moves import allowed_base
from devlint import depends
from devlint.analysis.project_files import FileFacts, FunctionFacts, summarise_file
from devlint.depends import digest  # noqa: F401  (the digest dependencies are recorded with)

# How many lookups may be in progress at once (re-exports, base classes, returns of returns).
MAX_DEPTH = 40
TENSOR, MODULE = "tensor", "module"
_ROOT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
_ONLY_EXTERNAL = frozenset({"torch"})


# -- the index -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ref:
    """A project module (`name` None) or a top-level name of one."""

    path: str
    name: str | None = None


class ProjectIndex:
    """Per process: file facts by path, read lazily, refreshed when a file's size or time changes.

    Every method that looks at the disk takes `seen`, a ProjectView's record of what the answer
    rested on (devlint.depends): each file read (its digest, or ABSENT) and each path asked about,
    found or not, so that the result cache misses when any of them changes."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple, FileFacts | None, str]] = {}
        self._probes: dict[str, bool] = {}
        # The project's files and what each imports (devlint.analysis.importers), listed once per run.
        self.listings: dict[str, list | None] = {}
        # An editor's unsaved text by path (devlint.server): read in place of the disk's bytes.
        self.buffers: dict[str, bytes] = {}

    def _holds(self, probe: str, path: str, seen: dict | None) -> bool:
        name = f"{probe}:{path}"
        found = self._probes.get(name)
        if found is None:
            found = self._probes[name] = depends.holds(probe, path)
        if seen is not None:
            seen[name] = "1" if found else "0"
        return found

    def isfile(self, path: str, seen: dict | None = None) -> bool:
        return self._holds(depends.IS_FILE, path, seen)

    def isdir(self, path: str, seen: dict | None = None) -> bool:
        return self._holds(depends.IS_DIR, path, seen)

    def exists(self, path: str, seen: dict | None = None) -> bool:
        return self._holds(depends.EXISTS, path, seen)

    def facts(self, path: str, seen: dict | None = None) -> FileFacts | None:
        """The facts of the module file at `path`; None when it cannot be read (not a regular file,
        over depends.READ_LIMIT, unreadable) or parsed."""
        facts, observed = self._read(path)
        if seen is not None:
            seen[f"{depends.READ}:{path}"] = observed
        return facts

    def _read(self, path: str) -> tuple[FileFacts | None, str]:
        if path in self.buffers:
            return self._read_buffer(path, self.buffers[path])
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return None, depends.ABSENT
        stamp = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode)
        known = self._files.get(path)
        if known is not None and known[0] == stamp:
            return known[1], known[2]
        data, info = depends.read_regular(path)
        if data is None:
            return None, depends.ABSENT
        facts = summarise_file(path, data, self.module_name(path))
        observed = facts.digest if facts is not None else digest(data)  # (a syntax error: still these bytes)
        self._files[path] = ((info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode), facts, observed)
        return facts, observed

    def _read_buffer(self, path: str, data: bytes) -> tuple[FileFacts | None, str]:
        stamp = ("buffer", digest(data))
        known = self._files.get(path)
        if known is None or known[0] != stamp:
            facts = summarise_file(path, data, self.module_name(path))
            known = self._files[path] = (stamp, facts, facts.digest if facts is not None else stamp[1])
        return known[1], known[2]

    def module_name(self, path: str, seen: dict | None = None) -> str | None:
        """`pkg.sub.models` for pkg/sub/models.py in packages (folders holding __init__.py)."""
        parts = []
        current = os.path.dirname(path)
        while self.isfile(os.path.join(current, "__init__.py"), seen):
            parts.append(os.path.basename(current))
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        package = ".".join(reversed(parts)) or None
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem == "__init__":
            return package
        return f"{package}.{stem}" if package else None

    def search_roots(self, path: str, seen: dict | None = None) -> tuple[str, ...]:
        """Where an absolute import in `path` is looked for."""
        folder = os.path.dirname(path)
        roots = []
        top = folder
        while self.isfile(os.path.join(top, "__init__.py"), seen) and os.path.dirname(top) != top:
            top = os.path.dirname(top)
        roots.append(top)
        current = folder
        while True:
            if any(self.exists(os.path.join(current, marker), seen) for marker in _ROOT_MARKERS):
                roots += [current, os.path.join(current, "src")]
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        return tuple(dict.fromkeys(roots))

    def locate(self, base: str, parts: list[str], seen: dict | None = None) -> tuple[str | None, int]:
        """(the module file the longest prefix of `parts` names under `base`, how many parts it took)."""
        current, module, taken = base, None, 0
        for part in parts:
            if not part:
                break
            folder = os.path.join(current, part)
            if self.isdir(folder, seen) and (self.isfile(os.path.join(folder, "__init__.py"), seen)
                                             or not self.isfile(folder + ".py", seen)):
                current = folder
                init = os.path.join(folder, "__init__.py")
                module = init if self.isfile(init, seen) else folder  # (a namespace package: a folder)
                taken += 1
                continue
            if self.isfile(folder + ".py", seen):
                return folder + ".py", taken + 1
            break
        return module, taken


_INDEX: ProjectIndex | None = None


def index() -> ProjectIndex:
    """This process's index (a worker builds its own as it checks files)."""
    global _INDEX
    if _INDEX is None:
        _INDEX = ProjectIndex()
    return _INDEX


def forget_probes() -> None:
    """Start a run seeing the disk as it is now: which files exist is remembered for one run only
    (a process that runs devlint twice, a test or an editor, would otherwise answer from the first
    run's disk). Facts stay: they are read again when a file's size or time changes."""
    if _INDEX is not None:
        _INDEX._probes.clear()
        _INDEX.listings.clear()



def set_buffer(path: str, data: bytes | None) -> None:
    """The language server's hook: `path`'s facts come from an open editor buffer's `data` (None: from
    the disk again, when the buffer is closed)."""
    buffers = index().buffers
    if data is None:
        buffers.pop(os.path.abspath(path), None)
    else:
        buffers[os.path.abspath(path)] = data


class ProjectView:
    """What one checked file may ask the index; records the files whose facts answered.

    `vocabulary` knows the world outside the project (devlint.analysis.kinds.VOCABULARY):
    `call_kind(name)` ("tensor", "module" or None: what calling `torch.zeros`, `torch.nn.Linear`
    returns), `is_module_base(name)`, `transparent(decorator)`, and the sets `tensor_methods` (a
    tensor's methods that return a tensor) and `module_methods` (a module's that return itself).
    """

    def __init__(self, path: str, vocabulary, project: ProjectIndex | None = None) -> None:
        self.path = os.path.abspath(path)
        self.index = project or index()
        self.vocabulary = vocabulary
        self.used: dict[str, str] = {}  # path -> digest of the contents whose facts were used
        # Everything the answers rested on, found or not (devlint.depends): the result's dependencies.
        self.observed: dict[str, str] = {}
        self._read: dict[str, FileFacts | None] = {}  # one version of each file per checked file
        self._active: set = set()
        self._memo: dict = {}

    def read(self, path: str) -> tuple[bytes | None, str]:
        """The bytes of a project file an analysis reads by itself (None: unreadable or absent) and their
        digest, recorded as an observation of the result and, where read, as contents whose facts were used."""
        data, _ = depends.read_regular(path)
        observed = depends.ABSENT if data is None else depends.digest(data)
        self.observed[f"{depends.READ}:{path}"] = observed
        if data is not None:
            self.used[path] = observed
        return data, observed

    # -- resolution ------------------------------------------------------------------------------
    def resolve(self, qualified: str, origin: str | None = None):
        """What an import-qualified name of `origin` (default: the checked file) stands for: a Ref in
        the project, ("external", name) outside it, or None."""
        origin = origin or self.path
        level = len(qualified) - len(qualified.lstrip("."))
        parts = qualified[level:].split(".") if qualified[level:] else []
        if level:
            base = os.path.dirname(origin)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            module, taken = self.index.locate(base, parts, self.observed)
            if module is None and taken == 0:
                init = os.path.join(base, "__init__.py")
                module = init if self.index.isfile(init, self.observed) else None
            if module is None:
                return None
            return self._within(module, parts[taken:])
        if not parts or parts[0] in _ONLY_EXTERNAL:
            return ("external", qualified)
        for root in self.index.search_roots(origin, self.observed):
            module, taken = self.index.locate(root, parts, self.observed)
            if module is not None and taken:
                return self._within(module, parts[taken:])
        return ("external", qualified)

    def _within(self, module: str, rest: list[str]):
        if not module.endswith(".py"):
            return None  # (a namespace package's attribute: unknown)
        name = self.index.module_name(module, self.observed)
        if name is not None and name.split(".")[0] in _ONLY_EXTERNAL:
            return ("external", ".".join([name, *rest]))  # (files of torch itself)
        ref = Ref(module)
        for part in rest:
            ref = self._attribute(ref, part)
            if not isinstance(ref, Ref):
                return ref
        return ref

    def _attribute(self, ref: Ref, attribute: str):
        """`attribute` of what `ref` stands for: a top-level name of a module; None otherwise."""
        if ref.name is None:
            return self._lookup(ref.path, attribute)
        target = self._follow(ref)
        if isinstance(target, Ref) and target.name is None:
            return self._lookup(target.path, attribute)
        if isinstance(target, tuple) and target[0] == "external":
            return ("external", f"{target[1]}.{attribute}")
        return None

    def _facts(self, path: str) -> FileFacts | None:
        if path in self._read:
            facts = self._read[path]
        else:
            # The checked file's own facts are recorded too: the index reads it from the disk,
            # which may hold other bytes than the ones checked.
            facts = self._read[path] = self.index.facts(path, self.observed)
        if facts is not None and path != self.path:
            self.used[path] = facts.digest
        return facts

    def _lookup(self, path: str, name: str):
        """A top-level `name` of the module file at `path`."""
        facts = self._facts(path)
        if facts is None:
            return None
        fact = facts.names.get(name)
        if fact is not None:
            return Ref(path, name)
        if os.path.basename(path) == "__init__.py":  # a submodule of the package
            folder = os.path.dirname(path)
            module, taken = self.index.locate(folder, [name], self.observed)
            if module is not None and taken == 1:
                return self._within(module, [])
        for star in facts.star_imports:
            found = self._guard(("star", path, star, name), lambda: self._star(path, star, name))
            if found is not None:
                return found
        return None

    def _star(self, path: str, star: str, name: str):
        module = self.resolve(star, path)
        if isinstance(module, Ref) and module.name is None:
            return self._lookup(module.path, name)
        return None

    def _follow(self, ref: Ref):
        """Through imports (`from .a import B` in the module named): the class, function or value a
        Ref is, a module Ref, ("external", name), or None."""
        return self._guard(("follow", ref), lambda: self._follow_once(ref))

    def _follow_once(self, ref: Ref):
        if ref.name is None:
            return ref
        facts = self._facts(ref.path)
        fact = facts.names.get(ref.name) if facts is not None else None
        if fact is None:
            return None
        if fact[0] == "import":
            target = self.resolve(fact[1], ref.path)
            return self._follow(target) if isinstance(target, Ref) else target
        if fact[0] == "other":
            return None
        return ref

    def _guard(self, key, compute):
        if key in self._memo:
            return self._memo[key]
        if key in self._active or len(self._active) >= MAX_DEPTH:
            return None
        self._active.add(key)
        try:
            value = compute()
        finally:
            self._active.discard(key)
        if not self._active or value is not None:
            self._memo[key] = value
        return value

    def _fact(self, ref: Ref):
        facts = self._facts(ref.path)
        return facts.names.get(ref.name) if facts is not None and ref.name is not None else None

    def _in_file(self, path: str, dotted: str | None):
        """What a dotted name written in the project file `path` stands for."""
        if dotted is None:
            return None
        root, _, rest = dotted.partition(".")
        target = self._lookup(path, root)
        if target is None:
            facts = self._facts(path)
            if facts is not None and root not in facts.names and not facts.star_imports:
                return ("external", dotted)  # (a builtin)
            return None
        for part in rest.split(".") if rest else ():
            if isinstance(target, tuple) and target[0] == "external":
                target = ("external", f"{target[1]}.{part}")  # (`torch.nn.Module` after `import torch`)
                continue
            target = self._attribute(target, part) if isinstance(target, Ref) else None
            if target is None:
                return None
        return target

    # -- facts --------------------------------------------------------------------------------------
    def call_kind(self, qualified: str) -> str | None:
        """The kind calling an import-qualified name of the checked file returns, if the project says."""
        key = ("call", qualified)
        if key not in self._memo:
            target = self.resolve(qualified)
            self._memo[key] = self._call_kind(target) if isinstance(target, Ref) else None
        return self._memo[key]

    def value_kind(self, qualified: str) -> str | None:
        """The kind of an imported project name used as a value (`from .data import BATCH`)."""
        target = self.resolve(qualified)
        if not isinstance(target, Ref):
            return None
        target = self._follow(target)
        if not isinstance(target, Ref):
            return None
        fact = self._fact(target)
        if fact is not None and fact[0] == "value":
            return self._guard(("value", target), lambda: self._term_kind(target.path, fact[1]))
        return None

    def _call_kind(self, ref) -> str | None:
        target = self._follow(ref) if isinstance(ref, Ref) else ref
        if isinstance(target, tuple) and target[0] == "external":
            return self.vocabulary.call_kind(target[1])
        if not isinstance(target, Ref) or target.name is None:
            return None
        fact = self._fact(target)
        if fact is None:
            return None
        if fact[0] == "class":
            return MODULE if self.is_module_class(target) else None
        if fact[0] == "function":
            return self._guard(("returns", target), lambda: self._returns(target, fact[1]))
        return None

    def class_of(self, qualified: str) -> Ref | None:
        """The project class an import-qualified name of the checked file stands for."""
        target = self.resolve(qualified)
        target = self._follow(target) if isinstance(target, Ref) else None
        if isinstance(target, Ref) and target.name is not None:
            fact = self._fact(target)
            if fact is not None and fact[0] == "class":
                return target
        return None

    def is_module_class(self, ref: Ref) -> bool:
        return self._guard(("module class", ref), lambda: self._is_module_class(ref)) is True

    def _bases(self, ref: Ref):
        """What each base of the class `ref` stands for (a project Ref, an ("external", name), None);
        nothing if `ref` is not a class."""
        fact = self._fact(ref)
        if fact is None or fact[0] != "class":
            return
        for base in fact[1].bases:
            target = self._in_file(ref.path, base)
            yield self._follow(target) if isinstance(target, Ref) else target

    def _is_module_class(self, ref: Ref) -> bool:
        for target in self._bases(ref):
            if isinstance(target, tuple) and target[0] == "external" and self.vocabulary.is_module_base(target[1]):
                return True
            if isinstance(target, Ref) and target.name is not None and self.is_module_class(target):
                return True
        return False

    def class_chain(self, ref: Ref):
        """(the external bases of the class and of the project classes it inherits from, the names all
        of them bind), or None where a base is neither (a name the index cannot resolve)."""
        return self._guard(("chain", ref), lambda: self._class_chain(ref))

    def _class_chain(self, ref: Ref):
        fact = self._fact(ref)
        if fact is None or fact[0] != "class":
            return None
        externals, members = set(), set(fact[1].members)
        for target in self._bases(ref):
            if isinstance(target, tuple) and target[0] == "external":
                externals.add(target[1])
                continue
            inner = self.class_chain(target) if isinstance(target, Ref) and target.name is not None else None
            if inner is None:
                return None
            externals |= inner[0]
            members |= inner[1]
        return frozenset(externals), frozenset(members)

    def definition(self, qualified: str) -> tuple[str, str] | None:
        """(file, name) of the project's top-level function an import-qualified name of the checked file is."""
        target = self.resolve(qualified)
        target = self._follow(target) if isinstance(target, Ref) else None
        fact = self._fact(target) if isinstance(target, Ref) and target.name is not None else None
        return (target.path, target.name) if fact is not None and fact[0] == "function" else None

    def class_moves_nothing(self, qualified: str) -> bool:
        """Is the name a project class that, with its bases, moves nothing to a device (devlint.analysis.class_moves)?"""
        ref = self.class_of(qualified)
        return ref is not None and self._guard(("still", ref), lambda: self._still(ref)) is True

    def _still(self, ref: Ref) -> bool:
        fact = self._fact(ref)
        return fact is not None and fact[0] == "class" and not fact[1].moves and all(
            self._guard(("still", t), lambda t=t: self._still(t)) is True if isinstance(t, Ref) and t.name is not None else
            isinstance(t, tuple) and t[0] == "external" and allowed_base(t[1]) for t in self._bases(ref))

    def overrides_cuda(self, ref: Ref) -> bool:
        """Does the class (or a project class it inherits from) define `cuda()`? Unknown bases say no."""
        return self._guard(("cuda", ref), lambda: self._overrides_cuda(ref)) is True

    def _overrides_cuda(self, ref: Ref) -> bool:
        fact = self._fact(ref)
        if fact is None or fact[0] != "class":
            return False
        return fact[1].defines_cuda or any(isinstance(target, Ref) and target.name is not None
                                           and self.overrides_cuda(target) for target in self._bases(ref))

    def _returns(self, ref: Ref, function: FunctionFacts) -> str | None:
        if function.returns is None:
            return None
        for decorator in function.decorators:
            target = self._in_file(ref.path, decorator)
            name = target[1] if isinstance(target, tuple) and target[0] == "external" else None
            if name is None or not self.vocabulary.transparent(name):
                return None
        kinds = {self._term_kind(ref.path, term) for term in function.returns}
        return kinds.pop() if len(kinds) == 1 else None

    def _term_kind(self, path: str, term) -> str | None:
        if term is None:
            return None
        if term[0] == "call":
            target = self._in_file(path, term[1])
            return self._call_kind(target) if target is not None else None
        if term[0] == "method":
            inner = self._term_kind(path, term[1])
            if inner == TENSOR and term[2] in self.vocabulary.tensor_methods:
                return TENSOR
            if inner == MODULE and term[2] in self.vocabulary.module_methods:
                return MODULE
            return None
        if term[0] == "any":
            kinds = {self._term_kind(path, t) for t in term[1]}
            return kinds.pop() if len(kinds) == 1 else None
        if term[0] == "name":
            target = self._in_file(path, term[1])
            target = self._follow(target) if isinstance(target, Ref) else None
            if isinstance(target, Ref) and target.name is not None:
                fact = self._fact(target)
                if fact is not None and fact[0] == "value":
                    return self._guard(("value", target), lambda: self._term_kind(target.path, fact[1]))
            return None
        return None
