"""Values that hold the run's device without a name for it: `self.device` set in `__init__` from a
proven device (`_own_device_attribute`), `y.device` of a tensor the moved value is combined with
(`derived_device`), and whether a written device text is certainly a `torch.device`
(`holds_torch_device`). Part of the device source (devlint.analysis.device)."""
from __future__ import annotations

import libcst as cst

from devlint.analysis.device_definition import _evaluation_site
from devlint.analysis.flow import _inside
from devlint.analysis.visible_devices import _facts
from devlint.facts import FileFacts
from devlint.syntax import dotted_name

# Functions of torch whose tensor arguments must share one device (a CPU tensor beside a CUDA one fails).
_COMBINING_FUNCTIONS = frozenset(
    """
    cat concat concatenate stack hstack vstack dstack column_stack matmul mm bmm mv addmm add sub subtract mul
    multiply div divide true_divide where maximum minimum fmax fmin atan2 pow dot outer inner kron cross cdist
    dist bilinear lerp
    """.split()
)


def derived_device(ctx: FileFacts, value: cst.CSTNode) -> str | None:
    """`y.device` where the expression `value` (whose result lives on the run's device: `x.cuda()`,
    `torch.ones(3, device="cuda")`) is, maybe through placement-keeping tensor methods (`.float()`,
    `.view(...)`), an operand of a binary operation (`value + y`) or an argument beside `y` of a torch
    function that needs one device (`torch.cat([value, y])`, `torch.matmul(value, y)`), and `y` is
    proven a tensor on the run's device (`proven_on_device`): by its kind a tensor, its binding certainly
    ran and put it on the device `.cuda()` uses (`y = x.cuda()`, `y = x.to("cuda")`, `y = x.to(device)`
    of a proven `device`), and nothing may have moved it in place since. (A CPU tensor with no
    dimensions combines with a CUDA one, so "the original would have failed" proves nothing.)
    `y` must be a name bound in this scope only by plain assignments (no parameter, `global`,
    `nonlocal`, `del`, loop variable or unpacking), the last one before the use must dominate it,
    and none may follow it in a loop around the use.
    """
    from devlint.analysis.placement import KEEPING_METHODS

    child = value
    while True:  # `x.cuda().float()`: the result still lives where `x.cuda()` does
        parent = ctx.parent(child)
        call = ctx.parent(parent) if isinstance(parent, cst.Attribute) else None
        if (isinstance(parent, cst.Attribute) and parent.value is child and isinstance(call, cst.Call)
                and call.func is parent and parent.attr.value in KEEPING_METHODS):
            child = call
            continue
        break
    candidates: list[cst.BaseExpression] = []
    parent = ctx.parent(child)
    if isinstance(parent, cst.BinaryOperation):
        candidates = [parent.right if parent.left is child else parent.left]
    else:
        element = container = None
        if isinstance(parent, cst.Element):
            element, container = parent, ctx.parent(parent)
            if not isinstance(container, (cst.List, cst.Tuple)):
                return None
            parent = ctx.parent(container)
        elif not isinstance(parent, cst.Arg):
            return None
        call = ctx.parent(parent)
        if not (isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star
                and isinstance(call, cst.Call) and _combines(ctx, call)):
            return None
        if container is not None:  # (only now: the elements of every list, per element, were quadratic)
            candidates = [e.value for e in container.elements if isinstance(e, cst.Element) and e is not element]
        for arg in call.args:
            if arg is not parent and arg.keyword is None and not arg.star:
                candidates.append(arg.value)
    for candidate in candidates:
        if isinstance(candidate, cst.Name) and proven_on_device(ctx, candidate):
            return f"{candidate.value}.device"
    return None


def proven_on_device(ctx: FileFacts, name: cst.Name) -> bool:
    """Is `name`, where it is read, a tensor (by its kind: not a model's output that may be a float, not
    a container with its own `.cuda()`) bound by an assignment that certainly ran, of a value proven on
    the run's device, and not moved in place since (`y.data = y.data.cpu()`)?"""
    from devlint.analysis.derived import is_tensor, on_run_device

    return is_tensor(ctx, name) and on_run_device(ctx, name)


def _combines(ctx: FileFacts, call: cst.Call) -> bool:
    return any(n.startswith("torch.") and n.count(".") == 1 and n.split(".", 1)[1] in _COMBINING_FUNCTIONS
               for n in ctx.qualified_names(call.func))


def holds_torch_device(ctx: FileFacts, node: cst.CSTNode, text: str) -> bool:
    """Is `text` (what `device_source` wrote at `node`) certainly a `torch.device`, not a string or an
    index, so that `text.type` works? `y.device` of a tensor; `self.device` set from `torch.device(...)`
    or a tensor's `.device`; a name whose every binding is `torch.device(...)`, a tensor's `.device`, or
    a parameter annotated `torch.device` (without a default, or with a `torch.device(...)` default)."""
    if text.endswith(".device") and text.count(".") == 1 and not text.startswith("self."):
        return True  # derived: `y.device` of a tensor on the device
    if "." in text:
        values = _own_device_values(ctx, node, text.split(".", 1)[1])
        return bool(values) and all(_is_torch_device_value(ctx, v) or (
            isinstance(v, cst.Name) and _holds_torch_device_name(ctx, v, v.value)) for v in values)
    return _holds_torch_device_name(ctx, node, text)


