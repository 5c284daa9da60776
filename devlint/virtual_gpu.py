"""A virtual GPU on the CPU build of PyTorch: N virtual CUDA devices that raise what a real GPU raises.

Usage::

    from devlint.virtual_gpu import virtual_gpu
    with virtual_gpu(devices=1):
        runpy.run_path("train.py", run_name="__main__")

Inside the context every tensor carries a *virtual* device (``cpu``, ``cuda:0`` ... ``cuda:N-1``) while its
data stays in CPU memory, so all values are real CPU results. ``t.device``, ``t.is_cuda``,
``t.get_device()``, ``next(model.parameters()).device``, ``torch.cuda.is_available()`` and friends answer
as on a GPU machine, and the device errors a GPU raises (mixed devices in one op, ``.numpy()`` of a device
tensor, a negative device index, an invalid ordinal) are raised at the same place with the same
exception type and message.

This module is the only part of devlint that imports torch; nothing else in devlint imports it.

Design: function mode, not tensor subclass
------------------------------------------
A tensor subclass would have to wrap every tensor a program makes, including those made by factories,
by ``torch.load``, by C++ code (autograd's gradients) and by libraries that check ``type(t) is
torch.Tensor``; each wrapper would leak into ``isinstance`` checks, pickles and ``repr``. A
:class:`torch.overrides.TorchFunctionMode` sees every torch call of the program (functions, ``Tensor``
methods and even property getters such as ``Tensor.device.__get__``) without changing any object's
type. So the virtual device is a side table keyed by the tensor's identity (weak references: an entry
dies with its tensor); the mode tags each result with the device it would have on a GPU and answers the
device properties from the table. What the mode does not see is patched for the duration of the context
only and restored on exit: ``nn.Parameter`` creation, ``torch.load``/``torch.save`` (location tags), the
``torch.cuda`` and ``torch.accelerator`` queries and the legacy ``torch.cuda.*Tensor`` types.

Tensors made outside the mode (before the context, or by autograd in C++ such as gradients) have no
virtual device and are treated as belonging to any device: they never cause a mixed-device error. A
gradient gets its parameter's device the first time it is read through ``.grad``.

Where a GPU allows mixing (each is a test in ``tests/test_virtual_gpu.py``)
---------------------------------------------------------------------------
================================================  =============================================
mix                                               GPU (H100, torch 2.11) and virtual GPU
================================================  =============================================
CUDA tensor op 0-dim CPU tensor (elementwise,     allowed (not the other way round: CPU tensor
``where``, in-place ``add_``)                     op 0-dim CUDA tensor raises)
``clamp`` with a 0-dim CPU ``min``                raises
Python scalars                                    allowed
CUDA tensor indexed by CPU long index / bool mask allowed
CPU tensor indexed by CUDA index                  raises ``indices should be either on cpu ...``
item assignment across devices                    allowed (``g[0] = c[0]``, ``c[0] = g[0]``)
``copy_`` either way                              allowed
``.item()``, ``.tolist()``, ``float(...)``        allowed
``.numpy()``, ``numpy.asarray`` of CUDA tensor    ``TypeError: can't convert cuda:0 ...``
``masked_fill`` with a CPU mask                   raises ``expected self and mask ...``
CPU lengths / ``batch_sizes`` of packed sequences allowed (``pack_padded_sequence``, RNNs,
and CPU targets and lengths of ``ctc_loss`` (*)   ``pad_packed_sequence``); a CPU hidden state raises
CPU ``.grad`` assigned to a CUDA parameter        raises ``attempting to assign a gradient ...``
every other op with a CPU and a CUDA tensor       raises ``Expected all tensors to be on the same device``
================================================  =============================================

(*) From PyTorch's documentation (lengths must be a CPU tensor; cuDNN's CTC wants CPU targets), not from
the H100 table; every other row was seen on the H100.

The text after ``Expected all tensors to be on the same device`` differs per op on a real GPU (``but
found at least two devices, cuda:0 and cpu!`` or ``but got mat2 is on cpu, ...``); the virtual GPU always
gives the first form, naming the two devices.

Known limits
------------
* GPU numerics are not reproduced: TF32 matmuls, fp16/bf16 CUDA kernels, nondeterministic atomics and
  cuDNN algorithms give CPU results. Under ``torch.autocast("cuda")`` the ops autocast runs in float16
  (matmul, linear, conv, ...) return float16 as on a GPU, but are computed in float32 and rounded.
* Custom CUDA extensions and Triton kernels cannot run; ``torch.compile`` for CUDA is not supported.
* Multi-process distributed training (NCCL, one process per device) and DataLoader pin-memory threads
  are not covered (the mode is per thread). Single-process ``DistributedDataParallel`` (gloo backend,
  ``device_ids=[0]``) works. ``nn.DataParallel`` works over the virtual devices,
  running its replicas one after another on the calling thread; an error in a replica is raised as is,
  not wrapped in "Caught RuntimeError in replica 1 on device 1".
* Warnings torch emits inside an op are attributed to this module's line that called the op, not to
  the user's line (so a warning repeated from several user lines is shown once).
* Only what goes through ``torch``'s Python API is seen: a storage moved with ``UntypedStorage.cuda()``
  is not.

Supported torch versions: 2.4 and later (``TorchFunctionMode`` intercepting property getters and
``Tensor._make_subclass``-based ``nn.Parameter``); tested with the pinned CPU build, torch 2.13.0.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import types
import weakref

import torch
import torch.nn as nn
import torch.serialization as _serialization
from torch.overrides import TorchFunctionMode

__all__ = ["virtual_gpu", "VirtualGPU", "device_error_info"]

CPU = -1

_INVALID_ORDINAL = (
    "CUDA error: invalid device ordinal\n"
    "GPU device may be out of range, do you have enough GPUs?\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
    "might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)

# Ops that take a CPU 0-dim tensor as an operand in TensorIterator's "CPU scalar" way are allowed by
# default; these do not allow it (seen on an H100: clamp with a 0-dim CPU min raises).
_NO_CPU_SCALAR = {
    "clamp", "clamp_", "clip", "clip_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_",
    "index_select", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "embedding",
    "matmul", "mm", "bmm", "linear", "einsum", "cat", "concat", "concatenate", "stack", "equal",
    "allclose", "isclose", "cross_entropy", "nll_loss", "index_add", "index_add_", "take",
    "take_along_dim", "searchsorted", "bucketize",
}

# Functions that compare or describe tensors without computing on them: no device check, no tag.
_PASS = {
    "_has_compatible_shallow_copy_type", "is_same_size", "is_set_to", "data_ptr", "untyped_storage",
    "storage", "_typed_storage", "element_size", "nelement", "numel", "dim", "size", "stride",
    "storage_offset", "is_contiguous", "is_floating_point", "is_complex", "is_signed", "__len__",
    "__hash__", "__bool__", "__float__", "__int__", "__index__", "item", "tolist",
    "is_nonzero", "_is_view", "__reduce_ex__", "__setstate__", "_version", "__dlpack_device__",
}

# Ops that torch.autocast("cuda") runs in float16 (PyTorch's "CUDA Ops that can autocast to float16").
# Their results get the autocast dtype; the arithmetic itself is the CPU's float32.
_AUTOCAST_LOWER = {
    "__matmul__", "__rmatmul__", "addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm", "chain_matmul",
    "multi_dot", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "linear", "matmul", "mm", "mv", "prelu", "einsum",
}

# Arguments a GPU op takes on the CPU (by position, by name), and outputs it returns on the CPU.
_HOST_ARGS = {
    "_pack_padded_sequence": ({1}, {"lengths"}),
    "_pad_packed_sequence": ({1}, {"batch_sizes"}),
    "lstm": ({1}, set()), "gru": ({1}, set()), "rnn_tanh": ({1}, set()), "rnn_relu": ({1}, set()),
    "ctc_loss": ({1, 2, 3}, {"targets", "input_lengths", "target_lengths"}),
}
_HOST_OUTPUTS = {"_pack_padded_sequence": (1,), "_pad_packed_sequence": (1,)}

# Ops autocast runs in float32 on CUDA (PyTorch's "CUDA Ops that can autocast to float32").
_AUTOCAST_FP32 = {
    "__pow__", "__rdiv__", "__rpow__", "__rtruediv__", "acos", "asin", "binary_cross_entropy_with_logits",
    "cosh", "cosine_embedding_loss", "cdist", "cosine_similarity", "cross_entropy", "cumprod", "cumsum",
    "dist", "erfinv", "exp", "expm1", "group_norm", "hinge_embedding_loss", "kl_div", "l1_loss",
    "layer_norm", "log", "log_softmax", "log10", "log1p", "log2", "margin_ranking_loss", "mse_loss",
    "multilabel_margin_loss", "multi_margin_loss", "nll_loss", "norm", "normalize", "pdist",
    "poisson_nll_loss", "pow", "prod", "reciprocal", "rsqrt", "sinh", "smooth_l1_loss",
    "soft_margin_loss", "softmax", "softmin", "softplus", "sum", "renorm", "tan", "triplet_margin_loss",
}
# CUDA kernels that take float16 inputs with float32 parameters and return the input's dtype
# (the CPU ones want one dtype).
_AUTOCAST_KEEP_INPUT_DTYPE = {"batch_norm", "instance_norm"}
_AUTOCAST_ANY = _AUTOCAST_LOWER | _AUTOCAST_FP32 | _AUTOCAST_KEEP_INPUT_DTYPE


def _to_float32(obj, depth=0):
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point() and obj.dtype != torch.float32 and obj.dtype != torch.float64:
            return obj.float()
        return obj
    if depth < 2 and isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_to_float32(o, depth + 1) for o in obj)
    if depth < 1 and isinstance(obj, dict):
        return {k: _to_float32(v, depth + 1) for k, v in obj.items()}
    return obj


_MIXED = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"


_CONSTRUCTORS: set | None = None


def _constructors() -> set:
    global _CONSTRUCTORS
    if _CONSTRUCTORS is None:
        try:
            from torch.utils._device import _device_constructors
            _CONSTRUCTORS = set(_device_constructors())
        except Exception:  # pragma: no cover - older torch
            _CONSTRUCTORS = set()
    return _CONSTRUCTORS


def _default_device():
    """The device torch.set_default_device gave (its DeviceContext mode), without allocating."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._device import DeviceContext

    for m in reversed(_get_current_function_mode_stack()):
        if isinstance(m, DeviceContext):
            return m.device
    return None


