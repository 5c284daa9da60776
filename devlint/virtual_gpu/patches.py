"""Patches for what the function mode does not see: nn.Parameter, torch.load/save, legacy types,
DataParallel's primitives and torch.Generator; applied for the context only and undone on exit."""

from __future__ import annotations

import contextlib
import functools
import types
from typing import TYPE_CHECKING

import torch
import torch.serialization as _serialization
from torch import nn

from devlint.virtual_gpu import cuda_api, divergences, workers
from devlint.virtual_gpu._common import CPU, _dev_error

if TYPE_CHECKING:
    from devlint.virtual_gpu.mode import VirtualGPU


def _walk(obj, visit, seen, depth=0):
    if depth > 8 or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        visit(obj)
        return
    if isinstance(obj, nn.Module):
        for t in obj.parameters(recurse=False):
            visit(t)
        for t in obj.buffers(recurse=False):
            visit(t)
        for m in obj.children():
            _walk(m, visit, seen, depth + 1)
    if isinstance(obj, dict):
        for v in list(obj.values()):
            _walk(v, visit, seen, depth + 1)
    elif isinstance(obj, (list, tuple, set)):
        for v in obj:
            _walk(v, visit, seen, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, (type, types.ModuleType, types.FunctionType)):
        try:
            d = vars(obj)
        except TypeError:
            return
        for v in list(d.values()):
            _walk(v, visit, seen, depth + 1)


def _storage_key(t) -> int:
    return torch.Tensor.untyped_storage(t).data_ptr()


