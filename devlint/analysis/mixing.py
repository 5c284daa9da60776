"""Does a CPU tensor meet a tensor of the module's computation in an op that needs one device?

DL009 (a plain tensor attribute) and DL010 (a factory without `device=`) flag a CPU tensor only where a
GPU run would fail with it: where it is combined, inside a module's methods, with something that
follows the module to the GPU (an input of the method, `self.<anything>`, a submodule's output). The
value is followed up through what keeps its device (`t[i]`, `t[:, :n]`, `t.view(...)`, `t.float()`,
`-t`, and a local name bound to one, read later in the same function), and meets the other operand at

- an arithmetic operator or a comparison (`x + t`, `x @ t`, `x == t`);
- a torch function (`torch.cat([x, t])`, `torch.where(m, x, t)`, `F.linear(x, t)`);
- a tensor method called with it, or on it (`x.masked_fill(t, 0)`, `t.mul(x)`);
- a submodule call (`self.proj(t)`, `self.lstm(x, (t, c))`): the submodule follows the model to the GPU.

Not a meeting: an index (`x[t]`: a CUDA tensor accepts a CPU index), `.item()`/`.tolist()`/`len(t)`,
shape queries, a move (`t.to(x.device)`, `t.type_as(x)`, `t.cuda()`), and an operand that is a literal
or another factory's result. All of it is syntax and the kinds of `self.<x>`: no scope analysis, which
would cost more than the rest of these rules together.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts
from devlint.analysis.vocabulary import TENSOR_METHODS
from devlint.analysis.module_classes import inside, module_classes
from devlint.syntax import descendants, is_none, string_value

# Tensor methods whose result lives where the receiver does.
KEEPING = TENSOR_METHODS - {"to", "cuda", "cpu", "type", "type_as", "pin_memory", "new_zeros", "new_ones",
                            "new_empty", "new_full", "new_tensor"}
MOVING = frozenset({"to", "cuda", "cpu", "type", "type_as"})
_SIZE_METHODS = frozenset({"view", "reshape", "expand", "repeat", "permute", "transpose", "narrow", "flatten",
                           "unflatten", "squeeze", "unsqueeze", "sum", "mean", "std", "var", "norm", "prod",
                           "max", "min", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod", "softmax",
                           "log_softmax", "topk", "sort", "argsort", "flip", "roll", "diag", "triu", "tril",
                           "select", "clamp", "clip", "pow", "fill_", "normal_", "uniform_"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.MatrixMultiply, cst.Modulo,
               cst.Power, cst.BitAnd, cst.BitOr, cst.BitXor)
MAX_DEPTH = 6
# Methods whose result is a Python value or lives on the CPU whatever the receiver.
_HOST_RESULTS = frozenset({"item", "tolist", "numpy", "size", "dim", "numel", "__len__", "stride", "data_ptr",
                           "element_size", "get_device", "nelement", "is_contiguous", "cpu"})


def moved_at_use(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """Is `node` (after what keeps its device) the receiver of a move (`.to(...)`, `.type_as(x)`, `.cuda()`)?"""
    top = _keeping_top(ctx, node)
    parent = ctx.parent(top)
    return (isinstance(parent, cst.Attribute) and parent.value is top and parent.attr.value in MOVING
            and isinstance(ctx.parent(parent), cst.Call))


def meets_module_tensor(ctx: FileFacts, node: cst.CSTNode, function: cst.FunctionDef, depth: int = 0) -> bool:
    """Does the tensor at `node` meet, in `function`, a tensor of the module's computation (see above)?"""
    if depth > MAX_DEPTH:
        return False
    top = _keeping_top(ctx, node)
    parent = ctx.parent(top)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _ARITHMETIC):
        return _follows_module(ctx, parent.right if parent.left is top else parent.left, function)
    if isinstance(parent, cst.Comparison) or isinstance(parent, cst.ComparisonTarget):
        comparison = parent if isinstance(parent, cst.Comparison) else ctx.parent(parent)
        operands = [comparison.left] + [c.comparator for c in comparison.comparisons]
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in comparison.comparisons):
            return False
        return any(_follows_module(ctx, o, function) for o in operands if o is not top)
    if isinstance(parent, cst.Attribute) and parent.value is top:
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent and parent.attr.value not in MOVING:
            if parent.attr.value in _SIZE_METHODS:
                return False  # (sizes, dims and fill values: `t.view(n, -1)`, `t.masked_fill(m, 0)`)
            return any(_follows_module(ctx, a.value, function) for a in call.args if a.keyword is None)
        return False
    argument = parent
    if isinstance(argument, (cst.Element, cst.StarredElement)):  # `torch.cat([x, t])`
        sequence = ctx.parent(argument)
        holder = ctx.parent(sequence)
        if isinstance(sequence, (cst.List, cst.Tuple)) and isinstance(holder, cst.Arg):
            others = [e.value for e in sequence.elements if e is not argument]
            call = ctx.parent(holder)
            if isinstance(call, cst.Call) and _is_submodule(ctx, call.func):
                return True  # `self.lstm(x, (h0, c0))`
            if isinstance(call, cst.Call) and _is_torch_function(ctx, call):
                return any(_follows_module(ctx, o, function) for o in others) or any(
                    _follows_module(ctx, a.value, function) for a in call.args if a is not holder and a.keyword is None)
        return False
    if isinstance(argument, cst.Arg) and argument.value is top:
        call = ctx.parent(argument)
        if not isinstance(call, cst.Call):
            return False
        if _is_submodule(ctx, call.func):
            return True
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in KEEPING and func.attr.value not in _SIZE_METHODS \
                and not ctx.is_imported_module(func.value) and _follows_module(ctx, func.value, function):
            return True  # `x.mul(t)`, `x.masked_fill(t, 0)` on a tensor of the computation
        if _is_torch_function(ctx, call):
            others = [a.value for a in call.args if a is not argument and a.keyword is None]
            return any(_follows_module(ctx, o, function) for o in others)
        return False
    if isinstance(parent, cst.Assign) and parent.value is top and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Name):
            return any(meets_module_tensor(ctx, use, function, depth + 1) for use in _later_reads(ctx, target, function))
    return False


