"""Is a device the fix did not define provably the device `.cuda()` used? (issue 29, S1-S3)

A fix that writes an existing device instead of `.cuda()` keeps the program's behaviour only where,
whenever the original ran on a GPU, that device is the GPU `.cuda()` picked (the current one, index 0
unless the program changed it), and where the value exists when the fixed code reads it. Each question
here answers "proven" or gives the reason why not, for the display-only title; what cannot be proven
(a parameter a caller may set to the CPU, `args.device`, a project function's result) is not reused.

- `run_device_value`: a value that is the run's device when CUDA is available: `torch.device(...)` of
  `"cuda"`/`"cuda:0"`, a conditional on exactly `torch.cuda.is_available()` (or a name bound only to
  it) whose CUDA branch is such a device and whose other branch is not CUDA (`"cuda" if
  torch.cuda.is_available() else "cpu"`, inside `torch.device(...)` or not), the configured device
  expression, or `.device` of a tensor proven on the run's device. Never a parameter, `"cpu"`, `cuda:N`
  with N > 0, an attribute or a call devlint cannot see into.
- `on_run_device`: an expression whose tensor is on the run's device: `.cuda()` (no index or 0),
  `.to(d)`/`torch.<factory>(..., device=d)` with `d` `"cuda"`, `"cuda:0"`, 0 or a `run_device_value`,
  placement-keeping methods of such (`.float()`, `.view(...)`), arithmetic of such (and numbers), a
  name whose last binding is such.
- `untouched`: no reference of a binding (or of the name its value was moved from: `.cuda()` of a
  tensor already there returns the same object) may move the tensor in place before the use: an
  attribute assignment (`y.data = y.data.cpu()`), `set_`, an alias (`w = y`), or a call that could do
  either (anything but a torch function or a builtin that only reads).
- `self_device_failure`: why `self.device` may not stand for the device in a method (S1, S2): the class
  must be one nothing outside the file can subclass (a class defined in a function that only calls it:
  a subclass in another file could set `self.device` to the CPU, and devlint's index cannot list a
  class's subclasses; an instance's attribute set from another file is not looked for), not
  decorated, its bases `nn.Module` or `object` only (another base, such as
  `nn.Linear`, may call the method from its `__init__`: `reset_parameters`), no subclass in the file,
  and `__init__` sets the attribute before anything that could call the method.
"""

from __future__ import annotations

import libcst as cst

# last_binding was first written here, and other modules import it from here
from devlint.analysis.flow import last_binding
from devlint.facts import FileFacts
from devlint.syntax import dotted_name, string_value

MAX_DEPTH = 20
_CUDA_LITERALS = frozenset({"cuda", "cuda:0"})
_AVAILABLE = frozenset({"torch.cuda.is_available"})
_ACCELERATOR_AVAILABLE = frozenset({"torch.accelerator.is_available"})
_PLAIN_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "object", "builtins.object"})
# Builtins that read their argument and keep nothing of it.
_READERS = frozenset({"print", "len", "isinstance", "type", "str", "repr", "id", "hasattr", "float", "int",
                      "bool", "format", "round", "abs"})
# Class members through which `self.device` may be something other than the attribute `__init__` set.
# Placement-keeping methods whose result is not one tensor where the receiver is: containers, modes,
# (values, indices) pairs, `type_as` (the other's device), `new_*` (may be given `device=`).
_NOT_ONE_KEPT_TENSOR = frozenset(
    """
    state_dict parameters buffers modules children named_parameters named_buffers get values eval train copy
    max min sort topk unique type_as new_empty new_full new_ones new_tensor new_zeros numel_
    """.split()
)
_INDIRECT = frozenset({"__getattr__", "__getattribute__", "__setattr__", "__new__", "__slots__", "__dict__"})


def _cuda_literal(ctx: FileFacts, value: cst.BaseExpression) -> bool:
    """`"cuda"`, `"cuda:0"`, `torch.device("cuda")`, `torch.device("cuda:0")`."""
    text = string_value(value)
    if text is not None:
        return text.strip().lower() in _CUDA_LITERALS
    if isinstance(value, cst.Call) and "torch.device" in ctx.qualified_names(value.func):
        args = [a for a in value.args if not a.star]
        return len(args) == 1 and args[0].keyword is None and _cuda_literal(ctx, args[0].value)
    return False


