"""What devlint knows of torch's names, apart from any file: which calls return a tensor or a module
(`torch_call_kind`), which methods return a tensor or the module itself, which attributes are tensors,
which annotations name a tensor, a sequence or a mapping, which decorators keep what a function
returns, and the kinds themselves (TENSOR, MODULE, UNKNOWN). The inference (devlint.analysis.kinds)
and the project index (`VOCABULARY`, devlint.analysis.project) read these tables."""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    TENSOR = "tensor"
    MODULE = "module"
    UNKNOWN = "unknown"


TENSOR, MODULE, UNKNOWN = Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN

# torch.<name>(...) that return a tensor.
TORCH_TENSOR_FUNCTIONS = frozenset(
    """
    tensor as_tensor asarray from_numpy frombuffer from_dlpack zeros ones empty full eye arange range
    linspace logspace rand randn randint randperm normal bernoulli multinomial poisson empty_strided
    zeros_like ones_like empty_like full_like rand_like randn_like randint_like
    cat concat concatenate stack hstack vstack dstack column_stack row_stack
    where masked_select index_select gather scatter scatter_add take take_along_dim narrow
    reshape flatten unflatten squeeze unsqueeze permute transpose t movedim swapaxes swapdims flip fliplr
    flipud roll rot90 tile repeat_interleave expand_copy clone detach diag diagonal diag_embed tril triu
    abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan tanh sigmoid asin acos atan atan2
    sinh cosh erf erfc erfinv floor ceil round trunc frac sign clamp clip pow square reciprocal
    add sub subtract mul multiply div divide true_divide floor_divide remainder fmod lerp addcmul addcdiv
    matmul mm bmm mv dot outer inner einsum tensordot kron cross baddbmm addmm addbmm addmv cdist
    sum mean nansum nanmean prod std var norm logsumexp cumsum cumprod cummax cummin amax amin argmax argmin
    softmax log_softmax relu gelu dropout sigmoid_ tanh_ conv1d conv2d conv3d linear bilinear
    eq ne lt le gt ge equal isclose isnan isinf isfinite logical_and logical_or logical_not logical_xor
    bitwise_and bitwise_or bitwise_xor bitwise_not maximum minimum fmax fmin
    nonzero argwhere argsort sort msort bincount histc bucketize searchsorted unique_consecutive
    cartesian_prod combinations meshgrid tril_indices triu_indices block_diag atleast_1d atleast_2d
    atleast_3d broadcast_to complex real imag polar view_as_real view_as_complex angle
    Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor
    CharTensor ByteTensor BoolTensor
    """.split()
)
TORCH_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
TORCH_SPLITTERS = frozenset({"chunk", "split", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit"})

# Tensor methods that return a tensor.
TENSOR_METHODS = frozenset(
    """
    to cuda cpu half float double bfloat16 long int short char byte bool type type_as detach clone
    contiguous view view_as reshape reshape_as expand expand_as repeat permute transpose t squeeze
    unsqueeze flatten unflatten narrow select index_select masked_select masked_fill gather scatter
    flip roll abs neg exp log sqrt rsqrt sin cos tanh sigmoid relu softmax log_softmax clamp clip pow
    add sub mul div matmul mm bmm mv dot sum mean std var norm prod max min amax amin argmax argmin
    cumsum cumprod round floor ceil sign eq ne lt le gt ge logical_not nonzero argsort new_zeros
    new_ones new_empty new_full new_tensor pin_memory requires_grad_ float_ sort topk unique diag
    triu tril masked_fill_ add_ mul_ sub_ div_ copy_ fill_ zero_ clamp_ normal_ uniform_
    """.split()
)
# Methods that only tensors have (not NumPy arrays, pandas, lists, PIL images, graph batches, box
# lists): curated on real corpora, where each is called thousands of times and defined by no other
# class. Their result is a tensor, and a name they are called on is a tensor, unless the file defines
# a function of the same name. (`reshape`, `view`, `repeat`, `transpose`, `contiguous`, `numel`,
# `clone`, `detach`, `sum`, `to`, ... are left out: other libraries have them too.)
TENSOR_ONLY_METHODS = frozenset(
    """
    unsqueeze unsqueeze_ permute masked_fill masked_fill_ masked_select masked_scatter expand_as view_as
    new_zeros new_ones new_full new_empty bmm
    """.split()
)
# Methods that only tensors have but whose result is not a tensor: evidence about the receiver only.
TENSOR_ONLY_QUERIES = frozenset({"nelement", "is_contiguous", "data_ptr", "element_size", "retain_grad", "unbind"})
TENSOR_ATTRIBUTES = frozenset({"weight", "bias", "data", "grad", "T", "mT", "H", "real", "imag"})
PARAMETER_ATTRIBUTES = frozenset({"weight", "bias"})
# nn.Module methods that return the module itself.
MODULE_METHODS = frozenset(
    {"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "train", "eval",
     "requires_grad_", "to_empty", "apply", "share_memory", "xpu", "mps", "ipu"}
)
TENSOR_ANNOTATIONS = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.nn.Parameter",
                                "torch.nn.parameter.Parameter"})
