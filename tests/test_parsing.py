"""LibCST's parser without per-node validation (devlint.parsing)."""

from __future__ import annotations

import threading

import libcst as cst
import pytest

from devlint import parsing

SOURCE = '''\
import torch as t  # a comment
@decorator(1, *a, **k)
async def f(x: int = 3, /, *, y=[1, 2]) -> "T":
    async with a as (b, c):
        return await g(f"{x!r:>{y}} and {{braces}}", lambda q: q ** -2, b"\\x00", 0x1F, 1e-3j)
match p:
    case [1, *rest] if rest: pass
    case {"k": v, **others}: pass
x: list[int] = [i for i in range(3) if i] or (yield)
'''


def _validations(parse) -> int:
    """How many nodes checked themselves while `parse` parsed SOURCE."""
    calls = []
    validate = cst.Name._validate

    def counting(self):
        calls.append(1)
        return validate(self)

    cst.Name._validate = counting
    try:
        parse(SOURCE)
    finally:
        cst.Name._validate = validate
    return len(calls)


def test_the_parse_validates_no_node():
    assert _validations(cst.parse_module) > 10  # (LibCST's own parse does)
    assert _validations(parsing.parse_module) == 0


def test_the_same_tree_and_the_same_code():
    ours, theirs = parsing.parse_module(SOURCE), cst.parse_module(SOURCE)
    assert ours.deep_equals(theirs)
    assert ours.code == SOURCE
    assert parsing.parse_module(SOURCE.encode("utf-8")).code == SOURCE


def test_nodes_made_after_a_parse_are_validated_again():
    parsing.parse_module(SOURCE)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_a_syntax_error_raises_as_libcst_does_and_validation_is_back():
    with pytest.raises(cst.ParserSyntaxError):
        parsing.parse_module("def f(:\n")
    assert cst.CSTNode.__post_init__ is parsing._VALIDATING
    with pytest.raises(cst.CSTValidationError):
        cst.Name("1x")


def test_overlapping_parses_leave_validation_on(monkeypatch):
    """Thread a starts parsing, b starts, a ends, b ends: LibCST's check is on afterwards."""
    real = cst.parse_module
    a_started, b_started, a_ended = threading.Event(), threading.Event(), threading.Event()

    def parse_in_turn(source):
        if threading.current_thread().name == "a":
            a_started.set()
            b_started.wait(5)
            return real(source)
        b_started.set()
        a_ended.wait(5)
        return real(source)

    monkeypatch.setattr(cst, "parse_module", parse_in_turn)

    def a():
        parsing.parse_module(SOURCE)
        a_ended.set()

    def b():
        a_started.wait(5)
        parsing.parse_module(SOURCE)

    threads = [threading.Thread(target=a, name="a"), threading.Thread(target=b, name="b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert a_ended.is_set()
    assert cst.CSTNode.__post_init__ is parsing._VALIDATING
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
