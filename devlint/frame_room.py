"""A fresh stretch of CPython's frame stack for each file's check (issue 28).

CPython 3.11 and later keep Python frames in chunks of 16 KiB and free a chunk as soon as the frame
at its base returns, so a call that keeps crossing a chunk's edge maps and unmaps memory each time
(CPython gh-142183: fixed for 3.13 and 3.14 in March 2026 by keeping one chunk; 3.11 and 3.12, which
get security fixes only, keep freeing it).
LibCST's visitors recurse a few frames per level of the tree, up and down thousands of times a file,
and how often they crossed an edge depended on how deep the check happened to be called from:
checking torch's `nn`, `optim` and `utils` with `-j 1` took 26,000 to 54,000 page faults (0.10 to
0.34 s of system time) as a wrapper added 0 to 11 frames above it, and the workers of a `-j 2` run,
called from deeper inside multiprocessing, mapped 44,000 chunks between them: 0.3 s of system time,
the largest part of what `-j 2` did beyond `-j 1`.

`call_with_room` calls a function from a frame too big for any ordinary chunk: CPython gives that
frame a chunk of its own (64 KiB), so the call starts at the same place whatever its caller's depth,
with about 38 KiB (some 300 frames) before the next edge; few checks go deeper. The cost is one
64 KiB mapping and a few pages per file. On 3.10, which allocates each frame apart, it is a call.
"""

from __future__ import annotations

# CPython sizes a new chunk to hold a frame plus 1,000 slots of room, doubling from 16 KiB
# (Python/pystate.c: push_chunk): a frame of FRAME_SLOTS (8-byte) slots never fits in the free part
# of a 16 KiB chunk (at most 2,045 slots), and gets a 64 KiB chunk (more than 3,096 slots with the
# room, at most 7,192), leaving 8,189 - FRAME_SLOTS slots for the frames it calls.
FRAME_SLOTS = 3_300


def _with_room(function):
    """`function` with FRAME_SLOTS more local variables, never bound: its frame is big and a call
    stays a call. Where the interpreter's code objects cannot be so rebuilt, `function` as it is."""
    code = function.__code__
    names = code.co_varnames + tuple(f"_room{index}" for index in range(FRAME_SLOTS))
    try:
        function.__code__ = code.replace(co_varnames=names, co_nlocals=len(names))
    except (AttributeError, TypeError, ValueError):  # (another implementation than CPython)
        pass
    return function


@_with_room
def call_with_room(function, *args):
    """`function(*args)`, started on a chunk of CPython's frame stack of its own."""
    return function(*args)
