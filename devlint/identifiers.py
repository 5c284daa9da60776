"""Identifiers as Python reads them: NFKC-normalised (`ｄｅｖｉｃｅ = "cpu"` binds `device`).

The parser normalises every identifier of the source (PEP 3131), names, attributes, keywords of calls
and imported names alike; LibCST keeps the text as written. So that every comparison devlint makes
between identifiers (scope look-ups, `name == "device"`, `attr == "cuda"`, the torch alias) sees what
Python sees, the analysis runs on a tree whose names are normalised (`normalized`), made once per
file by `FileContext`; the standard-library `ast` (pre-pass, project index) normalises already.
"""

from __future__ import annotations

import unicodedata

import libcst as cst


def identifier(text: str) -> str:
    """The identifier Python binds or reads for `text` as written."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def needs_normalizing(names) -> bool:
    """Do any of these `cst.Name` nodes differ from what Python reads?"""
    return any(not name.value.isascii() and identifier(name.value) != name.value for name in names)


class _Normalize(cst.CSTTransformer):
    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        value = identifier(updated.value)
        # A normalisation that changes the length (a ligature: `ﬁle` is `file`) would move every
        # position after it on its line, and fixes are edits by position: such a name stays as written.
        if value == updated.value or len(value) != len(updated.value):
            return updated
        return updated.with_changes(value=value)


def normalized(module: cst.Module) -> cst.Module:
    """`module` with its names normalised where that keeps every position (the same object when
    nothing changes). Rendered, it differs from the file only inside those names."""
    return module.visit(_Normalize())
