"""The server's one door into devlint: every engine, settings and documentation call goes through here
(a refactor that moves those modules repoints these imports only). No pygls here, no disk writes.

A document is checked as `devlint` checks its file (check_source: the same rules, syntax errors,
rescue of `async=`, notebooks), from the editor's text, never the disk's.
"""

from __future__ import annotations

import io
import json
import tokenize
from dataclasses import dataclass, field, replace

from devlint.options import config_for  # noqa: F401 (re-exported: the Config `devlint FILE` uses, or ConfigError)
from devlint.config import Config, ConfigError  # noqa: F401 (re-exported for the server)
from devlint.docs import rule_url  # noqa: F401 (re-exported)
from devlint.documents import check_document as check_source
from devlint.engine import apply_fix, insert_noqa, noqa_line, project_view
from devlint.model import Applicability, FileError, Finding  # noqa: F401 (re-exported)
from devlint.notebook_json import source_text
from devlint.analysis.project import forget_probes, set_buffer  # noqa: F401 (re-exported)

UNUSED_NOQA = "DL100"  # shown faded (the Unnecessary tag), as ruff shows its unused noqa


@dataclass
class Outcome:
    """What checking one version of a document found."""

    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None  # a syntax error (or another reason the text was not checked)
    notice: str | None = None  # checked in part, or skipped
    depends_on: frozenset = frozenset()  # other files whose contents the findings rest on


def check(path: str, text: str, config: Config) -> Outcome:
    return _checked(path, source_bytes(text), config)


def _checked(path: str, data: bytes, config: Config) -> Outcome:
    if len(data) > config.max_file_size:  # as `devlint` skips it (runner): a notice, no findings
        return Outcome(notice=f"skipped: {len(data)} bytes, over the size limit ({config.max_file_size}; "
                              "see max-file-size)")
    result = check_source(path, data, replace(config, fix=False, add_noqa=False))
    return Outcome(result.findings, result.error, result.notice, _paths(result.dependencies))


def fix_all(path: str, text: str, config: Config) -> str | None:
    """The text `devlint --fix` writes for this one (safe fixes only, the same passes); None when
    nothing changes or the text cannot be fixed (a syntax error)."""
    result = check_source(path, source_bytes(text), replace(config, fix=True, unsafe_fixes=False, add_noqa=False))
    if result.error is not None or result.fixed_source is None:
        return None
    return result.fixed_source


def fix_one(path: str, text: str, finding: Finding, config: Config) -> str | None:
    """The text with one finding's fix (safe or unsafe) applied; None when it changes nothing."""
    if finding.fix is None or not finding.fix.edits or finding.fix.applicability is Applicability.DISPLAY_ONLY:
        return None
    try:
        updated = apply_fix(text, finding, config, project_view(path))
    except Exception:  # a fix that cannot be applied is not offered; the diagnostic stays
        return None
    return updated if updated is not None and updated != text else None


def disable_line(text: str, finding: Finding) -> str:
    """The text with `# noqa: CODE` for this finding, as `--add-noqa` writes it."""
    return insert_noqa(text, {noqa_line(finding): {finding.code}})


def rule_documentation(code: str) -> str | None:
    """`devlint rule CODE`'s text (Markdown), or None for an unknown code."""
    from devlint.rules import RULES_BY_CODE  # imports the rules: only when a hover asks

    rule = RULES_BY_CODE.get(code.upper())
    if rule is None:
        return None
    link = f"[{rule.code} on the web]({rule_url(rule.code)})"
    return f"# {rule.code} {rule.name}\n\n{rule.documentation().strip()}\n\n{link}"


def noqa_span(text: str, line: int) -> tuple[int, int] | None:
    """(start, end) columns of the `# noqa` directive on a 1-based line, if there is one."""
    from devlint.suppressions import parse

    directive = parse(text).lines.get(line)
    return None if directive is None else (directive.start, directive.end)


def source_bytes(text: str) -> bytes:
    """The bytes the editor would save: the encoding the file declares (PEP 263), else UTF-8, so that
    the engine decodes exactly this text."""
    data = text.encode("utf-8", "surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return data
    if encoding in ("utf-8", "utf-8-sig"):
        return data
    try:
        return text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return data  # the engine reports what cannot be decoded


# -- notebooks ---------------------------------------------------------------------------------------------
def notebook_bytes(cells: list[tuple[bool, str]]) -> bytes:
    """An nbformat 4 notebook of (is code, source) cells: what check_source reads for an .ipynb."""
    notebook = {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"language_info": {"name": "python"}},
        "cells": [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
                  if code else {"cell_type": "markdown", "metadata": {}, "source": source}
                  for code, source in cells],
    }
    return json.dumps(notebook).encode("utf-8")


def check_notebook(path: str, cells: list[tuple[bool, str]], config: Config) -> Outcome:
    """Findings carry their cell (1-based among all cells) and lines within it."""
    return _checked(path, notebook_bytes(cells), config)


def fix_notebook(path: str, cells: list[tuple[bool, str]], config: Config) -> list[str] | None:
    """Each cell's source after `devlint --fix`; None when nothing changes."""
    result = check_source(path, notebook_bytes(cells), replace(config, fix=True, unsafe_fixes=False, add_noqa=False))
    if result.error is not None or result.fixed_source is None:
        return None
    return [source_text(cell) for cell in json.loads(result.fixed_source)["cells"]]


def _paths(dependencies: dict[str, str]) -> frozenset:
    """The paths of a result's dependencies (`KIND:PATH` keys, devlint.depends)."""
    return frozenset(key.split(":", 1)[1] for key in dependencies if ":" in key)
