"""Which identifiers a project file mentions, as Python reads them, asked one name at a time.

devlint.analysis.project_calls skips a file that mentions neither the name asked about nor a word of
reflection (`getattr`, `vars`, ...). It used to build the set of every identifier of every project
file (a regular expression over all of their text) in each worker process: about 0.14 s per worker
on the torch sources, work every worker repeated (issue 28). Most files answer from their bytes
alone: a name that is not even a substring is not an identifier there. Only where the substring is
found does a regular expression decide, and only a file that is not plain ASCII (where NFKC
normalisation may turn `ｏｎｅ_ｈｏｔ` into `one_hot`) builds the whole set, as before.

Identifiers are what `[^\\W\\d]\\w*` finds scanning the text left to right (WORD): a run of word
characters read from its first non-digit. In ASCII, `name` is one exactly when it appears with no
word character after it and only digits (or nothing) between it and the previous non-word character.
"""

from __future__ import annotations

import re
import unicodedata

WORD = re.compile(r"[^\W\d]\w*")
# what reaches a name without writing it: `getattr(models, name)(...)`, `vars(config)[k] = v`
DYNAMIC_WORDS = frozenset({"getattr", "setattr", "delattr", "hasattr", "vars", "__dict__"})
_DYNAMIC_BYTES = tuple(sorted(word.encode() for word in DYNAMIC_WORDS))
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_DIGITS = frozenset(b"0123456789")


def words(text: str) -> frozenset:
    """Every identifier of `text`, in the NFKC form Python reads it in."""
    return frozenset(w if w.isascii() else unicodedata.normalize("NFKC", w) for w in WORD.findall(text))


class FileWords:
    """The identifiers of one file's bytes (decoded as UTF-8, bad bytes replaced)."""

    __slots__ = ("data", "ascii", "_words", "_dynamic")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.ascii = data.isascii()
        self._words: frozenset | None = None
        self._dynamic: bool | None = None

    def words(self) -> frozenset:
        if self._words is None:
            self._words = words(self.data.decode("utf-8", "replace"))
        return self._words

    def mentions(self, name: str) -> bool:
        """Is `name` one of the file's identifiers?"""
        if not self.ascii or WORD.fullmatch(name) is None:
            return name in self.words()
        if not name.isascii():
            return False  # (every identifier of ASCII text is ASCII)
        return _identifier_in(self.data, name.encode("ascii"))

    # It reads as the set of identifiers it stands for (what project_calls._words gave before): the
    # questions other analyses ask of a few names answer from the bytes, anything else from the set.
    __contains__ = mentions

    def __and__(self, names) -> frozenset:
        return frozenset(name for name in names if self.mentions(name))

    __rand__ = intersection = __and__

    def __ge__(self, names) -> bool:
        return all(self.mentions(name) for name in names)

    issuperset = __ge__

    def isdisjoint(self, names) -> bool:
        return not any(self.mentions(name) for name in names)

    def __le__(self, names) -> bool:
        return self.words() <= names

    def __iter__(self):
        return iter(self.words())

    def __len__(self) -> int:
        return len(self.words())

    def __getattr__(self, name: str):
        return getattr(self.words(), name)  # (any other frozenset method)

    def dynamic(self) -> bool:
        """Does the file mention a word of reflection (DYNAMIC_WORDS)?"""
        if self._dynamic is None:
            if not self.ascii:
                self._dynamic = bool(self.words() & DYNAMIC_WORDS)
            else:
                self._dynamic = any(_identifier_in(self.data, word) for word in _DYNAMIC_BYTES)
        return self._dynamic


def _identifier_in(data: bytes, name: bytes) -> bool:
    """Is the identifier `name` one that WORD finds in the ASCII `data`? (A substring search: a regular
    expression that tries every position is about ten times slower.)"""
    start = data.find(name)
    while start >= 0:
        end = start + len(name)
        if end == len(data) or data[end] not in _WORD_BYTES:
            before = start
            while before and data[before - 1] in _DIGITS:
                before -= 1
            if not before or data[before - 1] not in _WORD_BYTES:
                return True
        start = data.find(name, start + 1)
    return False
