"""Which mixes of devices an operator accepts, decided the way PyTorch decides it.

A call whose tensors are all on one virtual device never comes here. A call that mixes devices runs
under :class:`Probe`, a ``TorchDispatchMode``: it sees the ATen operators the call really runs, after
PyTorch's own ``CompositeImplicitAutograd`` decompositions (so ``expand_as`` is an ``expand`` of
``self`` and never looks at ``other``'s device, and ``F.mse_loss`` broadcasts a 0-dim CPU target into
a tensor that is no longer a scalar). For each operator it applies the rule PyTorch's code generator
wrote into the CUDA kernel's wrapper, read from ``native_functions.yaml`` (shipped in the torch wheel
under ``torchgen/packaged``):

* an operator with a CUDA kernel and the default ``device_check: ExactSame`` checks that every tensor
  among its ``out`` and positional arguments is on one device (``c10::impl::check_and_update_common_device``,
  no exception for 0-dim CPU tensors): "but got mat2 is on cpu, different from other tensors on cuda:0";
* ``device_check: NoCheck`` on a TensorIterator operator (the yaml's ``# TensorIterator`` note, or
  ``structured_inherits: TensorIteratorBase``) leaves the check to TensorIterator's ``compute_types``:
  the common device is the first non-CPU operand's, a 0-dim CPU *input* is read as a scalar, any other
  operand on another device raises "found at least two devices" (an in-place ``self`` is an output);
* ``device_check: NoCheck`` elsewhere (indexing, ``copy_``, CTC, the ``*_scatter`` family): the kernel
  checks what it needs itself; nothing is raised here and the result is on ``self``'s device;
* a ``CompositeExplicitAutograd`` kernel has no device check of its own (``device_guard`` is off for
  composite keys in torchgen): its body is run under the probe, and the operators it calls decide.
  A tensor it allocates (``at::empty(..., self.options())``) gets its first tensor argument's device.

Operators the yaml does not know (prims, custom ops) get FakeTensor's rule (``torch._subclasses.
fake_tensor``): a 0-dim CPU tensor defers to the other device, any other mismatch raises. A tensor a
kernel moves with ``.to(device)`` (an ATen ``_to_copy`` naming a device, always the CPU here) gets no
device: where it would go on a GPU is not visible, so it never raises.

Measured on ``../shared/gpu-truth`` (H200, torch 2.11; the virtual GPU on torch 2.13 CPU): 2,083 of the
2,093 real mixes agree (99.5%; the earlier case list: 1,935, 92.5%), no false alarm, and these 10
misses, where the GPU raises inside a kernel and no metadata says so (the virtual GPU allows them):

* ``mse_loss``, ``smooth_l1_loss``, ``binary_cross_entropy`` with both operands 0-dim, one on the CPU
  (6): their structured meta is a binary TensorIterator, which takes a CPU 0-dim tensor as a scalar;
  the CUDA kernels then refuse it (Loss.cpp builds a second iterator for the reduction; smooth_l1's
  ``gpu_kernel`` asserts ``iter.device(arg).is_cuda()``).
* ``lerp`` with a 0-dim CPU operand (2): TensorIterator accepts it, the CUDA kernel asserts
  ``iter.device(arg).is_cuda()`` (a ``gpu_kernel`` without CPU-scalar support).
* ``searchsorted`` with a CPU ``sorter`` (1): keyword-only, so outside the generated check;
  Bucketization.cpp's ``searchsorted_pre_check`` raises.
* ``inner`` with a 0-dim CPU input (1): LinearAlgebra.cpp's ``inner`` checks device types before its
  0-dim path, in a composite the dispatcher has decomposed before a dispatch mode sees it.
"""

from __future__ import annotations

import functools
import os

import torch
from torch._C import DispatchKey
from torch.utils._python_dispatch import TorchDispatchMode

from devlint.virtual_gpu import provenance
from devlint.virtual_gpu._common import CPU, _dev_error, _name
from devlint.virtual_gpu.kernel_checks import KERNEL_CHECKS

_EXACT, _ITER, _FREE, _COMPOSITE, _UNKNOWN = "exact", "iter", "free", "composite", "unknown"
_COMPOSITE_KEYS = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
_MIXED = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
_EXACT_MSG = ("Expected all tensors to be on the same device, but got {arg} is on {dev}, different from other "
              "tensors on {common} (when checking argument in method {method})")


class _Entry:
    __slots__ = ("delegate", "iterator", "keys", "name", "nocheck", "structured")

    def __init__(self, name: str) -> None:
        self.name = name
        self.nocheck = False
        self.iterator = False
        self.keys: set[str] = set()
        self.delegate: str | None = None
        self.structured = False


def _yaml_path() -> str | None:
    try:
        import torchgen
    except ImportError:  # pragma: no cover - torchgen ships with every torch wheel since 1.13
        return None
    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")
    return path if os.path.exists(path) else None


