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

from functools import cached_property

import libcst as cst
from libcst.metadata import ComprehensionScope

from devlint.analysis.kinds_classes import ClassKinds
from devlint.analysis.kinds_containers import ContainerKinds
from devlint.analysis.vocabulary import (
    MODULE,
    MODULE_METHODS,
    TENSOR,
    TENSOR_METHODS,
    TENSOR_ONLY_METHODS,
    TENSOR_ONLY_QUERIES,
    TORCH_SPLITTERS,
    TRANSPARENT_DECORATORS,
    UNKNOWN,
    Kind,
    torch_call_kind,
)
from devlint.analysis.fixtures import fixture_kind
from devlint.facts import FileFacts
from devlint.syntax import dotted_name, is_none

# How many inference steps may be in progress at once (a few Python frames each): deeper chains of
# bindings answer UNKNOWN.
MAX_DEPTH = 100




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


class KindInference(ClassKinds, ContainerKinds):
    """The kinds of one file's expressions (see the module docstring). Besides the steps and the names
    here: devlint.analysis.kinds_classes (`self.x`, module classes, the project), devlint.analysis.
    kinds_containers (items of containers, annotations)."""

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
            kind = self._annotation_facts(node.annotation)[0]
            return kind if kind is not UNKNOWN else fixture_kind(self, node)  # (a test's pytest fixture)
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