def _keeping_top(ctx: FileFacts, node: cst.CSTNode) -> cst.CSTNode:
    """The outermost expression around `node` that keeps its device: `t[i]`, `t.float()`, `-t`, `(t)`."""
    current = node
    while True:
        parent = ctx.parent(current)
        if isinstance(parent, cst.Subscript) and parent.value is current:
            current = parent
        elif isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not):
            current = parent
        elif (isinstance(parent, cst.Attribute) and parent.value is current and parent.attr.value in KEEPING
              and parent.attr.value not in _SIZE_METHODS and _takes_no_tensor(ctx, parent)):
            current = ctx.parent(parent)
        elif (isinstance(parent, cst.Attribute) and parent.value is current and parent.attr.value in _SIZE_METHODS
              and isinstance(ctx.parent(parent), cst.Call)):
            current = ctx.parent(parent)  # (`t.view(1, -1)`, `t.masked_fill(...)`: still `t`'s device)
        elif isinstance(parent, cst.Attribute) and parent.value is current and parent.attr.value in ("T", "mT"):
            current = parent
        else:
            return current


def _takes_no_tensor(ctx: FileFacts, attribute: cst.Attribute) -> bool:
    """`t.float()`, `t.contiguous()`: a method call without arguments, so nothing else meets `t` there."""
    call = ctx.parent(attribute)
    return isinstance(call, cst.Call) and call.func is attribute and not call.args


