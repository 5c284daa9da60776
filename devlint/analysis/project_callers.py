"""How many calls in the project may reach one top-level function of the checked file.

devlint.analysis.project_calls matches calls by the last name alone: every `extract_features(...)` of
the project counts as a call of `extract_features`, whichever file defines the function called. For
devlint.analysis.guarded_callers ("every call of this function is guarded") that is too many: in

    # eval_knn.py                          # eval_image_retrieval.py
    def extract_features(model, loader):   from eval_knn import extract_features
        ...                                extract_features(model, loader)

neither file can call the `extract_features` of a third file, eval_copy_detection.py. A bare call
`name(...)` in another file reaches the checked file's function only through a binding of `name` in
that file; it is left out when every binding of the name there is provably another function:

- a `def` (or `class`) of that file;
- `from <module> import name` (no renaming), where `<module>` is not the checked module's name and every
  project file of that module name binds `name` by its own `def` alone (it does not import it again).

A file with a star import or a `globals()`/`exec`-style call may bind any name: its calls count. So does
every `obj.name(...)` call (any object may be the checked module), every computed `getattr` call that
project_calls counts, and every call in the checked file itself. The files read are the ones
project_calls reads, each recorded in the view's observations, so a cached result is checked again
when any of them changes (a new caller, or a module that now re-exports the function).
"""

from __future__ import annotations

import os

from devlint import depends
from devlint.analysis.project_calls import _DYNAMIC_WORDS, _memo_summary, _project_files, _summarise_shared, _words


def reaching_calls(name: str, own_code: str, view, module: str) -> dict | None:
    """The calls of `name` in the project that may call the top-level function `name` of the checked
    module (file stem `module`), by file (None for the checked file; files without one left out), or
    None when that cannot be known."""
    index = view.index if view is not None else None
    own = _memo_summary(index, "own:" + depends.digest(own_code.encode("utf-8", "surrogatepass")), own_code)
    if own is None:
        return None
    total = {None: len(own.uses(name, module).calls)}
    if view is None:
        return total
    files = _project_files(view)
    if files is None:
        return None
    summaries = {}
    needed = {}  # path -> (its digest, the bytes of that digest)
    for path in files:
        if path == view.path:
            continue
        observed, words = _words(view.index, path)
        view.observed[f"{depends.READ}:{path}"] = observed
        if words is None:
            return None
        if name not in words and not words & _DYNAMIC_WORDS:
            summaries[path] = None  # (no call of the name, nor a binding of it)
            continue
        summaries[path] = needed[path] = (observed, words.data)
    _summarise_shared(index, list(needed.values()))  # (each summary computed by one of the run's workers)
    for path, (observed, data) in needed.items():
        summaries[path] = _memo_summary(index, observed, data)
        if summaries[path] is None:
            return None  # (does not parse)
    for path, summary in summaries.items():
        if summary is None:
            continue
        calls = len(summary.uses(name, module).calls)
        if calls and _bare_calls_foreign(summary, name, module, summaries):
            calls -= summary.bare_calls.get(name, 0)
        if calls:
            total[path] = calls
    return total


def _bare_calls_foreign(summary, name: str, module: str, summaries: dict) -> bool:
    """Is every binding of `name` in this file provably not the checked module's function?"""
    if summary.opaque or not summary.binders.get(name):
        return False
    for how in summary.binders[name]:
        if how == "def":
            continue
        source = how[len("from:"):] if how.startswith("from:") else None
        if source is None or not source.strip("."):
            return False  # (anything else, or `from . import name`: may be anything)
        stem = source.strip(".").split(".")[-1]
        if stem == module:
            return False
        origins = [s for p, s in summaries.items() if _stem(p) == stem]
        if not origins or any(s is None or s.opaque or s.binders.get(name) != frozenset({"def"}) for s in origins):
            return False  # (not a project module, or one that may re-export the checked function)
    return True


def _stem(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(path)) if stem == "__init__" else stem
