"""Optional memory accounting: ``--gpu-memory 24GiB`` gives each virtual device that much memory.

"It trains here and dies on the 16 GB card" is a device bug too. With a limit, the virtual GPU counts
the storages of the tensors on each virtual device (a storage shared by views counts once; it is freed
when its last tagged tensor dies), answers ``torch.cuda.memory_allocated``, ``max_memory_allocated``,
``reset_peak_memory_stats``, ``mem_get_info`` and the device's ``total_memory`` from the count, and
raises ``torch.OutOfMemoryError`` with the GPU's wording when a tensor would not fit.

How close to a GPU: sizes are rounded up to 512 bytes as the CUDA caching allocator rounds them, so
``memory_allocated`` follows a GPU's for tensors the program keeps; what it does not count is memory a
GPU also spends: the CUDA context (about 0.3-0.5 GB, outside ``memory_allocated`` on a GPU too), the
allocator's cached but unused blocks (``memory_reserved`` on a GPU, here equal to what is allocated),
cuBLAS/cuDNN workspaces, and temporaries freed within one op, so a program near the limit can fit here
and not there. Storages reassigned under a tensor (``set_``, ``.data =``) are counted by the storage the
tensor had when it got its device.
"""

from __future__ import annotations

import torch

from devlint.memory_size import parse_memory
from devlint.virtual_gpu._common import CPU, _dev_error


def parse_size(text: str) -> int:
    """'24GiB', '16 GB', '512MiB', '1000000' -> bytes; ValueError with a clear message otherwise."""
    n = parse_memory(str(text))
    if n is None:
        raise ValueError(f"not a memory size: {text!r} (examples: 24GiB, 16GB, 512MiB)")
    return n


def _fmt(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


class Memory:
    """Bytes allocated per virtual device; the device table calls `tagged` and `gone`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.by_id: dict[int, tuple[int, int]] = {}  # table key -> (device, storage pointer)
        self.storages: dict[tuple[int, int], list[int]] = {}  # (device, pointer) -> [bytes, tensors]
        self.allocated: dict[int, int] = {}
        self.peak: dict[int, int] = {}

    def tagged(self, key: int, t, dev: int) -> None:
        __tracebackhide__ = True
        old = self.by_id.pop(key, None)
        if old is not None:
            self._release(old)
        if dev is None or dev == CPU:
            return
        storage = torch.Tensor.untyped_storage(t)
        sk = (dev, storage.data_ptr())
        entry = self.storages.get(sk)
        if entry is None:
            n = -(-storage.nbytes() // 512) * 512
            used = self.allocated.get(dev, 0)
            if used + n > self.limit:
                raise _dev_error(torch.OutOfMemoryError, (
                    f"CUDA out of memory. Tried to allocate {_fmt(n)}. GPU {dev} has a total capacity of "
                    f"{_fmt(self.limit)} of which {_fmt(self.limit - used)} is free. Of the allocated memory "
                    f"{_fmt(used)} is allocated by PyTorch (devlint virtual GPU, --gpu-memory)"))
            self.storages[sk] = [n, 1]
            self.allocated[dev] = used + n
            self.peak[dev] = max(self.peak.get(dev, 0), used + n)
        else:
            entry[1] += 1
        self.by_id[key] = sk

    def gone(self, key: int) -> None:
        sk = self.by_id.pop(key, None)
        if sk is not None:
            self._release(sk)

    def _release(self, sk) -> None:
        entry = self.storages.get(sk)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self.storages[sk]
            self.allocated[sk[0]] -= entry[0]


def patch_memory(patches, limit: int) -> None:
    """Turn the accounting on for the mode's table and answer torch.cuda's memory queries from it."""
    mode = patches.mode
    mem = Memory(limit)
    mode.table.accounting = mem

    def idx(device=None):
        if device is None:
            return mode.current
        d = device if isinstance(device, int) else mode.parse(device, check=False)
        return d if isinstance(d, int) else mode.current

    def allocated(device=None):
        return mem.allocated.get(idx(device), 0)

    def peak(device=None):
        return mem.peak.get(idx(device), 0)

    def reset_peak(device=None):
        d = idx(device)
        mem.peak[d] = mem.allocated.get(d, 0)

    cuda = torch.cuda
    for name, fn in (("memory_allocated", allocated), ("max_memory_allocated", peak),
                     ("memory_reserved", allocated), ("max_memory_reserved", peak),
                     ("reset_peak_memory_stats", reset_peak), ("reset_max_memory_allocated", reset_peak),
                     ("mem_get_info", lambda device=None: (limit - allocated(device), limit))):
        patches.set(cuda, name, fn)
    orig_props = cuda.get_device_properties

    def get_device_properties(device=None):
        props = orig_props(device)
        props.total_memory = limit
        return props

    patches.set(cuda, "get_device_properties", get_device_properties)