def _later_reads(ctx: FileFacts, target: cst.Name, function: cst.FunctionDef) -> list[cst.Name]:
    """Reads of the local `target` in `function` after its binding (none if the name is bound twice)."""
    sites = [s for s in ctx.binding_sites.get(target.value, ()) if ctx.enclosing(s, cst.FunctionDef) is function]
    if len(sites) != 1:
        return []
    reads = []
    for node in inside(ctx, function, cst.Name):
        if node.value == target.value and node is not target:
            parent = ctx.parent(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            reads.append(node)
    return reads


def _is_torch_function(ctx: FileFacts, call: cst.Call) -> bool:
    names = ctx.qualified_names(call.func)
    return any(n.startswith("torch.") and not n.startswith(("torch.cuda.", "torch.distributed.", "torch.jit."))
               and n.rsplit(".", 1)[-1] not in _NOT_MIXING for n in names)


_NOT_MIXING = frozenset({"is_tensor", "numel", "save", "load", "manual_seed", "device", "Size", "set_grad_enabled",
                         "no_grad", "tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "rand",
                         "randn", "randint", "eye", "linspace", "zeros_like", "ones_like", "empty_like",
                         "full_like", "rand_like", "randn_like", "Tensor", "Parameter", "Buffer", "broadcast_shapes"})


def _is_submodule(ctx: FileFacts, func: cst.BaseExpression) -> bool:
    """`self.proj(...)`, `self.blocks[i](...)`: a module of the model (it follows `model.to(device)`),
    known from what the class assigns to it: classes (`nn.Linear(...)`, `Block(...)`), never a function."""
    node = func
    while isinstance(node, cst.Subscript):
        node = node.value
    if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"):
        return False
    values = module_classes(ctx).self_attribute_values(node)
    return bool(values) and all(_constructs_a_class(ctx, v) for v in values)


def _constructs_a_class(ctx: FileFacts, value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    if module_classes(ctx).instance_chain(value) is not None:
        return True
    names = ctx.qualified_names(value.func)
    last = (names.pop() if len(names) == 1 else "").rsplit(".", 1)[-1]
    return last[:1].isupper() and not any(n.startswith("torch.") for n in ctx.qualified_names(value.func))


def _tensor_attribute(ctx: FileFacts, attr: cst.Attribute) -> bool:
    """`self.w` registered as a parameter or buffer (by a literal name, or assigned `nn.Parameter(...)`),
    or `self.proj.weight`: a tensor that follows `model.to(device)`."""
    if attr.attr.value in ("weight", "bias") and isinstance(attr.value, cst.Attribute):
        return True
    cls = ctx.enclosing(attr, cst.ClassDef)
    if cls is None:
        return False
    name = attr.attr.value
    for call in inside(ctx, cls, cst.Call):
        if (isinstance(call.func, cst.Attribute) and call.func.attr.value in ("register_buffer", "register_parameter")
                and call.args and string_value(call.args[0].value) == name):
            return True
    values = module_classes(ctx).self_attribute_values(attr)
    return bool(values) and all(isinstance(v, cst.Call) and any(
        n.rsplit(".", 1)[-1] in ("Parameter", "Buffer") for n in ctx.qualified_names(v.func)) for v in values)


def _follows_module(ctx: FileFacts, expr: cst.BaseExpression, function: cst.FunctionDef, depth: int = 0) -> bool:
    """Is `expr` a tensor of the module's computation: an input of `function` used as a tensor there
    (`x.shape`, `x.device`, `self.proj(x)`, an annotation), a submodule's output, a parameter or buffer
    of `self` (registered by a literal name, `nn.Parameter(...)`, `.weight`), a local bound only to such, or an op or method of one?
    Never a literal, nor a factory's result; all without the scope analysis, which would cost more than
    the rest of these rules together."""
    if depth > MAX_DEPTH or isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                                              cst.ConcatenatedString)):
        return False
    deeper = depth + 1
    if isinstance(expr, cst.Name):
        if expr.value in _inputs(function):
            if expr.value not in tensor_inputs(ctx, function):
                return False
            return not rebound(ctx, function, expr.value) or _local_follows(ctx, expr, function, deeper, True)
        return _local_follows(ctx, expr, function, deeper)
    if isinstance(expr, cst.Attribute):
        if isinstance(expr.value, cst.Name) and expr.value.value == "self" or expr.attr.value in ("weight", "bias"):
            return _tensor_attribute(ctx, expr)
        return expr.attr.value in ("T", "mT", "data") and _follows_module(ctx, expr.value, function, deeper)
    if isinstance(expr, cst.Subscript):
        return _follows_module(ctx, expr.value, function, deeper)
    if isinstance(expr, cst.UnaryOperation):
        return _follows_module(ctx, expr.expression, function, deeper)
    if isinstance(expr, cst.BinaryOperation):
        return _follows_module(ctx, expr.left, function, deeper) or _follows_module(ctx, expr.right, function, deeper)
    if isinstance(expr, cst.Call):
        func = expr.func
        if _is_submodule(ctx, func):
            return True
        if isinstance(func, cst.Attribute) and func.attr.value not in MOVING | _HOST_RESULTS \
                and not ctx.is_imported_module(func.value):
            return _follows_module(ctx, func.value, function, deeper)  # (`h.chunk(3)`, `h.softmax(-1)`)
        if _is_torch_function(ctx, expr):
            return any(_follows_module(ctx, a.value, function, deeper) for a in expr.args if a.keyword is None)
    return False


