"""Is this expression a tensor, an `nn.Module`, or something we cannot tell?

Tensor methods (`.to`, `.cuda`, `.float`, ...) return a new tensor; `nn.Module` ones move the module in
place and return it; many other objects (pipelines, graph batches, tokenizer outputs) also move in
place. So a rule that reports a thrown-away result must know the receiver is a tensor, and it knows
that only from provenance inside the file:

TENSOR
    a call of a torch tensor factory or op (`torch.zeros`, `torch.cat`, `torch.nn.functional.*`,
    `torch.Tensor(...)`, `nn.Parameter(...)`, ...); a tensor-returning method on a tensor
    (`.clone()`, `.view()`, `.float()`, in-place ops such as `.zero_()`); indexing, arithmetic or a
    comparison involving a tensor; the attributes `.weight`, `.bias`, `.data`, `.grad`; a parameter or
    name annotated `torch.Tensor` (also `Optional[Tensor]`, `Tensor | None`, `"torch.Tensor"`, through
    any import alias); `a if c else b` of two tensors.
    Methods only tensors have (TENSOR_ONLY_METHODS: `unsqueeze`, `permute`, `masked_fill`,
    `new_zeros`, ...; chosen because NumPy, pandas, lists, PIL images, graph batches and box lists lack
    them): their result is a tensor whatever the receiver (not a module), and a name they (or
    TENSOR_ONLY_QUERIES: `nelement()`, `data_ptr()`, ...) are called on is a tensor on that same binding
    (`out = model(x)`, `out.permute(1, 0)`, then `out` is a tensor). Not in a file that defines a
    function of that name (a look-alike class), and not for a name whose type the file tests
    (`isinstance(x, ...)`: its branches may hold different kinds).
    Items of containers: the loop variables of `for x in X`, `X[i]` (not a slice), `X.get(k)`, the
    values of `X.values()` / `X.items()` and the targets of `a, b = X` where X is a list/tuple/set
    literal or comprehension of tensors, `list(...)`/`sorted(...)` of such, a splitter result
    (`torch.chunk/split/unbind`), `.parameters()`/`.buffers()` (and the values of their `named_`
    forms), a tensor (its rows), a dict literal of tensor values, a module's `.state_dict()`, a
    `torch.load(...)` result given to a module's `load_state_dict`, or a name annotated
    `list[Tensor]`, `List[Tensor]`, `Sequence`/`Iterable`/`tuple[Tensor, ...]`, `dict[str, Tensor]`
    (values); through `zip(...)` and `enumerate(...)` with tuple unpacking, in loops and comprehensions.
    Attributes: `self.x` in a class whose every binding of `x` is a tensor: `self.x = <tensor>` in any
    method, `x = <tensor>` or `x: torch.Tensor` in the class body, `self.x: Tensor`, a
    `register_buffer`/`register_parameter` name (`None` assignments aside; an unpacking, a loop target
    or an unknown value makes it UNKNOWN).
    Calls of a function of the file (or `self.m()` of a method of the same class) whose every `return`
    is a tensor (`return None` aside; a directly recursive call returns what the others do); not for
    generators, coroutines, functions re-bound or with a decorator other than `staticmethod`,
    `classmethod`, `torch.no_grad` and a few like them.
    Calls of a function imported from another file of the project (devlint.analysis.project) whose every
    return is a tensor there (a torch factory or op, a tensor method on one, a call of another such
    function), and a module-level name of such a file bound once to a tensor.
MODULE
    an instance of a `torch.nn` class or of a class of this file that subclasses one; an instance of a
    class imported from the project (any import form) that subclasses one directly or through other
    project classes, in any file (a class of this file built on one too); `self` and
    `super()` inside such a class; `nn.DataParallel(...)`, `DistributedDataParallel(...)`,
    `copy.deepcopy(module)`; items of `.modules()`/`.children()`; a name annotated `nn.Module` or a
    module class of the file (also in containers: `list[nn.Module]`); `self.x` whose every binding is
    a module; calls of functions of the file whose every return is a module.
UNKNOWN
    everything else: un-annotated parameters, results of calling a model or a project function whose
    returns the project index cannot tell (devlint.analysis.project),
    attributes of unknown objects, subscripts of unknown containers, an optimizer's `state_dict()`,
    a `torch.load` result not given to a module, anything whose sources disagree.

A name takes the kind of its last binding before the use, in its own scope.

Every recursive step (the kind of an expression, of a binding, of a loop item, of an unpacked element,
of a class's `self.x` attributes) goes through `KindInference._step`, which memoises it per node for
this file and keeps the steps in progress: a step that needs itself again (`x = x`, `a = b; b = a`,
`for x in x`) gets UNKNOWN there, and so does a chain of steps deeper than MAX_DEPTH. Neither can
recurse without end, and a receiver of unknown kind is never flagged. An answer that rests on such a
cut holds only for the question being answered, so it is remembered only until that question is
answered: the kind of a node never depends on what was asked before it.
"""

from __future__ import annotations

import enum
from functools import cached_property

import libcst as cst
from libcst.metadata import ComprehensionScope

from devlint.facts import FileFacts
from devlint.syntax import dotted_name, is_none, string_value


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

# How many inference steps may be in progress at once (a few Python frames each): deeper chains of
# bindings answer UNKNOWN.
MAX_DEPTH = 100


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


