"""Where LibCST's rendering of a file is the file: one map from its positions to the text's offsets.

LibCST's positions count in the code it renders (`module.code`), and that code is not always the
file byte for byte: `except (E) :` loses its space, a last line of blanks without a newline is lost,
a form feed that starts a top-level line is dropped, one in an indentation may be dropped or
repeated on the block's other lines. An edit placed by such positions would land a few characters
off and corrupt the file. `Rendering` answers, for a position or a range of LibCST's, where it is in
the text, or None where the rendering of its lines is not the text's (unmappable): the engine makes
those fixes display-only, and the fixer refuses to write there.

A line of the rendering is *faithful* when it is the text's line of the same number, or differs from
it in form feeds only; positions on it map character for character, past the form feeds.
A line start maps to the text's line start (before such form feeds) when every line above it is
the text's line of the same number, even if not byte for byte. No LibCST here: the rendering is
handed in.
"""

from __future__ import annotations

import bisect
import re
from functools import cached_property

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
        # 1-based faithful line -> None when it is the text's line, else its columns in the text's line
        self._lines: dict[int, _Columns | None] = {}
        self._aligned = 0  # lines 1.._aligned are the text's lines of the same number (when not identical)
        if not self.identical:
            self._align(_NEWLINE.split(text), _NEWLINE.split(rendered))

    @cached_property
    def _offsets(self) -> list[int]:
        return line_offsets(self.text)

    def _align(self, original: list[str], rendered: list[str]) -> None:
        import difflib

        matcher = difflib.SequenceMatcher(a=original, b=rendered, autojunk=False)
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            if tag in ("equal", "replace") and a1 == b1 and a2 == b2:
                if self._aligned == a1:
                    self._aligned = a2
                for i in range(a1, a2):
                    if tag == "equal":
                        self._lines[i + 1] = None
                    elif original[i].replace("\f", "") == rendered[i].replace("\f", ""):
                        self._lines[i + 1] = _Columns(original[i], rendered[i])

    def faithful(self, line: int) -> bool:
        return self.identical or line in self._lines

    def span(self, start: Position, end: Position) -> tuple[int, int] | None:
        """The offsets in the text of a range of LibCST's (an insertion when start == end), or None
        when a line it touches is not faithful. A range that starts (or an insertion) goes after the
        form feeds the rendering dropped there; one that ends at the start of a line, before them."""
        if self.identical:
            return offset(self._offsets, start), offset(self._offsets, end)
        if any(line not in self._lines for line in range(start.line, end.line + 1)):
            return None
        columns = self._lines[start.line]
        first = self._offsets[start.line - 1] + (start.column if columns is None else columns.start(start.column))
        if end == start:
            return first, first
        columns = self._lines[end.line]
        return first, self._offsets[end.line - 1] + (end.column if columns is None else columns.end(end.column))

    def before(self, position: Position) -> int | None:
        """Where an insertion at `position` goes when it must precede the form feeds the rendering
        dropped there (a new statement above a line that starts with them); None when unmappable."""
        if self.identical:
            return offset(self._offsets, position)
        if position.column == 0:
            aligned = position.line - 1 <= self._aligned and position.line <= len(self._offsets)
            return self._offsets[position.line - 1] if aligned else None
        if position.line not in self._lines:
            return None
        columns = self._lines[position.line]
        return self._offsets[position.line - 1] + (position.column if columns is None else columns.end(position.column))


class _Columns:
    """Columns of a rendered line in the text's line, for two lines that differ in form feeds only:
    LibCST drops one that starts a top-level line or that only some lines of a block have in their
    indentation, and repeats one the first line of a block has on the block's other lines."""

    def __init__(self, text: str, rendered: str) -> None:
        self.rendered = rendered
        self.length = len(text)
        self.to_text: list[int] = []  # per rendered character: where it (or, for a form feed, what follows) is
        i = 0
        for char in rendered:
            if char == "\f":
                self.to_text.append(-1)
                continue
            while text[i] == "\f":
                i += 1
            self.to_text.append(i)
            i += 1
        following = len(text)
        for j in range(len(rendered) - 1, -1, -1):  # a form feed of the rendering: where the next character is
            if self.to_text[j] < 0:
                self.to_text[j] = following
            else:
                following = self.to_text[j]

    def start(self, column: int) -> int:
        """Where a range or an insertion starting before rendered column `column` starts: at that
        character, after the text's form feeds before it (an indentation keeps them)."""
        return self.to_text[column] if column < len(self.to_text) else self.length

    def end(self, column: int) -> int:
        """Where a range ending before rendered column `column` ends: right after the character before it."""
        if column == 0:
            return 0
        return self.to_text[column - 1] + (self.rendered[column - 1] != "\f")


def position_at(text: str, at: int) -> Position:
    """The position (line, column) of an offset in `text`."""
    offsets = line_offsets(text)
    line = bisect.bisect_right(offsets, at)
    return Position(line, at - offsets[line - 1])
