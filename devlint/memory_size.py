"""Memory sizes as people write them ('24GiB', '16 GB'): for `devlint run --memory` and the virtual GPU,
which both read them (no torch here)."""

from __future__ import annotations

import re


def parse_memory(text: str) -> int | None:
    """Bytes of a size such as '24GiB' or '16GB', None when it is not one (no torch import)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    units = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
             "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
    if m is None or m.group(2).lower() not in units:
        return None
    return int(float(m.group(1)) * units[m.group(2).lower()])
