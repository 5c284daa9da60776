"""How many cores this process may use: the default number of workers.

`os.cpu_count()` counts the machine's cores, not the ones a process is given: under `taskset -c 0,1`
on a 16-core machine, or in a container limited to two CPUs (`docker --cpus 2`, a Kubernetes CPU
limit, most hosted CI runners), a run started 16 workers on two cores' worth of time: 14 more forks,
imports and heaps than the cores can run, and every worker slowed by the others. So, as ruff (Rust's
`available_parallelism`) and Python 3.13's `os.process_cpu_count` do, the affinity mask bounds it,
and where a cgroup sets a CPU quota, the quota does too (rounded up: 1.5 CPUs may run two workers).
"""

from __future__ import annotations

import math
import os

_CGROUP_ROOT = "/sys/fs/cgroup"


def usable_cores(root: str = _CGROUP_ROOT, own_cgroup: str = "/proc/self/cgroup") -> int:
    """Cores this process may run on: the affinity mask's, bounded by a cgroup CPU quota; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_quota(root, own_cgroup)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def _cgroup_quota(root: str, own_cgroup: str) -> float | None:
    """CPUs' worth of time a cgroup allows this process (quota over period), the least along its
    cgroup's path, or None where none is set or none can be read."""
    limits = [limit for limit in (_v2_limits(root, own_cgroup) + _v1_limits(root)) if limit is not None]
    return min(limits) if limits else None


def _v2_limits(root: str, own_cgroup: str) -> list[float | None]:
    """cgroup v2: `cpu.max` ("max 100000" or "200000 100000") of the process's cgroup and of each
    cgroup above it (a parent's limit holds for its children)."""
    try:
        with open(own_cgroup, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    path = next((line[3:] for line in lines if line.startswith("0::")), None)
    if path is None:
        return []
    limits = []
    parts = [part for part in path.split("/") if part and part != ".."]
    for depth in range(len(parts), -1, -1):
        limits.append(_read_v2(os.path.join(root, *parts[:depth], "cpu.max")))
    return limits


def _read_v2(path: str) -> float | None:
    try:
        with open(path, encoding="utf-8") as handle:
            quota, _, period = handle.read().strip().partition(" ")
        if quota == "max":
            return None
        return int(quota) / int(period or "100000")
    except (OSError, ValueError, ZeroDivisionError):
        return None


def _v1_limits(root: str) -> list[float | None]:
    """cgroup v1, as a container sees it: its own cgroup mounted at the controller's folder."""
    limits = []
    for folder in ("cpu", "cpu,cpuacct"):
        try:
            with open(os.path.join(root, folder, "cpu.cfs_quota_us"), encoding="utf-8") as handle:
                quota = int(handle.read().strip())
            with open(os.path.join(root, folder, "cpu.cfs_period_us"), encoding="utf-8") as handle:
                period = int(handle.read().strip())
        except (OSError, ValueError):
            continue
        limits.append(quota / period if quota > 0 and period > 0 else None)
    return limits