SEQUENCE_ANNOTATIONS = frozenset(
    """
    list tuple set frozenset typing.List typing.Tuple typing.Set typing.FrozenSet typing.Sequence
    typing.MutableSequence typing.Iterable typing.Iterator typing.Collection typing.AbstractSet
    typing.Deque collections.deque collections.abc.Sequence collections.abc.MutableSequence
    collections.abc.Iterable collections.abc.Iterator collections.abc.Collection
    """.split()
)
MAPPING_ANNOTATIONS = frozenset(
    """
    dict typing.Dict typing.Mapping typing.MutableMapping typing.OrderedDict typing.DefaultDict
    collections.OrderedDict collections.defaultdict collections.abc.Mapping collections.abc.MutableMapping
    """.split()
)
# Decorators after which a function still returns what its body returns.
TRANSPARENT_DECORATORS = frozenset(
    """
    staticmethod classmethod torch.no_grad torch.inference_mode torch.enable_grad torch.jit.script
    torch.jit.unused torch.jit.ignore torch.jit.export functools.lru_cache functools.cache
    torch.autograd.no_grad torch.autograd.grad_mode.no_grad
    """.split()
)
_NOTHING = (UNKNOWN, UNKNOWN)
_NO_FACTS = (UNKNOWN, UNKNOWN, UNKNOWN)
MODULE_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                             "torch.nn.parallel.DistributedDataParallel",
                             "torch.nn.parallel.data_parallel.DataParallel",
                             "torch.nn.parallel.distributed.DistributedDataParallel"})
NOT_MODULE_NN_NAMES = frozenset({"Parameter", "ParameterList", "ParameterDict", "Buffer", "UninitializedParameter",
                                 "UninitializedBuffer"})



def torch_call_kind(name: str) -> Kind:
    """What calling a qualified name outside the file returns: `torch.zeros` a tensor, `torch.nn.Linear`
    a module, `nn.DataParallel` a module."""
    if name.startswith("torch."):
        tail = name[len("torch."):]
        if tail.startswith("cuda.") and tail.endswith("Tensor"):
            tail = tail[len("cuda."):]  # the legacy CUDA types: torch.cuda.FloatTensor(2, 3)
        if tail in TORCH_TENSOR_FUNCTIONS or name.startswith(TORCH_TENSOR_NAMESPACES):
            return TENSOR
        if name.startswith("torch.nn.") and name not in ("torch.nn.Module",):
            last = name.rsplit(".", 1)[-1]
            if last in NOT_MODULE_NN_NAMES:
                return TENSOR if last in ("Parameter", "Buffer") else UNKNOWN
            if last[:1].isupper() and ".functional." not in name and ".init." not in name and ".utils." not in name:
                return MODULE
    if name in MODULE_WRAPPERS:
        return MODULE
    return UNKNOWN


def is_module_base(qualified: str) -> bool:
    """A base class that makes a subclass an `nn.Module` (`torch.nn.Module`, `torch.nn.Linear`, ...)."""
    return qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1] not in NOT_MODULE_NN_NAMES


class _Vocabulary:
    """What the project index (devlint.analysis.project) needs to know of the world outside the project."""

    tensor_methods = TENSOR_METHODS
    module_methods = MODULE_METHODS
    is_module_base = staticmethod(is_module_base)

    @staticmethod
    def call_kind(name: str) -> str | None:
        kind = torch_call_kind(name)
        return None if kind is UNKNOWN else kind.value

    @staticmethod
    def transparent(decorator: str) -> bool:
        return decorator in TRANSPARENT_DECORATORS


VOCABULARY = _Vocabulary()
