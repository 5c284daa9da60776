"""The default number of workers is the cores this process may use (devlint.cores): the affinity mask,
bounded by a cgroup's CPU quota; never the machine's count when the process was given fewer."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from devlint import cli, cores
from devlint.cli import main
from devlint.cores import usable_cores
from tests.helpers import record_jobs


def _machine(tmp_path, own="0::/\n", files=None):
    """A fake /proc/self/cgroup and /sys/fs/cgroup: `files` maps paths under the root to contents."""
    root = tmp_path / "cgroup"
    root.mkdir(parents=True)
    for relative, text in (files or {}).items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    proc = root.parent / "self-cgroup"
    proc.write_text(own)
    return str(root), str(proc)


@pytest.fixture
def sixteen_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)


def test_the_affinity_mask_bounds_the_cores(tmp_path, monkeypatch):
    # `taskset -c 0,1` on a 16-core machine: two cores, not sixteen
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert usable_cores(*_machine(tmp_path)) == 2


def test_without_limits_every_core(tmp_path, sixteen_cores):
    assert usable_cores(*_machine(tmp_path, files={"cpu.max": "max 100000\n"})) == 16


@pytest.mark.parametrize("quota, expected", [("200000 100000", 2), ("150000 100000", 2), ("50000 100000", 1),
                                             ("400000 50000", 8), ("3200000 100000", 16)])
def test_a_v2_quota_bounds_the_cores_rounded_up(tmp_path, sixteen_cores, quota, expected):
    # `docker --cpus 2` writes "200000 100000" into the container's cpu.max
    assert usable_cores(*_machine(tmp_path, files={"cpu.max": quota + "\n"})) == expected


def test_a_parent_cgroups_quota_holds_for_its_children(tmp_path, sixteen_cores):
    files = {"kubepods/cpu.max": "300000 100000\n", "kubepods/pod1/cpu.max": "max 100000\n",
             "kubepods/pod1/c1/cpu.max": "max 100000\n", "cpu.max": "max 100000\n"}
    assert usable_cores(*_machine(tmp_path, "0::/kubepods/pod1/c1\n", files)) == 3


def test_a_v1_quota_bounds_the_cores(tmp_path, sixteen_cores):
    files = {"cpu,cpuacct/cpu.cfs_quota_us": "250000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}
    assert usable_cores(*_machine(tmp_path, "12:cpu,cpuacct:/docker/abc\n", files)) == 3
    unlimited = {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}
    assert usable_cores(*_machine(tmp_path / "b", "12:cpu:/\n", unlimited)) == 16


@pytest.mark.parametrize("text", ["", "garbage\n", "max\n", "0 0\n", "12 x\n"])
def test_an_unreadable_limit_is_no_limit(tmp_path, sixteen_cores, text):
    assert usable_cores(*_machine(tmp_path, files={"cpu.max": text})) == 16
    assert usable_cores(str(tmp_path / "missing"), str(tmp_path / "missing-too")) == 16


def test_the_default_jobs_are_the_usable_cores(tmp_path, monkeypatch):
    for n in range(20):
        (tmp_path / f"m{n:02}.py").write_text("x = 1\n")
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(cli, "usable_cores", lambda: 3)
    seen = record_jobs(monkeypatch)
    monkeypatch.chdir(tmp_path)
    for arguments, expected in ((["."], 3), (["-j", "8", "."], 3), (["-j", "2", "."], 2)):
        result = CliRunner().invoke(main, ["--no-cache", *arguments])
        assert result.exit_code == 0, result.output
        assert seen["jobs"] == expected
    assert cores.usable_cores() >= 1