def _name(d: int | None) -> str:
    return "cpu" if d is None or d == CPU else f"cuda:{d}"


def _dev_error(exc_type, message: str, devices=None):
    exc = exc_type(message)
    exc._devlint_virtual_gpu = True  # type: ignore[attr-defined]
    exc._devlint_devices = tuple(devices) if devices else ()  # type: ignore[attr-defined]
    return exc


def device_error_info(exc: BaseException) -> tuple[str, ...] | None:
    """The two devices of a device error raised by the virtual GPU (empty tuple when not two), or None."""
    if getattr(exc, "_devlint_virtual_gpu", False):
        return exc._devlint_devices  # type: ignore[attr-defined]
    return None


class _Table:
    """Virtual device of each tensor, keyed by identity; entries die with their tensors."""

    def __init__(self) -> None:
        self._d: dict[int, tuple[weakref.ref, int]] = {}
        self._lock = threading.Lock()

    def get(self, t) -> int | None:
        e = self._d.get(id(t))
        if e is None or e[0]() is not t:
            return None
        return e[1]

    def set(self, t, dev: int | None) -> None:
        if dev is None:
            return
        key = id(t)
        e = self._d.get(key)
        if e is not None and e[0]() is t:
            if e[1] != dev:
                self._d[key] = (e[0], dev)
            return
        d = self._d

        def gone(_ref, key=key, d=d):
            cur = d.get(key)
            if cur is not None and cur[0] is _ref:
                del d[key]

        try:
            self._d[key] = (weakref.ref(t, gone), dev)
        except TypeError:
            pass

    def live(self):
        for ref, dev in list(self._d.values()):
            t = ref()
            if t is not None:
                yield t, dev


