"""The entry point of a worker process spawned by a program on the virtual GPU (devlint.virtual_gpu.workers
writes a call to it into the child's ``-c`` program)."""

from __future__ import annotations

from devlint.virtual_gpu.memory import patch_memory
from devlint.virtual_gpu.mode import VirtualGPU
from devlint.virtual_gpu.patches import _Patches


def enter_for_process(devices: int, memory: int | None = None) -> None:
    """In a spawned worker: the virtual GPU for the rest of the process's life (never undone, so
    nothing runs at interpreter shutdown)."""
    mode = VirtualGPU(devices)
    mode.memory_limit = memory
    patches = _Patches(mode)
    patches.apply()
    if memory is not None:
        patch_memory(patches, memory)
    mode.__enter__()
