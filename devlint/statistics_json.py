"""`--statistics --output-format json`: ruff's shape, one object per rule.

`[{"code": "DL001", "name": "cuda-call", "count": 3, "fixable": true, "fixable_count": 2}, ...]`, in the
order of the text statistics (by code). "Fixable" means what `[*]` means there: a safe fix that `--fix`
applies. No findings print `[]` (ruff prints nothing; an empty document would not parse).
"""

from __future__ import annotations

import json

from devlint.model import Applicability, FileResult
from devlint.report import _applicable

# What --statistics can print, as ruff: the text table (for text and full) or this JSON.
STATISTICS_FORMATS = ("text", "full", "json")


def render_statistics_json(results: list[FileResult]) -> str:
    counts: dict[tuple[str, str], list[int]] = {}
    for result in results:
        for finding in result.findings:
            entry = counts.setdefault((finding.code, finding.name), [0, 0])
            entry[0] += 1
            entry[1] += _applicable(finding, Applicability.SAFE)
    rows = [{"code": code, "name": name, "count": count, "fixable": fixable > 0, "fixable_count": fixable}
            for (code, name), (count, fixable) in sorted(counts.items())]
    return json.dumps(rows, indent=2) + "\n"
