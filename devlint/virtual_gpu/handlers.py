"""The Tensor methods the mode answers itself: moves, numpy, indexing, pinning, type and repr."""

from __future__ import annotations

import torch

from devlint.virtual_gpu import provenance
from devlint.virtual_gpu._common import CPU, _dev_error, _name


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
    mode.table.set(res, target if target is not None else cur,
                   provenance.user_site("moved") if moving else provenance.user_site())
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
    "record_stream": lambda mode, func, args, kwargs: None,  # virtual streams: nothing to order
}

