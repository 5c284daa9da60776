"""Is a `torch.load` reading data (a vocabulary, a cache, an expected output, a dataset's items) rather than
a checkpoint? DL002 writes `map_location="cpu"` for data, which is used where it is loaded, and the
run's device for a checkpoint."""

from __future__ import annotations

import re

import libcst as cst

from devlint.facts import FileFacts
from devlint.syntax import dotted_name, find_arg, last_component, name_words, string_value

DATA_WORDS = frozenset({"vocab", "vocabulary", "voc", "cache", "cached", "data", "dataset", "feature", "features",
                        "feats", "sample", "samples", "label", "labels", "target", "targets", "token", "tokens",
                        "tokenizer", "dictionary", "examples", "example", "expected", "reference", "golden", "stats",
                        "statistics", "mean", "std", "vectors", "splits", "image", "images", "mask", "masks"})


def names_data(ctx: FileFacts, call: cst.Call) -> bool:
    """Do the names the load is assigned to, or its path, say it holds data (DATA_WORDS)?"""
    words: set[str] = set()
    parent = ctx.parent(call)
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        for target in targets:
            last = last_component(target)
            if last:
                words.update(name_words(last))
    path = find_arg(call, "f", 0)
    if path is not None:
        text = string_value(path.value)
        last = last_component(path.value)
        for part in re.split(r"[^A-Za-z0-9]+", text or last or ""):
            words.update(name_words(part))
    return bool(words & DATA_WORDS)


def in_dataset(ctx: FileFacts, call: cst.Call) -> bool:
    """Data loading code (a Dataset class, `__getitem__`) hands CPU tensors to DataLoader workers."""
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef) and ancestor.name.value in ("__getitem__", "__iter__", "__len__"):
            return True
        if isinstance(ancestor, cst.ClassDef) and any(
            (dotted_name(base.value) or "").endswith("Dataset") for base in ancestor.bases
        ):
            return True
    return False
