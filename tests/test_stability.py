"""The stability check (benchmarks/stability.py): no crash, nothing left uncompilable, nothing left to fix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import stability  # noqa: E402


def _assert_stable(report: dict) -> None:
    assert report["crashes"] == []
    assert report["files no longer compiling after --fix"] == []
    assert report["fixes left after a second pass"] == 0


def test_on_the_golden_fixtures():
    report = stability.check(str(ROOT / "tests" / "fixtures"))
    _assert_stable(report)
    assert report["findings per rule"]["DL003"] > 10
    # DL017's fixture does not parse until its `async=` arguments are renamed
    assert report["findings per rule"]["DL017"] > 0
    assert "unparsed/DL017/imagenet_loop.py" in report["files compiling only after --fix (DL017)"]


@pytest.mark.slow
def test_on_the_torch_sources(capsys):
    """Real files from the pinned CPU torch wheel (downloaded from the registry once): a fixed quarter of
    its 2,300 files, or all of them with DEVLINT_FULL_CORPUS=1 (benchmarks/stability.py checks all)."""
    from corpus import sample_share

    every = sample_share()
    report = stability.check(stability.torch_sources(), every=every)
    with capsys.disabled():
        print(f"\ntorch sources stability (1 file in {every}): {report}")
    _assert_stable(report)
    assert report["files"] > 2000 // every
    assert sum(report["findings per rule"].values()) > 100 // every  # the share holds fixable code
