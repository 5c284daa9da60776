"""torch.cuda and torch.accelerator as a GPU machine answers them (devices, streams, events, memory)."""

from __future__ import annotations

import contextlib
import time
import types

import torch

from devlint.virtual_gpu._common import _dev_error

_TorchStream = torch.Stream  # the class, before torch.Stream is patched for the context


def patch_cuda(self) -> None:
    mode = self.mode
    cuda = torch.cuda

    def need():
        if mode.devices == 0:
            raise _dev_error(RuntimeError, "No CUDA GPUs are available")

    def set_device(device):
        need()
        d = mode.parse(device) if not isinstance(device, int) else mode.check_ordinal(device)
        if isinstance(d, int) and d >= 0:
            mode.current = d

    def current_device():
        need()
        return mode.current

    def synchronize(device=None):
        need()

    def memory_allocated(device=None):
        idx = mode.current if device is None else mode.parse(device, check=False)
        seen, total = set(), 0
        for t, d in mode.table.live():
            if d == idx:
                s = torch.Tensor.untyped_storage(t)
                if s.data_ptr() not in seen:
                    seen.add(s.data_ptr())
                    total += s.nbytes()
        return total

    props = types.SimpleNamespace(name="devlint virtual GPU", major=9, minor=0, total_memory=80 * 2**30,
                                  multi_processor_count=132, is_integrated=False, uuid="virtual")

    def get_device_properties(device=None):
        idx = mode.current if device is None else device
        if not isinstance(idx, int):
            idx = mode.parse(idx, check=False)
        if not isinstance(idx, int) or idx < 0 or idx >= mode.devices:
            raise AssertionError("Invalid device id")
        return props

    @contextlib.contextmanager
    def device_ctx(device):
        prev = mode.current
        if device is not None and device != -1:
            set_device(device)
        try:
            yield
        finally:
            mode.current = prev

    class device_of(contextlib.ContextDecorator):
        def __init__(self, obj):
            self.idx = mode.dev(obj) if isinstance(obj, torch.Tensor) else None

        def __enter__(self):
            self.prev = mode.current
            if self.idx is not None and self.idx >= 0:
                mode.current = self.idx

        def __exit__(self, *exc):
            mode.current = self.prev

    class Event:
        def __init__(self, enable_timing=False, blocking=False, interprocess=False):
            self.t = None

        def record(self, stream=None):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def wait(self, stream=None):
            pass

        def query(self):
            return True

        def elapsed_time(self, end):
            return (end.t - self.t) * 1000.0

    class Stream(_TorchStream):
        # A torch.Stream (of the CPU) so that Tensor.record_stream's argument parser accepts it.
        def __new__(cls, device=None, priority=0, **kw):
            return _TorchStream.__new__(cls, device="cpu")

        def __init__(self, device=None, priority=0, **kw):
            idx = mode.current if device is None else device
            self._index = idx if isinstance(idx, int) else (mode.parse(idx, check=False) or 0)

        @property
        def device(self):
            return torch.device("cuda", self._index)

        @property
        def device_type(self):
            return 1  # DeviceType::CUDA

        def synchronize(self):
            pass

        def wait_stream(self, stream):
            pass

        def wait_event(self, event):
            pass

        def record_event(self, event=None):
            event = event or Event()
            event.record()
            return event

        def query(self):
            return True

        def is_capturing(self):
            return False

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    default_stream = Stream()

    @contextlib.contextmanager
    def stream(s):
        yield

    zero = lambda *a, **k: 0
    none = lambda *a, **k: None
    patches = {
        "is_available": lambda: mode.devices > 0,
        "device_count": mode.visible_now,
        "current_device": current_device,
        "set_device": set_device,
        "synchronize": synchronize,
        "is_initialized": lambda: True,
        "init": none,
        "get_device_name": lambda device=None: props.name,
        "get_device_capability": lambda device=None: (props.major, props.minor),
        "get_device_properties": get_device_properties,
        "is_bf16_supported": lambda *a, **k: True,
        "memory_allocated": memory_allocated,
        "max_memory_allocated": memory_allocated,
        "memory_reserved": memory_allocated,
        "max_memory_reserved": memory_allocated,
        "mem_get_info": lambda device=None: (props.total_memory - memory_allocated(device), props.total_memory),
        "empty_cache": none,
        "reset_peak_memory_stats": none,
        "reset_max_memory_allocated": none,
        "memory_summary": lambda *a, **k: "devlint virtual GPU: no allocator statistics",
        "device": device_ctx,
        "device_of": device_of,
        "Event": Event,
        "Stream": Stream,
        "current_stream": lambda device=None: default_stream,
        "default_stream": lambda device=None: default_stream,
        "stream": stream,
        "utilization": zero,
        "is_current_stream_capturing": lambda: False,
        "manual_seed": none,
        "manual_seed_all": none,
        "seed": none,
        "seed_all": none,
        "initial_seed": lambda: torch.initial_seed(),
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "get_rng_state_all": lambda: [torch.get_rng_state() for _ in range(mode.devices)],
        "set_rng_state": none,
        "set_rng_state_all": none,
    }
    for k, v in patches.items():
        self.set(cuda, k, v)
    # RNNs ask cuDNN about a CUDA tensor; the CPU build warns that it has none. Say "not for cuDNN".
    self.set(torch.backends.cudnn, "is_acceptable", lambda tensor: False)

def patch_accelerator(self) -> None:
    acc = getattr(torch, "accelerator", None)
    if acc is None:
        return
    mode = self.mode

    def set_device_index(device):
        torch.cuda.set_device(device)

    patches = {
        "is_available": lambda: mode.devices > 0,
        "device_count": mode.visible_now,
        "current_accelerator": lambda check_available=False: torch.device("cuda") if mode.devices > 0 else None,
        "current_device_index": lambda: torch.cuda.current_device(),
        "current_device_idx": lambda: torch.cuda.current_device(),
        "set_device_index": set_device_index,
        "set_device_idx": set_device_index,
        "synchronize": lambda device=None: torch.cuda.synchronize(device),
        "current_stream": lambda device=None: torch.cuda.current_stream(device),
        "set_stream": lambda stream: None,
        "device_index": lambda device: torch.cuda.device(device),
    }
    for k, v in patches.items():
        if hasattr(acc, k):
            self.set(acc, k, v)
    # torch.Stream(index) resolves the accelerator: DataParallel's Scatter makes its copy streams so.
    # (the virtual stream class itself, so that isinstance(s, torch.Stream) keeps working)
    self.set(torch, "Stream", torch.cuda.Stream)


def patch_install(self) -> None:
    """What a CUDA install answers beyond torch.cuda: the CUDA version torch was built with, cuDNN,
    NVTX ranges (no-ops that return what the real ones do: the range depth, or a range id)."""
    self.set(torch.version, "cuda", "13.0")
    self.set(torch.backends.cudnn, "is_available", lambda: True)
    self.set(torch.backends.cudnn, "version", lambda: 91002)
    depth = [0]

    def range_push(msg):
        depth[0] += 1
        return depth[0] - 1

    def range_pop():
        if depth[0] == 0:
            return -1
        depth[0] -= 1
        return depth[0]

    @contextlib.contextmanager
    def nvtx_range(msg, *args, **kwargs):
        range_push(msg)
        try:
            yield
        finally:
            range_pop()

    nvtx = torch.cuda.nvtx
    for name, fn in (("range_push", range_push), ("range_pop", range_pop), ("range", nvtx_range),
                     ("mark", lambda msg: None), ("range_start", lambda msg: 1), ("range_end", lambda rid: None)):
        self.set(nvtx, name, fn)

