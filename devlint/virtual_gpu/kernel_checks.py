"""Device checks PyTorch kernels make in their own bodies, which no metadata shows.

``native_functions.yaml`` says what the generated CUDA wrapper checks (decide.py). A few kernels check
more themselves, before they pick a backend by the tensors' *real* device, which on the CPU build is
always the CPU: their CPU path would run a mix a GPU refuses. Each entry names the ATen operator, the
PyTorch source that raises, and the GPU's message (seen on an H200, ``../shared/gpu-truth``).
"""

from __future__ import annotations

import torch

from devlint.virtual_gpu._common import CPU, _dev_error, _name


def _legacy(mode, t) -> str:
    base = torch.Tensor.type(t)  # e.g. torch.FloatTensor
    d = mode.dev(t)
    return base.replace("torch.", "torch.cuda.", 1) if d is not None and d != CPU else base


def _convolution(mode, named):
    """aten/src/ATen/native/Convolution.cpp, check_input_same_type_as_parameters (every backend)."""
    __tracebackhide__ = True
    by = {n: t for n, t, *_ in named}
    inp, weight, bias = by.get("input"), by.get("weight"), by.get("bias")
    if inp is None or weight is None:
        return
    di = mode.dev(inp)
    for what, p in (("weight", weight), ("bias", bias)):
        dp = mode.dev(p) if p is not None else None
        if di is None or dp is None or di == dp:
            continue
        msg = f"Input type ({_legacy(mode, inp)}) and {what} type ({_legacy(mode, p)}) should be the same"
        if di == CPU and what == "weight":
            msg += " or input should be a MKLDNN tensor and weight is a dense tensor"
        raise _dev_error(RuntimeError, msg, (_name(di), _name(dp)))


def _block_diag(mode, named):
    """aten/src/ATen/native/TensorShape.cpp, block_diag."""
    __tracebackhide__ = True
    devs = [(i, mode.dev(t)) for i, (_, t, *_) in enumerate(named)]
    first = next(((i, d) for i, d in devs if d is not None), None)
    for i, d in devs:
        if first is not None and d is not None and d != first[1]:
            raise _dev_error(RuntimeError, "torch.block_diag: input tensors must all be on the same device. "
                             f"Input {first[0]} is on device {_name(first[1])} and input {i} is on device {_name(d)}",
                             (_name(first[1]), _name(d)))


def _segment_reduce(mode, named):
    """aten/src/ATen/native/SegmentReduce.cpp, _segment_reduce_kernel (TORCH_CHECK on get_device())."""
    __tracebackhide__ = True
    by = {n: t for n, t, *_ in named}
    data = by.get("data")
    dd = mode.dev(data) if data is not None else None
    for what in ("lengths", "offsets"):
        t = by.get(what)
        dt = mode.dev(t) if t is not None else None
        if dd is not None and dt is not None and dd != dt:
            raise _dev_error(RuntimeError, f"Expected data.get_device() == {what}_value.get_device() to be true, "
                             "but got false.", (_name(dd), _name(dt)))


KERNEL_CHECKS = {
    "convolution": _convolution,
    "_convolution": _convolution,
    "block_diag": _block_diag,
    "segment_reduce": _segment_reduce,
}