@functools.lru_cache(maxsize=1)
def entries() -> dict[str, _Entry]:
    """native_functions.yaml's entries by ``name.overload``: only the keys that decide devices.

    Read line by line rather than with a YAML parser: it is fast, needs no PyYAML, and keeps the
    ``# TensorIterator`` notes PyTorch writes beside ``device_check: NoCheck``."""
    path = _yaml_path()
    out: dict[str, _Entry] = {}
    if path is None:
        return out
    cur: _Entry | None = None
    in_dispatch = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("- func:"):
                name = line[len("- func:"):].strip().split("(", 1)[0]
                cur = out[name] = _Entry(name)
                in_dispatch = False
                continue
            if cur is None or not line.strip() or line.lstrip().startswith("#"):
                continue
            stripped = line.strip()
            if line.startswith("    ") and in_dispatch:
                keys = stripped.split(":", 1)[0]
                cur.keys.update(k.strip() for k in keys.split(","))
                continue
            in_dispatch = stripped.startswith("dispatch:")
            if stripped.startswith("device_check:"):
                cur.nocheck = "NoCheck" in stripped
                cur.iterator = cur.iterator or "TensorIterator" in stripped
            elif stripped.startswith("structured_inherits:") and "TensorIteratorBase" in stripped:
                cur.iterator = True
            elif stripped.startswith("structured_delegate:"):
                cur.delegate = stripped.split(":", 1)[1].strip()
            elif stripped.startswith("structured:") and "True" in stripped:
                cur.structured = True
    return out


def _overload_name(func) -> tuple[str, str]:
    schema = func._schema
    base = schema.name.split("::", 1)[-1]
    return base, schema.overload_name


@functools.cache
def kind_of(func) -> tuple[str, str]:
    """(kind, name of the CUDA wrapper) of an OpOverload by the rules above."""
    base, overload = _overload_name(func)
    table = entries()
    e = table.get(f"{base}.{overload}" if overload else base)
    if e is None:
        return _UNKNOWN, ""
    target = table.get(e.delegate) if e.delegate else None
    structured = e.structured or target is not None
    # Structured kernels are backend kernels (a CUDA one too, hand-written or from ufunc_inner_loop).
    cuda = "CUDA" in e.keys or structured
    method = (f"wrapper_CUDA_{base}" + (f"_{overload}" if overload else "")) if structured \
        else f"wrapper_CUDA_{overload}_{base}"
    if cuda:
        if not e.nocheck:
            return _EXACT, method
        iterator = e.iterator or (target is not None and target.iterator)
        return (_ITER if iterator else _FREE), method
    if any(k in e.keys for k in _COMPOSITE_KEYS):
        return _COMPOSITE, method
    return _UNKNOWN, method


def _is_tensor(x) -> bool:
    return isinstance(x, torch.Tensor)


class Probe(TorchDispatchMode):
    """Applies the operator rules to the ATen calls of one mixed call; tags what they return."""

    def __init__(self, mode) -> None:
        super().__init__()
        self.mode = mode
        self.home: list[int | None] = [None]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # pytest shows the user's frames, not the virtual GPU's
        kwargs = kwargs or {}
        if not isinstance(func, torch._ops.OpOverload):  # a higher-order operator: no schema to read
            return func(*args, **kwargs)
        kind, method = kind_of(func)
        mode = self.mode
        named = _named_tensors(func, args, kwargs)
        if func.__name__.startswith(("_to_copy", "to.")) and kwargs.get("device") is not None:
            # A kernel moving a tensor (`targets.to(log_probs.device())` in ctc_loss) names a real
            # device, always the CPU here: where it goes on a GPU is not visible, so it goes anywhere.
            return func(*args, **kwargs)
        check = KERNEL_CHECKS.get(func._schema.name.split("::", 1)[-1])
        if check is not None:
            check(mode, named)
        if not named:
            res = func(*args, **kwargs)
            # A factory inside a kernel allocates with an input's options: the kernel's home device.
            return mode.tag(res, self.home[-1]) if "device" in kwargs else res
        key = None
        if kind == _COMPOSITE and len({d for d in (mode.dev(n[1]) for n in named) if d is not None}) > 1:
            # Only a mix is followed into the kernel's body (its one device is the answer otherwise):
            # inside, Python scalars wrapped as tensors reach the mode unwrapped, which some kernels'
            # inner calls (remainder.Scalar -> remainder.Tensor) cannot take back.
            key = next((k for k in _COMPOSITE_KEYS
                        if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), k)), None)
        elif kind == _COMPOSITE:
            kind = _FREE
        if key is None and kind == _COMPOSITE:
            kind = _UNKNOWN
        if key is not None:
            self.home.append(_first_device(mode, named))
            try:
                with self:
                    res = func._op_dk(getattr(DispatchKey, key), *args, **kwargs)
            except Exception as e:
                if getattr(e, "_devlint_virtual_gpu", False):
                    raise
                # The body could not be followed under a dispatch mode (a wrapped scalar, say): decide
                # this op as FakeTensor does; an error of the op's own is raised again by the call below.
                kind = _UNKNOWN
            else:
                _tag_untagged(mode, res, _first_device(mode, named), overwrite=False)
                return res
            finally:
                self.home.pop()
        if kind == _EXACT:
            common = _exact(mode, named, method)
        elif kind == _ITER:
            common = _iterator(mode, named)
        elif kind == _FREE:
            common = _first_device(mode, named)
        else:
            common = _fake_rule(mode, named, func)
        res = func(*args, **kwargs)
        _tag_untagged(mode, res, common, overwrite=_is_fresh(func))
        return res


