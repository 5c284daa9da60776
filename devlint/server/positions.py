"""devlint's positions (1-based lines, 0-based columns in characters) to the client's and back.

LSP columns count UTF-16 code units unless the client negotiated UTF-8 or UTF-32; lines end at
`\\r\\n`, `\\r` or `\\n`, as devlint's. Also: a whole new text as the few edits that make it.
"""

from __future__ import annotations

import difflib
import re

from lsprotocol import types

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """The lines with their ends; a text ending in a newline has an empty last line (as editors show)."""
    lines = _LINE.findall(text)
    if not lines or lines[-1].endswith(("\n", "\r")):
        lines.append("")
    return lines


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def _units(chars: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf32:
        return len(chars)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(chars.encode("utf-8", "surrogatepass"))
    return len(chars) + sum(1 for c in chars if ord(c) > 0xFFFF)


class Lines:
    """One version of a document's text, for converting positions."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.text = text
        self.lines = split_lines(text)
        self.encoding = encoding

    def to_client(self, line: int, column: int) -> types.Position:
        """devlint's (1-based line, 0-based character column) as an LSP position."""
        index = min(max(line - 1, 0), len(self.lines) - 1)
        content = _content(self.lines[index])
        return types.Position(index, _units(content[: max(column, 0)], self.encoding))

    def from_client(self, position: types.Position) -> tuple[int, int]:
        """An LSP position as devlint's (1-based line, 0-based character column)."""
        index = min(max(position.line, 0), len(self.lines) - 1)
        content = _content(self.lines[index])
        units = 0
        for column, char in enumerate(content):
            if units >= position.character:
                return index + 1, column
            units += _units(char, self.encoding)
        return index + 1, len(content)

    def line_end(self, line: int) -> types.Position:
        return self.to_client(line, len(_content(self.lines[min(max(line - 1, 0), len(self.lines) - 1)])))

    def edits_to(self, new_text: str) -> list[types.TextEdit]:
        """Line-level edits that turn this text into `new_text` (a fix that also defines the device at
        the top of the file is two small edits, not one over the whole file)."""
        old, new = self.lines, split_lines(new_text)
        edits = []
        matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            start = types.Position(a1, 0)
            # Up to the start of line a2; the last line (no newline after it) is replaced to its end.
            end = types.Position(a2, 0) if a2 < len(old) else self.line_end(len(old))
            edits.append(types.TextEdit(types.Range(start, end), "".join(new[b1:b2])))
        return edits

