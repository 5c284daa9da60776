"""Where does a value live: on the CPU, on the run's device, or we cannot tell?

The placement fact, beside the tensor/module kinds of `devlint/analysis/kinds.py`. Fixes ask it before they call
themselves safe (DL002: is a loaded value used as CPU data? was a checkpoint saved from CPU values?),
and so may DL003/DL010/DL011 (a `.numpy()` of a value that lives on the device).

API
---
`placement(ctx)` returns the file's one `Placement` (built on first use and kept in the file's memo, devlint.facts):

`Placement.of(expr) -> Place`
    where the value of `expr` lives where `expr` is evaluated.
`Placement.target(expr) -> Place | None`
    where a device argument points (`"cpu"`, `torch.device("cpu")` -> CPU; `"cuda"`, `0`, `device`,
    `args.device`, `torch.device(...)` -> DEVICE; unknown -> UNKNOWN); None when `expr` is certainly
    not a device (a dtype such as `torch.float16`: `.to(torch.float16)` does not move).
`Placement.move_target(call) -> Place | None`
    where `x.to(...)`, `x.cuda()`, `x.cpu()` sends `x` (None for a dtype-only conversion).
`Placement.saved_on_cpu(path) -> bool`
    every writer found of the file at `path` wrote values that live on the CPU (a `torch.save` of this
    file, a function that saves its path parameter, a pytest fixture that returns the path:
    devlint.analysis.origins): loading it cannot need CUDA.

Place
-----
CPU
    Python values (literals, `len(...)`, `.item()`, `.tolist()`, `.numpy()`, numpy calls, a loop variable
    over `range`), `.cpu()`, `.to("cpu")`, a torch factory without `device=` (`torch.zeros(3)`,
    `torch.from_numpy(a)`), a module built without `device=` (`nn.Linear(3, 1)`, a class of this file
    whose `__init__` moves nothing), `torch.load(..., map_location="cpu")`, an instance of a class of the
    file or the project that moves nothing, built from CPU values, a test's parameter whose pytest fixture
    (built for each test) returns a CPU value.
DEVICE
    the run's device, which on a GPU machine is a GPU: `.cuda()`, `.to(device)` with a device that is
    not provably the CPU, `device=...` of a factory, `map_location=device`.
UNKNOWN
    everything else: parameters, attributes of `self`, results of project functions, a load that
    restores each tensor where it was saved.

Values follow their sources: tensor methods and ops keep the placement of their operands (all CPU ->
CPU, all DEVICE -> DEVICE, else UNKNOWN; literal numbers do not count), `x.weight`, `x[i]`,
`model.state_dict()`, `model.parameters()`, `copy.deepcopy(x)`, an optimizer built on them, and a call
of a module (`model(x)`) joins the module and its inputs. A name takes the placement of its last
binding before the use in its own scope (all its bindings when read from another scope), joined with
every in-place move that may reach it: `model.to(device)` / `model.cuda()` on the same binding before
the use (the last one that certainly ran decides; one on a branch, in a loop or in another scope joins),
and, once the object escapes (passed to a call other than `torch.save`/`print`, stored, put in a
container, returned), a move of anything that may alias it (a parameter, an attribute, a name bound
from another name; not a new module such as `nn.Linear(3, 1).cuda()`). Tensors (by `kinds`) do not
move in place. A call the object is given between its binding and the use (`train(model)`) may move it to the
run's device (so a CPU module becomes UNKNOWN), unless the callee is read and leaves it in place
(devlint.analysis.param_moves).

Every recursive step goes through `Placement._step`, memoised per node with a set of steps in
progress: a step that needs itself again (`x = x`, `a = b; b = a`) gets UNKNOWN there, and an answer
that rests on such a cut is kept only until the outermost question is answered (as in `devlint/analysis/kinds.py`).
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.candidates import MODULE_FACTORIES as FACTORIES  # torch factories: CPU unless given `device=`
from devlint.facts import FileFacts, answers
from devlint.analysis.places import CPU, DEVICE, UNKNOWN, Place  # noqa: F401  (re-exported)
from devlint.analysis.kinds import kinds_of
from devlint.analysis.vocabulary import MODULE, TENSOR, TENSOR_METHODS, TORCH_TENSOR_FUNCTIONS, TORCH_TENSOR_NAMESPACES
from devlint.analysis.fixtures import fixture_of, function_scoped, returned_values
from devlint.analysis.origins import LOADERS, SAVERS, instance_place, written_on_cpu  # noqa: F401  (LOADERS re-exported)
from devlint.syntax import dotted_name, find_arg, name_words, string_value, walk


# Methods whose result lives where the receiver does (tensor methods other than moves, module views).
KEEPING_METHODS = (TENSOR_METHODS - {"to", "cuda", "cpu", "pin_memory", "type"}) | frozenset(
    """
    state_dict parameters buffers named_parameters named_buffers modules children eval train
    requires_grad_ detach_ numel_ copy get values
    """.split()
)
HOST_METHODS = frozenset({"cpu", "numpy", "tolist", "item", "__len__", "size", "dim", "numel"})
HOST_FUNCTIONS = frozenset({"len", "int", "float", "bool", "str", "range", "round", "abs", "sum", "min", "max"})
MOVES = frozenset({"to", "cuda", "cpu"})
# Calls that read an object without keeping it.
HARMLESS_FUNCTIONS = frozenset({"print", "len", "isinstance", "type", "str", "repr", "id", "hasattr", "getattr",
                                "callable", "format"})
DTYPE_NAMES = frozenset(
    """
    float float16 float32 float64 half double bfloat16 int int8 int16 int32 int64 long short uint8 bool
    complex64 complex128 cfloat cdouble float8_e4m3fn float8_e5m2
    """.split()
)
DEVICE_WORDS = frozenset({"device", "dev", "gpu", "cuda", "devices"})
MAX_DEPTH = 100


def placement_of(facts: FileFacts) -> "Placement":
    """The file's placement analysis, built once per file."""
    return facts.memoised(Placement, Placement)