def _tensors(obj, out, depth=0):
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(o, out, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out, depth + 1)
    return out


class VirtualGPU(TorchFunctionMode):
    """The function mode; use :func:`virtual_gpu` rather than this class."""

    def __init__(self, devices: int = 1, honour_cuda_visible_devices: bool = True) -> None:
        super().__init__()
        if devices < 0:
            raise ValueError("devices must be >= 0")
        self.requested = devices
        self.honour = honour_cuda_visible_devices
        self._frozen: int | None = None
        self.current = 0
        self.table = _Table()
        self.pinned = _Table()  # tensors made by pin_memory() (the CPU build cannot pin)

    def visible_now(self) -> int:
        """What ``torch.cuda.device_count()`` answers: CUDA_VISIBLE_DEVICES as it is now."""
        return _visible_devices(self.requested) if self.honour else self.requested

    @property
    def devices(self) -> int:
        """The devices CUDA initialised with: CUDA_VISIBLE_DEVICES is read at the first
        ``is_available()`` or allocation and then ignored, as on a GPU machine (shared/DOMAIN.md)."""
        if self._frozen is None:
            self._frozen = self.visible_now()
        return self._frozen

    # ---- devices -------------------------------------------------------------------------------
    def dev(self, t) -> int | None:
        return self.table.get(t)

    def real_or_virtual(self, t) -> int:
        d = self.table.get(t)
        return CPU if d is None else d

    def check_ordinal(self, idx: int) -> int:
        __tracebackhide__ = True  # pytest shows the user's frames, not the virtual GPU's
        if idx < 0:
            raise _dev_error(RuntimeError, "Device index must not be negative")
        if idx >= self.devices:
            err = getattr(torch, "AcceleratorError", RuntimeError)
            try:
                raise _dev_error(err, _INVALID_ORDINAL)
            except TypeError:  # pragma: no cover - constructor differs
                raise _dev_error(RuntimeError, _INVALID_ORDINAL)
        return idx

    def parse(self, d, check=True):
        """A device argument -> CPU, a CUDA index, or ('other', device) for meta and friends."""
        __tracebackhide__ = True  # pytest shows the user's frames, not the virtual GPU's
        if d is None:
            return None
        if isinstance(d, bool):
            raise TypeError(f"to() received an invalid combination of arguments - got ({d!r})")
        if isinstance(d, int):
            if d < 0:
                raise _dev_error(RuntimeError, "Device index must not be negative")
            return self.check_ordinal(d) if check else d
        if isinstance(d, str):
            d = torch.device(d)
        if isinstance(d, torch.device):
            if d.type == "cpu":
                return CPU
            if d.type == "cuda":
                if self.devices == 0:
                    raise _dev_error(RuntimeError, "No CUDA GPUs are available")
                idx = self.current if d.index is None else d.index
                return self.check_ordinal(idx) if check else idx
            return ("other", d)
        return None

    def tag(self, obj, dev, depth=0):
        if dev is None or isinstance(dev, tuple):
            return obj
        if isinstance(obj, torch.Tensor):
            self.table.set(obj, dev)
        elif depth < 2 and isinstance(obj, (list, tuple)):
            for o in obj:
                self.tag(o, dev, depth + 1)
        return obj

    def common(self, tensors, allow_cpu_scalar=True):
        __tracebackhide__ = True  # pytest shows the user's frames, not the virtual GPU's
        known = []
        for t in tensors:
            d = self.table.get(t)
            if d is not None:
                known.append((d, t))
        if not known:
            return None
        if allow_cpu_scalar and any(d != CPU for d, _ in known):
            kept = [(d, t) for d, t in known if not (d == CPU and t.dim() == 0)]
            if kept:
                known = kept
        first = known[0][0]
        for d, _ in known[1:]:
            if d != first:
                a, b = _name(first), _name(d)
                raise _dev_error(RuntimeError, _MIXED.format(a, b), (a, b))
        return first

    # ---- the mode ------------------------------------------------------------------------------
    def __torch_function__(self, func, types_, args=(), kwargs=None):
        __tracebackhide__ = True  # pytest shows the user's frames, not the virtual GPU's
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in ("__get__", "__set__"):
            return self._property(func, name, args)
        handler = _HANDLERS.get(name)
        if handler is not None and args and isinstance(args[0], torch.Tensor):
            return handler(self, func, args, kwargs)
        if name in _PASS:
            return func(*args, **kwargs)
        if name == "get_device" and args:
            return self.real_or_virtual(args[0]) if self.dev(args[0]) is not None else func(*args, **kwargs)
        return self._generic(func, name, args, kwargs)

    def _property(self, func, name, args):
        __tracebackhide__ = True  # pytest shows the user's frames, not the virtual GPU's
        desc = getattr(getattr(func, "__self__", None), "__name__", "")
        t = args[0] if args else None
        if name == "__get__" and isinstance(t, torch.Tensor):
            d = self.dev(t)
            if d is not None:
                if desc == "device":
                    return torch.device("cpu") if d == CPU else torch.device("cuda", d)
                if desc == "is_cuda":
                    return d != CPU
                if desc == "is_cpu":
                    return d == CPU
            res = func(*args)
            if desc in ("device", "is_cuda", "is_cpu", "shape", "dtype", "requires_grad", "is_leaf",
                        "ndim", "layout", "names", "is_sparse", "is_quantized", "is_meta"):
                return res
            if isinstance(res, torch.Tensor) and d is not None and self.dev(res) is None:
                self.table.set(res, d)
            return res
        if name == "__set__" and isinstance(t, torch.Tensor) and len(args) >= 2:
            value = args[1]
            if desc == "grad" and isinstance(value, torch.Tensor):
                d, g = self.dev(t), self.dev(value)
                if d is not None and g is not None and d != g:
                    ta = "cpu" if g == CPU else "cuda"
                    tb = "cpu" if d == CPU else "cuda"
                    if ta != tb:
                        raise _dev_error(
                            RuntimeError,
                            f"attempting to assign a gradient with device type '{ta}' to a tensor with device "
                            f"type '{tb}'. Please ensure that the gradient and the tensor are on the same device",
                            (_name(g), _name(d)))
                    raise _dev_error(RuntimeError, "assigned grad has data located on a different device",
                                     (_name(g), _name(d)))
            res = func(*args)
            if desc == "data" and isinstance(value, torch.Tensor):
                self.table.set(t, self.dev(value))
            return res
        return func(*args)

    def _generic(self, func, name, args, kwargs):
        __tracebackhide__ = True  # pytest shows the user's frames, not the virtual GPU's
        target = None
        if kwargs.get("device") is None and func in _constructors():
            # torch.set_default_device("cuda") acts below this mode: give the device here.
            default = _default_device()
            if default is not None and default.type == "cuda":
                kwargs = dict(kwargs, device=default)
        if "device" in kwargs and kwargs["device"] is not None:
            target = self.parse(kwargs["device"])
            if not isinstance(target, tuple):
                kwargs = dict(kwargs, device="cpu")
        host = _HOST_ARGS.get(name)
        if host is None:
            inputs = _tensors(args, [])
            _tensors(kwargs, inputs)
        else:
            # Arguments a GPU takes on the host (sequence lengths, CTC targets): not part of the check.
            inputs = []
            for i, a in enumerate(args):
                if not (i in host[0] and self._host_ok(a, name)):
                    _tensors(a, inputs)
            for k, a in kwargs.items():
                if not (k in host[1] and self._host_ok(a, name)):
                    _tensors(a, inputs)
        common = self.common(inputs, allow_cpu_scalar=name not in _NO_CPU_SCALAR)
        autocast_to = None
        if (name in _AUTOCAST_ANY and isinstance(common if target is None else target, int)
                and (common if target is None else target) >= 0 and torch.is_autocast_enabled("cuda")):
            # torch.autocast("cuda") has no effect on CPU kernels: do its casts here. The arithmetic
            # runs in float32; results of the float16 ops are rounded to the autocast dtype.
            first = next((t for t in inputs if t.is_floating_point()), None)
            args, kwargs = _to_float32(args), _to_float32(kwargs)
            if name in _AUTOCAST_LOWER:
                autocast_to = torch.get_autocast_dtype("cuda")
            elif name in _AUTOCAST_KEEP_INPUT_DTYPE and first is not None:
                autocast_to = first.dtype
        res = func(*args, **kwargs)
        if autocast_to is not None and isinstance(res, torch.Tensor) and res.is_floating_point():
            res = res.to(autocast_to)
        if target is None:
            target = common if common is not None else (CPU if not inputs else None)
        if target is not None and not isinstance(target, tuple):
            self.tag(res, target)
            for i in _HOST_OUTPUTS.get(name, ()):
                if isinstance(res, (tuple, list)) and len(res) > i:
                    self.tag(res[i], CPU)
        return res

    def _host_ok(self, a, name: str) -> bool:
        if name in ("lstm", "gru", "rnn_tanh", "rnn_relu") and not (
                isinstance(a, torch.Tensor) and a.dtype == torch.int64 and a.dim() == 1):
            return False  # position 1 is the hidden state (an LSTM's is a tuple) unless the input is packed
        if not isinstance(a, torch.Tensor):
            return True
        d = self.dev(a)
        return d is None or d == CPU


