"""How the files of a run are handed to worker processes: the biggest first, in chunks of about
equal size.

Taken in path order, a few big files (in torch: nn/functional.py, utils/checkpoint.py, each about a
twentieth of the whole run's work on 16 cores) could start last and keep one worker busy after the
others ran out of work. Biggest first, the run ends on small chunks that the workers share out
evenly (longest-processing-time-first scheduling). The size in bytes stands for the work.
"""

from __future__ import annotations

import os

# Chunks per worker when the sizes are even: fewer costs balance, more costs round trips.
CHUNKS_PER_WORKER = 8
MAX_FILES_PER_CHUNK = 32


def chunks(paths: list[str], data: list | None, jobs: int) -> list[list[int]]:
    """Indexes into `paths`, grouped, biggest files first. `data`: the bytes already read, if any
    (None, or None for a path: its size on disk)."""
    sizes = [len(data[i]) if data is not None and data[i] is not None else _size(path)
             for i, path in enumerate(paths)]
    budget = max(1, sum(sizes) // (jobs * CHUNKS_PER_WORKER))
    order = sorted(range(len(paths)), key=lambda i: -sizes[i])
    grouped: list[list[int]] = []
    current: list[int] = []
    filled = 0
    for index in order:
        if current and (filled + sizes[index] > budget or len(current) == MAX_FILES_PER_CHUNK):
            grouped.append(current)
            current, filled = [], 0
        current.append(index)
        filled += sizes[index]
    if current:
        grouped.append(current)
    return grouped


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the worker reports it
