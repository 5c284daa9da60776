"""Fingerprints that let code scanning match a finding from one run to the next (SARIF's
`partialFingerprints`).

Built from the rule, the file's path and the text of the finding's first line (stripped), never
from the line number: a finding keeps its fingerprint when code above it is added or removed, so a
dismissed alert stays dismissed. The message is left out too, so that a reworded message in a new
devlint does not reopen every alert. Two findings with the same rule, file and line text (the same
statement twice) are told apart by their order of appearance.

GitHub reserves the key `primaryLocationLineHash` (its upload action computes it and warns when a
tool's value differs): devlint's has its own key, versioned so that a change of recipe can never
be mistaken for the old one.
"""

from __future__ import annotations

import hashlib

KEY = "devlint/v1"


def fingerprints(items) -> list[str]:
    """One hex digest per (path, code, line text) of `items`, in order."""
    seen: dict[str, int] = {}
    digests = []
    for path, code, text in items:
        material = "\0".join((path.replace("\\", "/"), code, text.strip()))
        base = hashlib.sha256(material.encode("utf-8", "surrogateescape")).hexdigest()
        seen[base] = seen.get(base, 0) + 1
        if seen[base] > 1:  # the same statement again: its rank keeps the two apart
            base = hashlib.sha256(f"{base}\0{seen[base]}".encode()).hexdigest()
        digests.append(base)
    return digests