# ---- handlers for Tensor methods -------------------------------------------------------------------

def _move(mode, t, target, func_kwargs):
    """Return t on `target` (CPU or CUDA index) with dtype etc. applied; the same object when nothing changes."""
    cur = mode.real_or_virtual(t)
    moving = target is not None and target != cur
    dtype = func_kwargs.get("dtype")
    copy = bool(func_kwargs.get("copy", False))
    kw = {}
    if func_kwargs.get("memory_format") is not None:
        kw["memory_format"] = func_kwargs["memory_format"]
    res = torch.Tensor.to(t, "cpu", dtype, bool(func_kwargs.get("non_blocking", False)), copy or moving, **kw)
    mode.table.set(res, target if target is not None else cur)
    return res


def _h_to(mode, func, args, kwargs):
    t = args[0]
    rest = list(args[1:])
    other = None
    if rest and isinstance(rest[0], torch.Tensor):
        other = rest.pop(0)
    elif isinstance(kwargs.get("other"), torch.Tensor):
        other = kwargs.pop("other")
    if other is not None:
        kw = dict(kwargs)
        if rest:
            kw.setdefault("non_blocking", rest[0])
        if len(rest) > 1:
            kw.setdefault("copy", rest[1])
        kw["dtype"] = other.dtype
        return _move(mode, t, mode.real_or_virtual(other), kw)
    # torch parses the rest exactly as Tensor.to does (it accepts "cuda" on the CPU build, but not an
    # index alone, which it resolves through the accelerator).
    kwargs = dict(kwargs)
    if rest and isinstance(rest[0], int) and not isinstance(rest[0], bool):
        rest[0] = torch.device("cuda", mode.parse(rest[0]))
    if isinstance(kwargs.get("device"), int) and not isinstance(kwargs["device"], bool):
        kwargs["device"] = torch.device("cuda", mode.parse(kwargs["device"]))
    device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*rest, **{
        k: v for k, v in kwargs.items() if k != "copy"})
    copy = kwargs.get("copy", False)
    if len(rest) >= 1 and not isinstance(rest[0], (torch.device, str, int, type(None))) and len(rest) >= 3:
        copy = rest[2]
    elif len(rest) >= 4:
        copy = rest[3]
    if device is not None and device.type not in ("cpu", "cuda"):
        return func(*args, **kwargs)
    target = mode.parse(device)
    return _move(mode, t, target, {"dtype": dtype, "non_blocking": non_blocking, "copy": copy,
                                   "memory_format": memory_format})


