"""Every output format by its name: text and json (devlint.report), the formats for CI and people
(devlint.formats: full, json-lines, github, gitlab, junit, sarif).

It sits above both (`formats` builds on `report`; neither imports this module). The CI formats are
imported only when one is asked for.
"""

from __future__ import annotations

from devlint.model import FileResult
from devlint.report import render_json, render_text

OUTPUT_FORMATS = ("text", "json", "full", "json-lines", "github", "gitlab", "junit", "sarif")


def render(fmt: str, results: list[FileResult], *, fixing: bool, unsafe_fixes: bool, other_errors: int = 0,
           other_warnings: int = 0, color: bool = False, show_fixes: bool = False, summary: bool = True,
           hyperlinks: bool = False) -> str:
    """`other_errors` / `other_warnings`: see render_text (they shape the summary of text and full).
    `show_fixes` adds the `Fixed N errors:` block to text (other formats: the caller prints it on stderr).
    `summary=False` (`-q`) drops the summary of text and full; `hyperlinks` (with `color`) makes each code
    of text a terminal hyperlink to the rule's page."""
    if fmt == "json":
        return render_json(results)
    if fmt == "text":
        return render_text(results, fixing=fixing, unsafe_fixes=unsafe_fixes, other_errors=other_errors,
                           other_warnings=other_warnings, color=color, show_fixes=show_fixes, summary=summary,
                           hyperlinks=hyperlinks)
    from devlint import formats  # the CI formats: full, json-lines, github, gitlab, junit, sarif

    if fmt == "full":
        return formats.render_full(results, other_errors=other_errors, other_warnings=other_warnings,
                                   summary=summary)
    return formats.render(fmt, results)
