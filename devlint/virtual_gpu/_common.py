"""Shared pieces of the virtual GPU: the device table, device errors, op name tables."""

from __future__ import annotations

import os
import threading
import weakref

import torch

CPU = -1

_INVALID_ORDINAL = (
    "CUDA error: invalid device ordinal\n"
    "GPU device may be out of range, do you have enough GPUs?\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
    "might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)

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


def _dev_error(exc_type, message: str, devices=None, origin=None):
    """A device error; `origin` is where the stray tensor got its device (provenance.origin_of)."""
    exc = exc_type(message)
    exc._devlint_virtual_gpu = True  # type: ignore[attr-defined]
    exc._devlint_devices = tuple(devices) if devices else ()  # type: ignore[attr-defined]
    exc._devlint_origin = origin  # type: ignore[attr-defined]
    return exc


def device_error_info(exc: BaseException) -> tuple[str, ...] | None:
    """The two devices of a device error raised by the virtual GPU (empty tuple when not two), or None."""
    if getattr(exc, "_devlint_virtual_gpu", False):
        return exc._devlint_devices  # type: ignore[attr-defined]
    return None


class _Table:
    """Virtual device of each tensor, keyed by identity; entries die with their tensors. Each entry
    also keeps where the tensor got its device (provenance.py): ("created" or "moved", file, line)."""

    def __init__(self) -> None:
        self._d: dict[int, tuple] = {}
        self._lock = threading.Lock()
        self.accounting = None  # memory.Memory when the devices have a memory limit

    def get(self, t) -> int | None:
        e = self._d.get(id(t))
        if e is None or e[0]() is not t:
            return None
        return e[1]

    def site(self, t):
        e = self._d.get(id(t))
        if e is None or e[0]() is not t:
            return None
        return e[2]

    def set(self, t, dev: int | None, site=None) -> None:
        if dev is None:
            return
        key = id(t)
        e = self._d.get(key)
        if e is not None and e[0]() is t:
            # A tensor keeps the site that gave it its device: an in-place op returning it does not
            # replace it, a move to another device does.
            if e[1] != dev and self.accounting is not None:
                self.accounting.tagged(key, t, dev)
            if e[1] != dev or (site is not None and e[2] is None):
                self._d[key] = (e[0], dev, site if site is not None else e[2])
            return
        d = self._d

        def gone(_ref, key=key, d=d, table=self):
            cur = d.get(key)
            if cur is not None and cur[0] is _ref:
                del d[key]
                if table.accounting is not None:
                    table.accounting.gone(key)

        try:
            ref = weakref.ref(t, gone)
        except TypeError:
            return
        if self.accounting is not None:
            self.accounting.tagged(key, t, dev)
        self._d[key] = (ref, dev, site)

    def live(self):
        for ref, dev, _ in list(self._d.values()):
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