def _h_cuda(mode, func, args, kwargs):
    device = args[1] if len(args) > 1 else kwargs.get("device")
    if mode.devices == 0:
        raise _dev_error(RuntimeError, "No CUDA GPUs are available")
    target = mode.current if device is None else mode.parse(device)
    if isinstance(target, tuple) or target == CPU:
        raise RuntimeError("Invalid device, must be cuda device")
    return _move(mode, args[0], target, {"non_blocking": kwargs.get("non_blocking", False),
                                         "memory_format": kwargs.get("memory_format")})


def _h_cpu(mode, func, args, kwargs):
    return _move(mode, args[0], CPU, {"memory_format": kwargs.get("memory_format")})


def _h_numpy(mode, func, args, kwargs):
    d = mode.dev(args[0])
    if d is not None and d != CPU:
        raise _dev_error(TypeError, f"can't convert cuda:{d} device type tensor to numpy. Use Tensor.cpu() to copy "
                                    "the tensor to host memory first.", (_name(d), "cpu"))
    return func(*args, **kwargs)


def _index_check(mode, t, index):
    d = mode.real_or_virtual(t)
    idx = index if isinstance(index, tuple) else (index,)
    for i in idx:
        if isinstance(i, torch.Tensor) and i.dim() > 0:
            di = mode.dev(i)
            if di is not None and di != CPU and di != d:
                raise _dev_error(RuntimeError, "indices should be either on cpu or on the same device as the "
                                 f"indexed tensor ({_name(d)})", (_name(d), _name(di)))


