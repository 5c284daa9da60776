"""Does a class move anything to a device? (read with `ast` for the project index, devlint.analysis.project)

An instance of a class none of whose methods calls `.cuda()`, `.to(...)` or a `to`-like move, passes
`device=` or `map_location=`, or loads a file, holds only what it was given and what it built on the CPU:
saved with `torch.save`, given CPU arguments, it is CPU data (devlint.analysis.origins).
"""

from __future__ import annotations

import ast

MOVING_METHODS = frozenset({"cuda", "to", "to_empty", "xpu", "mps", "npu", "ipu", "hpu", "pin_memory"})
ALLOWED_BASES = frozenset({"object", "torch.nn.Module", "torch.nn.modules.module.Module", "torch.utils.data.Dataset",
                           "torch.utils.data.dataset.Dataset", "dict", "list", "typing.NamedTuple",
                           "abc.ABC", "typing.Generic"})


def allowed_base(qualified: str) -> bool:
    """An outside base that moves nothing itself: `object`, `nn.Module` and its layers (not DataParallel)."""
    if qualified in ALLOWED_BASES:
        return True
    return qualified.startswith("torch.nn.") and "Parallel" not in qualified and qualified[9:10].isupper()


def class_moves(cls: ast.ClassDef) -> bool:
    """Does any method of the class move, place or load something (see the module docstring)?"""
    if cls.keywords:
        return True  # (a metaclass may do anything)
    for node in ast.walk(cls):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in MOVING_METHODS or name == "load" or any(k.arg in ("device", "map_location") for k in node.keywords):
            return True
    return False