def _attribute_targets(target: cst.CSTNode, path: tuple[int, ...] = ()):
    """(attribute, path) for each `a.b` an assignment target binds: `self.x`, `self.a, (self.b, c)`."""
    if isinstance(target, cst.Attribute):
        yield target, path
    elif isinstance(target, (cst.Tuple, cst.List)):
        for index, element in enumerate(target.elements):
            if not isinstance(element, cst.StarredElement):
                yield from _attribute_targets(element.value, path + (index,))


class _Frame:
    """A step in progress: did it use an answer that rests on a cut, and how deep did it go below itself?"""

    __slots__ = ("tainted", "height")

    def __init__(self) -> None:
        self.tainted = False
        self.height = 0


def kinds_of(facts: FileFacts) -> "KindInference":
    """The file's kinds (tensor, module, unknown), built once per file."""
    return facts.memoised(KindInference, KindInference)


def possible_kinds_of(facts: FileFacts) -> "KindInference":
    """A scope-free over-approximation of `kinds_of`: it says TENSOR whenever that could."""
    return facts.memoised(_APPROXIMATE, _approximate)


def _approximate(facts: FileFacts) -> "KindInference":
    return KindInference(facts, approximate=True)


_APPROXIMATE = "possible_kinds"


class KindInference:
    def __init__(self, ctx: FileFacts, approximate: bool = False) -> None:
        """`approximate`: look names up file-wide instead of by scope (no scope analysis), answering
        TENSOR when any binding could be a tensor. It never says "not a tensor" where the exact
        inference says "tensor", so it can reject candidates cheaply."""
        self.ctx = ctx
        self.approximate = approximate
        # Answers that rest on no cut, with the depth of steps they took: (kind, height) by step.
        self._memo: dict[tuple, tuple[object, int]] = {}
        # Answers that rest on a cut, kept until the outermost step in progress is answered.
        self._provisional: dict[tuple, object] = {}
        self._active: set[tuple] = set()
        self._frames: list[_Frame] = []

    def _step(self, key: tuple, compute, on_cycle: object = UNKNOWN):
        """`compute()`, memoised by `key` (a step's name and node); `on_cycle` where the step is already
        in progress or the chain of steps is too deep."""
        frames = self._frames
        depth = len(frames)
        done = self._memo.get(key)
        if done is not None and depth + done[1] < MAX_DEPTH:  # (deeper, computing it again would be cut)
            if frames:
                frames[-1].height = max(frames[-1].height, done[1] + 1)
            return done[0]
        if key in self._active or depth >= MAX_DEPTH:
            frames[-1].tainted = True  # (both need a step in progress)
            return on_cycle
        if key in self._provisional:
            frames[-1].tainted = True
            return self._provisional[key]
        if not frames and self.approximate:
            self._possibly_tensor_names  # settled before any step, as the steps read it
        frame = _Frame()
        frames.append(frame)
        self._active.add(key)
        try:
            value = compute()
        finally:
            frames.pop()
            self._active.discard(key)
            if not frames:
                self._provisional.clear()
        if frame.tainted:
            if frames:
                frames[-1].tainted = True
                self._provisional[key] = value
        else:
            self._memo[key] = (value, frame.height)
            if frames:
                frames[-1].height = max(frames[-1].height, frame.height + 1)
        return value

    @cached_property
    def _possibly_tensor_names(self) -> set[str]:
        """Names with a binding anywhere in the file that could be a tensor: a monotone fixpoint."""
        self._assumed: set[str] = set()
        self.__dict__["_possibly_tensor_names"] = self._assumed  # lookups during the iteration see it
        changed = True
        while changed:
            changed = False
            self._memo.clear()  # the answers depend on the assumption
            for name, sites in self.ctx.binding_sites.items():
                if name not in self._assumed and any(self.binding_kind(site) is TENSOR for site in sites):
                    self._assumed.add(name)
                    changed = True
        self._memo.clear()
        return self._assumed

    def _combine(self, kinds: set[Kind]) -> Kind:
        if self.approximate:
            return TENSOR if TENSOR in kinds else UNKNOWN
        return kinds.pop() if len(kinds) == 1 else UNKNOWN

    def of(self, expr: cst.CSTNode) -> Kind:
        return self._step(("of", expr), lambda: self._of(expr))

    def _of(self, expr: cst.CSTNode) -> Kind:
        if isinstance(expr, cst.Name):
            if expr.value == "self":
                return MODULE if self._in_module_class(expr) else UNKNOWN
            if self.ctx.project is not None and expr.value in self.ctx.imported_names:
                kind = self._project_value(expr)
                if kind is not UNKNOWN:
                    return kind
            return self._name(expr)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr)
        if isinstance(expr, cst.Subscript):
            if self.of(expr.value) is TENSOR:
                return TENSOR
            if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
                return self._container(expr.value)[1]  # (`xs[0]`, `d["k"]`; not a slice `xs[1:]`)
            return UNKNOWN
        if isinstance(expr, cst.BinaryOperation):
            kinds = {self.of(expr.left), self.of(expr.right)}
            return TENSOR if TENSOR in kinds and MODULE not in kinds else UNKNOWN
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.of(expr.expression)
        if isinstance(expr, cst.Comparison):
            operands = [expr.left] + [c.comparator for c in expr.comparisons]
            ops = [c.operator for c in expr.comparisons]
            if any(isinstance(o, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for o in ops):
                return UNKNOWN
            return TENSOR if any(self.of(o) is TENSOR for o in operands) else UNKNOWN
        if isinstance(expr, cst.NamedExpr):
            return self.of(expr.value)
        if isinstance(expr, cst.IfExp):
            kinds = {self.of(branch) for branch in (expr.body, expr.orelse) if not is_none(branch)}
            return self._combine(kinds)
        return UNKNOWN

    # -- calls ---------------------------------------------------------------------------------------
    def _call(self, call: cst.Call) -> Kind:
        func = call.func
        names = self.ctx.qualified_names(func)
        for name in names:
            kind = self._qualified_call_kind(name, call)
            if kind is not UNKNOWN:
                return kind
        kind = self._project_call(func)
        if kind is not UNKNOWN:
            return kind
        if isinstance(func, cst.Name) and func.value in self._module_classes:
            return MODULE
        if isinstance(func, cst.Name) and func.value == "super":
            return MODULE if self._in_module_class(call) else UNKNOWN
        if isinstance(func, cst.Name):
            return self._function_call(func)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if self.ctx.is_imported_module(func.value):
                return UNKNOWN
            receiver = self.of(func.value)
            if receiver is TENSOR and method in TENSOR_METHODS and not (method == "type" and not call.args):
                return TENSOR
            if receiver is MODULE and method in MODULE_METHODS:
                return MODULE
            if (method in TENSOR_ONLY_METHODS and method not in self._defined_functions
                    and (receiver is not MODULE or self.approximate)):
                return TENSOR
            if (receiver is UNKNOWN or self.approximate) and method in ("get", "pop") and call.args:
                return self._container(func.value)[1]  # (a mapping's value, a list's item)
            if isinstance(func.value, cst.Name) and func.value.value == "self":
                return self._method_call(func)
        return UNKNOWN

    # -- functions of the file ------------------------------------------------------------------------
    def _function_call(self, func: cst.Name) -> Kind:
        """`f(...)` for a function `f` of this file: the kind all its returns share."""
        if self.approximate:
            definitions = self._functions_by_name.get(func.value, ())
        else:
            assignments = self.ctx.bindings(func)
            definitions = [a.node for a in assignments]
            if not definitions or not all(isinstance(d, cst.FunctionDef) for d in definitions):
                return UNKNOWN
        if not definitions:
            return UNKNOWN
        return self._combine({self._returns(d) for d in definitions})

    def _method_call(self, func: cst.Attribute) -> Kind:
        """`self.m(...)` for a method `m` defined in the class itself (not inherited)."""
        if self.approximate:
            definitions = self._functions_by_name.get(func.attr.value, ())
        else:
            cls = self.ctx.enclosing(func, cst.ClassDef)
            if cls is None or not isinstance(cls.body, cst.IndentedBlock):
                return UNKNOWN
            definitions = [d for d in cls.body.body if isinstance(d, cst.FunctionDef) and d.name.value == func.attr.value]
        if not definitions:
            return UNKNOWN
        return self._combine({self._returns(d) for d in definitions})

    def _returns(self, function: cst.FunctionDef) -> Kind:
        return self._step(("returns", function), lambda: self._returns_kind(function))

    def _returns_kind(self, function: cst.FunctionDef) -> Kind:
        """The kind every `return` of the function gives (`return None` aside; a direct recursive call
        returns what the other returns do). Not for generators, coroutines or unknown decorators."""
        if function.asynchronous is not None or function in self._generators:
            return UNKNOWN
        for decorator in function.decorators:
            expression = decorator.decorator
            target = expression.func if isinstance(expression, cst.Call) else expression
            names = self.ctx.qualified_names(target) | {dotted_name(target) or ""}
            if not names & TRANSPARENT_DECORATORS:
                return UNKNOWN
        kinds = set()
        for node in self._function_returns.get(function, ()):
            value = node.value
            if value is None or is_none(value):
                continue
            if (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                    and value.func.value == function.name.value):
                continue
            kinds.add(self.of(value))
        if not kinds:
            return UNKNOWN
        return self._combine(kinds)

    @cached_property
    def _function_returns(self) -> dict[cst.FunctionDef, list[cst.Return]]:
        found: dict[cst.FunctionDef, list[cst.Return]] = {}
        for node in self.ctx.nodes(cst.Return):
            function = self.ctx.enclosing(node, cst.FunctionDef)
            if function is not None:
                found.setdefault(function, []).append(node)
        return found

    @cached_property
    def _generators(self) -> set[cst.FunctionDef]:
        found = set()
        for kind in (cst.Yield, cst.Await):
            for node in self.ctx.nodes(kind):
                function = self.ctx.enclosing(node, (cst.FunctionDef, cst.Lambda))
                if isinstance(function, cst.FunctionDef):
                    found.add(function)
        return found

    @cached_property
    def _functions_by_name(self) -> dict[str, list[cst.FunctionDef]]:
        found: dict[str, list[cst.FunctionDef]] = {}
        for node in self.ctx.nodes(cst.FunctionDef):
            found.setdefault(node.name.value, []).append(node)
        return found

    @property
    def _defined_functions(self):
        return self._functions_by_name.keys()

    def _qualified_call_kind(self, name: str, call: cst.Call) -> Kind:
        kind = torch_call_kind(name)
        if kind is UNKNOWN and name == "copy.deepcopy" and call.args:
            return self.of(call.args[0].value)
        return kind

    # -- the project (devlint.analysis.project): names imported from other files of the project -----------------
    def _project_names(self, expr: cst.CSTNode) -> set[str]:
        """What a dotted name bound only by imports (not shadowed where used) refers to, if the file
        is checked with a project view."""
        if self.ctx.project is None:
            return set()
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value not in self.ctx.imported_names:
            return set()
        return self.ctx.qualified_names(expr)

    def _project_call(self, func: cst.CSTNode) -> Kind:
        """`Net()`, `m.Net()`, `make_batch()` of a class or function imported from the project."""
        return self._project_kind(func, "call_kind")

    def _project_value(self, name: cst.Name) -> Kind:
        """A module-level value imported from the project (`from .data import BATCH`)."""
        return self._project_kind(name, "value_kind")

    def _project_kind(self, expr: cst.CSTNode, question: str) -> Kind:
        """The kind every import-qualified name of `expr` gets from the index, or UNKNOWN."""
        names = self._project_names(expr)
        if not names:
            return UNKNOWN
        ask = getattr(self.ctx.project, question)
        kinds = {ask(name) for name in names}
        kind = kinds.pop() if len(kinds) == 1 else None
        return Kind(kind) if kind is not None else UNKNOWN

    def _project_module_class(self, expr: cst.CSTNode) -> bool:
        """Is `expr` (a base, an annotation) a project class that subclasses `nn.Module`?"""
        for name in self._project_names(expr):
            cls = self.ctx.project.class_of(name)
            if cls is None or not self.ctx.project.is_module_class(cls):
                return False
        return bool(self._project_names(expr))

    def overrides_cuda(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        """Is `expr` an instance of a project class that defines (or inherits from a project class) a
        `cuda()` other than `return super().cuda(...)`: `Net()`, `m.Net()`, a class of this file
        whose bases are such, `Net().float()`, a name last bound to one of those."""
        view = self.ctx.project
        if view is None or depth > 8:
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            names = self._project_names(func)
            if names:
                return any((cls := view.class_of(n)) is not None and view.overrides_cuda(cls) for n in names)
            if isinstance(func, cst.Name) and func.value not in self.ctx.imported_names:
                return any(self.overrides_cuda(cst.Call(base.value), depth + 1)
                           for node in self.ctx.nodes(cst.ClassDef) if node.name.value == func.value
                           for base in node.bases if base.keyword is None)
            if isinstance(func, cst.Attribute) and func.attr.value in MODULE_METHODS:
                return self.overrides_cuda(func.value, depth + 1)
            return False
        if isinstance(expr, cst.Name) and not self.approximate:
            binding = self._last_binding(expr)
            parent = self.ctx.parent(binding) if isinstance(binding, cst.Name) else None
            assign = self.ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else None
            if isinstance(assign, cst.Assign):
                return self.overrides_cuda(assign.value, depth + 1)
        return False

    # -- attributes ----------------------------------------------------------------------------------
    def _attribute(self, attr: cst.Attribute) -> Kind:
        if attr.attr.value in TENSOR_ATTRIBUTES:
            if attr.attr.value in ("T", "mT", "H", "real", "imag"):
                return TENSOR if self.of(attr.value) is TENSOR else UNKNOWN
            return TENSOR  # (whatever the receiver is: `.weight` of a module, `.data` of a tensor)
        if isinstance(attr.value, cst.Name) and attr.value.value == "self":
            return self._self_attribute(attr)
        return UNKNOWN

    def _self_attribute(self, attr: cst.Attribute) -> Kind:
        cls = self.ctx.enclosing(attr, cst.ClassDef)
        if cls is None:
            return UNKNOWN
        return self._combine(set(self._self_attribute_kinds(cls).get(attr.attr.value, ())))

    def self_attribute_is_parameter(self, attr: cst.Attribute) -> bool:
        """`self.w` assigned an `nn.Parameter` (re-binding it to a plain tensor raises TypeError)."""
        cls = self.ctx.enclosing(attr, cst.ClassDef)
        return cls is not None and attr.attr.value in self._parameter_attributes(cls)

    def _self_attribute_kinds(self, cls: cst.ClassDef) -> dict[str, list[Kind]]:
        # (`self.x` read while the class's attributes are being inferred: no kinds, so UNKNOWN)
        return self._step(("self", cls), lambda: self._infer_self_attribute_kinds(cls), on_cycle={})

    def _infer_self_attribute_kinds(self, cls: cst.ClassDef) -> dict[str, list[Kind]]:
        kinds = {name: [self.of(value) for value in values if not is_none(value)]
                 for name, values in self._self_assignments.get(cls, {}).items()}
        for name, sources in self._self_other_bindings.get(cls, {}).items():
            for source in sources:
                if isinstance(source, tuple) and isinstance(source[0], cst.Annotation):
                    kind = self._annotation_facts(source[0])[0]
                    if kind is not UNKNOWN or not source[1]:  # (`self.x: Any = value`: the value says)
                        kinds.setdefault(name, []).append(kind)
                elif source is None:
                    kinds.setdefault(name, []).append(UNKNOWN)
                else:
                    value, path = source
                    kinds.setdefault(name, []).append(self._unpacked(value, list(path)))
        for name in self._registered.get(cls, {}):
            kinds.setdefault(name, []).append(TENSOR)
        return kinds

    def _parameter_attributes(self, cls: cst.ClassDef) -> set[str]:
        parameters = {name for name, values in self._self_assignments.get(cls, {}).items()
                      if any(n.endswith(("nn.Parameter", "nn.parameter.Parameter"))
                             for value in values for n in self._call_names(value))}
        return parameters | {n for n, how in self._registered.get(cls, {}).items() if how == "register_parameter"}

    @cached_property
    def _self_assignments(self) -> dict[cst.ClassDef, dict[str, list[cst.BaseExpression]]]:
        """`self.x = value` (or `self.x: T = value`) in the methods of each class, and `x = value` in
        the class body, by class and attribute."""
        found: dict[cst.ClassDef, dict[str, list[cst.BaseExpression]]] = {}
        for kind in (cst.Assign, cst.AnnAssign):
            for node in self.ctx.nodes(kind):
                if node.value is None:
                    continue
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for t in targets:
                    owner = self._class_attribute(node, t)
                    if owner is not None:
                        found.setdefault(owner[0], {}).setdefault(owner[1], []).append(node.value)
        return found

    def _class_attribute(self, statement: cst.CSTNode, target: cst.CSTNode) -> tuple[cst.ClassDef, str] | None:
        """(class, attribute) that `target` binds: `self.x` in a method, or `x` in the class body."""
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            cls = self.ctx.enclosing(statement, cst.ClassDef)
            name = target.attr.value
        elif isinstance(target, cst.Name):
            cls = self._class_body_of(statement)
            name = target.value
        else:
            return None
        return None if cls is None else (cls, name)

    def _class_body_of(self, statement: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose body holds this small statement directly."""
        line = self.ctx.parent(statement)
        block = self.ctx.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
        cls = self.ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
        return cls if isinstance(cls, cst.ClassDef) else None

    @cached_property
    def _self_other_bindings(self) -> dict[cst.ClassDef, dict[str, list]]:
        """Other bindings of `self.x`, by class and attribute: an `Annotation` (`self.x: T` or `x: T` in
        the class body), `(value, path)` for an unpacking (`self.a, self.b = ...`), None for one of
        unknown value (a loop target, `with ... as self.x`)."""
        found: dict[cst.ClassDef, dict[str, list]] = {}
        for node in self.ctx.nodes(cst.AnnAssign):
            owner = self._class_attribute(node, node.target)
            if owner is not None:
                annotated = (node.annotation, node.value is not None)
                found.setdefault(owner[0], {}).setdefault(owner[1], []).append(annotated)
        for kind in (cst.AssignTarget, cst.For, cst.CompFor, cst.AsName):
            for node in self.ctx.nodes(kind):
                target = node.name if isinstance(node, cst.AsName) else node.target
                for attr, path in _attribute_targets(target):
                    if not (isinstance(attr.value, cst.Name) and attr.value.value == "self"):
                        continue
                    if isinstance(node, cst.AssignTarget) and not path:
                        continue  # (a plain `self.x = value`: in _self_assignments)
                    cls = self.ctx.enclosing(node, cst.ClassDef)
                    if cls is None:
                        continue
                    assign = self.ctx.parent(node)
                    source = (assign.value, path) if isinstance(node, cst.AssignTarget) else None
                    found.setdefault(cls, {}).setdefault(attr.attr.value, []).append(source)
        return found

    @cached_property
    def _registered(self) -> dict[cst.ClassDef, dict[str, str]]:
        """Names given to `self.register_buffer(...)` / `self.register_parameter(...)`, by class."""
        found: dict[cst.ClassDef, dict[str, str]] = {}
        for call in self.ctx.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("register_buffer",
                                                                               "register_parameter") and call.args:
                key = string_value(call.args[0].value)
                cls = self.ctx.enclosing(call, cst.ClassDef)
                if key and cls is not None:
                    found.setdefault(cls, {})[key] = call.func.attr.value
        return found

    def _call_names(self, expr: cst.CSTNode) -> set[str]:
        return self.ctx.qualified_names(expr.func) if isinstance(expr, cst.Call) else set()

    # -- names -----------------------------------------------------------------------------------------
    def _name(self, name: cst.Name) -> Kind:
        if self.approximate:
            possible = name.value in self._possibly_tensor_names or name.value in self._tensor_receivers
            return TENSOR if possible else UNKNOWN
        binding = self._last_binding(name)
        if binding is None:
            return UNKNOWN
        kind = self.binding_kind(binding)  # (memoised as the step `of` this name)
        if kind is UNKNOWN and binding in self._evidenced_bindings(name.value):
            return TENSOR  # (`y.unsqueeze(0)` somewhere on the same binding: `y` is a tensor)
        return kind

    def _evidenced_bindings(self, name: str) -> set[cst.CSTNode]:
        """The bindings of `name` that a method only tensors have is called on."""
        cache = self.__dict__.setdefault("_evidenced", {})
        if name not in cache:
            cache[name] = {self._last_binding(use) for use in self._tensor_receivers.get(name, ())} - {None}
        return cache[name]

    @cached_property
    def _tensor_receivers(self) -> dict[str, list[cst.Name]]:
        """Names a method only tensors have is called on (`y.unsqueeze(0)`, `y.nelement()`), by name."""
        found: dict[str, list[cst.Name]] = {}
        tested = self._type_tested_names
        for attr in self.ctx.nodes(cst.Attribute):
            method = attr.attr.value
            if ((method in TENSOR_ONLY_METHODS or method in TENSOR_ONLY_QUERIES) and isinstance(attr.value, cst.Name)
                    and method not in self._defined_functions and attr.value.value != "self"
                    and attr.value.value not in tested):
                call = self.ctx.parent(attr)
                if isinstance(call, cst.Call) and call.func is attr:
                    found.setdefault(attr.value.value, []).append(attr.value)
        return found

    @cached_property
    def _type_tested_names(self) -> set[str]:
        """Names whose type the file tests (`isinstance(x, ...)`, `hasattr(x, ...)`, `type(x)`): one
        branch may hold a tensor and another a module, so a tensor method in one proves nothing."""
        found = set()
        for call in self.ctx.nodes(cst.Call):
            if (isinstance(call.func, cst.Name) and call.func.value in ("isinstance", "hasattr", "type", "callable")
                    and call.args and isinstance(call.args[0].value, cst.Name)):
                found.add(call.args[0].value.value)
        return found

    def _last_binding(self, name: cst.Name) -> cst.CSTNode | None:
        """The binding a name refers to: the last before the use in its own scope (a parameter if
        nothing else), or None."""
        cache = self.__dict__.setdefault("_last_bindings", {})
        if name not in cache:
            cache[name] = self._find_last_binding(name)
        return cache[name]

    def _find_last_binding(self, name: cst.Name) -> cst.CSTNode | None:
        scope = self.ctx.scope(name)
        if scope is None or name.value not in scope:
            return None
        use = self.ctx.positions.get(name)
        best = None
        best_pos = None
        for assignment in self.ctx.bindings(name):
            node = assignment.node
            if isinstance(node, cst.Param):
                if best is None:
                    best = node
                continue
            pos = self._effective_position(node)
            if pos is None or use is None:
                continue
            later = pos > (use.start.line, use.start.column)
            if later and assignment.scope is scope and not isinstance(scope, ComprehensionScope):
                continue  # (a comprehension's target is written after its element)
            # Targets of one statement take effect together; Python binds them left to right
            # (`[b, *b] = a`: the starred `b` is bound last), and the scope's bindings come in no fixed order.
            own = self.ctx.positions.get(node)
            pos = (pos, (own.start.line, own.start.column) if own is not None else (0, 0))
            if best_pos is None or pos > best_pos:
                best, best_pos = node, pos
        return best

    def _effective_position(self, node: cst.CSTNode) -> tuple[int, int] | None:
        return self.ctx.effective_position(node)

    def binding_kind(self, node: cst.CSTNode) -> Kind:
        return self._step(("binding", node), lambda: self._binding_kind(node))

    def _binding_kind(self, node: cst.CSTNode) -> Kind:
        if isinstance(node, cst.Param):
            return self._annotation_facts(node.annotation)[0]
        if not isinstance(node, cst.Name):
            return UNKNOWN
        path: list[int] = []
        child: cst.CSTNode = node
        for parent in self.ctx.ancestors(node):
            if isinstance(parent, (cst.Element, cst.StarredElement)):
                child = parent
                continue
            if isinstance(parent, (cst.Tuple, cst.List)):
                if isinstance(child, cst.StarredElement):
                    return UNKNOWN
                path.append(list(parent.elements).index(child))
                child = parent
                continue
            if isinstance(parent, cst.AssignTarget):
                child = parent
                continue
            if isinstance(parent, cst.Assign):
                return self.of(parent.value) if not path else self._unpacked(parent.value, path)
            if isinstance(parent, cst.AnnAssign):
                kind = self._annotation_facts(parent.annotation)[0]
                if kind is UNKNOWN and parent.value is not None:
                    kind = self.of(parent.value)
                return kind
            if isinstance(parent, cst.NamedExpr):
                return self.of(parent.value)
            if isinstance(parent, (cst.For, cst.CompFor)):
                return self._loop_item(parent.iter, list(reversed(path)))
            return UNKNOWN
        return UNKNOWN

    def _unpacked(self, value: cst.BaseExpression, path: list[int]) -> Kind:
        return self._step(("unpacked", value, tuple(path)), lambda: self._unpacked_kind(value, path))

    def _unpacked_kind(self, value: cst.BaseExpression, path: list[int]) -> Kind:
        if isinstance(value, cst.Call):
            names = self.ctx.qualified_names(value.func)
            method = value.func.attr.value if isinstance(value.func, cst.Attribute) else None
            if any(n.startswith("torch.") and n.rsplit(".", 1)[-1] in TORCH_SPLITTERS for n in names) or (
                method in TORCH_SPLITTERS and self.of(value.func.value) is TENSOR
            ):
                return TENSOR
        if isinstance(value, (cst.Tuple, cst.List)) and len(path) == 1:
            elements = value.elements
            if path[0] < len(elements) and not any(isinstance(e, cst.StarredElement) for e in elements):
                return self.of(elements[path[0]].value)
            return UNKNOWN
        if self.of(value) is TENSOR:
            return TENSOR  # (unpacking a tensor gives tensors)
        items = self._container(value)[0]
        return items if len(path) == 1 or items is TENSOR else UNKNOWN

    def _loop_item(self, iterable: cst.BaseExpression, path: list[int]) -> Kind:
        """Kind of `x` in `for x in iterable` (path: index into tuple targets, outermost first)."""
        return self._step(("loop item", iterable, tuple(path)), lambda: self._loop_item_kind(iterable, path))

    def _loop_item_kind(self, iterable: cst.BaseExpression, path: list[int]) -> Kind:
        if isinstance(iterable, cst.Call):
            names = self.ctx.qualified_names(iterable.func)
            if "enumerate" in names or dotted_name(iterable.func) == "enumerate":
                if path[:1] == [1] and iterable.args:
                    return self._loop_item(iterable.args[0].value, path[1:])
                return UNKNOWN
            if "zip" in names:
                if path and not any(a.star or a.keyword is not None for a in iterable.args[: path[0] + 1]) and (
                        path[0] < len(iterable.args)):
                    return self._loop_item(iterable.args[path[0]].value, path[1:])
                return UNKNOWN
            if isinstance(iterable.func, cst.Attribute):
                method = iterable.func.attr.value
                if method == "items" and path[:1] == [1] and not iterable.args:
                    values = self._container(iterable.func.value)[1]
                    return values if len(path) == 1 or values is TENSOR else UNKNOWN
                if method == "values" and not iterable.args:
                    values = self._container(iterable.func.value)[1]
                    return values if not path or values is TENSOR else UNKNOWN
                if method in ("parameters", "buffers") and not path:
                    return TENSOR
                if method in ("named_parameters", "named_buffers") and path == [1]:
                    return TENSOR
                if method in ("modules", "children") and not path:
                    return MODULE
                if method in ("named_modules", "named_children") and path == [1]:
                    return MODULE
                if method in TORCH_SPLITTERS and not path and self.of(iterable.func.value) is TENSOR:
                    return TENSOR
            if not path and any(n.startswith("torch.") and n.rsplit(".", 1)[-1] in TORCH_SPLITTERS for n in names):
                return TENSOR
        if self.of(iterable) is TENSOR:
            return TENSOR  # (the rows of a tensor, `for b in batch`)
        items = self._container(iterable)[0]
        return items if not path or items is TENSOR else UNKNOWN

    # -- containers ----------------------------------------------------------------------------------
    def _container(self, expr: cst.BaseExpression) -> tuple[Kind, Kind]:
        """(the kind of the items iterating `expr` gives, the kind of `expr[key]`) for a container: a
        literal, a comprehension, `list(...)`/`sorted(...)`, a splitter, a module's `state_dict()`, a
        name annotated as one (`list[Tensor]`, `dict[str, Tensor]`) or bound to one."""
        return self._step(("container", expr), lambda: self._container_kind(expr), on_cycle=_NOTHING)

    def _container_kind(self, expr: cst.BaseExpression) -> tuple[Kind, Kind]:
        if isinstance(expr, cst.Name):
            return self._name_container(expr)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            elements = expr.elements
            if not elements or any(isinstance(e, cst.StarredElement) for e in elements):
                return _NOTHING
            kind = self._combine({self.of(e.value) for e in elements})
            return (kind, kind)
        if isinstance(expr, cst.Dict):
            elements = expr.elements
            if not elements or not all(isinstance(e, cst.DictElement) for e in elements):
                return _NOTHING
            return (UNKNOWN, self._combine({self.of(e.value) for e in elements}))
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            kind = self.of(expr.elt)
            return (kind, kind)
        if isinstance(expr, cst.DictComp):
            return (UNKNOWN, self.of(expr.value))
        if isinstance(expr, cst.Call):
            names = self.ctx.qualified_names(expr.func)
            if names & {"list", "tuple", "sorted", "reversed", "set", "frozenset"} and len(expr.args) >= 1 and (
                    expr.args[0].keyword is None and not expr.args[0].star):
                kind = self._loop_item(expr.args[0].value, [])
                return (kind, kind)
            if any(n.startswith("torch.") and n.rsplit(".", 1)[-1] in TORCH_SPLITTERS for n in names):
                return (TENSOR, TENSOR)
            if isinstance(expr.func, cst.Attribute) and not self.ctx.is_imported_module(expr.func.value):
                method = expr.func.attr.value
                if method in TORCH_SPLITTERS and self.of(expr.func.value) is TENSOR:
                    return (TENSOR, TENSOR)
                if method in ("parameters", "buffers") and not expr.args:
                    return (TENSOR, UNKNOWN)
                if method == "state_dict" and not expr.args and (
                        self.approximate or self.of(expr.func.value) is MODULE):
                    return (UNKNOWN, TENSOR)  # (an optimizer's state_dict() holds no tensors at the top)
                if method == "copy" and not expr.args:
                    return self._container(expr.func.value)
        return _NOTHING

    def _name_container(self, name: cst.Name) -> tuple[Kind, Kind]:
        if self.approximate:
            sites = self.ctx.binding_sites.get(name.value, ())
        else:
            binding = self._last_binding(name)
            sites = [binding] if binding is not None else []
        facts = [self._binding_container(site) for site in sites]
        if not facts:
            return _NOTHING
        return (self._combine({f[0] for f in facts}), self._combine({f[1] for f in facts}))

    def _binding_container(self, site: cst.CSTNode) -> tuple[Kind, Kind]:
        if isinstance(site, cst.Param):
            return self._annotation_facts(site.annotation)[1:]
        parent = self.ctx.parent(site)
        if isinstance(parent, cst.AnnAssign):
            facts = self._annotation_facts(parent.annotation)[1:]
            if facts == _NOTHING and parent.value is not None:
                return self._container(parent.value)
            return facts
        if isinstance(parent, cst.AssignTarget):
            assign = self.ctx.parent(parent)
            if isinstance(assign, cst.Assign):
                if self._is_loaded_state_dict(site, assign.value):
                    return (UNKNOWN, TENSOR)
                return self._container(assign.value)
        return _NOTHING

    def _is_loaded_state_dict(self, site: cst.Name, value: cst.BaseExpression) -> bool:
        """`sd = torch.load(...)` whose binding is given to a module's `load_state_dict(sd)`."""
        if not (isinstance(value, cst.Call) and "torch.load" in self.ctx.qualified_names(value.func)):
            return False
        for call, argument in self._state_dict_loads.get(site.value, ()):
            if self.approximate:
                return True
            if self._last_binding(argument) is site and self.of(call.func.value) is MODULE:
                return True
        return False

    @cached_property
    def _state_dict_loads(self) -> dict[str, list[tuple[cst.Call, cst.Name]]]:
        """`m.load_state_dict(name, ...)` calls, by the name given."""
        found: dict[str, list[tuple[cst.Call, cst.Name]]] = {}
        for call in self.ctx.nodes(cst.Call):
            func = call.func
            if (isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict" and call.args
                    and isinstance(call.args[0].value, cst.Name) and call.args[0].keyword is None):
                found.setdefault(call.args[0].value.value, []).append((call, call.args[0].value))
        return found

    # -- annotations ---------------------------------------------------------------------------------
    def _annotation_facts(self, annotation: cst.CSTNode | None) -> tuple[Kind, Kind, Kind]:
        """(the kind of a value so annotated, of its items by iteration, of its items by subscription):
        `Tensor`, `Optional[Tensor]`, `Tensor | None`, `list[Tensor]`, `Tuple[Tensor, ...]`,
        `dict[str, Tensor]`, `"torch.Tensor"`, through any import alias. The same in both modes."""
        if annotation is None:
            return _NO_FACTS
        if isinstance(annotation, cst.Annotation):
            annotation = annotation.annotation
        text = string_value(annotation)
        if text is not None:
            parsed = self._parsed_annotations.get(text)
            if parsed is None:
                try:
                    parsed = cst.parse_expression(text.strip())
                except Exception:  # (any text can be in a string)
                    parsed = cst.Name("None")
                self._parsed_annotations[text] = parsed
            annotation = parsed
        members = self._union_members(annotation)
        if members is not None:
            facts = {self._annotation_facts(m) for m in members if not is_none(m)}
            return facts.pop() if len(facts) == 1 else _NO_FACTS
        if isinstance(annotation, cst.Subscript):
            base = self.ctx.qualified_names(annotation.value)
            if not all(isinstance(e.slice, cst.Index) for e in annotation.slice):
                return _NO_FACTS
            arguments = [e.slice.value for e in annotation.slice]
            if base & SEQUENCE_ANNOTATIONS:
                items = {self._annotation_facts(a)[0] for a in arguments if not isinstance(a, cst.Ellipsis)}
                kind = items.pop() if len(items) == 1 else UNKNOWN
                return (UNKNOWN, kind, kind)
            if base & MAPPING_ANNOTATIONS and len(arguments) == 2:
                return (UNKNOWN, UNKNOWN, self._annotation_facts(arguments[1])[0])
            return _NO_FACTS
        names = self.ctx.qualified_names(annotation)
        if names & TENSOR_ANNOTATIONS:
            return (TENSOR, UNKNOWN, TENSOR)
        if any(n == "torch.nn.Module" or n == "torch.nn.modules.module.Module" for n in names) or (
                isinstance(annotation, cst.Name) and annotation.value in self._module_classes) or (
                self._project_module_class(annotation)):
            return (MODULE, UNKNOWN, UNKNOWN)
        return _NO_FACTS

    def _union_members(self, annotation: cst.CSTNode) -> list[cst.CSTNode] | None:
        """The members of `Optional[X]`, `Union[X, Y]`, `X | Y`; None for anything else."""
        if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
            return (self._union_members(annotation.left) or [annotation.left]) + (
                self._union_members(annotation.right) or [annotation.right])
        if isinstance(annotation, cst.Subscript) and all(isinstance(e.slice, cst.Index) for e in annotation.slice):
            base = self.ctx.qualified_names(annotation.value)
            if base & {"typing.Optional", "typing.Union"}:
                return [e.slice.value for e in annotation.slice]
        return None

    @cached_property
    def _parsed_annotations(self) -> dict[str, cst.BaseExpression]:
        return {}

    # -- classes ---------------------------------------------------------------------------------------
    @cached_property
    def _module_classes(self) -> set[str]:
        """Names of classes in this file that subclass `nn.Module` (directly or through each other)."""
        classes = {node.name.value: [base.value for base in node.bases] for node in self.ctx.nodes(cst.ClassDef)}
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, bases in classes.items():
                if name in found:
                    continue
                for base in bases:
                    qualified = self.ctx.qualified_names(base)
                    local = isinstance(base, cst.Name) and base.value in found
                    if local or any(is_module_base(q) for q in qualified) or self._project_module_class(base):
                        found.add(name)
                        changed = True
                        break
        return found

    def _in_module_class(self, node: cst.CSTNode) -> bool:
        function = self.ctx.enclosing(node, cst.FunctionDef)
        if function is None:
            return False
        cls = self.ctx.parent(self.ctx.parent(function))
        return isinstance(cls, cst.ClassDef) and cls.name.value in self._module_classes