def _holds_torch_device_name(ctx: FileFacts, node: cst.CSTNode, text: str) -> bool:
    assignments = ctx.bindings(node, text)
    if not assignments:
        return False
    for assignment in assignments:
        target = assignment.node
        if isinstance(target, cst.Param):
            annotation = target.annotation.annotation if target.annotation is not None else None
            if annotation is None or "torch.device" not in ctx.qualified_names(annotation):
                return False
            if target.default is not None and not _is_torch_device_value(ctx, target.default):
                return False
            continue
        value = ctx.assigned_value(target) if isinstance(target, cst.Name) else None
        if value is None or not _is_torch_device_value(ctx, value):
            return False
    return True


def _is_torch_device_value(ctx: FileFacts, value: cst.BaseExpression) -> bool:
    """`torch.device(...)`, or `.device` of a tensor (by kind) or of `next(m.parameters())`."""
    from devlint.analysis.kinds import TENSOR, kinds_of

    if isinstance(value, cst.Call):
        return "torch.device" in ctx.qualified_names(value.func)
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        receiver = value.value
        if isinstance(receiver, cst.Call) and dotted_name(receiver.func) == "next" and len(receiver.args) == 1:
            inner = receiver.args[0].value
            return (isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute)
                    and inner.func.attr.value in ("parameters", "buffers") and not inner.args)
        return kinds_of(ctx).of(receiver) is TENSOR
    return False


def _own_device_attribute(ctx: FileFacts, node: cst.CSTNode, name: str) -> str | None:
    """`self.device` in a method (not `__init__`) of a class whose `__init__` sets `self.device` from a
    value proven to be the run's device in a statement of its body, and that binds the attribute to
    nothing else anywhere in the file (no other assignment, no `device` method or property), where
    the attribute is certainly set before the method can run and nothing outside the file can set it
    (`derived.self_device_failure`)."""
    found = _own_device_found(ctx, node, name)
    return None if found is None else f"{found[0]}.{name}"


def _own_device_values(ctx: FileFacts, node: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values `__init__` sets `self.<name>` from, when `_own_device_attribute` offers it."""
    found = _own_device_found(ctx, node, name)
    return [] if found is None else found[1]


def _own_device_found(ctx: FileFacts, node: cst.CSTNode, name: str):
    method = ctx.enclosing(node, (cst.FunctionDef, cst.Lambda))
    if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__":
        return None
    if _evaluation_site(ctx, node)[1] is not method:
        return None  # a default or a decorator of the method runs where `self` is not bound
    body = ctx.parent(method)
    cls = ctx.parent(body) if isinstance(body, cst.IndentedBlock) else None
    if not isinstance(cls, cst.ClassDef) or method.decorators:
        return None
    params = method.params.params
    if not params or method.params.posonly_params:
        return None
    receiver = params[0].name.value
    if any(each.value == receiver for each in _facts(ctx).mentions(receiver)
           if _inside(ctx, each, method) and _binds(ctx, each)):
        return None  # `self = ...` in the method
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None or not isinstance(init.body, cst.IndentedBlock) or not init.params.params:
        return None
    init_self = init.params.params[0].name.value
    values, first = [], None
    for statement in init.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and _is_self_attribute(small.targets[0].target, init_self, name)
                        and _init_device_value(ctx, init, small.value, name)):
                    values.append(small.value)
                    first = first or statement
    if not values:
        return None
    from devlint.analysis.derived import self_device_failure

    if self_device_failure(ctx, cls, init, first, name) is not None:
        return None
    for target in ctx.nodes(cst.Attribute):
        if target.attr.value == name and _is_assigned(ctx, target):
            statement = ctx.parent(ctx.parent(target)) if isinstance(ctx.parent(target), cst.AssignTarget) else None
            if not (isinstance(statement, cst.Assign) and ctx.enclosing(statement, (cst.FunctionDef,)) is init
                    and ctx.parent(ctx.parent(statement)) is init.body and _init_device_value(ctx, init, statement.value, name)):
                return None  # set elsewhere (another object's, a subclass's, a branch): not known
    if any(isinstance(s, cst.FunctionDef) and s.name.value == name for s in cls.body.body):
        return None
    return receiver, values


def _init_device_value(ctx: FileFacts, init: cst.FunctionDef, value: cst.BaseExpression, name: str) -> bool:
    """A value proven to be the run's device (`derived.run_device_value`). Not a parameter of `__init__`
    (`self.device = device`): a caller may pass the CPU."""
    from devlint.analysis.derived import run_device_value

    return run_device_value(ctx, value)


def _is_self_attribute(target: cst.BaseExpression, receiver: str, name: str) -> bool:
    return (isinstance(target, cst.Attribute) and target.attr.value == name
            and isinstance(target.value, cst.Name) and target.value.value == receiver)


def _is_assigned(ctx: FileFacts, node: cst.CSTNode) -> bool:
    parent = ctx.parent(node)
    if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) or isinstance(parent, cst.Del):
        return True
    if isinstance(parent, (cst.Element, cst.StarredElement)):
        return True  # `a, self.device = ...` (conservatively: any tuple or list holding it)
    return isinstance(parent, (cst.For, cst.CompFor, cst.WithItem, cst.AsName, cst.NamedExpr))


def _binds(ctx: FileFacts, name: cst.Name) -> bool:
    parent = ctx.parent(name)
    return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.AsName,
                               cst.NamedExpr, cst.Element, cst.StarredElement, cst.NameItem))
