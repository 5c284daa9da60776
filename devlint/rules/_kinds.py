"""Is this expression a tensor, an `nn.Module`, or something we cannot tell?

Tensor methods (`.to`, `.cuda`, `.float`, ...) return a new tensor; `nn.Module` ones move the module in
place and return it; many other objects (pipelines, graph batches, tokenizer outputs) also move in
place. So a rule that reports a thrown-away result must know the receiver is a tensor, and it knows
that only from provenance inside the file:

TENSOR
    a call of a torch tensor factory or op (`torch.zeros`, `torch.cat`, `torch.nn.functional.*`,
    `torch.Tensor(...)`, `nn.Parameter(...)`, ...); a tensor-returning method on a tensor
    (`.clone()`, `.view()`, `.float()`); indexing, arithmetic or a comparison involving a tensor; the
    attributes `.weight`, `.bias`, `.data`, `.grad`; a parameter or name annotated `torch.Tensor`;
    `self.x` assigned a tensor, an `nn.Parameter` or registered with `register_buffer`; a loop variable
    over `.parameters()`/`.buffers()` (or the values of their `named_` forms) or over
    `torch.chunk/split/unbind`.
MODULE
    an instance of a `torch.nn` class or of a class of this file that subclasses one; `self` and
    `super()` inside such a class; `nn.DataParallel(...)`, `DistributedDataParallel(...)`,
    `copy.deepcopy(module)`; items of `.modules()`/`.children()`; a name annotated `nn.Module`.
UNKNOWN
    everything else: un-annotated parameters, results of calling a model or a project function,
    attributes of unknown objects, subscripts of unknown containers.

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

from devlint.context import FileContext
from devlint.syntax import dotted_name, string_value


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
TENSOR_ATTRIBUTES = frozenset({"weight", "bias", "data", "grad", "T", "mT", "H", "real", "imag"})
PARAMETER_ATTRIBUTES = frozenset({"weight", "bias"})
# nn.Module methods that return the module itself.
MODULE_METHODS = frozenset(
    {"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "train", "eval",
     "requires_grad_", "to_empty", "apply", "share_memory", "xpu", "mps", "ipu"}
)
TENSOR_ANNOTATIONS = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.nn.Parameter",
                                "torch.nn.parameter.Parameter"})
MODULE_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                             "torch.nn.parallel.DistributedDataParallel",
                             "torch.nn.parallel.data_parallel.DataParallel",
                             "torch.nn.parallel.distributed.DistributedDataParallel"})
NOT_MODULE_NN_NAMES = frozenset({"Parameter", "ParameterList", "ParameterDict", "Buffer", "UninitializedParameter",
                                 "UninitializedBuffer"})

# How many inference steps may be in progress at once (a few Python frames each): deeper chains of
# bindings answer UNKNOWN.
MAX_DEPTH = 100


class _Frame:
    """A step in progress: did it use an answer that rests on a cut, and how deep did it go below itself?"""

    __slots__ = ("tainted", "height")

    def __init__(self) -> None:
        self.tainted = False
        self.height = 0


class KindInference:
    def __init__(self, ctx: FileContext, approximate: bool = False) -> None:
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
            return self._name(expr)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr)
        if isinstance(expr, cst.Subscript):
            return TENSOR if self.of(expr.value) is TENSOR else UNKNOWN
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
        return UNKNOWN

    # -- calls ---------------------------------------------------------------------------------------
    def _call(self, call: cst.Call) -> Kind:
        func = call.func
        names = self.ctx.qualified_names(func)
        for name in names:
            kind = self._qualified_call_kind(name, call)
            if kind is not UNKNOWN:
                return kind
        if isinstance(func, cst.Name) and func.value in self._module_classes:
            return MODULE
        if isinstance(func, cst.Name) and func.value == "super":
            return MODULE if self._in_module_class(call) else UNKNOWN
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if self.ctx.is_imported_module(func.value):
                return UNKNOWN
            receiver = self.of(func.value)
            if receiver is TENSOR and method in TENSOR_METHODS and not (method == "type" and not call.args):
                return TENSOR
            if receiver is MODULE and method in MODULE_METHODS:
                return MODULE
        return UNKNOWN

    def _qualified_call_kind(self, name: str, call: cst.Call) -> Kind:
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
        if name == "copy.deepcopy" and call.args:
            return self.of(call.args[0].value)
        return UNKNOWN

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
        kinds = {name: [self.of(value) for value in values]
                 for name, values in self._self_assignments.get(cls, {}).items()}
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
        """`self.x = value` in the methods of each class, by class and attribute."""
        found: dict[cst.ClassDef, dict[str, list[cst.BaseExpression]]] = {}
        for node in self.ctx.nodes(cst.Assign):
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                    cls = self.ctx.enclosing(node, cst.ClassDef)
                    if cls is not None:
                        found.setdefault(cls, {}).setdefault(t.attr.value, []).append(node.value)
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
            return TENSOR if name.value in self._possibly_tensor_names else UNKNOWN
        return self._last_binding_kind(name)  # (memoised as the step `of` this name)

    def _last_binding_kind(self, name: cst.Name) -> Kind:
        scope = self.ctx.scope(name)
        if scope is None or name.value not in scope:
            return UNKNOWN
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
            if best_pos is None or pos > best_pos:
                best, best_pos = node, pos
        if best is None:
            return UNKNOWN
        return self.binding_kind(best)

    def _effective_position(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """Where a binding takes effect: after the whole assignment (`x = f(x)` reads the old x)."""
        for parent in self.ctx.ancestors(node):
            if isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List, cst.AssignTarget)):
                continue
            if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                end = self.ctx.positions[parent].end
                return (end.line, end.column)
            break
        position = self.ctx.positions.get(node)
        return None if position is None else (position.start.line, position.start.column)

    def binding_kind(self, node: cst.CSTNode) -> Kind:
        return self._step(("binding", node), lambda: self._binding_kind(node))

    def _binding_kind(self, node: cst.CSTNode) -> Kind:
        if isinstance(node, cst.Param):
            return self._annotation_kind(node.annotation)
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
                kind = self._annotation_kind(parent.annotation)
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
            if isinstance(iterable.func, cst.Attribute):
                method = iterable.func.attr.value
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
        if isinstance(iterable, (cst.List, cst.Tuple)) and not path and iterable.elements:
            return self._combine({self.of(e.value) for e in iterable.elements if not isinstance(e, cst.StarredElement)})
        if isinstance(iterable, cst.Name) and not path:
            # A name bound to a list/tuple literal of tensors, or to a splitter result.
            if self.approximate:
                sites = self.ctx.binding_sites.get(iterable.value, ())
            else:
                assignments = self.ctx.bindings(iterable)
                sites = [assignments[0].node] if len(assignments) == 1 else []
            kinds = set()
            for site in sites:
                parent = self.ctx.parent(self.ctx.parent(site)) if isinstance(site, cst.Name) else None
                if isinstance(parent, cst.Assign):
                    kinds.add(self._loop_item(parent.value, path))
            if kinds:
                return self._combine(kinds)
        return UNKNOWN

    def _annotation_kind(self, annotation: cst.Annotation | None) -> Kind:
        if annotation is None:
            return UNKNOWN
        names = self.ctx.qualified_names(annotation.annotation)
        if names & TENSOR_ANNOTATIONS:
            return TENSOR
        if any(n == "torch.nn.Module" or n == "torch.nn.modules.module.Module" for n in names):
            return MODULE
        return UNKNOWN

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
                    if local or any(
                        q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] not in NOT_MODULE_NN_NAMES
                        for q in qualified
                    ):
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
