"""Documents: what kind of file is checked, and the adapter that maps it to Python source.

The engine (devlint.engine) checks Python source and knows no other kind of file. A document of
another kind is an adapter above it: a notebook (devlint.documents.notebook) maps its code cells to
one module, calls the engine, and maps findings and fixes back to its cells. Whoever checks a file
(the runner, the command line's stdin path) asks here, which chooses by the file's kind.

Importing this package is cheap (no LibCST): a fully cached run imports it too.
"""

from __future__ import annotations

import sys

from devlint.model import FileResult

NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


def check_document(path: str, data: bytes, config) -> FileResult:
    """Check (and, with config.fix or config.add_noqa, rewrite) one file's bytes, by its kind.
    Errors are returned, never raised."""
    notebook = is_notebook(path)
    if not notebook:
        from devlint.cleared import cleared

        result = cleared(path, data, config)  # no rule could flag it: no LibCST (the usual file)
        if result is not None:
            return result
    load_checker(config)  # only when something is checked
    if notebook:
        from devlint.documents.notebook import check_notebook_file

        return check_notebook_file(path, data, config)
    from devlint.engine import check_source

    return check_source(path, data, config)


def load_checker(config) -> None:
    """Import LibCST, the engine and `config`'s rules, once, with their dataclasses' code kept
    (devlint.cst_import): the first check of an in-process run, or the parent of a run with workers
    before it forks them."""
    if "devlint.engine" in sys.modules:
        config.rules()  # (another selection's rule modules: each imported once)
        return
    from devlint import cst_import

    with cst_import.kept_code():
        import devlint.engine  # noqa: F401  (LibCST, the fixer, the analyses)

        config.rules()


def written_encoding(path: str, data: bytes) -> str:
    """The encoding a document's fixed text is written in: a notebook's JSON is UTF-8, a Python
    file keeps its own (PEP 263 cookie, BOM)."""
    if is_notebook(path):
        return "utf-8"
    from devlint.source import decode

    return decode(data).encoding
