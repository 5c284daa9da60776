"""Small helpers shared by the rules about hard-coded CUDA (DL004-DL008, DL015).

Device-string literals, qualified-name tests, and fixes that put the run-time `device` (see
`devlint/analysis/device.py`, which also says which torch name a fix may write) where a literal CUDA
device was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from devlint.analysis.device import (
    device_failure,
    device_reference,
    device_source,
    unproven_reference,
)
from devlint.analysis.device_values import holds_torch_device
from devlint.context import FileContext, target_names
from devlint.model import Applicability, Fix
from devlint.syntax import dotted_name, name_words, string_value, walk

_CUDA = re.compile(r"cuda(?::(\d+))?\Z")

# The legacy per-dtype tensor types of `torch.cuda` and the dtype each one holds.
LEGACY_TENSOR_DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16",
    "ByteTensor": "uint8", "CharTensor": "int8", "ShortTensor": "int16", "IntTensor": "int32",
    "LongTensor": "int64", "BoolTensor": "bool",
}


@dataclass(frozen=True)
class CudaLiteral:
    """A literal CUDA device: `"cuda"` (index None), `"cuda:1"` (1) or `f"cuda:{rank}"` (computed)."""

    index: int | None
    computed: bool = False

    @property
    def names_a_gpu(self) -> bool:
        """True when a rewrite to a plain `device` would drop which GPU was meant (`cuda:N`, N > 0)."""
        return self.computed or (self.index is not None and self.index > 0)


def cuda_literal(node: cst.CSTNode | None) -> CudaLiteral | None:
    """`"cuda"`, `"cuda:N"` or `f"cuda:{...}"` as a literal, else None."""
    value = string_value(node)
    if value is not None:
        match = _CUDA.match(value)
        if match is None:
            return None
        return CudaLiteral(int(match.group(1)) if match.group(1) is not None else None)
    if isinstance(node, cst.FormattedString) and len(node.parts) == 2:
        text, expression = node.parts
        if (isinstance(text, cst.FormattedStringText) and text.value == "cuda:"
                and isinstance(expression, cst.FormattedStringExpression)):
            return CudaLiteral(None, computed=True)
    return None


def qualified(ctx: FileContext, node: cst.CSTNode, names) -> str | None:
    """Which of `names` `node` (a dotted name) refers to through the imports, or None.

    A name that several imports bind (`from torch_musa.core.amp import autocast` in one branch,
    `from torch.cuda.amp import autocast` in another) counts only when every one of them is in `names`.
    """
    found = ctx.qualified_names(node)
    return min(found) if found and found <= names else None


def is_last_word_device(target: cst.BaseExpression) -> bool:
    """`device`, `self.device`, `train_device`, `DEVICE`: a name whose last word is "device"."""
    name = dotted_name(target)
    if name is None:
        return False
    words = name_words(name.rsplit(".", 1)[-1])
    return bool(words) and words[-1] == "device"


def replace_with_device(rule, node: cst.CSTNode, title: str, unsafe: bool) -> Fix:
    """Replace `node` with the run-time device; display-only where none can be written.

    The device comes from `device_source`: a name in scope, `self.device`, `y.device` of a tensor the
    statement combines with the value `node` places (`torch.ones(3, device="cuda") + y`), a definition.
    A `self.device` that may be a string or an index replaces only a string (a `torch.device(...)`
    call keeps its type where the device is stored or compared).
    """
    ctx = rule.ctx
    value = placed_value(ctx, node)
    reference = device_source(ctx, node, value)
    if (reference is not None and "." in reference[0] and isinstance(node, cst.Call)
            and not holds_torch_device(ctx, node, reference[0])):
        reference = device_reference(ctx, node)
    caveat = None
    if reference is None:
        unproven = unproven_reference(ctx, node)
        if unproven is None:
            return rule.display_only(f"{title} ({device_failure(ctx, node)})")
        reference, caveat = (unproven[0], False), unproven[1]
    name, needs_definition = reference
    if name != ctx.options.device_name:
        title = title.replace(f"`{ctx.options.device_name}`", f"`{name}`")
    applicability = Applicability.UNSAFE if unsafe or caveat else Applicability.SAFE
    if unsafe:
        title += " (drops the device index)"
    if caveat:
        title += f" ({caveat})"
    return rule.fix(title, applicability, rule.replace(node, name), needs_device=needs_definition)


def placed_value(ctx: FileContext, node: cst.CSTNode) -> cst.CSTNode | None:
    """The expression whose result lives on the device `node` names: the call `x.to(node)`,
    `x.to(torch.device(node))` or the torch factory `torch.ones(3, device=node)`; else None."""
    from devlint.analysis.placement import FACTORIES

    parent = ctx.parent(node)
    if isinstance(parent, cst.Arg) and not parent.keyword and not parent.star:
        call = ctx.parent(parent)
        if (isinstance(call, cst.Call) and call.args and call.args[0] is parent
                and "torch.device" in ctx.qualified_names(call.func)):
            node, parent = call, ctx.parent(call)  # `torch.device("cuda")` as the argument
    if not isinstance(parent, cst.Arg) or parent.star:
        return None
    call = ctx.parent(parent)
    if not isinstance(call, cst.Call):
        return None
    keyword = parent.keyword.value if parent.keyword is not None else None
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to":
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if keyword == "device" or (keyword is None and positional and positional[0] is parent):
            return call
        return None
    if keyword == "device" and any(n.startswith("torch.") and n.split(".", 1)[1] in FACTORIES
                                   for n in ctx.qualified_names(call.func)):
        return call
    return None


def in_comparison(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A question about a device, not a device given to torch: `x.device == torch.device("cuda")`,
    `"cuda" in str(d)`, `d.type == torch.device("cuda").type`, `str(x.device) == "cuda:0"`,
    `d in (torch.device("cuda:0"), ...)`, `self.assertEqual(x.device, torch.device("cuda"))`.

    From `node` up through what only reads the device (`.type`, `.index`, `str(...)`, `repr(...)`, a
    tuple, list or set of devices) to a comparison or an assertion call (`assert*`, `assert_*`). Reading
    `.type` or `.index` of a device is a question by itself: `torch.device("cuda").type` is the
    string `"cuda"`, which works without CUDA.
    """
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return True
        if isinstance(parent, cst.Attribute) and parent.value is child:
            if parent.attr.value in _DEVICE_FIELDS:
                return True
            return False
        if isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.Set)):
            child = parent
            continue
        if isinstance(parent, cst.Arg):
            call = ctx.parent(parent)
            name = (dotted_name(call.func) or "") if isinstance(call, cst.Call) else ""
            last = name.rsplit(".", 1)[-1]
            if last in {"str", "repr"} and len(call.args) == 1:
                child = call
                continue
            return last.startswith("assert") or last in _EQUALITY_CALLS
        return False
    return False


