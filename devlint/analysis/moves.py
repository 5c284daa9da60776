"""Tensor moves (`.to`, `.cuda`, `.cpu`, `.float`, ...) as statements: their chains and signatures, and
whether assigning a discarded move back (`x.to(device)` -> `x = x.to(device)`) is safe: may the receiver
be re-bound where it is (a local name or a plain attribute, not a loop variable, not an `nn.Parameter`
or `.data`), and would the re-binding only change what could not have worked on a GPU (the next use, in
straight-line code, combines the unmoved tensor with one known to be on the target device, or calls
`.numpy()` after `.cpu()`)? The judgement of devlint.rules.discarded_tensor_move, with its local
stand-in for the placement analysis (`_on_device`)."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.kinds import kinds_of
from devlint.candidates import MOVES  # (one list with the pre-pass, which asks it without LibCST)
from devlint.analysis.vocabulary import MODULE_WRAPPERS, PARAMETER_ATTRIBUTES, TENSOR
from devlint.facts import FileFacts
from devlint.syntax import descendants, dotted_name, last_component, string_value

DEVICE_ONLY_MOVES = frozenset({"to", "cuda", "cpu"})
_DEVICE_STRINGS = ("cuda", "cpu", "mps", "meta", "xpu", "hpu", "npu", "xla")


def chain(call: cst.Call) -> tuple[cst.BaseExpression, list[str]]:
    """(the receiver, the moves in order) of a chain of moves: `x.float().cuda()` -> (x, [float, cuda])."""
    methods = []
    node: cst.BaseExpression = call
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
        methods.append(node.func.attr.value)
        node = node.func.value
    return node, list(reversed(methods))


class MoveRebinding:
    """Asked by the rule for one file (`ctx`: its facts)."""

    def __init__(self, ctx: FileFacts) -> None:
        self.ctx = ctx

    def _device_only(self, call: cst.Call) -> bool:
        node: cst.BaseExpression = call
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
            method = node.func.attr.value
            if method not in DEVICE_ONLY_MOVES or (method == "to" and not self._is_device_argument(node)):
                return False
            node = node.func.value
        return True

    @staticmethod
    def _is_device_argument(call: cst.Call) -> bool:
        if any(a.keyword is not None and a.keyword.value in ("dtype", "copy") for a in call.args):
            return False
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) != 1 or positional[0].star:
            return any(a.keyword is not None and a.keyword.value == "device" for a in call.args) and not positional
        value = positional[0].value
        text = string_value(value)
        if text is not None:
            return text.split(":")[0] in _DEVICE_STRINGS
        if isinstance(value, cst.Call):
            return (dotted_name(value.func) or "").endswith("device")
        component = (last_component(value) or "").lower()
        return "device" in component or component in ("dev", "gpu", "rank", "local_rank")

    def rebindable(self, root: cst.BaseExpression) -> str | None:
        if isinstance(root, cst.Name):
            return None if self._is_loop_variable(root) or not self.local(root) else root.value
        if isinstance(root, cst.Attribute):
            attribute = root.attr.value
            if attribute in PARAMETER_ATTRIBUTES or attribute in ("data", "grad"):
                return None
            if kinds_of(self.ctx).self_attribute_is_parameter(root):
                return None
            if dotted_name(root) is None:
                return None
            return self.ctx.code(root).strip()
        return None

    def local(self, name: cst.Name) -> bool:
        """May `name = ...` be written where `name` is read? Only where the scope itself binds the name
        (or declares it global/nonlocal): elsewhere the assignment would make a free variable (a
        module-level tensor read in a function, an outer function's local in a closure) local to the
        whole scope, and the read before it an UnboundLocalError."""
        scope = self.ctx.scope(name)
        if scope is None:
            return False
        if scope is scope.globals:
            return True
        if any(a.scope is scope for a in self.ctx.bindings(name)):
            return True
        owner = self.ctx.enclosing(name, (cst.FunctionDef, cst.ClassDef))
        return any(
            item.name.value == name.value and self.ctx.enclosing(statement, (cst.FunctionDef, cst.ClassDef)) is owner
            for kind in (cst.Global, cst.Nonlocal) for statement in self.ctx.nodes(kind) for item in statement.names
        )

    def _is_loop_variable(self, name: cst.Name) -> bool:
        for assignment in self.ctx.bindings(name):
            node = assignment.node
            for ancestor in self.ctx.ancestors(node):
                if isinstance(ancestor, (cst.For, cst.CompFor)):
                    if self._within(node, ancestor.target):
                        return True
                    break
                if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                    break
        return False

    def _within(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return node is container or any(a is container for a in self.ctx.ancestors(node))

    def bound_to_list(self, name: cst.Name) -> bool:
        assignments = self.ctx.bindings(name)
        if not assignments:
            return False
        for assignment in assignments:
            target = assignment.node
            parent = self.ctx.parent(self.ctx.parent(target)) if isinstance(target, cst.Name) else None
            if not (isinstance(parent, cst.Assign) and (
                isinstance(parent.value, (cst.List, cst.ListComp))
                or (isinstance(parent.value, cst.Call) and dotted_name(parent.value.func) == "list")
            )):
                return False
        return True

    # -- when re-binding cannot change what worked on a GPU ---------------------------------------------
    def could_not_have_worked(self, statement: cst.Expr, call: cst.Call, target: str) -> bool:
        """Is `target` next used, in straight-line code, where the original (left where it was) fails on
        a GPU machine and the moved value is what the author meant? Only then is the re-binding safe:
        anywhere else later code may rely on the tensor staying where it was (a test comparing it with
        a CPU model's output)."""
        if not self._device_only(call):
            return False
        move = _signature(call)
        if move is None:
            return False
        use = self._next_use(statement, target)
        if use is None:
            return False
        if move[0] == "cpu":
            parent = self.ctx.parent(use)  # `x.cpu()` then `x.numpy()`: fails for a CUDA x, a no-op otherwise
            return (isinstance(parent, cst.Attribute) and parent.attr.value == "numpy"
                    and isinstance(self.ctx.parent(parent), cst.Call))
        return self._combined_with_moved(use, move)

    def _next_use(self, statement: cst.Expr, target: str) -> cst.CSTNode | None:
        """The first read of `target` after the move, in the statements that always run next in the same
        block (descending into `with` blocks); None when the next mention rebinds it, sits in a branch,
        loop or nested definition, or the block ends first."""
        line = self.ctx.parent(statement)
        if not isinstance(line, cst.SimpleStatementLine):
            return None
        rest = list(line.body)
        index = next(i for i, small in enumerate(rest) if small is statement)
        found = self._first_read_in_smalls(rest[index + 1:], target)
        if found is not None:
            return found or None
        block = self.ctx.parent(line)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        body = list(block.body)
        position = next(i for i, item in enumerate(body) if item is line)
        found = self._first_read_in_statements(body[position + 1:], target)
        return found or None

    def _first_read_in_statements(self, statements, target: str):
        """The read node; False when the search must stop without one; None when `target` is not mentioned."""
        for item in statements:
            if isinstance(item, cst.SimpleStatementLine):
                found = self._first_read_in_smalls(item.body, target)
            elif isinstance(item, cst.With):
                found = self._first_read(item.items, target)
                if found is None:
                    found = self._first_read_in_statements(item.body.body, target) if isinstance(
                        item.body, cst.IndentedBlock) else False
            else:
                found = False if self._mentions(item, target) else None
            if found is not None:
                return found
        return None

    def _first_read_in_smalls(self, smalls, target: str):
        for small in smalls:
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                found = self._first_read([small.value] if small.value is not None else [], target)
                if found is not None:
                    return found
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                if any(self._mentions(t, target) for t in targets):
                    return False  # re-bound (or stored into) before any read
            elif isinstance(small, cst.AugAssign) and self._is_target(small.target, target):
                return small.target  # `x += y` reads x first
            elif isinstance(small, cst.Del) and self._mentions(small, target):
                return False
            else:
                found = self._first_read([small], target)
                if found is not None:
                    return found
        return None

    def _first_read(self, nodes, target: str):
        """The first node (in source order) that is `target` among `nodes`, None when there is none;
        False when the first mention is inside a lambda or comprehension (read later, or not at all)."""
        best = None
        for root in nodes:
            for node in descendants(root):
                if self._is_target(node, target):
                    if best is None or self.ctx.span(node)[0] < self.ctx.span(best)[0]:
                        best = node
        if best is not None and self.ctx.enclosing(best, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
                                                         cst.GeneratorExp)) is not None:
            return False
        return best

    def _mentions(self, node: cst.CSTNode, target: str) -> bool:
        return any(self._is_target(child, target) for child in descendants(node))

    def _is_target(self, node: cst.CSTNode, target: str) -> bool:
        if "." in target:
            return isinstance(node, cst.Attribute) and dotted_name(node) == target
        if not (isinstance(node, cst.Name) and node.value == target):
            return False
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False  # `obj.x`
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return False  # `f(x=...)`
        return not isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName))

    def _combined_with_moved(self, use: cst.CSTNode, move: tuple[str, str]) -> bool:
        """Does the original fail at `use`: is the unmoved tensor given to a module, or combined by
        arithmetic or a torch op with a tensor, *known to be on the target device*?"""
        parent = self.ctx.parent(use)
        if isinstance(parent, cst.AugAssign) and parent.target is use:
            return _ARITHMETIC_OPS.get(type(parent.operator)) is not None and self._on_device(
                parent.value, move, use) and not self._maybe_scalar(use)
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, tuple(_ARITHMETIC)):
            other = parent.right if parent.left is use else parent.left
            return self._on_device(other, move, use) and not self._maybe_scalar(use)
        if isinstance(parent, cst.Arg) and parent.value is use:
            call = self.ctx.parent(parent)
            if not isinstance(call, cst.Call):
                return False
            if isinstance(call.func, (cst.Name, cst.Attribute)) and self._module_on_device(call.func, move, use):
                return True
            return self._torch_op_with_moved(call, use, move)
        if isinstance(parent, cst.Element):
            sequence = self.ctx.parent(parent)
            arg = self.ctx.parent(sequence) if isinstance(sequence, (cst.List, cst.Tuple)) else None
            call = self.ctx.parent(arg) if isinstance(arg, cst.Arg) else None
            if isinstance(call, cst.Call) and (self.ctx.qualified_names(call.func) & _SEQUENCE_OPS):
                others = [e.value for e in sequence.elements if e is not parent]
                return any(self._on_device(o, move, use) for o in others) and not self._maybe_scalar(use)
        return False

    def _torch_op_with_moved(self, call: cst.Call, use: cst.CSTNode, move) -> bool:
        if not self.ctx.qualified_names(call.func) & _BINARY_OPS:
            return False
        others = [a.value for a in call.args if a.value is not use and a.keyword is None]
        return any(self._on_device(o, move, use) for o in others) and not self._maybe_scalar(use)

    # -- "known to be on the target device": a local stand-in for the placement analysis -------------
    def _on_device(self, expr: cst.BaseExpression, move: tuple[str, str], at: cst.CSTNode) -> bool:
        """Is the tensor `expr` (an inline move or factory, or a name / `self.x` whose latest binding in
        the straight-line code before `at` is one) known to be on the device of `move`?"""
        if isinstance(expr, cst.Call):
            return self._value_on_device(expr, move)
        dotted = dotted_name(expr)
        if dotted is None:
            return False
        binding = self._latest(dotted, at, module=False)
        return binding is not None and binding[0] == "bound" and self._value_on_device(binding[1], move)

    def _module_on_device(self, func: cst.BaseExpression, move: tuple[str, str], at: cst.CSTNode) -> bool:
        """Is the callee a module moved to the device of `move` (`model.to(device)` on a module, or
        `model = Net().to(device)`) in the straight-line code before `at`, and not a wrapper that moves
        its inputs itself (`DataParallel`), nor a class of the file whose `forward` moves them?"""
        dotted = dotted_name(func)
        if dotted is None or self._moves_its_inputs(func):
            return False
        binding = self._latest(dotted, at, module=True)
        if binding is None:
            return False
        how, value = binding
        if how == "moved":
            # moved in place and then called: a module (a tensor is not callable), unless its kind says tensor
            return _chain_signature(value) == move and kinds_of(self.ctx).of(func) is not TENSOR
        return _chain_signature(value) == move and not self._value_moves_inputs(value)

    def _moves_its_inputs(self, node: cst.CSTNode) -> bool:
        """A wrapper that scatters its inputs (`DataParallel`, `DistributedDataParallel`), or a class of
        the file whose `forward` moves its arguments: CPU inputs work there."""
        if self._value_moves_inputs(node):
            return True
        if isinstance(node, cst.Name):  # what the scope binds the name to
            values = []
            for assignment in self.ctx.bindings(node):
                statement = self.ctx.parent(self.ctx.parent(assignment.node))
                if isinstance(statement, cst.Assign):
                    values.append(statement.value)
        elif isinstance(node, cst.Attribute):  # `self.model`: what the file assigns to it
            target = dotted_name(node)
            values = [a.value for a in self.ctx.nodes(cst.Assign)
                      if any(dotted_name(t.target) == target for t in a.targets)]
        else:
            values = []
        return any(self._value_moves_inputs(value) for value in values)

    def _value_moves_inputs(self, value: cst.CSTNode) -> bool:
        names = set()
        for child in descendants(value):
            if isinstance(child, (cst.Name, cst.Attribute)):
                names |= self.ctx.qualified_names(child)
                names.add(dotted_name(child) or "")
        return bool(names & MODULE_WRAPPERS) or any("DataParallel" in n or n.endswith("DDP") for n in names) or any(
            self._forward_moves_inputs(name) for name in names)

    def _forward_moves_inputs(self, class_name: str) -> bool:
        for cls in self.ctx.nodes(cst.ClassDef):
            if cls.name.value != class_name:
                continue
            for item in cls.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == "forward":
                    params = {p.name.value for p in item.params.params}
                    for node in descendants(item):
                        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                                and node.func.attr.value in DEVICE_ONLY_MOVES
                                and isinstance(node.func.value, cst.Name) and node.func.value.value in params):
                            return True
        return False

    def _value_on_device(self, value: cst.BaseExpression, move: tuple[str, str]) -> bool:
        if _chain_signature(value) == move:
            return True
        if isinstance(value, cst.Call) and any(n.startswith("torch.") for n in self.ctx.qualified_names(value.func)):
            for arg in value.args:
                if arg.keyword is not None and arg.keyword.value == "device":
                    return device_signature(arg.value) == move
        return False

    def _maybe_scalar(self, use: cst.CSTNode) -> bool:
        """A 0-dim CPU tensor (`torch.tensor(0.5)`) mixes with CUDA tensors: the original may have worked."""
        binding = self._latest(dotted_name(use) or "", use, module=False)
        if binding is None or binding[0] != "bound":
            return True
        value = binding[1]
        return not isinstance(value, cst.Call) or (
            bool(self.ctx.qualified_names(value.func) & {"torch.tensor", "torch.scalar_tensor", "torch.as_tensor"})
            and bool(value.args) and isinstance(value.args[0].value, (cst.Integer, cst.Float, cst.UnaryOperation, cst.Name))
        )

    def _latest(self, dotted: str, at: cst.CSTNode, module: bool):
        """("bound", value) or ("moved", call) for the latest statement before `at`, in the straight-line
        code of its function that leads to it, that binds `dotted` (or, with `module`, moves it in place);
        None when there is none or a branch, loop or nested definition in between touches it."""
        for statement in self._preceding(at):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in reversed(statement.body):
                    if isinstance(small, (cst.Assign, cst.AnnAssign)):
                        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                        if any(dotted_name(t) == dotted for t in targets):
                            return ("bound", small.value) if small.value is not None and len(targets) == 1 else None
                        if any(self._mentions(t, dotted) for t in targets):
                            return None
                    elif module and isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                        root, methods = chain(small.value)
                        if dotted_name(root) == dotted and set(methods) & DEVICE_ONLY_MOVES:
                            return "moved", small.value
            elif self._assigns_or_moves(statement, dotted):
                return None
        return None

    def _assigns_or_moves(self, statement: cst.CSTNode, dotted: str) -> bool:
        for node in descendants(statement):
            if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
                if self._mentions(node.target, dotted):
                    return True
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node.name.value == dotted:
                return True
            if isinstance(node, (cst.For, cst.CompFor, cst.WithItem)) and self._mentions(
                    node.target if not isinstance(node, cst.WithItem) else (node.asname or node), dotted):
                return True
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
                    node.func.attr.value in DEVICE_ONLY_MOVES and dotted_name(node.func.value) == dotted):
                return True
        return False

    def _preceding(self, node: cst.CSTNode):
        """The statements that run before `node`'s statement on the way to it, nearest first: earlier
        siblings in its block, then those of each enclosing statement, up to its function or class."""
        current = node
        while True:
            parent = self.ctx.parent(current)
            while parent is not None and not isinstance(parent, (cst.IndentedBlock, cst.Module)):
                if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                    return
                current, parent = parent, self.ctx.parent(parent)
            if parent is None:
                return
            body = list(parent.body)
            index = next(i for i, item in enumerate(body) if item is current)
            yield from reversed(body[:index])
            if isinstance(parent, cst.Module):
                return
            current = self.ctx.parent(parent)
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                return


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.MatrixMultiply, cst.Modulo,
               cst.Power)
