"""A project file's identifiers, asked one name at a time from its bytes (devlint.analysis.file_words),
answer exactly as the set of all its identifiers (what project_calls built before issue 28)."""

from __future__ import annotations

import pytest

from devlint.analysis.file_words import DYNAMIC_WORDS, FileWords, words

TEXTS = [
    "one_hot(x)\n", "x.one_hot(1)\n", "1one_hot 2 one_hot2\n", "a1one_hot\n", "_one_hot one_hot_\n",
    "one_hotone_hot one_hot\n", "ｏｎｅ_ｈｏｔ(1)\n", "éone_hot one_hot\n", "# one_hot in a comment",
    "getattrs = 1\nnvars(x)\n", "9vars(config)\n", "m.__dict__\n", "x__dict__ = 1\n", "hasattr(m, 'a')",
    "", "one_hot", "\xff one_hot", "0x1one_hot",
]
NAMES = ["one_hot", "one_ho", "ne_hot", "hot", "_", "é", "éone_hot", "ｏｎｅ_ｈｏｔ", "1one_hot", "", "x"]


@pytest.mark.parametrize("text", TEXTS)
def test_each_name_and_the_reflection_words_answer_as_the_whole_set(text):
    data = text.encode("utf-8") if not text.startswith("\xff") else b"\xff" + text[1:].encode()
    every = words(data.decode("utf-8", "replace"))
    found = FileWords(data)
    for name in NAMES + sorted(every) + sorted(DYNAMIC_WORDS):
        assert found.mentions(name) == (name in every), name
    assert found.dynamic() == bool(every & DYNAMIC_WORDS)
    # read as the set itself (what callers of project_calls._words had before)
    assert all((name in found) == (name in every) for name in NAMES)
    assert found & DYNAMIC_WORDS == every & DYNAMIC_WORDS == DYNAMIC_WORDS & found
    for names in ({"one_hot"}, {"one_hot", "x"}, DYNAMIC_WORDS, set()):
        assert (names <= found) == (names <= every) and found.isdisjoint(names) == every.isdisjoint(names)
    assert set(found) == every and len(found) == len(every) and found.union({"z"}) == every | {"z"}
