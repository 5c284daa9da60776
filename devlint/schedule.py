"""How the files of a run are handed to worker processes: the biggest first, in chunks of about
equal size.

Taken in path order, a few big files (in torch: nn/functional.py, utils/checkpoint.py, each about a
twentieth of the whole run's work on 16 cores) could start last and keep one worker busy after the
others ran out of work. Biggest first, the run ends on small chunks that the workers share out
evenly (longest-processing-time-first scheduling). The size in bytes stands for the work.

Chunks of equal size still left the run ending on one worker's last chunk (32 small files, a
fortieth of the run) while the other had nothing left: the size in bytes is a rough guess of the
work (a file the pre-pass clears costs a tenth of one the checker reads), and on 2 cores that tail
was 0.1-0.25 s of every cold run, more than a third of its serial part. So each chunk takes half of
a worker's even share of what is left (guided self-scheduling, "factoring"): big chunks while much
is left, ever smaller ones at the end, the last a few small files.
"""

from __future__ import annotations

import os

# Each chunk is this share of what is left per worker, and at least the even share of this many
# chunks per worker: more chunks cost round trips, fewer leave a longer tail.
SHARE_OF_WHAT_IS_LEFT = 0.5
SMALLEST_CHUNKS_PER_WORKER = 64
MAX_FILES_PER_CHUNK = 32


def chunks(paths: list[str], data: list | None, jobs: int) -> list[list[int]]:
    """Indexes into `paths`, grouped, biggest files first, the chunks ever smaller. `data`: the bytes
    already read, if any (None, or None for a path: its size on disk)."""
    sizes = [len(data[i]) if data is not None and data[i] is not None else _size(path)
             for i, path in enumerate(paths)]
    left = sum(sizes)
    smallest = max(1, left // (jobs * SMALLEST_CHUNKS_PER_WORKER))
    order = sorted(range(len(paths)), key=lambda i: -sizes[i])
    grouped: list[list[int]] = []
    current: list[int] = []
    filled = 0
    for index in order:
        budget = max(smallest, left * SHARE_OF_WHAT_IS_LEFT / jobs)
        if current and (filled + sizes[index] > budget or len(current) == MAX_FILES_PER_CHUNK):
            grouped.append(current)
            left -= filled
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
