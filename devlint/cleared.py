"""A Python file the pre-pass clears: its result, exactly as the engine would give it, without LibCST.

Most files of a project contain nothing any selected rule could flag (devlint.candidates, from the
`ast` summary of devlint.prefilter). The engine (devlint.engine) then reports nothing for them, but
importing it loads LibCST and every selected rule (about 0.3 s): a run, or a worker process, whose
files are all cleared never pays that. Anything this module is not sure of goes to the engine, which
decides: bytes that do not decode, a file `ast` cannot read or that is too deep for it, noqa comments
when DL100 (unused-noqa) is selected, and `async` in a file being fixed (devlint.rescue).
"""

from __future__ import annotations

from devlint.candidates import any_could_match
from devlint.model import FileResult
from devlint.prefilter import TooComplex, summarise
from devlint.source import SourceError, decode


def cleared(path: str, data: bytes, config) -> FileResult | None:
    """The result of checking (or fixing) the file when no selected rule could flag it; None when
    the engine must look."""
    try:
        text = decode(data).text
    except SourceError:
        return None
    codes = config.codes_for(path)
    if "DL100" in codes and "noqa" in text.lower():
        return None  # unused `noqa` codes are reported even where no rule could match
    if config.fix and not config.add_noqa and "async" in text:
        return None  # the engine renames `async=` arguments before it checks (DL017)
    try:
        summary = summarise(text)
    except TooComplex:
        return None
    if summary is None or any_could_match(codes, summary):
        return None
    # What the engine gives a file without findings: nothing fixed, no noqa added, no dependencies.
    return FileResult(path, findings=[], original_source=text)