class _Patches:
    def __init__(self, mode: VirtualGPU) -> None:
        self.mode = mode
        self.saved: list[tuple[object, str, object, bool]] = []

    def set(self, owner, attr, value) -> None:
        if isinstance(value, types.FunctionType):
            # A distinct function object per name: torch._dynamo, imported lazily, indexes torch.cuda's
            # functions by identity and refuses one object under two names.
            value = functools.wraps(value)(lambda *a, _f=value, **k: _f(*a, **k))
        had = attr in vars(owner) if isinstance(owner, type) else hasattr(owner, attr)
        old = vars(owner).get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
        self.saved.append((owner, attr, old, had))
        setattr(owner, attr, value)

    def undo(self) -> None:
        for owner, attr, old, had in reversed(self.saved):
            if had:
                setattr(owner, attr, old)
            else:
                with contextlib.suppress(AttributeError):
                    delattr(owner, attr)
        self.saved.clear()

    def apply(self) -> None:
        mode = self.mode
        self._parameter()
        self._cuda()
        self._accelerator()
        self._install()
        divergences.patch_all(self)
        self._serialization()
        self._legacy_types()
        self._data_parallel()
        self._generator()
        workers.patch_threads(self)
        workers.patch_spawn(self)
        del mode

    def _generator(self) -> None:
        """torch.Generator(device="cuda") makes a CPU generator that says it is on the device."""
        mode = self.mode
        base = torch.Generator

        class _Meta(type(base)):
            def __instancecheck__(cls, obj):  # torch.default_generator and earlier generators still count
                return isinstance(obj, base)

            def __subclasscheck__(cls, sub):
                return issubclass(sub, base)

        class Generator(base, metaclass=_Meta):
            def __new__(cls, device=None):
                d = mode.parse(device) if device is not None else None
                gen = base.__new__(cls) if d is None or d == CPU or isinstance(d, tuple) else base.__new__(cls, "cpu")
                if isinstance(d, tuple):
                    gen = base.__new__(cls, device)
                gen._devlint_device = d if isinstance(d, int) else None
                return gen

            def __init__(self, device=None):
                pass

            @property
            def device(self):
                d = getattr(self, "_devlint_device", None)
                if d is None or d == CPU:
                    return base.device.__get__(self)
                return torch.device("cuda", d)

        Generator.__name__ = Generator.__qualname__ = "Generator"
        Generator.__module__ = "torch"
        self.set(torch, "Generator", Generator)

    def _data_parallel(self) -> None:
        """nn.DataParallel over the virtual devices: the comm primitives copy and tag, replicas run in turn."""
        mode = self.mode

        def copy_to(t, d):
            r = torch.Tensor.to(t, "cpu", copy=True)
            mode.table.set(r, d)
            return r

        def dev_index(d):
            if d is None:
                return mode.current
            if isinstance(d, int):
                return d
            parsed = mode.parse(d)
            return parsed if isinstance(parsed, int) else CPU

        def _broadcast(tensor, devices):
            return [tensor if mode.dev(tensor) == dev_index(d) else copy_to(tensor, dev_index(d)) for d in devices]

        def _broadcast_coalesced(tensors, devices, buffer_size=0):
            out = []
            for d in devices:
                idx = dev_index(d)
                out.append([t if mode.dev(t) == idx else copy_to(t, idx) for t in tensors])
            return out

        def _scatter(tensor, devices, chunk_sizes=None, dim=0, streams=None):
            if chunk_sizes:
                chunks = torch.Tensor.split(tensor, list(chunk_sizes), dim)
            else:
                chunks = torch.Tensor.chunk(tensor, len(devices), dim)
            return [copy_to(torch.Tensor.contiguous(c), dev_index(d)) for c, d in zip(chunks, devices)]

        def _gather(tensors, dim=0, destination=None):
            idx = dev_index(destination) if destination != -1 else CPU
            moved = [copy_to(t, idx) for t in tensors]
            return torch.cat(moved, dim)

        for name, fn in (("_broadcast", _broadcast), ("_broadcast_coalesced", _broadcast_coalesced),
                         ("_scatter", _scatter), ("_gather", _gather)):
            self.set(torch._C, name, fn)

        import importlib

        # (`import torch.nn.parallel.data_parallel as m` gives the function the package rebinds the name to)
        dp_module = importlib.import_module("torch.nn.parallel.data_parallel")

        def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
            # In turn on this thread (a real GPU uses one thread per device; the mode is per thread).
            kwargs_tup = kwargs_tup or ({},) * len(modules)
            devices = devices or [mode.current] * len(modules)
            outputs = []
            for module, inp, kw, d in zip(modules, inputs, kwargs_tup, devices):
                with torch.cuda.device(dev_index(d)):
                    if not isinstance(inp, (list, tuple)):
                        inp = (inp,)
                    outputs.append(module(*inp, **kw))
            return outputs

        self.set(dp_module, "parallel_apply", parallel_apply)

        nccl = importlib.import_module("torch.cuda.nccl")
        self.set(nccl, "is_available", lambda tensors: False)  # no NCCL: reduce in Python, no warning

        # DataParallel's backward runs its autograd Functions from the C++ engine, where the mode is off
        # and gradients are untagged: run them under the mode, gradients on the device of the pass.
        functions = importlib.import_module("torch.nn.parallel._functions")
        for cls_name in ("Scatter", "Gather", "Broadcast", "ReduceAddCoalesced"):
            cls = getattr(functions, cls_name)
            self.set(cls, "forward", staticmethod(self._under_mode(vars(cls)["forward"].__func__)))

    def _under_mode(self, forward):
        mode = self.mode

        def wrapped(ctx, *args):
            if torch._C._is_torch_function_mode_enabled():
                return forward(ctx, *args)
            for a in args:
                if isinstance(a, torch.Tensor) and mode.dev(a) is None:
                    mode.table.set(a, mode.current)
            with torch._C._EnableTorchFunction(), mode:
                return forward(ctx, *args)

        return wrapped

    def _parameter(self) -> None:
        mode = self.mode
        orig = vars(nn.Parameter)["__new__"]
        orig_fn = orig.__func__ if isinstance(orig, staticmethod) else orig

        def __new__(cls, data=None, requires_grad=True):
            p = orig_fn(cls, data, requires_grad)
            if isinstance(data, torch.Tensor):
                mode.table.set(p, mode.dev(data), mode.table.site(data))
            elif data is None:
                mode.table.set(p, CPU)
            return p

        self.set(nn.Parameter, "__new__", staticmethod(__new__))

    _cuda = cuda_api.patch_cuda
    _accelerator = cuda_api.patch_accelerator
    _install = cuda_api.patch_install

    def _serialization(self) -> None:
        mode = self.mode
        orig_load, orig_save = torch.load, torch.save

        def save(obj, f, *args, **kwargs):
            where: dict[int, int] = {}

            def visit(t):
                d = mode.dev(t)
                if d is not None and d != CPU:
                    where[_storage_key(t)] = d

            _walk(obj, visit, set())
            orig_tag = _serialization.location_tag

            def location_tag(storage):
                d = where.get(storage.data_ptr())
                return f"cuda:{d}" if d is not None else orig_tag(storage)

            _serialization.location_tag = location_tag
            try:
                return orig_save(obj, f, *args, **kwargs)
            finally:
                _serialization.location_tag = orig_tag

        def resolve(loc: str, map_location):
            ml = map_location
            if isinstance(ml, dict):
                ml = ml.get(loc, loc)
            if ml is None or (isinstance(ml, str) and ml == loc and isinstance(map_location, dict)):
                if loc.startswith("cuda"):
                    idx = torch.device(loc).index or 0
                    if mode.devices == 0:
                        raise RuntimeError(
                            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                            "False. If you are running on a CPU-only machine, please use torch.load with "
                            "map_location=torch.device('cpu') to map your storages to the CPU.")
                    if idx >= mode.devices:
                        raise RuntimeError(
                            f"Attempting to deserialize object on CUDA device {idx} but torch.cuda.device_count() "
                            f"is {mode.devices}. Please use torch.load with map_location to map your storages "
                            "to an existing device.")
                    return idx
                return CPU if loc == "cpu" else None
            target = mode.parse(ml)
            return None if isinstance(target, tuple) else target

        def load(f, map_location=None, *args, **kwargs):
            where: dict[int, int | None] = {}

            def recording(storage, loc):
                if callable(map_location) and not isinstance(map_location, (str, torch.device, dict)):
                    res = map_location(storage, loc)
                    if res is None:
                        where[storage.data_ptr()] = resolve(loc, None)
                        return storage
                    where[res.data_ptr()] = CPU
                    return res
                where[storage.data_ptr()] = resolve(loc, map_location)
                return storage

            obj = orig_load(f, recording, *args, **kwargs)

            def visit(t):
                d = where.get(_storage_key(t))
                if d is not None:
                    mode.table.set(t, d)

            _walk(obj, visit, set())
            return obj

        self.set(torch, "load", load)
        self.set(torch, "save", save)
        self.set(_serialization, "load", load)
        self.set(_serialization, "save", save)

    def _legacy_types(self) -> None:
        mode = self.mode
        names = {
            "FloatTensor": torch.float32, "DoubleTensor": torch.float64, "HalfTensor": torch.float16,
            "BFloat16Tensor": torch.bfloat16, "LongTensor": torch.int64, "IntTensor": torch.int32,
            "ShortTensor": torch.int16, "CharTensor": torch.int8, "ByteTensor": torch.uint8,
            "BoolTensor": torch.bool,
        }

        class _Legacy(type):
            def __instancecheck__(cls, obj):
                if not isinstance(obj, torch.Tensor):
                    return False
                d = mode.dev(obj)
                return d is not None and d != CPU and obj.dtype == cls._dtype

            def __call__(cls, *args, device=None):
                if mode.devices == 0:
                    raise _dev_error(RuntimeError, "No CUDA GPUs are available")
                target = mode.current if device is None else mode.parse(device)
                if args and all(isinstance(a, int) for a in args):
                    t = torch.Tensor.new_empty(torch.empty(0, dtype=cls._dtype), args)
                elif len(args) == 1 and isinstance(args[0], torch.Size):
                    t = torch.Tensor.new_empty(torch.empty(0, dtype=cls._dtype), args[0])
                elif not args:
                    t = torch.empty(0, dtype=cls._dtype)
                else:
                    t = torch.Tensor.new_tensor(torch.empty(0, dtype=cls._dtype), args[0])
                mode.table.set(t, target)
                return t

        for name, dtype in names.items():
            cls = _Legacy(name, (), {"_dtype": dtype, "_devlint_legacy": f"torch.cuda.{name}"})
            self.set(torch.cuda, name, cls)

