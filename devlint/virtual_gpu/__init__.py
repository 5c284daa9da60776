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

Which mixes raise
-----------------
A call whose tensors are on one device runs as is. A call that mixes devices is decided by PyTorch's
own rules (``decide.py``: each ATen operator's ``device_check`` in ``native_functions.yaml``,
TensorIterator's CPU scalars, composite operators followed into the operators they run, and the few
checks kernels make in their bodies, ``kernel_checks.py``), with the GPU's messages (``but found at
least two devices, cuda:0 and cpu!`` or ``but got mat2 is on cpu, ...``). Measured against an H200 on
PyTorch's operator database (``../shared/gpu-truth``): 2,083 of 2,093 real mixes agree, no false alarm.
The Tensor methods the mode answers itself (``handlers.py``) keep their rows, each a test in
``tests/test_virtual_gpu.py``:

================================================  =============================================
mix                                               GPU (H100, torch 2.11) and virtual GPU
================================================  =============================================
CUDA tensor indexed by CPU long index / bool mask allowed
CPU tensor indexed by CUDA index                  raises ``indices should be either on cpu ...``
item assignment across devices                    allowed (``g[0] = c[0]``, ``c[0] = g[0]``)
``copy_`` either way                              allowed
``.numpy()``, ``numpy.asarray`` of CUDA tensor    ``TypeError: can't convert cuda:0 ...``
``masked_fill`` with a CPU mask                   raises ``expected self and mask ...``
CPU lengths / ``batch_sizes`` of packed sequences allowed (``pack_padded_sequence``, RNNs,
and the targets and lengths of ``ctc_loss`` (*)   ``pad_packed_sequence``); a CPU hidden state raises
CPU ``.grad`` assigned to a CUDA parameter        raises ``attempting to assign a gradient ...``
================================================  =============================================

(*) LossCTC.cpp moves the targets to ``log_probs``' device and reads the lengths on the host.

Beyond the mode
---------------
Every thread and spawned or forked worker runs on the virtual GPU (``workers.py``); a device error
names where the stray tensor got its device (``provenance.py``); ``memory=`` gives each device a
memory size and raises ``torch.OutOfMemoryError`` beyond it (``memory.py``); the CUDA version, cuDNN,
NVTX, ``Variable``, generators and ``set_rng_state`` answer as on a GPU machine (``cuda_api.py``,
``divergences.py``).

Known limits
------------
* GPU numerics are not reproduced: TF32 matmuls, fp16/bf16 CUDA kernels, nondeterministic atomics and
  cuDNN algorithms give CPU results. Under ``torch.autocast("cuda")`` the ops autocast runs in float16
  (matmul, linear, conv, ...) return float16 as on a GPU, but are computed in float32 and rounded.
* Custom CUDA extensions and Triton kernels cannot run; ``torch.compile`` for CUDA is not supported.
* Every thread started while the virtual GPU is active, and DataLoader workers (fork and spawn) and
  its pin-memory thread, run on it (``workers.py``); threads running before it started do not.
  Multi-process distributed training (NCCL, one process per device) is not covered. Single-process
  ``DistributedDataParallel`` (gloo backend, ``device_ids=[0]``) works. ``nn.DataParallel`` works over
  the virtual devices,
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

from devlint.virtual_gpu._common import CPU, _visible_devices, device_error_info  # noqa: F401 - public names
from devlint.virtual_gpu.memory import parse_size, patch_memory
from devlint.virtual_gpu.mode import VirtualGPU
from devlint.virtual_gpu.patches import _Patches

__all__ = ["VirtualGPU", "device_error_info", "virtual_gpu"]


@contextlib.contextmanager
def virtual_gpu(devices: int = 1, honour_cuda_visible_devices: bool = True, memory: int | str | None = None):
    """Run the body with `devices` virtual CUDA devices; yields the :class:`VirtualGPU` mode.

    ``CUDA_VISIBLE_DEVICES`` (when set and honoured) limits the number of devices with its real timing:
    it counts until the first ``torch.cuda.is_available()`` or CUDA allocation, and is ignored after
    that (``device_count()`` keeps reading it, as on a GPU machine). ``memory`` (bytes, or a size such
    as ``"24GiB"``) gives each device that much memory and raises ``torch.OutOfMemoryError`` beyond it.
    """
    limit = parse_size(memory) if isinstance(memory, str) else memory
    mode = VirtualGPU(devices, honour_cuda_visible_devices)
    mode.memory_limit = limit
    patches = _Patches(mode)
    patches.apply()
    if limit is not None:
        patch_memory(patches, limit)
    try:
        with mode:
            yield mode
    finally:
        patches.undo()
