"""Every thread and every worker process of the program on the virtual GPU, not only the main thread.

Threads: a ``TorchFunctionMode`` lives on a per-thread stack, so a mode entered by the main thread did
not see what a prefetch thread, a thread pool or DataLoader's pin-memory thread does: their tensors had
no device, and ``.cuda()`` there reached the CPU build ("not linked with support for cuda devices").
While the virtual GPU is active, every thread started through :mod:`threading` (``Thread`` and its
subclasses, ``ThreadPoolExecutor``, DataLoader's pin-memory thread) runs with the mode on its own
stack. The hook is ``Thread._bootstrap_inner``, the one method every Python thread runs before
``run()``, whatever ``run`` a subclass defines; ``threading.settrace``/``setprofile`` would do the same
but cost a call per function and conflict with profilers. Threads already running when the virtual GPU
starts keep running without it.

Processes: a forked worker (DataLoader's default on Linux) inherits the patches and the forking
thread's mode. A spawned one starts a fresh interpreter: ``multiprocessing.spawn.get_command_line``
is patched so that its ``-c`` program enters the virtual GPU (same number of devices) before
``spawn_main`` unpickles anything, so ``torch.cuda.is_available()`` in a worker answers as on the GPU
machine. (The forkserver start method starts its server by another path and is not covered.)
"""

from __future__ import annotations

import multiprocessing.spawn
import threading

# The child's entry point lives in devlint.virtual_gpu.child: it builds the patches, which import this module.
_CHILD = "import devlint.virtual_gpu.child as _c; _c.enter_for_process({devices}, {memory!r}); "


def patch_threads(patches) -> None:
    mode = patches.mode
    orig = threading.Thread._bootstrap_inner

    def _bootstrap_inner(thread):
        with mode:
            return orig(thread)

    patches.set(threading.Thread, "_bootstrap_inner", _bootstrap_inner)


def patch_spawn(patches) -> None:
    mode = patches.mode
    orig = multiprocessing.spawn.get_command_line

    def get_command_line(**kwds):
        cmd = list(orig(**kwds))
        if "-c" in cmd:
            at = cmd.index("-c") + 1
            cmd[at] = _CHILD.format(devices=mode.requested, memory=getattr(mode, "memory_limit", None)) + cmd[at]
        return cmd

    patches.set(multiprocessing.spawn, "get_command_line", get_command_line)