_DEVICE_FIELDS = frozenset({"type", "index"})
# Calls that compare their arguments (`operator.eq`; unittest's and numpy's assertions start with "assert").
_EQUALITY_CALLS = frozenset({"eq", "ne", "is_", "is_not"})


def inside_cuda_method(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Inside a `def cuda(self, ...)`: the code implements `.cuda()` itself (DL001 exempts it too)."""
    return any(isinstance(a, cst.FunctionDef) and a.name.value == "cuda" for a in ctx.ancestors(node))


# Words of a class or function name that say the code pretends: a test double standing in for a GPU.
# "dummy" only names classes: a `dummy_input()` function builds real data.
_SIMULATION_WORDS = frozenset({"fake", "fakes", "faked", "mock", "mocked", "mocks", "stub", "stubs", "stubbed",
                               "pretend", "pretends", "simulate", "simulated", "simulates", "spoof", "spoofed"})
_SIMULATION_CLASS_WORDS = _SIMULATION_WORDS | {"dummy"}


def simulates_gpu(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Code written to *pretend* to be on a GPU, where the device is a description, never used.

    - inside a function named like a test double (`def fake_device()`, `def mock_get_device()`,
      `def _simulate_gpu()`: fake, mock, stub, pretend, simulate, spoof) or a class that is not an
      `nn.Module` named so (`class FakeTensor`, `class DummyAccelerator`: "dummy" as well). A function
      named "dummy" builds real data (`def dummy_input()`), and a module's code runs for real;
    - the value a method or property named like a device (`device`, `get_device`, `_device`) returns
      in a class that is not an `nn.Module` (whose bases' last names end in `Module`): the object only
      *says* where it lives (a fake tensor, a stand-in model, an accelerator description), it moves
      nothing there. A module's own `device` property returning `torch.device("cuda")` is still a
      hard-coded device.
    Mock and patch calls (`mock.patch(..., return_value=torch.device("cuda"))`, `MagicMock(device="cuda")`)
    and attributes set on other objects (`fake.device = torch.device("cuda")`,
    `m.return_value = torch.device("cuda")`) are not devices given to torch either; DL004 leaves them
    out where it checks what receives the device.
    """
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef) and _SIMULATION_WORDS & set(name_words(ancestor.name.value)):
            return True
        if isinstance(ancestor, cst.ClassDef) and not _is_module_class(ancestor) and _SIMULATION_CLASS_WORDS & set(
            name_words(ancestor.name.value)
        ):
            return True
    return _returned_by_device_method(ctx, node)


