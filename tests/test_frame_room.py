"""devlint.frame_room: a file's check does not map and unmap CPython's frame-stack memory at every
call that crosses a chunk's edge, whatever depth it is called from (issue 28)."""

from __future__ import annotations

import resource

import pytest

from devlint import engine
from devlint.config import Config
from devlint.frame_room import call_with_room

OSCILLATIONS = 20_000


def _down(depth: int) -> int:
    return _down(depth - 1) if depth else 0


def _oscillate() -> list:
    # A walk that goes 30 frames down and back up, over and over, as LibCST's visitors do per node:
    # on CPython 3.11 to 3.13.0, called from the wrong depth, each descent maps a new chunk.
    for _ in range(OSCILLATIONS):
        _down(30)
    return []


def _at_depth(frames: int, function, *args):
    return _at_depth(frames - 1, function, *args) if frames else function(*args)


def _worst_faults(call) -> int:
    """The most page faults `call()` took, over callers 0 to 129 frames deep (a chunk's width)."""
    worst = 0
    for frames in range(0, 130, 3):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        _at_depth(frames, call)
        worst = max(worst, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return worst


def test_a_call_with_room_is_a_call():
    assert call_with_room(divmod, 7, 2) == (3, 1)
    with pytest.raises(ZeroDivisionError):
        call_with_room(divmod, 1, 0)


def test_an_oscillating_call_with_room_maps_no_memory_at_any_depth():
    assert _worst_faults(lambda: call_with_room(_oscillate)) < OSCILLATIONS // 20


def test_a_files_check_starts_with_room_at_any_depth(monkeypatch):
    checked = []

    def check_text(text, config, path, result, project=None):
        checked.append(text)
        return _oscillate()

    monkeypatch.setattr(engine, "_check_text", check_text)
    worst = _worst_faults(lambda: engine.check_source("", b"import torch\nx = torch.zeros(1).cuda()\n", Config()))
    assert checked and worst < OSCILLATIONS // 20