def _not_cuda(ctx: FileFacts, value: cst.BaseExpression) -> bool:
    """The branch taken without CUDA: a device literal other than CUDA (`"cpu"`, `torch.device("mps")`)."""
    text = string_value(value)
    if text is not None:
        return not text.strip().lower().startswith("cuda")
    if isinstance(value, cst.Call) and "torch.device" in ctx.qualified_names(value.func):
        args = [a for a in value.args if not a.star]
        return len(args) == 1 and args[0].keyword is None and string_value(args[0].value) is not None and _not_cuda(
            ctx, args[0].value)
    return False


def _is_availability_test(ctx: FileFacts, test: cst.BaseExpression, names: frozenset, depth: int = 0) -> bool:
    """`torch.cuda.is_available()`, or a name every binding of which is exactly that."""
    if isinstance(test, cst.Call) and not test.args:
        return bool(ctx.qualified_names(test.func) & names)
    if isinstance(test, cst.Name) and depth < MAX_DEPTH:
        assignments = ctx.bindings(test)
        return bool(assignments) and all(
            (value := ctx.assigned_value(a.node)) is not None and _is_availability_test(ctx, value, names, depth + 1)
            for a in assignments)
    return False


def _branches(test: cst.BaseExpression, body, orelse):
    """(test, branch taken when it holds, the other), through a leading `not`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression, orelse, body
    return test, body, orelse


def run_device_value(ctx: FileFacts, value: cst.BaseExpression, depth: int = 0) -> bool:
    """Is `value` the run's device whenever CUDA is available (and not CUDA where it is not)?"""
    if depth > MAX_DEPTH:
        return False
    if _cuda_literal(ctx, value) and not isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
        return True  # `torch.device("cuda")` (a bare "cuda" string is the hard-coded device itself)
    if _is_configured(ctx, value):
        return True
    if isinstance(value, cst.IfExp):
        test, cuda, other = _branches(value.test, value.body, value.orelse)
        if _is_availability_test(ctx, test, _AVAILABLE):
            return (_cuda_literal(ctx, cuda) or run_device_value(ctx, cuda, depth + 1)) and _not_cuda(ctx, other)
        if _is_availability_test(ctx, test, _ACCELERATOR_AVAILABLE):
            return (isinstance(cuda, cst.Call) and not cuda.args
                    and "torch.accelerator.current_accelerator" in ctx.qualified_names(cuda.func)
                    and _not_cuda(ctx, other))
        return False
    if isinstance(value, cst.Call) and "torch.device" in ctx.qualified_names(value.func):
        args = [a for a in value.args if not a.star]
        return (len(args) == 1 and args[0].keyword is None and isinstance(args[0].value, cst.IfExp)
                and run_device_value(ctx, args[0].value, depth + 1))
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        return is_tensor(ctx, value.value) and on_run_device(ctx, value.value, depth + 1)
    return False


def _is_configured(ctx: FileFacts, value: cst.BaseExpression) -> bool:
    """The expression devlint's own definitions use (`--device-expression`), written out."""
    from devlint.device_options import device_expression

    torch = ctx.torch_alias
    if torch is None:
        return False
    expected = device_expression(ctx.options.device_expression, torch)
    return "".join(ctx.code(value).split()) == "".join(expected.split())


def not_run_device_reason(ctx: FileFacts, value: cst.BaseExpression) -> str:
    """Why `run_device_value(value)` is False, in words that follow "bound to `...`"."""
    literals = [string_value(s) for s in _strings(value)]
    literals = [t.strip().lower() for t in literals if t is not None]
    if literals and all(t.startswith("cpu") for t in literals):
        return "the CPU, where this code used the GPU"
    if any(t.startswith("cuda:") and t not in _CUDA_LITERALS for t in literals):
        return "another GPU than the one this code used"
    inner = value.args[0].value if isinstance(value, cst.Call) and len(value.args) == 1 else value
    if isinstance(inner, cst.IfExp):
        return "a choice that does not depend only on `torch.cuda.is_available()`: it may be the CPU on a GPU machine"
    return "not provably the GPU this code used (it may be the CPU)"