def _named_tensors(func, args, kwargs):
    """[(name, tensor, is_output, is_positional, in_list)] of the call, in schema order; lists flattened."""
    out = []
    for i, a in enumerate(func._schema.arguments):
        if i < len(args):
            v = args[i]
        elif a.name in kwargs:
            v = kwargs[a.name]
        else:
            continue
        written = a.alias_info is not None and a.alias_info.is_write
        vals = v if isinstance(v, (list, tuple)) else (v,)
        for t in vals:
            if _is_tensor(t):
                out.append((a.name, t, written, not a.kwarg_only or written, vals is v))
    return out


def _is_fresh(func) -> bool:
    """Whether the op returns new tensors (not a view or an argument written in place)."""
    return all(r.alias_info is None for r in func._schema.returns)


def _tag_untagged(mode, res, dev, overwrite=True):
    if dev is None:
        return
    items = res if isinstance(res, (list, tuple)) else (res,)
    for t in items:
        if _is_tensor(t) and (overwrite or mode.dev(t) is None):
            mode.table.set(t, dev)


def _first_device(mode, named):
    for _, t, _, _, _ in named:
        d = mode.dev(t)
        if d is not None:
            return d
    return None


def _raise_mixed(a: int, b: int):
    __tracebackhide__ = True
    x, y = _name(a), _name(b)
    raise _dev_error(RuntimeError, _MIXED.format(x, y), (x, y))


def _exact(mode, named, method):
    """The generated wrapper's check_and_update_common_device over out and positional tensors."""
    __tracebackhide__ = True
    if not any(mode.dev(t) not in (None, CPU) for _, t, _, _, _ in named):
        return CPU if any(mode.dev(t) is not None for _, t, _, _, _ in named) else None  # the CPU kernel
    common = None
    for name, t, _, positional, _ in named:
        d = mode.dev(t)
        if d is None or not positional:
            continue
        if common is None:
            common = d
        elif d != common:
            x, y = _name(d), _name(common)
            raise _dev_error(RuntimeError, _EXACT_MSG.format(arg=name, dev=x, common=y, method=method), (y, x))
    return common


def _iterator(mode, named):
    """TensorIterator's compute_types: CPU scalars ride along with a CUDA kernel, outputs do not."""
    __tracebackhide__ = True
    listed = [(mode.dev(t), t) for _, t, _, _, in_list in named if in_list]
    named = [n for n in named if not n[4]]
    if listed and named:
        # Index lists (Tensor?[] indices) are no operands: the kernel moves CPU indices to self's
        # device first and refuses indices on another accelerator (TensorAdvancedIndexing's make_info).
        home = mode.dev(named[0][1])
        for d, _ in listed:
            if home is not None and d is not None and d != CPU and d != home:
                raise _dev_error(RuntimeError, "indices should be either on cpu or on the same device as the "
                                 f"indexed tensor ({_name(home)})", (_name(home), _name(d)))
    devs = [(mode.dev(t), t, out) for _, t, out, _, _ in sorted(named, key=lambda n: not n[2])]
    common = next((d for d, _, _ in devs if d is not None and d != CPU), None)
    if common is None:
        return CPU if any(d is not None for d, _, _ in devs) else None
    for d, t, out in devs:
        if d is None or d == common:
            continue
        if d == CPU and not out and t.dim() == 0:
            continue
        _raise_mixed(common, d)
    return common


def _fake_rule(mode, named, func):
    """FakeTensor's _find_common_device: a 0-dim CPU tensor defers to another device."""
    __tracebackhide__ = True
    common, scalar = None, False
    for _, t, _, _, _ in named:
        d = mode.dev(t)
        if d is None:
            continue
        zero = d == CPU and t.dim() == 0
        if common is None:
            common, scalar = d, zero
        elif d != common:
            if zero:
                continue
            if scalar:
                common, scalar = d, zero
                continue
            _raise_mixed(common, d)
    return common


def run_mixed(mode, func, args, kwargs, inputs=()):
    """Run one call whose tensors are on several devices; raises what the GPU raises, naming where the
    stray among `inputs` (the call's own tensors, which carry the user's sites) got its device."""
    __tracebackhide__ = True
    try:
        with Probe(mode):
            return func(*args, **kwargs)
    except Exception as e:
        if getattr(e, "_devlint_virtual_gpu", False) and getattr(e, "_devlint_origin", None) is None:
            e._devlint_origin = provenance.origin_of(mode, *inputs)
        raise
