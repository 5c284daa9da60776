"""The cache-race fuzz (benchmarks/cache_race.py), a few rounds: random projects checked with the
cache while files are edited and undone between and during runs; the cache must then answer what a
`--no-cache` run answers, file by file (issue 29). `python benchmarks/cache_race.py --minutes 30`
runs it for long."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import cache_race  # noqa: E402


@pytest.mark.parametrize("seed", [1, 2])
def test_no_stale_result_when_files_change_during_and_between_runs(seed, tmp_path):
    counts = cache_race.race(seed, rounds=6, folder=tmp_path)
    assert counts.compared > 0 and counts.edits > 0
    assert counts.stale_passes == 0 and counts.stale_results == 0, counts.examples
