"""Which files of a project import a given module file: a module others import is a library for
placement (a module-level definition that queries CUDA would run at their import), whatever its
`if __name__ == "__main__":` block says.

The project is the folder the index already takes for its root (devlint.analysis.project: the nearest folder
above holding `.git`, `pyproject.toml`, `setup.py` or `setup.cfg`; without one, the top package's
folder and only the packages below it). Once per process and root, its `.py` files are listed
(hidden folders, `__pycache__`, `node_modules` and `site-packages` left out) and the names each imports read with a regular expression (any import
statement, also one inside a function or a string: more importers only make placement more careful).
A query resolves, as the index does, only the names that mention the module's name: each dotted
prefix (`import pkg.models` runs `pkg/__init__.py` too). A project too large to list answers
"unknown" (None), which callers take as "imported". The listing is kept for one run
(ProjectIndex.listings, cleared with the index's probes); a file added during a run is not seen.
"""

from __future__ import annotations

import os
import re

from devlint import depends
from devlint.identifiers import identifier
from devlint.analysis.project import _ROOT_MARKERS, ProjectIndex, ProjectView, digest

MAX_FILES = 10_000
MAX_BYTES = 4 * 1024 * 1024
_SKIPPED = frozenset({"__pycache__", "node_modules", "site-packages"})
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n;#]+)", re.MULTILINE)
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n;#]*)", re.MULTILINE)
_NAME = re.compile(r"[\w.]+")



def project_root(path: str, index: ProjectIndex) -> tuple[str, bool]:
    """(the folder to look in, whether it is a marked project root). Without a marker (a script in a
    home folder), only the top package's folder and the packages below it: not every folder below."""
    roots = index.search_roots(path)
    marked = next((r for r in roots if any(os.path.exists(os.path.join(r, m)) for m in _ROOT_MARKERS)), None)
    return (marked, True) if marked is not None else (roots[0], False)


def importers(view: ProjectView) -> tuple[str, ...] | None:
    """The project files that import the checked file (`view.path`); None when the project is too big to
    list. Each one found is recorded in `view.used` and `view.observed`, so a cached result is checked
    again when it changes."""
    path = view.path
    files = _project(view.index, *project_root(path, view.index))
    if files is None:
        return None
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        stem = os.path.basename(os.path.dirname(path))
    resolver = ProjectView(path, view.vocabulary, view.index)  # its `used` is not the checked file's
    found = []
    for candidate, names in files:
        if candidate != path and any(
            stem in name.lstrip(".").split(".") and _resolves_to(resolver, name, candidate, path)
            for name in names
        ):
            found.append(candidate)
    for importer in found:
        data = _read(importer)
        if data is not None:
            view.used[importer] = view.observed[f"{depends.READ}:{importer}"] = digest(data)
    return tuple(found)


def _resolves_to(resolver: ProjectView, name: str, origin: str, target: str) -> bool:
    level = len(name) - len(name.lstrip("."))
    parts = [p for p in name[level:].split(".") if p]
    for k in range(0 if level else 1, len(parts) + 1):
        ref = resolver.resolve(name[:level] + ".".join(parts[:k]), origin)
        if getattr(ref, "path", None) == target:
            return True
    return False


def _project(index: ProjectIndex, root: str, marked: bool):
    listings = index.listings
    if root not in listings:
        paths: list[str] = []
        for folder, folders, names in os.walk(root):
            folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in _SKIPPED and (
                marked or os.path.isfile(os.path.join(folder, f, "__init__.py"))))
            paths += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
            if len(paths) > MAX_FILES:
                break
        listings[root] = None if len(paths) > MAX_FILES else [(p, _imported(p)) for p in paths]
    return listings[root]


def _read(path: str) -> bytes | None:
    return depends.read_regular(path, MAX_BYTES)[0]  # (never a FIFO or a device)


def _imported(path: str) -> tuple[str, ...]:
    """The dotted names `path` imports: `pkg.models`, and for `from .data import make_batch` both `.data`
    and `.data.make_batch` (a name imported from a package may be its submodule)."""
    data = _read(path)
    if data is None or b"import" not in data:
        return ()
    text = data.decode("utf-8", "replace")
    names: list[str] = []
    for match in _IMPORT.finditer(text):
        names += [identifier(n.split()[0]) for n in match.group(1).split(",") if n.strip()]
    for match in _FROM.finditer(text):
        source = identifier(match.group(1))
        names.append(source)
        for imported in _NAME.findall(match.group(2)):  # (the `as` names too: harmless extras)
            imported = identifier(imported)
            if imported != "as":
                names.append(f"{source}{imported}" if source.endswith(".") else f"{source}.{imported}")
    return tuple(names)