_ARITHMETIC_OPS = {cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
                   cst.MatrixMultiplyAssign: "@"}
_BINARY_OPS = frozenset(f"torch.{name}" for name in (
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "matmul", "mm", "bmm", "mv", "dot",
    "maximum", "minimum", "where", "addmm", "baddbmm"))
_SEQUENCE_OPS = frozenset({"torch.cat", "torch.stack", "torch.concat", "torch.concatenate", "torch.hstack",
                           "torch.vstack"})


def _signature(call: cst.CSTNode) -> tuple[str, str] | None:
    """Where a device move sends its receiver: ("to", device text), ("cuda", index text) or ("cpu", "")."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
        return None
    method = call.func.attr.value
    if method == "cpu":
        return "cpu", ""
    if method == "cuda":
        positional = [a for a in call.args if a.keyword is None or a.keyword.value == "device"]
        return "cuda", (_text(positional[0].value) if positional else "")
    if method == "to":
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value == "device":
                return None if arg.star else device_signature(arg.value)
    return None


def device_signature(value: cst.BaseExpression) -> tuple[str, str]:
    """A device expression as a signature: the literal CUDA devices as `.cuda()` writes them (`"cuda"` and
    `.cuda()` are the current CUDA device, `"cuda:1"` is `.cuda(1)`), anything else by its text."""
    literal = string_value(value)
    if literal is None and isinstance(value, cst.Call) and (dotted_name(value.func) or "").endswith("device") \
            and len(value.args) == 1:
        literal = string_value(value.args[0].value)
    if literal is not None:
        kind, _, index = literal.partition(":")
        if kind == "cuda":
            return "cuda", index
        if kind == "cpu":
            return "cpu", ""
    return "to", _text(value)


def _text(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()


def _chain_signature(value: cst.CSTNode) -> tuple[str, str] | None:
    """The signature of the last device move of a chain (`Net().to(device).eval()`), None without one."""
    node = value
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value in DEVICE_ONLY_MOVES:
            return _signature(node)
        if node.func.attr.value not in MOVES and node.func.attr.value not in ("eval", "train", "requires_grad_"):
            return None
        node = node.func.value
    return None