def _h_getitem(mode, func, args, kwargs):
    _index_check(mode, args[0], args[1] if len(args) > 1 else None)
    res = func(*args, **kwargs)
    d = mode.dev(args[0])
    return mode.tag(res, d)


def _h_setitem(mode, func, args, kwargs):
    _index_check(mode, args[0], args[1] if len(args) > 1 else None)
    return func(*args, **kwargs)


def _h_copy(mode, func, args, kwargs):
    return func(*args, **kwargs)


def _h_masked_fill(mode, func, args, kwargs):
    t = args[0]
    mask = args[1] if len(args) > 1 else kwargs.get("mask")
    if isinstance(mask, torch.Tensor):
        d, dm = mode.dev(t), mode.dev(mask)
        if d is not None and dm is not None and d != dm:
            raise _dev_error(RuntimeError, f"expected self and mask to be on the same device, but got mask on "
                                           f"{_name(dm)} and self on {_name(d)}", (_name(d), _name(dm)))
    return mode._generic(func, func.__name__, args, kwargs)


def _h_pin_memory(mode, func, args, kwargs):
    t = args[0]
    d = mode.dev(t)
    if d is not None and d != CPU:
        raise _dev_error(RuntimeError, "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned")
    res = t.clone()
    mode.table.set(res, CPU)
    mode.pinned.set(res, 1)
    return res