placement = placement_of  # (the name the rules and tests call it by)
answers("placement", placement_of)  # (devlint.analysis.origins asks it: see devlint.facts.answer)


def join(places) -> Place:
    """All CPU -> CPU, all DEVICE -> DEVICE, anything else (or nothing) -> UNKNOWN... except nothing at
    all, which is CPU (no tensor took part)."""
    seen = set(places)
    if not seen:
        return CPU
    return seen.pop() if len(seen) == 1 else UNKNOWN


def _is_literal(expr: cst.CSTNode) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                         cst.FormattedString)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"):
        return True
    return isinstance(expr, cst.UnaryOperation) and _is_literal(expr.expression)


class Placement:
    def __init__(self, ctx: FileFacts) -> None:
        self.ctx = ctx
        self._memo: dict[tuple, object] = {}
        self._provisional: dict[tuple, object] = {}
        self._active: set[tuple] = set()
        self._tainted: list[bool] = []

    def _step(self, key: tuple, compute, on_cycle: object = UNKNOWN):
        if key in self._memo:
            return self._memo[key]
        frames = self._tainted
        if key in self._active or len(frames) >= MAX_DEPTH:
            frames[-1] = True
            return on_cycle
        if key in self._provisional:
            frames[-1] = True
            return self._provisional[key]
        frames.append(False)
        self._active.add(key)
        try:
            value = compute()
        finally:
            tainted = frames.pop()
            self._active.discard(key)
        if tainted and frames:
            frames[-1] = True
            self._provisional[key] = value
        else:
            self._memo[key] = value
        if not frames:
            self._provisional.clear()
        return value

    # -- values ----------------------------------------------------------------------------------------
    def of(self, expr: cst.CSTNode) -> Place:
        return self._step(("of", expr), lambda: self._of(expr))

    def _of(self, expr: cst.CSTNode) -> Place:
        if _is_literal(expr):
            return CPU
        if isinstance(expr, cst.Name):
            return self._name(expr)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in ("weight", "bias", "data", "grad", "T", "mT", "H", "real", "imag"):
                return self.of(expr.value)
            if expr.attr.value in ("shape", "dtype", "ndim"):
                return CPU
            return UNKNOWN
        if isinstance(expr, cst.Subscript):
            return self.of(expr.value)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return self._join(e.value for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return self._join(e.value for e in expr.elements if isinstance(e, cst.DictElement))
        if isinstance(expr, cst.BinaryOperation):
            return self._join((expr.left, expr.right))
        if isinstance(expr, cst.UnaryOperation):
            return self.of(expr.expression)
        if isinstance(expr, cst.Comparison):
            return self._join([expr.left] + [c.comparator for c in expr.comparisons])
        if isinstance(expr, cst.IfExp):
            return join((self.of(expr.body), self.of(expr.orelse)))
        if isinstance(expr, cst.NamedExpr):
            return self.of(expr.value)
        return UNKNOWN

    def _join(self, exprs) -> Place:
        """Where the result of combining `exprs` lives: literal numbers and strings do not count."""
        return join(self.of(e) for e in exprs if not _is_literal(e))

    # -- device arguments --------------------------------------------------------------------------------
    def target(self, expr: cst.CSTNode) -> Place | None:
        return self._step(("target", expr), lambda: self._target(expr))

    def _target(self, expr: cst.CSTNode) -> Place | None:
        text = string_value(expr)
        if text is not None:
            kind = text.split(":")[0].strip().lower()
            if kind == "cpu":
                return CPU
            return DEVICE if kind in ("cuda", "mps", "xpu", "npu", "hpu", "xla", "privateuseone") else UNKNOWN
        if isinstance(expr, cst.Integer):
            return DEVICE  # `.cuda(0)`, `.to(0)`: a GPU index
        if isinstance(expr, cst.IfExp):
            branches = (self.target(expr.body), self.target(expr.orelse))
            return CPU if branches == (CPU, CPU) else DEVICE if DEVICE in branches else UNKNOWN
        names = self.ctx.qualified_names(expr)
        if isinstance(expr, cst.Attribute) and any(n.startswith("torch.") and n.rsplit(".", 1)[-1] in DTYPE_NAMES
                                                   for n in names):
            return None
        if isinstance(expr, cst.Call):
            called = self.ctx.qualified_names(expr.func)
            if called & {"torch.device"}:
                first = expr.args[0].value if expr.args and not expr.args[0].star else None
                if first is not None and string_value(first) is not None:
                    return self.target(first)
                return DEVICE if first is not None else UNKNOWN
            last = (dotted_name(expr.func) or "").rsplit(".", 1)[-1].lower()
            return DEVICE if "device" in last or "accelerator" in last else UNKNOWN
        if isinstance(expr, cst.Attribute):
            if expr.attr.value == "device":
                receiver = self.of(expr.value)  # `x.device`: where x lives
                return DEVICE if receiver is UNKNOWN else receiver
            return DEVICE if set(name_words(expr.attr.value)) & DEVICE_WORDS else UNKNOWN
        if isinstance(expr, cst.Name):
            values = self._bound_values(expr)
            if values:
                places = {self.target(v) for v in values}
                if len(places) == 1:
                    found = places.pop()
                    if found is not UNKNOWN:
                        return found
            return DEVICE if set(name_words(expr.value)) & DEVICE_WORDS else UNKNOWN
        return UNKNOWN

    def _bound_values(self, name: cst.Name) -> list[cst.BaseExpression]:
        """The values of every binding of `name` where it is read, if all are plain `name = value`."""
        values = []
        for assignment in self.ctx.bindings(name):
            value = self.ctx.assigned_value(assignment.node)
            if value is None:
                return []
            values.append(value)
        return values

    # -- calls -------------------------------------------------------------------------------------------
    def _call(self, call: cst.Call) -> Place:
        func = call.func
        names = self.ctx.qualified_names(func)
        given = find_arg(call, "device", None)
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        function = isinstance(root, cst.Name) and (self.ctx.is_imported_module(root) or (
            not self.ctx.binds(root.value) and root.value in ("torch", "numpy", "np", "math", "copy")))
        if isinstance(func, cst.Attribute) and not function:
            method = func.attr.value
            if method == "cuda":
                return DEVICE
            if method in HOST_METHODS:
                return CPU
            if method == "to":
                return self._moved(call, self.of(func.value))
            if method.startswith("new_"):
                return self._device_argument(given) if given is not None else self.of(func.value)
            if method == "type_as" and call.args:
                return self.of(call.args[0].value)  # the other's type, device included
            if method in KEEPING_METHODS:
                return self.of(func.value)
            return UNKNOWN
        if names & LOADERS:
            return self._loaded(call)
        for name in names:
            if name.startswith(("numpy.", "np.", "math.")) or name in HOST_FUNCTIONS:
                return CPU
            if name == "copy.deepcopy" and call.args:
                return self.of(call.args[0].value)
            if not name.startswith("torch."):
                continue
            tail = name[len("torch."):]
            if tail in FACTORIES:
                return self._device_argument(given) if given is not None else CPU
            if tail.endswith("_like") or tail in ("as_tensor", "asarray"):
                if given is not None:
                    return self._device_argument(given)
                return self.of(call.args[0].value) if call.args else UNKNOWN
            if tail in TORCH_TENSOR_FUNCTIONS or name.startswith(TORCH_TENSOR_NAMESPACES):
                return self._join(a.value for a in call.args if a.keyword is None and not a.star)
            if tail.startswith("optim.") and call.args:
                return self.of(call.args[0].value)  # an optimizer's state lives with its parameters
            last = tail.rsplit(".", 1)[-1]
            if tail.startswith("nn.") and last[:1].isupper() and ".functional." not in tail:
                if "DataParallel" in last:
                    return DEVICE
                return self._device_argument(given) if given is not None else CPU
        if isinstance(func, cst.Name) and func.value in self._local_module_classes:
            if given is not None:
                return self._device_argument(given)
            return UNKNOWN if func.value in self._moving_classes else CPU
        if kinds_of(self.ctx).of(func) is MODULE:
            # `model(x)`: the output lives where the module and its inputs do
            return join([self.of(func)] + [self.of(a.value) for a in call.args if not _is_literal(a.value)])
        return instance_place(self.ctx, call) or UNKNOWN  # (an instance of a class that moves nothing)

    def move_target(self, call: cst.Call) -> Place | None:
        """Where `x.to(...)`, `x.cuda()`, `x.cpu()` sends x: None for a dtype-only `x.to(torch.half)`."""
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if method == "cuda":
            return DEVICE
        if method == "cpu":
            return CPU
        return self._moved(call, None) if method == "to" else UNKNOWN

    def _device_argument(self, arg: cst.Arg) -> Place:
        found = self.target(arg.value)
        return UNKNOWN if found is None else found

    def _moved(self, call: cst.Call, before: Place | None) -> Place | None:
        """`x.to(...)`: the target device, or where x was for a dtype-only conversion."""
        device = find_arg(call, "device", None)
        if device is not None:
            return self._device_argument(device)
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if not positional:
            return before if all(a.keyword is not None for a in call.args) else UNKNOWN
        first = positional[0].value
        if kinds_of(self.ctx).of(first) is TENSOR:
            return self.of(first)  # `x.to(other)`: where other lives
        found = self.target(first)
        return before if found is None else found

    def _loaded(self, call: cst.Call) -> Place:
        given = find_arg(call, "map_location", 1)
        if given is not None and not (isinstance(given.value, cst.Name) and given.value.value == "None"):
            found = self.target(given.value)
            return UNKNOWN if found is None else found
        path = find_arg(call, "f", 0)
        return CPU if path is not None and self.saved_on_cpu(path.value) else UNKNOWN

    @property
    def _local_module_classes(self) -> set[str]:
        return kinds_of(self.ctx)._module_classes  # (classes of this file that subclass nn.Module)

    @cached_property
    def _moving_classes(self) -> set[str]:
        """Classes of this file that move something to a device (or take one) when built."""
        found = set()
        for cls in self.ctx.nodes(cst.ClassDef):
            for node in self._calls_in(cls):
                attr = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
                if attr in ("cuda", "to") or find_arg(node, "device", None) is not None:
                    found.add(cls.name.value)
                    break
        return found

    @staticmethod
    def _calls_in(root: cst.CSTNode) -> list[cst.Call]:
        return [node for node, _ in walk(root) if isinstance(node, cst.Call)]

    # -- names -------------------------------------------------------------------------------------------
    def _name(self, name: cst.Name) -> Place:
        scope = self.ctx.scope(name)
        if scope is None or name.value not in scope:
            return UNKNOWN
        assignments = self.ctx.bindings(name)
        if not assignments:
            return UNKNOWN
        local = [a for a in assignments if a.scope is scope]
        use = self._position(name)
        if local and use is not None:
            earlier = [(self._effective(a.node), a) for a in local]
            earlier = [(p, a) for p, a in earlier if p is not None and p <= use]
            if not earlier:
                return UNKNOWN
            # one statement's targets take effect together, bound left to right (`a, a = ...`)
            chosen = [max(earlier, key=lambda item: (item[0], self._position(item[1].node) or (0, 0)))[1]]
        else:
            chosen = assignments
        places = []
        for assignment in chosen:
            moves = (self._moves_reaching(name, assignment, same_scope=assignment.scope is scope)
                     if kinds_of(self.ctx).of(name) is not TENSOR else [])
            # the last move that certainly ran between the binding and the use decides; any other may have
            dominating = [(position, place) for place, position, certain in moves if certain]
            places.append(max(dominating, key=lambda m: m[0])[1] if dominating else self._binding(assignment.node))
            last = max((p for p, _ in dominating), default=None)
            places.extend(place for place, position, certain in moves
                          if not certain and (last is None or position is None or position > last))
        return join(places)

    def _binding(self, node: cst.CSTNode) -> Place:
        return self._step(("binding", node), lambda: self._binding_place(node))

    def _binding_place(self, node: cst.CSTNode) -> Place:
        value = self.ctx.assigned_value(node)
        if value is not None:
            return self.of(value)
        if isinstance(node, cst.Param):
            return fixture_place(self.ctx, node)  # a test's parameter: what its pytest fixture returns
        parent = self.ctx.parent(node)
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node and isinstance(parent.iter, cst.Call):
            if self.ctx.qualified_names(parent.iter.func) & {"range"} or dotted_name(parent.iter.func) == "range":
                return CPU
        return UNKNOWN

    def _moves_reaching(self, name: cst.Name, assignment, same_scope: bool) -> list[tuple]:
        """In-place moves that may reach the object bound by `assignment` before `name` reads it: (where
        each sends it, its position or None, whether it certainly ran in between: straight-line code)."""
        found = []
        use = self._position(name)
        for call, receiver, place in self._module_moves:
            if receiver is name:
                continue
            if isinstance(receiver, cst.Name):
                bound = self.ctx.bindings(receiver)
                if any(b.node is assignment.node for b in bound):
                    where = self._position(call)
                    if same_scope and self.ctx.scope(receiver) is assignment.scope and where is not None and use:
                        bound_at = self._effective(assignment.node)
                        in_loop = self.ctx.loop_around_both(call, name)
                        if bound_at is not None and not (bound_at <= where <= use or in_loop):
                            continue  # before the binding or after the use, in straight-line code
                        found.append((place, where, not in_loop and self._dominates(call, name)))
                    else:
                        found.append((place, None, False))
                    continue
                if bound and all(not isinstance(b.node, cst.Param) and not self._aliases(b.node) for b in bound):
                    continue  # another variable, bound to another object
            elif isinstance(receiver, cst.Call) and self._constructs(receiver):
                continue  # `nn.Linear(3, 1).cuda()`: a new object
            if place is not CPU and self._escapes(assignment):
                found.append((place, None, False))  # a parameter, an attribute, an alias: it may be this object
        found.extend(self._passed_to_movers(name, assignment, same_scope))
        return found

    def _passed_to_movers(self, name: cst.Name, assignment, same_scope: bool) -> list[tuple]:
        """Calls the object is given to, between its binding and `name`, that may move it
        (devlint.analysis.param_moves: `train(model)` whose body calls `model.cuda()`)."""
        from devlint.analysis.param_moves import may_move

        use, bound_at = self._position(name), self._effective(assignment.node)
        for access in assignment.references:
            argument = self.ctx.parent(access.node)
            call = self.ctx.parent(argument) if isinstance(argument, cst.Arg) else None
            if not isinstance(call, cst.Call) or argument.value is not access.node or access.node is name:
                continue
            if self.ctx.qualified_names(call.func) & (SAVERS | HARMLESS_FUNCTIONS) or (isinstance(
                    call.func, cst.Attribute) and call.func.attr.value == "load_state_dict"):
                continue
            where = self._position(call)
            if same_scope and None not in (where, use, bound_at) and not (
                    bound_at <= where <= use or self.ctx.loop_around_both(call, name)):
                continue  # before the binding or after the use, in straight-line code
            if may_move(self.ctx, call, argument):
                # (to the run's device, as code that moves a model does: a CPU module becomes unknown, and a
                # module already there stays there, for the rules that look for device values)
                return [(DEVICE, None, False)]
        return []

    def _dominates(self, move: cst.CSTNode, use: cst.CSTNode) -> bool:
        """A statement of a block that holds `use` (so it ran before it)."""
        line = self.ctx.enclosing(move, cst.SimpleStatementLine)
        block = self.ctx.parent(line) if line is not None else None
        return block is not None and any(a is block for a in self.ctx.ancestors(use)) and not any(
            a is line for a in self.ctx.ancestors(use))

    def _escapes(self, assignment) -> bool:
        """Can another name reach the object: is it passed to a call, stored, put in a container or returned?"""
        return self._step(("escapes", assignment.node), lambda: self._escaping(assignment), on_cycle=True)

    def _escaping(self, assignment) -> bool:
        for access in assignment.references:
            node = access.node
            parent = self.ctx.parent(node)
            if isinstance(parent, cst.Arg):
                call = self.ctx.parent(parent)
                names = self.ctx.qualified_names(call.func) if isinstance(call, cst.Call) else set()
                if names & (SAVERS | HARMLESS_FUNCTIONS) or (isinstance(call, cst.Call) and isinstance(
                        call.func, cst.Attribute) and call.func.attr.value == "load_state_dict"):
                    continue
                return True
            if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.Element,
                                   cst.DictElement, cst.StarredElement, cst.Return, cst.Yield, cst.Lambda,
                                   cst.IfExp, cst.BooleanOperation)):
                if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is not node:
                    continue  # (a target: rebinding the name moves nothing)
                return True
        return False

    def _constructs(self, call: cst.Call) -> bool:
        if isinstance(call.func, cst.Name) and call.func.value in self._local_module_classes:
            return True
        return any(n.startswith("torch.nn.") and n.rsplit(".", 1)[-1][:1].isupper()
                   for n in self.ctx.qualified_names(call.func))

    def _aliases(self, node: cst.CSTNode) -> bool:
        value = self.ctx.assigned_value(node)
        return value is None or isinstance(value, (cst.Name, cst.Attribute, cst.Subscript))

    @cached_property
    def _module_moves(self) -> list[tuple[cst.Call, cst.CSTNode, Place]]:
        """`r.to(...)`, `r.cuda()`, `r.cpu()` whose receiver `r` is not known to be a tensor (which would
        not move in place): (call, receiver, where it sends r)."""
        found = []
        for call in self.ctx.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in MOVES):
                continue
            receiver = func.value
            if self.ctx.is_imported_module(receiver) or kinds_of(self.ctx).of(receiver) is TENSOR:
                continue
            if func.attr.value == "cuda":
                place = DEVICE
            elif func.attr.value == "cpu":
                place = CPU
            else:
                place = self._moved(call, UNKNOWN)
                if place is UNKNOWN and self._dtype_only(call):
                    continue
            found.append((call, receiver, place))
        return found

    def _dtype_only(self, call: cst.Call) -> bool:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        return (bool(positional) and self.target(positional[0].value) is None) or (
            not positional and find_arg(call, "device", None) is None and bool(call.args)
        )

    # -- positions ---------------------------------------------------------------------------------------
    def _position(self, node: cst.CSTNode) -> tuple[int, int] | None:
        position = self.ctx.positions.get(node)
        return None if position is None else (position.start.line, position.start.column)

    def _effective(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """Where a binding takes effect (a parameter: before everything in its function)."""
        return (0, 0) if isinstance(node, cst.Param) else self.ctx.effective_position(node)

    # -- saved files: devlint.analysis.origins -------------------------------------------------------------
    def saved_on_cpu(self, path: cst.CSTNode) -> bool:
        return self._step(("saved", path), lambda: written_on_cpu(self.ctx, path), on_cycle=False)


def fixture_place(ctx: FileFacts, param: cst.Param):
    """Where the value a test's parameter receives from a fixture built anew for
    each test lives; UNKNOWN without one (a fixture shared between tests may have been moved by another)."""
    fixture = fixture_of(ctx, param)
    if fixture is None:
        return UNKNOWN
    if fixture.definition is None:
        place = getattr(fixture.facts, "place", None)
        return CPU if place == "cpu" else DEVICE if place == "device" else UNKNOWN
    values = returned_values(fixture.definition)
    if not values or not function_scoped(ctx, fixture.definition):
        return UNKNOWN
    return join(placement(ctx).of(v) for v in values)