def _inputs(function: cst.FunctionDef) -> set[str]:
    params = function.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} - {"self", "cls"}


_TENSOR_QUERIES = frozenset({"shape", "device", "dtype", "ndim", "size", "dim", "is_cuda", "numel"})


def tensor_inputs(ctx: FileFacts, function: cst.FunctionDef, strict: bool = False) -> set[str]:
    """Inputs of `function` it uses as tensors: annotated so, asked `.shape`/`.device`/`.size()`, given
    to a submodule or a torch op (not a factory), or (in `forward`, unless `strict`) neither annotated nor given a default other than
    None."""
    cache = ctx.memo.setdefault("devlint_tensor_inputs", {})
    if (function, strict) in cache:
        return cache[function, strict]
    inputs = _inputs(function)
    found = set()
    for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
        if param.name.value not in inputs:
            continue
        annotation = ctx.module.code_for_node(param.annotation.annotation) if param.annotation is not None else None
        if annotation is not None and "Tensor" in annotation:
            found.add(param.name.value)
        elif not strict and function.name.value == "forward" and annotation is None and (param.default is None or is_none(param.default)):
            found.add(param.name.value)  # (what a module is called with: its inputs, unless a default says otherwise)
    for node in inside(ctx, function, cst.Attribute):
        if isinstance(node.value, cst.Name) and node.value.value in inputs and node.attr.value in _TENSOR_QUERIES:
            found.add(node.value.value)
    for node in inside(ctx, function, cst.Call):
        if _is_submodule(ctx, node.func) or _is_torch_function(ctx, node):
            found.update(a.value.value for a in node.args if isinstance(a.value, cst.Name) and a.value.value in inputs
                         and a.keyword is None)
    cache[function, strict] = found
    return found


def submodule_inputs(ctx: FileFacts, function: cst.FunctionDef) -> set[str]:
    """Inputs of `function` given as they are to a submodule there (`self.proj(x)`): on the model's device,
    or the method fails anyway."""
    inputs = _inputs(function)
    return {a.value.value for call in inside(ctx, function, cst.Call) if _is_submodule(ctx, call.func)
            for a in call.args if isinstance(a.value, cst.Name) and a.value.value in inputs and a.keyword is None}


def rebound(ctx: FileFacts, function: cst.FunctionDef, name: str) -> bool:
    """Does `function` bind `name` other than as its parameter?"""
    return any(ctx.enclosing(s, cst.FunctionDef) is function for s in ctx.binding_sites.get(name, ())
               if not isinstance(s, cst.Param))


def _local_follows(ctx: FileFacts, name: cst.Name, function: cst.FunctionDef, depth: int,
                   is_input: bool = False) -> bool:
    """A local of `function` every binding of which is a tensor of the computation (`h = self.norm(x)`);
    an input counts as one (`x = x * self.scale`)."""
    sites = [s for s in ctx.binding_sites.get(name.value, ()) if ctx.enclosing(s, cst.FunctionDef) is function
             and not isinstance(s, cst.Param)]
    values = [_bound_value(ctx, site) for site in sites]
    if not values or any(v is None for v in values):
        return False
    # (`att = att.masked_fill(...)` follows whatever `att` was: the other bindings decide)
    others = [v for v in values if not any(isinstance(n, cst.Name) and n.value == name.value
                                           for n in (v, *descendants(v)))]
    return (bool(others) or is_input) and all(_follows_module(ctx, v, function, depth) for v in others)


def _bound_value(ctx: FileFacts, site: cst.CSTNode) -> cst.BaseExpression | None:
    """The value a name is bound to, or for `q, k = <value>` the value unpacked (its pieces share its device)."""
    value = ctx.assigned_value(site)
    if value is not None:
        return value
    node = site
    while isinstance(ctx.parent(node), (cst.Element, cst.Tuple, cst.List)):
        node = ctx.parent(node)
    target = ctx.parent(node)
    if node is not site and isinstance(target, cst.AssignTarget) and isinstance(ctx.parent(target), cst.Assign):
        return ctx.parent(target).value
    return None
