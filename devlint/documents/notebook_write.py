"""Writing a notebook back: the new sources of the changed code cells spliced into the notebook's text.

Only the `source` values of the changed cells are replaced, in the layout the other sources have
(indent, ASCII escapes, line endings), so outputs, metadata, key order and everything else keep
their bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from devlint.notebook_json import source_text

_WHITESPACE = re.compile(r"[ \t\n\r]*")


class Unwritable(Exception):
    """A fix cannot be written back into the notebook as it is; the message says why."""


@dataclass(frozen=True)
class _Span:
    key: int  # offset of the "source" key
    start: int  # offset of its value
    end: int


def source_spans(text: str) -> list[_Span | None]:
    """Where each cell's "source" value is in the notebook's text (the last one, as json.loads keeps)."""
    decoder = json.JSONDecoder()
    spans: list[_Span | None] = []

    def skip(i: int) -> int:
        return _WHITESPACE.match(text, i).end()

    def expect(i: int, char: str) -> int:
        if text[i:i + 1] != char:
            raise ValueError(f"expected {char!r} at offset {i}")
        return i + 1

    def value_end(i: int) -> int:
        return decoder.raw_decode(text, i)[1]

    def walk_object(i: int, visit) -> int:
        """visit(key, key offset, value offset) returns the value's end; the offset after the `}`."""
        i = skip(expect(skip(i), "{"))
        if text[i:i + 1] == "}":
            return i + 1
        while True:
            key_at = i
            key, i = json.decoder.scanstring(text, expect(i, '"'))
            i = skip(visit(key, key_at, skip(expect(skip(i), ":"))))
            if text[i:i + 1] != ",":
                return expect(i, "}")
            i = skip(i + 1)

    def visit_cell(found: list):
        def visit(key: str, key_at: int, i: int) -> int:
            end = value_end(i)
            if key == "source":
                found[0] = _Span(key_at, i, end)
            return end
        return visit

    def visit_top(key: str, key_at: int, i: int) -> int:
        if key != "cells":
            return value_end(i)
        spans.clear()
        i = skip(expect(i, "["))
        if text[i:i + 1] == "]":
            return i + 1
        while True:
            found: list = [None]
            i = walk_object(i, visit_cell(found)) if text[i:i + 1] == "{" else value_end(i)
            spans.append(found[0])
            i = skip(i)
            if text[i:i + 1] != ",":
                return expect(i, "]")
            i = skip(i + 1)

    try:
        walk_object(1 if text.startswith("\ufeff") else 0, visit_top)
    except (ValueError, IndexError) as exc:
        raise Unwritable(f"cannot locate the cell sources ({exc})") from None
    return spans


# A layout: (indent, item separator, ensure_ascii, newline). The first is what nbformat writes.
_INDENTS = (1, 2, 4, 3, "\t")


def _layouts(newline: str):
    for ensure_ascii in (False, True):
        for indent in _INDENTS:
            yield indent, ",", ensure_ascii, newline
        yield None, ", ", ensure_ascii, newline
        yield None, ",", ensure_ascii, newline


def _render(value, layout, base: str) -> str:
    indent, separator, ensure_ascii, newline = layout
    out = json.dumps(value, indent=indent, separators=(separator, ": "), ensure_ascii=ensure_ascii)
    return out.replace("\n", newline + base) if indent is not None else out


def _base_indent(text: str, key: int) -> str:
    line_start = max(text.rfind("\n", 0, key), text.rfind("\r", 0, key)) + 1
    prefix = text[line_start:key]
    return prefix if not prefix.strip(" \t") else ""


def _source_lines(text: str) -> list[str]:
    """A source as nbformat stores it: lines with their newlines."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def splice_sources(text: str, notebook: dict, sources: dict[int, str]) -> str:
    """The notebook's text with the changed cell sources replaced, in the layout of its other sources."""
    cells = notebook["cells"]
    changed = {i: s for i, s in sources.items() if s != source_text(cells[i])}
    if not changed:
        return text
    spans = source_spans(text)
    if len(spans) != len(cells) or any(spans[i] is None for i in changed):
        raise Unwritable("cannot locate the cell sources")
    newline = "\r\n" if "\r\n" in text else "\n"
    best, best_score = None, -1
    for layout in _layouts(newline):
        score = sum(_render(cell["source"], layout, _base_indent(text, span.key)) == text[span.start:span.end]
                    for cell, span in zip(cells, spans) if span is not None)
        if score > best_score:
            best, best_score = layout, score
    pieces = []
    cursor = 0
    for index in sorted(changed):
        span = spans[index]
        value = _source_lines(changed[index]) if isinstance(cells[index]["source"], list) else changed[index]
        pieces.append(text[cursor:span.start])
        pieces.append(_render(value, best, _base_indent(text, span.key)))
        cursor = span.end
    pieces.append(text[cursor:])
    return "".join(pieces)
