"""The function mode: every torch call of the program passes here and gets its virtual device."""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

from devlint.virtual_gpu import decide, divergences, provenance
from devlint.virtual_gpu._common import (
    _AUTOCAST_ANY,
    _AUTOCAST_KEEP_INPUT_DTYPE,
    _AUTOCAST_LOWER,
    _HOST_ARGS,
    _HOST_OUTPUTS,
    _INVALID_ORDINAL,
    _PASS,
    CPU,
    _constructors,
    _default_device,
    _dev_error,
    _name,
    _Table,
    _tensors,
    _to_float32,
    _visible_devices,
)


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
        self.memory_limit: int | None = None  # bytes per device (memory.py), None: not accounted
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

    def tag(self, obj, dev, depth=0, site=None):
        if dev is None or isinstance(dev, tuple):
            return obj
        if isinstance(obj, torch.Tensor):
            self.table.set(obj, dev, site)
        elif depth < 2 and isinstance(obj, (list, tuple)):
            for o in obj:
                self.tag(o, dev, depth + 1, site)
        return obj

    def tag_new(self, obj, dev, depth=0, site=None):
        """Like tag, but leaves tensors that already have a device (the probe's decision) as they are."""
        if dev is None or isinstance(dev, tuple):
            return obj
        if isinstance(obj, torch.Tensor):
            self.table.set(obj, self.table.get(obj) if self.table.get(obj) is not None else dev, site)
        elif depth < 2 and isinstance(obj, (list, tuple)):
            for o in obj:
                self.tag_new(o, dev, depth + 1, site)
        return obj

    def devices_of(self, tensors):
        """The virtual devices of `tensors` in order of first appearance (untagged ones left out)."""
        seen = []
        for t in tensors:
            d = self.table.get(t)
            if d is not None and d not in seen:
                seen.append(d)
        return seen

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
        if (func is torch.device and len(args) == 1 and isinstance(args[0], int) and not isinstance(args[0], bool)
                and self.devices > 0):
            # A bare index names the accelerator's device (the CPU build has none to resolve it).
            return torch.device("cuda", args[0])
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
        devs = self.devices_of(inputs)
        # One device: nothing to check. Several: the operators PyTorch runs for this call decide (decide.py).
        mixed = len(devs) > 1
        common = (next((d for d in devs if d != CPU), devs[0]) if mixed else devs[0]) if devs else None
        divergences.check_generator(kwargs, target if target is not None else common if common is not None
                                    else (CPU if not inputs else None))
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
        res = decide.run_mixed(self, func, args, kwargs, inputs) if mixed else func(*args, **kwargs)
        if autocast_to is not None and isinstance(res, torch.Tensor) and res.is_floating_point():
            res = res.to(autocast_to)
        if target is None:
            target = common if common is not None else (CPU if not inputs else None)
        if target is not None and not isinstance(target, tuple):
            site = provenance.user_site() if isinstance(res, (torch.Tensor, list, tuple)) else None
            (self.tag_new if mixed and "device" not in kwargs else self.tag)(res, target, site=site)
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
        if name == "ctc_loss":
            # LossCTC.cpp moves targets to log_probs' device ("as a service for the user") and reads the
            # lengths on the host: none of the three takes part in a device check, on either device.
            return True
        d = self.dev(a)
        return d is None or d == CPU



from devlint.virtual_gpu.handlers import (
    _HANDLERS,  # (last: handlers call back into the mode)
)
