"""Smaller places where the CPU build answered otherwise than a GPU machine, each seen against one:
``torch.autograd.Variable`` of a CUDA tensor, a generator on the wrong device, ``torch.set_rng_state``
of a CUDA tensor."""

from __future__ import annotations

import torch

from devlint.virtual_gpu._common import CPU, _dev_error


def patch_all(patches) -> None:
    _variable(patches)
    _set_rng_state(patches)


def _variable(patches) -> None:
    """``Variable(x)`` makes its tensor in C++ (``_LegacyVariableBase``), unseen by the mode: it keeps
    ``x``'s device, as on a GPU (old research code wraps every tensor in ``Variable``)."""
    mode = patches.mode
    var = torch.autograd.Variable
    orig = vars(var).get("__new__") or torch._C._LegacyVariableBase.__new__

    def __new__(cls, *args, **kwargs):
        res = orig(cls, *args, **kwargs)
        data = args[0] if args else kwargs.get("data")
        if isinstance(data, torch.Tensor) and mode.dev(data) is not None:
            mode.table.set(res, mode.dev(data))
        return res

    patches.set(var, "__new__", staticmethod(__new__))


def _set_rng_state(patches) -> None:
    """The CPU generator's state is a CPU ByteTensor (CPUGeneratorImpl::set_state, check_rng_state)."""
    mode = patches.mode
    orig = torch.random.set_rng_state

    def set_rng_state(new_state):
        __tracebackhide__ = True
        d = mode.dev(new_state) if isinstance(new_state, torch.Tensor) else None
        if d is not None and d != CPU:
            raise _dev_error(TypeError, "RNG state must be a torch.ByteTensor")
        return orig(new_state)

    patches.set(torch, "set_rng_state", set_rng_state)
    patches.set(torch.random, "set_rng_state", set_rng_state)


def check_generator(kwargs, device) -> None:
    """A generator on another device type than the op's raises, as ``check_generator`` does in ATen."""
    __tracebackhide__ = True
    gen = kwargs.get("generator")
    if gen is None or device is None or isinstance(device, tuple):
        return
    gd = getattr(gen, "_devlint_device", None)
    gen_type = "cuda" if gd is not None and gd != CPU else "cpu"
    op_type = "cuda" if device != CPU else "cpu"
    if gen_type != op_type:
        raise _dev_error(RuntimeError, f"Expected a '{op_type}' device type for generator but found '{gen_type}'",
                         (op_type, gen_type))