def _h_is_pinned(mode, func, args, kwargs):
    return mode.pinned.get(args[0]) is not None


def _legacy_type_name(mode, t):
    base = torch.Tensor.type(t)  # e.g. torch.FloatTensor
    d = mode.dev(t)
    if d is not None and d != CPU:
        return base.replace("torch.", "torch.cuda.", 1)
    return base


def _h_type(mode, func, args, kwargs):
    t = args[0]
    dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
    if dtype is None:
        return _legacy_type_name(mode, t)
    if isinstance(dtype, type) and getattr(dtype, "_devlint_legacy", None):
        dtype = dtype._devlint_legacy
    if isinstance(dtype, str):
        cuda = ".cuda." in dtype
        real = torch.Tensor.type(torch.empty(0), dtype.replace(".cuda.", ".")).dtype
        target = mode.current if cuda else CPU
        if cuda:
            mode.check_ordinal(mode.current)
        return _move(mode, t, target, {"dtype": real})
    if isinstance(dtype, torch.dtype):
        return _move(mode, t, mode.real_or_virtual(t), {"dtype": dtype})
    return func(*args, **kwargs)


def _h_repr(mode, func, args, kwargs):
    res = func(*args, **kwargs)
    d = mode.dev(args[0])
    if d is None or d == CPU or not isinstance(res, str) or "device=" in res:
        return res
    ins = f", device='cuda:{d}'"
    cut = len(res) - 1
    for marker in (", dtype=", ", grad_fn=", ", requires_grad="):
        at = res.rfind(marker)
        if at != -1:
            cut = min(cut, at)
    if not res.endswith(")"):
        return res
    return res[:cut] + ins + res[cut:]


