"""Where LibCST's rendering of a file is the file: one map from its positions to the text's offsets.

LibCST's positions count in the code it renders (`module.code`), and that code is not always the
file byte for byte: `except (E) :` loses its space, a last line of blanks without a newline is lost,
a form feed that starts a top-level line is dropped, one in an indentation may be dropped or
repeated on the block's other lines. An edit placed by such positions would land a few characters
off and corrupt the file. `Rendering` answers, for a position or a range of LibCST's, where it is in
the text, or None where the rendering of its lines is not the text's (unmappable): the engine makes
those fixes display-only, and the fixer refuses to write there.

A line of the rendering is *faithful* when it is the text's line of the same number, or that line
without the form feeds that start it; positions on it map column for column, past those form feeds.
A line start maps to the text's line start (before such form feeds) when every line above it is
the text's line of the same number, even if not byte for byte. No LibCST here: the rendering is
handed in.
"""

from __future__ import annotations

import bisect
import re

from devlint.model import Position

_NEWLINE = re.compile(r"\r\n|\r|\n")


def line_offsets(text: str) -> list[int]:
    """Offset of the first character of each line (index 0 is line 1), with LibCST's idea of lines."""
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


def offset(offsets: list[int], position: Position) -> int:
    return offsets[position.line - 1] + position.column


class Rendering:
    """The map from positions in `rendered` (LibCST's rendering of `text`) to offsets in `text`."""

    def __init__(self, text: str, rendered: str) -> None:
        self.text = text
        self.identical = rendered == text
        self._offsets = line_offsets(text)
        # 1-based line -> form feeds the rendering dropped from its start; lines not in it are not faithful
        self._shifts: dict[int, int] = {}
        self._aligned = len(self._offsets)  # lines 1.._aligned are the text's lines of the same number
        if not self.identical:
            self._align(_NEWLINE.split(text), _NEWLINE.split(rendered))

    def _align(self, original: list[str], rendered: list[str]) -> None:
        import difflib

        self._aligned = 0
        matcher = difflib.SequenceMatcher(a=original, b=rendered, autojunk=False)
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            if tag in ("equal", "replace") and a1 == b1 and a2 == b2:
                if self._aligned == a1:
                    self._aligned = a2
                for i in range(a1, a2):
                    if tag == "equal":
                        self._shifts[i + 1] = 0
                    elif original[i].lstrip("\f") == rendered[i]:
                        # A top-level line's leading form feeds are not rendered: positions go past them.
                        self._shifts[i + 1] = len(original[i]) - len(rendered[i])

    def faithful(self, line: int) -> bool:
        return self.identical or line in self._shifts

    def span(self, start: Position, end: Position) -> tuple[int, int] | None:
        """The offsets in the text of a range of LibCST's (an insertion when start == end), or None
        when a line it touches is not faithful. A range that ends at the start of a line ends before
        the form feeds the rendering dropped there; one that starts (or an insertion) goes after them."""
        if self.identical:
            return offset(self._offsets, start), offset(self._offsets, end)
        if any(line not in self._shifts for line in range(start.line, end.line + 1)):
            return None
        first = self._offsets[start.line - 1] + self._shifts[start.line] + start.column
        if end == start:
            return first, first
        if end.column == 0:
            return first, self._offsets[end.line - 1]
        return first, self._offsets[end.line - 1] + self._shifts[end.line] + end.column

    def before(self, position: Position) -> int | None:
        """Where an insertion at `position` goes when it must precede the form feeds the rendering
        dropped there (a new statement above a line that starts with them); None when unmappable."""
        if self.identical:
            return offset(self._offsets, position)
        if position.column == 0:
            aligned = position.line - 1 <= self._aligned and position.line <= len(self._offsets)
            return self._offsets[position.line - 1] if aligned else None
        if position.line not in self._shifts:
            return None
        return self._offsets[position.line - 1] + self._shifts[position.line] + position.column


def position_at(text: str, at: int) -> Position:
    """The position (line, column) of an offset in `text`."""
    offsets = line_offsets(text)
    line = bisect.bisect_right(offsets, at)
    return Position(line, at - offsets[line - 1])
