"""Are the calls of a function in another file of the project all guarded there?

devlint.analysis.guarded_callers asks it for a top-level function that other files call: DINO's
`eval_knn.extract_features` is also imported and called by eval_image_retrieval.py, after that
script's own refusal to run without a GPU (`utils.init_distributed_mode(args)`). Each such file is
parsed and asked, with its own project view, whether every call of the name there (`name(...)` or
`obj.name(...)`) is guarded by devlint.analysis.guards; the number of calls found must be the number
devlint.analysis.project_callers counted (a computed `getattr` call cannot be placed: no).

Bounded, to stay cheap: at most MAX_FILES other files, and never from inside another file's analysis
(a caller's caller in a third file is not followed: no). Each file's answer is kept for the run (the
project index's life) by its content and the name, with everything the answer rested on (the files
its own questions read), which is added to the checked file's observations (devlint.depends): a
cached result is checked again when the calling file, or anything its guards read, changes.
"""

from __future__ import annotations

import libcst as cst

from devlint.parsing import parse_module


MAX_FILES = 4
_ACTIVE: list[str] = []


def guarded_in(view, calls: dict[str, int], name: str, guards_of) -> bool:
    """`calls`: path -> how many calls of `name` that file makes (devlint.analysis.project_callers);
    `guards_of`: devlint.analysis.guards.guards_of, passed in (guards asks this module, indirectly)."""
    if view is None or _ACTIVE or len(calls) > MAX_FILES:
        return False
    return all(_file_guarded(view, path, count, name, guards_of) for path, count in calls.items())


def _file_guarded(view, path: str, count: int, name: str, guards_of) -> bool:
    data, observed = view.read(path)
    if data is None:
        return False
    # kept for the index's life (one run): the answer rests on other files too, read once per run
    memo = view.index.__dict__.setdefault("_guarded_elsewhere", {})
    key = (path, observed, name, count)
    if key not in memo:
        _ACTIVE.append(path)
        try:
            memo[key] = _analyse(view, path, data, count, name, guards_of)
        finally:
            _ACTIVE.pop()
    guarded, observations, used = memo[key]
    view.observed.update(observations)
    view.used.update(used)
    return guarded


def _analyse(view, path: str, data: bytes, count: int, name: str, guards_of) -> tuple[bool, dict, dict]:
    from devlint.analysis.project import ProjectView
    from devlint.facts import FileFacts

    try:
        text = data.decode("utf-8")
        module = parse_module(text)
    except Exception:  # noqa: BLE001  (a file devlint cannot read places nothing)
        return False, {}, {}
    sub = ProjectView(path, view.vocabulary, view.index)
    ctx = FileFacts(module, project=sub, text=text)
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == name
             or isinstance(c.func, cst.Attribute) and c.func.attr.value == name]
    guards = guards_of(ctx)
    guarded = len(calls) == count and all(guards.is_guarded(c) for c in calls)
    return guarded, dict(sub.observed), dict(sub.used)