def _is_module_class(cls: cst.ClassDef) -> bool:
    """A class whose bases' last names end in `Module` (`nn.Module`, `LightningModule`): its code runs for real."""
    return any((dotted_name(base.value) or "").rsplit(".", 1)[-1].endswith("Module") for base in cls.bases)


def _returned_by_device_method(ctx: FileContext, node: cst.CSTNode) -> bool:
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.Set)):
            child = parent
            continue
        if not (isinstance(parent, cst.Return) and parent.value is child):
            return False
        break
    else:
        return False
    function = ctx.enclosing(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef))
    if not isinstance(function, cst.FunctionDef):
        return False
    words = name_words(function.name.value)
    if not words or words[-1] != "device":
        return False
    block = ctx.parent(function)
    owner = ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(owner, cst.ClassDef):
        return False
    return not _is_module_class(owner)


def device_key(ctx: FileContext, node: cst.CSTNode) -> tuple[str, int | None] | None:
    """("cuda", index) for a literal CUDA device (`"cuda:1"`, `torch.device("cuda", 1)`), else None.

    None also for a device whose index is computed (`f"cuda:{rank}"`, `torch.device("cuda", i)`).
    """
    if isinstance(node, cst.Call):
        if (dotted_name(node.func) or "").rsplit(".", 1)[-1] != "device" or any(a.star for a in node.args):
            return None
        kind = next((a for a in node.args if a.keyword is None or a.keyword.value == "type"), None)
        literal = cuda_literal(kind.value) if kind is not None else None
        if literal is None or literal.computed:
            return None
        rest = [a for a in node.args if a is not kind]
        if not rest:
            return ("cuda", literal.index)
        if len(rest) == 1 and literal.index is None and isinstance(rest[0].value, cst.Integer):
            return ("cuda", int(rest[0].value.evaluated_value))
        return None
    literal = cuda_literal(node)
    if literal is None or literal.computed:
        return None
    holder = ctx.parent(node)
    call = ctx.parent(holder) if isinstance(holder, cst.Arg) else None
    if isinstance(call, cst.Call) and (dotted_name(call.func) or "").rsplit(".", 1)[-1] == "device":
        return None  # the type of `torch.device("cuda", 1)`, counted with the call
    return ("cuda", literal.index)


def names_several_gpus(ctx: FileContext, node: cst.CSTNode, in_scope: bool = False) -> bool:
    """Does the code around `node` tell CUDA devices apart, so that a rewrite to one `device` (or a CPU
    fallback for each) would make devices equal that the code keeps apart?

    Two different literal devices in the statement holding `node` (`[torch.device("cuda:0"),
    torch.device("cuda:1")]`; `torch.device("cuda")` and `torch.device("cuda:0")` are different values
    too), or, with `in_scope`, two different GPU indices in the enclosing function (or module-level
    code), where `"cuda"` counts as GPU 0: `device_0 = torch.device("cuda:0")` and `device_1 =
    torch.device("cuda:1")` each given a CPU fallback would be equal without CUDA.
    """
    statement = _statement(ctx, node)
    keys = set()
    for each in _device_nodes(statement):
        key = device_key(ctx, each)
        if key is not None:
            # `torch.device("cuda")` and `torch.device("cuda:0")` are different values (as keys, in a list);
            # the strings `"cuda"` and `"cuda:0"` given to torch both mean GPU 0
            keys.add(key[1] if isinstance(each, cst.Call) else key[1] or 0)
    if len(keys) > 1:
        return True
    if not in_scope:
        return False
    scope = ctx.enclosing(node, cst.FunctionDef) or ctx.module
    cache = ctx.memo.setdefault("gpu_indices", {})
    if id(scope) not in cache:
        indices = set()
        for each in _device_nodes(scope, skip_functions=isinstance(scope, cst.Module)):
            key = device_key(ctx, each)
            if key is not None:
                indices.add(key[1] or 0)
        cache[id(scope)] = indices
    return len(cache[id(scope)]) > 1


def _statement(ctx: FileContext, node: cst.CSTNode) -> cst.CSTNode:
    """The small statement, or the header expression of a compound statement, that holds `node`."""
    top = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.Decorator)):
            return ancestor
        if isinstance(ancestor, (cst.BaseCompoundStatement, cst.IndentedBlock, cst.Module,
                                 cst.SimpleStatementLine)):
            return top
        top = ancestor
    return top