def _h_format(mode, func, args, kwargs):
    t = args[0]
    spec = args[1] if len(args) > 1 else ""
    if spec == "" and torch.Tensor.dim(t) != 0:
        return _h_repr(mode, torch.Tensor.__repr__, (t,), {})
    return func(*args, **kwargs)


def _h_deepcopy(mode, func, args, kwargs):
    res = func(*args, **kwargs)
    d = mode.dev(args[0])
    if d is not None and isinstance(res, torch.Tensor):
        mode.table.set(res, d)
        grad = getattr(res, "_grad", None)
        if isinstance(grad, torch.Tensor):
            mode.table.set(grad, d)
    return res


_HANDLERS = {
    "__deepcopy__": _h_deepcopy,
    "__format__": _h_format,
    "to": _h_to,
    "cuda": _h_cuda,
    "cpu": _h_cpu,
    "numpy": _h_numpy,
    "__array__": _h_numpy,
    "__getitem__": _h_getitem,
    "__setitem__": _h_setitem,
    "copy_": _h_copy,
    "masked_fill": _h_masked_fill,
    "masked_fill_": _h_masked_fill,
    "pin_memory": _h_pin_memory,
    "is_pinned": _h_is_pinned,
    "type": _h_type,
    "__repr__": _h_repr,
}


# ---- patches for what the mode does not see -------------------------------------------------------

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
        self._serialization()
        self._legacy_types()
        self._data_parallel()
        self._generator()
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
                mode.table.set(p, mode.dev(data))
            elif data is None:
                mode.table.set(p, CPU)
            return p

        self.set(nn.Parameter, "__new__", staticmethod(__new__))

    def _cuda(self) -> None:
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

        class Stream:
            def __init__(self, device=None, priority=0, **kw):
                self.device = torch.device("cuda", mode.current)

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

        zero = lambda *a, **k: 0  # noqa: E731
        none = lambda *a, **k: None  # noqa: E731
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

    def _accelerator(self) -> None:
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
        }
        for k, v in patches.items():
            if hasattr(acc, k):
                self.set(acc, k, v)

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


def _visible_devices(requested: int) -> int:
    """How many of `requested` devices CUDA_VISIBLE_DEVICES leaves visible (all when it is unset)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return requested
    ids = [p for p in env.split(",") if p.strip()]
    good = 0
    for p in ids:
        try:
            if int(p) < 0:
                break
        except ValueError:
            break
        good += 1
    return min(requested, good)


@contextlib.contextmanager
def virtual_gpu(devices: int = 1, honour_cuda_visible_devices: bool = True):
    """Run the body with `devices` virtual CUDA devices; yields the :class:`VirtualGPU` mode.

    ``CUDA_VISIBLE_DEVICES`` (when set and honoured) limits the number of devices with its real timing:
    it counts until the first ``torch.cuda.is_available()`` or CUDA allocation, and is ignored after
    that (``device_count()`` keeps reading it, as on a GPU machine).
    """
    mode = VirtualGPU(devices, honour_cuda_visible_devices)
    patches = _Patches(mode)
    patches.apply()
    try:
        with mode:
            yield mode
    finally:
        patches.undo()