def may_be_run_device(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """Looser than `run_device_value`, for an unsafe fix: a parameter (not `*d`/`**d`) without a default
    or with a default that may be the run's device, or a name bound to something device-like
    (`torch.device(...)`, a conditional, `args.device`, a call named for a device); never one whose
    device literals are all other than `"cuda"`/`"cuda:0"` (`torch.device("cpu")`, `"cuda:1"`)."""
    return _binding_holds(ctx, node, any_device=False)


def holds_a_device(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """A binding that holds some device, maybe not the run's (`torch.device("cpu")` does): a parameter
    (not `*d`/`**d`) without a default or with a device-like default, or a device-like value. A name
    bound to anything else (a string, a number, a function) is never written for a device."""
    return _binding_holds(ctx, node, any_device=True)


def _binding_holds(ctx: FileFacts, node: cst.CSTNode, any_device: bool) -> bool:
    """A parameter (not `*d`/`**d`) without a default or with a device-like default (the run's, or
    any device for a value), or a name bound to a device-like value."""
    parent = ctx.parent(node)
    if isinstance(node, cst.Param):
        if isinstance(parent, cst.Parameters) and node in (parent.star_arg, parent.star_kwarg):
            return False
        return node.default is None or _device_like(ctx, node.default)
    value = ctx.assigned_value(node) if isinstance(node, cst.Name) else None
    return value is not None and _device_like(ctx, value, any_device=any_device)


def _device_like(ctx: FileFacts, value: cst.BaseExpression, any_device: bool = False) -> bool:
    literals = [t.strip().lower() for t in (string_value(s) for s in _strings(value)) if t is not None]
    if any_device:
        literals = []
    if any(t.startswith("cuda") and t not in _CUDA_LITERALS for t in literals):
        return False  # another GPU
    if literals and not any(t in _CUDA_LITERALS for t in literals):
        return False  # the CPU (or another kind of device)
    if isinstance(value, cst.IfExp):
        return True
    if isinstance(value, cst.Call):
        name = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
        return name in ("device", "current_accelerator", "get_device", "select_device") or "device" in name.lower()
    return isinstance(value, cst.Attribute) and value.attr.value in ("device", "DEVICE")


def _strings(node: cst.CSTNode):
    if isinstance(node, cst.SimpleString):
        yield node
    for child in node.children:
        yield from _strings(child)


# -- tensors on the run's device -----------------------------------------------------------------------
def is_tensor(ctx: FileFacts, expr: cst.BaseExpression) -> bool:
    from devlint.analysis.kinds import TENSOR, kinds_of

    return kinds_of(ctx).of(expr) is TENSOR


def _cuda_target(ctx: FileFacts, value: cst.BaseExpression, depth: int) -> bool:
    if isinstance(value, cst.Integer):
        return value.value == "0"
    return _cuda_literal(ctx, value) or run_device_value(ctx, value, depth + 1) or (
        isinstance(value, cst.Name) and _name_is_run_device(ctx, value, depth + 1))


def _name_is_run_device(ctx: FileFacts, name: cst.Name, depth: int) -> bool:
    """A name every binding of which (no parameter) is a `run_device_value`."""
    assignments = ctx.bindings(name)
    return bool(assignments) and depth <= MAX_DEPTH and all(
        (value := ctx.assigned_value(a.node)) is not None and run_device_value(ctx, value, depth + 1)
        for a in assignments)


def on_run_device(ctx: FileFacts, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Is the tensor `expr` evaluates to on the run's device (see the module's docstring)?"""
    from devlint.analysis.placement import FACTORIES, KEEPING_METHODS

    if depth > MAX_DEPTH:
        return False
    if isinstance(expr, cst.Name):
        last = last_binding(ctx, expr)
        return (last is not None and untouched(ctx, expr, last)
                and on_run_device(ctx, ctx.assigned_value(last.node), depth + 1))
    if isinstance(expr, cst.BinaryOperation):  # `a + b` of tensors there, or of one and a number
        operands = [e for e in (expr.left, expr.right) if not isinstance(e, (cst.Integer, cst.Float))]
        return bool(operands) and all(on_run_device(ctx, e, depth + 1) for e in operands)
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    args = [a for a in expr.args if not a.star]
    if any(a.star for a in expr.args):
        return False
    if isinstance(func, cst.Attribute) and not ctx.is_imported_module(func.value):
        method = func.attr.value
        device = next((a for a in args if a.keyword is not None and a.keyword.value == "device"), None)
        positional = [a for a in args if a.keyword is None]
        if method == "cuda":
            target = device or (positional[0] if positional else None)
            return target is None or _cuda_target(ctx, target.value, depth)
        if method == "to":
            target = device or (positional[0] if positional else None)
            return target is not None and _cuda_target(ctx, target.value, depth)
        if method in KEEPING_METHODS and method not in _NOT_ONE_KEPT_TENSOR:
            return on_run_device(ctx, func.value, depth + 1)
        return False
    names = ctx.qualified_names(func)
    if any(n.startswith("torch.") and n.split(".", 1)[1] in FACTORIES for n in names):
        device = next((a for a in args if a.keyword is not None and a.keyword.value == "device"), None)
        return device is not None and _cuda_target(ctx, device.value, depth)
    return False


def untouched(ctx: FileFacts, use: cst.Name, assignment, depth: int = 0) -> bool:
    """Can nothing have moved the tensor bound by `assignment` in place before `use` reads it? Also
    checks the name its value was moved from (`y = x.cuda()`: `y` may be `x` itself)."""
    for access in assignment.references:
        node = access.node
        if node is use or not _before(ctx, node, use):
            continue
        if not _reads_only(ctx, node):
            return False
    value = ctx.assigned_value(assignment.node)
    root = _receiver_root(value) if value is not None else None
    if isinstance(root, cst.Name) and depth < MAX_DEPTH:
        return all(untouched(ctx, use, each, depth + 1) for each in ctx.bindings(root))
    return True


def _before(ctx: FileFacts, node: cst.CSTNode, use: cst.CSTNode) -> bool:
    """May `node` run before `use` does (earlier in the file, or in a loop around both)?"""
    at, used = ctx.positions.get(node), ctx.positions.get(use)
    if at is None or used is None:
        return True
    return (at.start.line, at.start.column) < (used.start.line, used.start.column) or ctx.loop_around_both(node, use)


def _receiver_root(value: cst.BaseExpression) -> cst.BaseExpression:
    """`x` of `x.sum().cuda().float()`."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        value = value.func.value
    return value


def _reads_only(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """Does this read of a tensor leave it where it is (and make no alias that could move it)?"""
    child, parent = node, ctx.parent(node)
    while isinstance(parent, cst.Attribute) and parent.value is child:  # `y.data`, `y.data.cpu`
        if parent.attr.value in ("set_", "__setattr__", "__dict__"):
            return False
        up = ctx.parent(parent)
        if isinstance(up, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
            return False  # `y.data = y.data.cpu()`
        if isinstance(up, cst.Call) and up.func is parent:
            return True  # a method other than `set_` returns a new tensor or changes values in place
        child, parent = parent, up
    if child is not node:
        return True  # a plain attribute read (`y.shape`)
    if isinstance(parent, (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation, cst.ComparisonTarget)):
        return True
    if isinstance(parent, cst.Subscript) and parent.value is node:
        return True  # `y[0]`, `y[0] = 1`: values change, the device does not
    if isinstance(parent, cst.Element):
        container = ctx.parent(parent)
        holder = ctx.parent(container) if isinstance(container, (cst.List, cst.Tuple)) else None
        return isinstance(holder, cst.Arg) and _reading_call(ctx, ctx.parent(holder))
    if isinstance(parent, cst.Arg) and parent.value is node:
        return _reading_call(ctx, ctx.parent(parent))
    return False


def _reading_call(ctx: FileFacts, call: cst.CSTNode) -> bool:
    """A torch function (none moves its arguments in place, `set_` aside) or a builtin that only reads."""
    if not isinstance(call, cst.Call):
        return False
    names = ctx.qualified_names(call.func)
    return bool(names) and all(
        (n.startswith("torch.") and not n.endswith(("set_", "swap_tensors"))) or n in _READERS or n.removeprefix("builtins.") in _READERS
        for n in names)


# -- `self.device` -----------------------------------------------------------------------------------------
def self_device_failure(ctx: FileFacts, cls: cst.ClassDef, init: cst.FunctionDef, first: cst.CSTNode,
                        name: str) -> str | None:
    """Why `self.<name>`, set by the statement `first` of `init`'s body, may be unset or not the run's
    device when a method of `cls` reads it; None when neither can happen."""
    function = ctx.enclosing(cls, (cst.FunctionDef,))
    if function is None:
        # (a notebook's class too: a `%%writefile` cell is a module other files import)
        return (f"a subclass or a caller in another file may set `self.{name}` to another device, "
                f"and nothing shows that none does")
    for use in ctx.nodes(cst.Name):
        if use.value == cls.name.value and use is not cls.name and any(a is function for a in ctx.ancestors(use)):
            call = ctx.parent(use)
            if not (isinstance(call, cst.Call) and call.func is use):
                return f"the class `{cls.name.value}` leaves its function, where another file may subclass it"
    if cls.decorators:
        return "a class decorator may change how its instances are built"
    for base in cls.bases:
        names = ctx.qualified_names(base.value) if base.keyword is None else {"metaclass"}
        if not names or not names <= _PLAIN_BASES:
            shown = ctx.code(base.value)
            return (f"its base `{shown}` may call this method from its `__init__`, before `self.{name}` is set")
    for other in ctx.nodes(cst.ClassDef):
        if any(isinstance(b.value, (cst.Name, cst.Attribute)) and (dotted_name(b.value) or "").rsplit(".", 1)[-1]
               == cls.name.value for b in other.bases):
            return f"the subclass `{other.name.value}` may set `self.{name}` differently or not at all"
    if any(n.value in _INDIRECT for n in ctx.nodes(cst.Name)) or any(
            dotted_name(c.func) in ("setattr", "vars") for c in ctx.nodes(cst.Call)):
        return f"the file sets attributes indirectly (`setattr`, `__dict__`, ...): `self.{name}` may change"
    receiver = init.params.params[0].name.value
    members = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}  # (properties' setters)
    for statement in init.body.body:
        if statement is first:
            return None
        if _may_reach(ctx, statement, receiver, members):
            return f"`__init__` may call this method before it sets `self.{name}`{_line(ctx, statement)}"
    return None


def _line(ctx: FileFacts, node: cst.CSTNode) -> str:
    position = ctx.positions.get(node)
    return "" if position is None else f" (line {position.start.line})"


def _may_reach(ctx: FileFacts, statement: cst.CSTNode, receiver: str, members: set[str]) -> bool:
    """Could `statement` (in `__init__`, before the attribute is set) run a method of the object, or end
    `__init__` early? Only `super().__init__(...)` of a plain base, and `self.x = <value without self>`
    (`x` not a property of the class: its setter would run) or statements that do not mention `self`,
    cannot."""
    from devlint.syntax import walk

    nodes = [n for n, _ in walk(statement)]
    if any(isinstance(n, (cst.Return, cst.Yield)) for n in nodes):
        return True
    mentions = [n for n in nodes if isinstance(n, cst.Name) and n.value == receiver]
    if not mentions:
        if any(isinstance(n, cst.Call) and dotted_name(n.func) == "super" for n in nodes):
            return not _is_plain_super_init(ctx, statement, receiver)
        return False
    if _is_plain_super_init(ctx, statement, receiver):
        return False
    if isinstance(statement, cst.SimpleStatementLine) and all(isinstance(s, cst.Assign) for s in statement.body):
        for small in statement.body:
            for target in small.targets:
                if not (isinstance(target.target, cst.Attribute) and isinstance(target.target.value, cst.Name)
                        and target.target.value.value == receiver and target.target.attr.value not in members):
                    return True
            if any(isinstance(n, cst.Name) and n.value == receiver for n, _ in walk(small.value)):
                return True
        return False
    return True


def _is_plain_super_init(ctx: FileFacts, statement: cst.CSTNode, receiver: str) -> bool:
    """`super().__init__(...)`, `super(C, self).__init__(...)` or `nn.Module.__init__(self, ...)` with
    arguments that do not mention the object (the bases are checked to be `nn.Module`/`object`)."""
    from devlint.syntax import walk

    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.Call)):
        return False
    call = statement.body[0].value
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "__init__"):
        return False
    args = list(call.args)
    owner = func.value
    if isinstance(owner, cst.Call) and dotted_name(owner.func) == "super":
        pass
    elif ctx.qualified_names(owner) & _PLAIN_BASES and args and isinstance(args[0].value, cst.Name) \
            and args[0].value.value == receiver:
        args = args[1:]
    else:
        return False
    return not any(isinstance(n, cst.Name) and n.value == receiver for a in args for n, _ in walk(a))