def _device_nodes(root: cst.CSTNode, skip_functions: bool = False):
    """Strings and calls under `root` (not inside functions, for module-level code)."""
    if not skip_functions:
        for each, _ in walk(root):
            if isinstance(each, (cst.SimpleString, cst.Call)):
                yield each
        return
    stack = [root]
    while stack:
        each = stack.pop()
        if isinstance(each, (cst.SimpleString, cst.Call)):
            yield each
        if not isinstance(each, (cst.FunctionDef, cst.Lambda)):
            stack.extend(each.children)


def loop_variable_index(ctx: FileContext, node: cst.CSTNode) -> bool:
    """`torch.device("cuda", i)` / `f"cuda:{i}"` where `i` comes from a loop or comprehension around it:
    one device per GPU, enumerated (`[torch.device("cuda", i) for i in range(torch.cuda.device_count())]`
    is an empty list without CUDA). Collapsing them into one `device` would give every rank the same GPU.
    """
    if isinstance(node, cst.Call):
        expressions = [a.value for a in node.args[1:]]
        kind = node.args[0].value if node.args else None
        if isinstance(kind, cst.FormattedString):
            expressions.append(kind)
    else:
        expressions = [node]
    used = {n.value for e in expressions for n, _ in walk(e) if isinstance(n, cst.Name)}
    if not used:
        return False
    for ancestor in ctx.ancestors(node):
        targets = []
        if isinstance(ancestor, cst.For):
            targets = target_names(ancestor.target)
        elif isinstance(ancestor, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            comp = ancestor.for_in
            while comp is not None:
                targets += target_names(comp.target)
                comp = comp.inner_for_in
        if used & {t.value for t in targets}:
            return True
    return False


def is_alternative(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A branch of a conditional expression (`"cuda" if c else "cpu"`): the device is chosen, not fixed."""
    parent = ctx.parent(node)
    return isinstance(parent, cst.IfExp) and node is not parent.test


def statement_indentation(ctx: FileContext, node: cst.CSTNode) -> str:
    """The indentation of the line the statement holding `node` starts on, for a new line after it.

    Python counts the indentation from the last form feed in it (`"\\f    "` is four columns).
    """
    statement = ctx.enclosing(node, cst.SimpleStatementLine) or node
    line = re.split(r"\r\n|\r|\n", ctx.module.code)[ctx.span(statement)[0].line - 1]
    return line[: len(line) - len(line.lstrip(" \t\f"))].rsplit("\f", 1)[-1]


# Packages whose functions take a torch device (a `torch.device` or the strings torch accepts).
_TORCH_PACKAGES = frozenset({"torch", "torchvision", "torchaudio", "torchtext"})
# Tensor and module methods that take a device: `x.to("cuda")`, `x.new_zeros(2, device="cuda")`.
_DEVICE_METHODS = frozenset({"to", "to_empty", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor",
                             "cuda"})
_DEVICE_PARAMETERS = frozenset({"device", "map_location"})


def feeds_torch(ctx: FileContext, call: cst.Call, arg: cst.Arg, _seen: frozenset = frozenset()) -> bool:
    """Does `call` give torch the device passed as `arg`?

    - a function of torch (or torchvision, torchaudio, torchtext) through the imports: `torch.zeros`,
      `nn.Linear`, `th.Generator`;
    - a tensor or module method that takes a device (`.to`, `.to_empty`, `.new_zeros`, ...) on anything
      but an imported module;
    - `map_location=` of any call (a checkpoint loader hands it to `torch.load`);
    - a function or class of this file (`f(...)`, `self.f(...)`, `Model(...)` through `__init__`) whose
      parameter for `arg` reaches torch there: given as a device to one of the above (or to another such
      function of the file), wrapped in `torch.device(...)`, or stored in a name whose last word is
      `device`.
    Anything else is not: a call of another package (`ctranslate2.Generator(path, device="cuda")` takes a
    string; `pipeline(..., device=...)`, `numba.cuda.jit`, `SimpleNamespace(device=...)`, mocks), and a
    call whose target the file does not show (an unknown object's method, an imported project function).
    """
    return is_torch_call(ctx, call, arg) or _local_function_feeds(ctx, call, arg, _seen)


def is_torch_call(ctx: FileContext, call: cst.Call, arg: cst.Arg) -> bool:
    """`call` is torch's own (see `feeds_torch`), which takes a device as a `torch.device` or a string alike."""
    if arg.keyword is not None and arg.keyword.value == "map_location":
        return True
    func = call.func
    names = ctx.qualified_names(func)
    if names and all(name.split(".")[0] in _TORCH_PACKAGES for name in names):
        return True
    root = (dotted_name(func) or "").split(".")[0]
    if names and root and not ctx.binds(root) and _star_imports_torch(ctx):
        return True  # `from torch import *` then `ones(2, device="cuda")`
    return isinstance(func, cst.Attribute) and func.attr.value in _DEVICE_METHODS and not ctx.is_imported_module(
        func.value)


def _star_imports_torch(ctx: FileContext) -> bool:
    return any(isinstance(node.names, cst.ImportStar) and not node.relative and node.module is not None
               and (dotted_name(node.module) or "").split(".")[0] in _TORCH_PACKAGES
               for node in ctx.nodes(cst.ImportFrom))


# How many functions of the file a device may be handed through before it reaches torch (the search
# follows every path, so it is bounded, not memoised: each answer depends on the call alone).
_MAX_HANDOVERS = 3


def _local_function_feeds(ctx: FileContext, call: cst.Call, arg: cst.Arg, seen: frozenset) -> bool:
    if len(seen) >= _MAX_HANDOVERS:
        return False
    func = call.func
    definitions: list[tuple[cst.FunctionDef, bool]] = []  # (function, bound: its first parameter is self)
    if isinstance(func, cst.Name):
        if ctx.qualified_names(func) or func.value in ctx.imported_names:
            return False  # an import, or a name nothing binds: not a function of this file
        for definition in ctx.nodes(cst.FunctionDef):
            if definition.name.value == func.value and _owner_class(ctx, definition) is None:
                definitions.append((definition, False))
        for definition in ctx.nodes(cst.ClassDef):
            if definition.name.value == func.value:
                init = _method(definition, "__init__")
                if init is not None:
                    definitions.append((init, True))
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in {"self", "cls"}:
        owner = ctx.enclosing(call, cst.ClassDef)
        method = _method(owner, func.attr.value) if owner is not None else None
        if method is not None:
            definitions.append((method, not _is_staticmethod(method)))
    for definition, bound in definitions:
        if id(definition) in seen:
            continue
        parameter = _parameter_for(call, arg, definition, bound)
        if parameter is not None and _parameter_feeds(ctx, definition, parameter, seen | {id(definition)}):
            return True
    return False


def _owner_class(ctx: FileContext, function: cst.FunctionDef) -> cst.ClassDef | None:
    block = ctx.parent(function)
    owner = ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
    return owner if isinstance(owner, cst.ClassDef) else None


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _is_staticmethod(function: cst.FunctionDef) -> bool:
    return any(dotted_name(d.decorator) == "staticmethod" for d in function.decorators)


def _parameter_for(call: cst.Call, arg: cst.Arg, function: cst.FunctionDef, bound: bool) -> str | None:
    params = function.params
    positional = list(params.posonly_params) + list(params.params)
    if bound:
        positional = positional[1:]
    if arg.keyword is not None:
        names = {p.name.value for p in list(params.params) + list(params.kwonly_params)}
        return arg.keyword.value if arg.keyword.value in names else None
    if arg.star:
        return None
    before = call.args[: call.args.index(arg)]
    if any(a.star for a in before):
        return None
    index = len([a for a in before if a.keyword is None])
    return positional[index].name.value if index < len(positional) else None


def _parameter_feeds(ctx: FileContext, function: cst.FunctionDef, name: str, seen: frozenset) -> bool:
    for node, parent in walk(function.body):
        if not (isinstance(node, cst.Name) and node.value == name):
            continue
        if isinstance(parent, cst.Arg) and parent.value is node:
            call = ctx.parent(parent)
            if not isinstance(call, cst.Call):
                continue
            keyword = parent.keyword.value if parent.keyword is not None else None
            last = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
            if keyword is None and last == "device" and call.args[0] is parent:
                return True  # `torch.device(device)`
            if keyword in _DEVICE_PARAMETERS or keyword is None and last == "to" and call.args[0] is parent:
                if feeds_torch(ctx, call, parent, seen):
                    return True
            elif _local_function_feeds(ctx, call, parent, seen):
                return True  # handed on to another function of this file that gives it to torch
        elif isinstance(parent, cst.Assign) and parent.value is node:
            if any(is_last_word_device(t.target) for t in parent.targets):
                return True  # `self.device = device`
    return False
