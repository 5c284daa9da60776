"""A notebook's JSON without LibCST: reading and validating nbformat 4, and a cell's source.

Kept apart from `devlint.notebook` so that reporting a cached notebook finding (quoting its cell in the
`full` and `gitlab` formats) does not import LibCST.
"""

from __future__ import annotations

import json
from functools import lru_cache


class InvalidNotebook(Exception):
    pass


def load(data: bytes) -> tuple[str, dict]:
    """The notebook's text and its JSON, or InvalidNotebook saying why it is not an nbformat 4 notebook."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidNotebook(f"not UTF-8: invalid byte {data[exc.start:exc.start + 1]!r} at offset {exc.start}") \
            from None
    try:
        notebook = json.loads(text.removeprefix("\ufeff"))
    except ValueError as exc:
        raise InvalidNotebook(str(exc)) from None
    except RecursionError:
        raise InvalidNotebook("too deeply nested") from None
    if not isinstance(notebook, dict):
        raise InvalidNotebook(f"the top level is a JSON {type(notebook).__name__}, not an object")
    if notebook.get("nbformat") != 4:
        if "nbformat" not in notebook:
            raise InvalidNotebook("not a Jupyter notebook (no 'nbformat' key)")
        raise InvalidNotebook(f"nbformat {notebook['nbformat']!r} is not supported (only nbformat 4)")
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise InvalidNotebook("no 'cells' list")
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise InvalidNotebook(f"cell {number} is not an object")
        source = cell.get("source")
        if not (isinstance(source, str) or isinstance(source, list) and all(isinstance(s, str) for s in source)):
            raise InvalidNotebook(f"cell {number} has no source (a string or a list of strings)")
    return text, notebook


def source_text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def cell_source(notebook_text: str, cell: int) -> str | None:
    """The source of a cell (1-based, among all cells) of a notebook's text: for quoting a finding."""
    sources = _cell_sources(notebook_text)
    return sources[cell - 1] if sources is not None and 1 <= cell <= len(sources) else None


@lru_cache(maxsize=4)  # a report quotes many findings of the same notebook
def _cell_sources(notebook_text: str) -> tuple[str, ...] | None:
    try:
        return tuple(source_text(c) for c in load(notebook_text.encode("utf-8"))[1]["cells"])
    except InvalidNotebook:
        return None
