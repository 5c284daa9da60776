"""Files that this very run wrote before loading them (DL002).

A `torch.load` without `map_location` fails only where the file names a device the machine lacks.
Two shapes rule that out without knowing what was saved:

- **a round trip**: a `torch.save(X, P)` (or `torch.jit.save`) of the same path runs before the load
  on every path through its scope: it is an earlier statement of a block that holds the load (not in
  a branch that may be skipped, not in a loop body the load is after), in the same function or module
  body; or a save that the first turn of a counted loop before the load makes, every turn or as the
  best so far (devlint.analysis.best_so_far: `if score > best:` with `best` starting at `-math.inf`).
  The file was written by this process, so every device its tensors name exists here. "The same
  path" is devlint.analysis.origins' `path_key`: the same literal, the same single binding of a name, or
  the same expression of those; a name bound twice (re-bound between) has no key.
- **a cache of the same function**: every writer of the path is a `torch.save` in the function that
  loads it, of CPU data (`_origins.host_value`) or of a tokenizer's `return_tensors="pt"` output
  never moved (tokenizers build their tensors on the CPU): the file can only come from an earlier
  run of this code, which saved CPU data (`if os.path.exists(f): return torch.load(f)` ... `torch.save(ids, f)`).

- **a path parameter** that every call of its function fills with such a file, or one of CPU data
  (devlint.analysis.param_paths): `load_checkpoint("m.pt")` after `torch.save(state, "m.pt")`.

- **a folder created empty this run** (devlint.analysis.fresh_folders): `tmp_path / "m.pt"`, a file in a
  `tempfile.TemporaryDirectory()`: whatever wrote it ran here.

Either way a call that may bring the file from elsewhere (`shutil.copy(src, P)`, `download(url, P)`,
`open(P, "wb")`: a writer by `_origins`' judgement that is not a torch save) keeps the finding.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts
from devlint.analysis.best_so_far import first_turn_saves
from devlint.analysis.fresh_folders import in_fresh_folder
from devlint.analysis.origins import SAVERS, _calls_with, _verdict, host_value, path_key
from devlint.syntax import find_arg

_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# Methods that move a tokenizer's output (a BatchEncoding moves in place and returns itself).
_MOVES = frozenset({"to", "cuda", "xpu", "mps", "npu", "hpu", "ipu"})


def written_by_this_run(ctx: FileFacts, load: cst.Call, path: cst.CSTNode) -> bool:
    """Was the file `load` reads (at `path`) written earlier by this run: a round trip, or a cache of CPU
    data kept by the same function, or inside a folder created empty this run?"""
    if in_fresh_folder(ctx, path):
        return True
    key = path_key(ctx, path)
    if key is None:
        return False
    uses = [(call, arg) for call, arg in _calls_with(ctx, key) if call is not load]
    savers, others = [], []
    for call, arg in uses:
        if _verdict(ctx, call, arg) is None:
            continue  # (a load, `os.path.exists(p)`, `print(p)`)
        (savers if arg is not None and ctx.qualified_names(call.func) & SAVERS
         and find_arg(call, "f", 1) is arg else others).append(call)
    if others:
        return False
    if not savers:
        return _every_call_wrote(ctx, key)
    if any(_dominates(ctx, save, load) or first_turn_saves(ctx, save, load) for save in savers):
        return True
    function = ctx.enclosing(load, _SCOPES)
    return isinstance(function, cst.FunctionDef) and all(
        ctx.enclosing(save, _SCOPES) is function and _cpu_saved(ctx, save) for save in savers)


def _every_call_wrote(ctx: FileFacts, key) -> bool:
    """A path parameter that every call of its function fills with a file this run wrote before the call,
    or one of CPU data (devlint.analysis.param_paths)."""
    if key[0] != "binding" or not isinstance(key[1], cst.Param):
        return False
    from devlint.analysis.origins import written_on_cpu
    from devlint.analysis.param_paths import every_call_gives

    return every_call_gives(ctx, key[1], lambda call, value: written_by_this_run(ctx, call, value)
                            or written_on_cpu(ctx, value), "written by this run")


def _dominates(ctx: FileFacts, save: cst.Call, load: cst.Call) -> bool:
    """Does the statement `save(...)` run before `load` on every path: an earlier statement of a block
    that holds the load, with no function or class boundary between?"""
    statement = ctx.parent(save)
    if not isinstance(statement, cst.Expr) or statement.value is not save:
        return False
    line = ctx.parent(statement)
    if not isinstance(line, cst.SimpleStatementLine):
        return False
    block = ctx.parent(line)
    body = list(getattr(block, "body", ()))
    index = next((i for i, s in enumerate(body) if s is line), None)
    if index is None:
        return False
    child = load
    for ancestor in ctx.ancestors(load):
        if ancestor is block:
            later = next((i for i, s in enumerate(body) if s is child), None)
            return later is not None and later > index
        if isinstance(ancestor, _SCOPES):
            return False  # (a function body runs when called, maybe before the save or never)
        child = ancestor
    return False


def _cpu_saved(ctx: FileFacts, save: cst.Call) -> bool:
    obj = find_arg(save, "obj", 0)
    return obj is not None and (host_value(ctx, obj.value) or _tokenizer_output(ctx, obj.value))


def _tokenizer_output(ctx: FileFacts, expr: cst.CSTNode) -> bool:
    """`tokenizer(texts, return_tensors="pt")` (or an item of it, `["input_ids"]`, `.input_ids`), directly
    or through a name bound once to it that is never moved."""
    if isinstance(expr, cst.Subscript):
        return _tokenizer_output(ctx, expr.value)
    if isinstance(expr, cst.Attribute) and expr.attr.value not in _MOVES:
        return _tokenizer_output(ctx, expr.value)
    if isinstance(expr, cst.Call):
        tensors = find_arg(expr, "return_tensors", None)
        return tensors is not None and tensors.value.__class__ is cst.SimpleString and tensors.value.evaluated_value == "pt"
    if isinstance(expr, cst.Name):
        assignments = ctx.bindings(expr)
        if len(assignments) != 1:
            return False
        value = ctx.assigned_value(assignments[0].node)
        if value is None or not _tokenizer_output(ctx, value):
            return False
        for access in assignments[0].references:
            parent = ctx.parent(access.node)
            if isinstance(parent, cst.Attribute) and parent.value is access.node and parent.attr.value in _MOVES:
                return False  # moved (in place, for a BatchEncoding)
        return True
    return False
