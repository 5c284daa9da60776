from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.kinds import TENSOR
from devlint.analysis.mixing import meets_module_tensor, moved_at_use
from devlint.analysis.module_classes import ANY, inside, methods, module_classes, reachable_methods
from devlint.analysis.placement import CPU, FACTORIES
from devlint.syntax import descendants, dotted_name, is_none, string_value

# What `model.to(device)` would still not move, or what moves the attribute by hand.
_OWN_MOVES = frozenset({"_apply", "to", "cuda", "__setattr__", "__getattr__", ANY})
_NON_FLOAT_DTYPES = frozenset(f"torch.{n}" for n in """
    long int int64 int32 int16 int8 uint8 bool short
    """.split())
_NON_FLOAT_METHODS = frozenset({"long", "int", "bool", "short", "byte", "char"})
_INT_FACTORIES = frozenset({"torch.randint", "torch.randperm", "torch.tril_indices", "torch.triu_indices",
                            "torch.LongTensor", "torch.BoolTensor", "torch.IntTensor", "torch.ByteTensor"})
_SHAPING = frozenset({"view", "reshape", "unsqueeze", "expand", "repeat"})
_SCALAR_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.scalar_tensor", "torch.asarray"})
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "std", "var", "norm", "amax", "amin", "item", "all",
                         "any", "logsumexp", "median"})


def _net(init: str, use: str, argument: str = "") -> str:
    """An example module: `init` in `__init__` after `super().__init__()`, `forward` returns `use`."""
    return (f"import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self{', ' + argument if argument else ''}):\n"
            f"        super().__init__()\n        {init}\n    def forward(self, x):\n        return {use}\n")


class UnregisteredModuleTensor(Rule):
    """
    ## What it does
    Prevents `RuntimeError: Expected all tensors to be on the same device` in a module's `forward`
    after `model.to(device)` (the virtual GPU reports it with this rule's code). Flags
    `self.<name> = <tensor>` in `__init__` (or a method it calls) of an `nn.Module` subclass whose
    whole base chain devlint can see, where the tensor is made there on the CPU (a torch factory or op
    without `device=`, a value the provenance analysis knows is such a tensor), is neither registered
    (`register_buffer`, `nn.Parameter`, `nn.Buffer`) nor moved where it is used, and meets the module's
    computation in `forward` (or a method it calls): combined with an input, a parameter or a
    submodule's output (`x + self.pe[:n]`, `torch.cat([x, self.mask])`, `self.proj(self.table)`).

    On by default: a GPU run of such a module fails at its first forward pass. On the corpora tried
    (pytorch-image-models, detectron2, nanoGPT, vit-pytorch, x-transformers, dino, pytorch-lightning,
    nlp-tutorial, PyTorch-GAN, pytorch-tutorial, attention-is-all-you-need-pytorch, hyunwoongko/transformer)
    it finds few tensors, and in the sample each was a real bug (vit-pytorch's `MPPLoss` mean and std).

    ## Why is this bad?
    `model.to(device)` moves parameters and buffers, not plain tensor attributes. On a GPU the
    attribute stays on the CPU and the first forward pass fails with mixed devices; on the CPU nothing
    is wrong, so the author never sees it. `model.half()` and the other conversions of `Module._apply`
    skip it too.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.linspace(0.5, 1.5, 4)

        def forward(self, x):
            return x * self.scale
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.linspace(0.5, 1.5, 4), persistent=False)

        def forward(self, x):
            return x * self.scale
    ```

    ## Fix safety
    `self.<name> = <expr>` becomes `self.register_buffer("<name>", <expr>, persistent=False)`:
    `persistent=False` keeps `state_dict` (and so every checkpoint) unchanged, and the tensor now
    follows `model.to(device)`. The fix is **safe** where the tensor is not floating point (an explicit
    integer or bool `dtype`, `.long()`/`.bool()`, `torch.randint`, `torch.arange` of integers,
    `torch.tensor([...])` of integers, a comparison): a GPU run failed before and works now, a CPU run
    computes the same. It is **unsafe** for a floating-point tensor, which as a buffer also follows
    `model.half()` / `model.double()` / `model.to(dtype)` and so changes the numerics of a program that
    converts the model; **unsafe** too where another method assigns the attribute again (a non-tensor
    there raises `TypeError: cannot assign ... as buffer`) or a subclass of the file assigns it. The
    buffer appears in `model.buffers()` either way. **Display-only** where the assignment is not a plain
    statement directly in `__init__` after `super().__init__()` (`register_buffer` raises before it; an
    assignment in a helper method, under a condition or with several targets), or where `__init__`
    assigns the attribute twice (`register_buffer` refuses a name that is already a plain attribute).

    ## Not flagged
    - Registered tensors: `self.register_buffer("mask", ...)`, `self.w = nn.Parameter(...)`,
      `self.b = nn.Buffer(...)`, and values that may be parameters (`self.w = other.weight`, an argument).
    - Tensors placed explicitly: `torch.ones(4, device=device)`, `torch.ones(4).to(device)`.
    - 0-dim tensors (`torch.tensor(0.5)`, a reduction such as `.sum()`): a 0-dim CPU tensor mixes with
      CUDA tensors.
    - Attributes moved where they are used (`self.mask.to(x.device)`, `self.mask.type_as(x)`) or assigned
      again in `forward` (a cache that follows the input); attributes only used as an index
      (`x[:, self.idx]`: a CUDA tensor accepts a CPU index), read for their values (`.tolist()`) or not
      used in `forward` at all.
    - Classes with a base devlint cannot see into (`class Net(Base)` with `Base` from a library), that
      override `_apply`, `to`, `cuda` or `__setattr__` (they may move the attribute themselves), or that
      register a buffer under a computed name (it may be this one).

    ## References
    - [Module.register_buffer](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer)
    - [Module.to](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
    """

    code = "DL009"
    name = "unregistered-module-tensor"
    message = ("`self.{name}` is a plain tensor attribute: `model.to(device)` does not move it; "
               "register it with `register_buffer`")

    VALID = (
        _net('self.register_buffer("mask", torch.ones(4))', "x * self.mask"),
        _net("self.w = nn.Parameter(torch.ones(4))", "x * self.w"),
        _net("self.b = nn.Buffer(torch.ones(4))", "x * self.b"),
        _net("self.w = other.weight", "x * self.w", "other"),
        _net("self.scale = torch.ones(4, device=device)", "x * self.scale", "device"),
        _net("self.scale = torch.ones(4).to(device)", "x * self.scale", "device"),
        _net("self.scale = torch.tensor(0.5)", "x * self.scale"),
        _net("self.total = torch.ones(4).sum()", "x * self.total"),
        _net("self.mask = torch.ones(4)", "x * self.mask.to(x.device)"),
        _net("self.mask = torch.ones(4)", "x * self.mask.type_as(x)"),
        _net("self.idx = torch.arange(4)", "x[:, self.idx]"),
        _net("self.sizes = torch.arange(4)", "x.split(self.sizes.tolist())"),
        _net("self.unused = torch.ones(4)", "x"),
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.cache = torch.zeros(4)\n    def forward(self, x):\n        self.cache = self.cache.to(x.device)\n"
        "        return x + self.cache\n",
        "import torch\nfrom library import Base\nclass Net(Base):\n    def __init__(self):\n        super().__init__()\n"
        "        self.scale = torch.ones(4)\n    def forward(self, x):\n        return x * self.scale\n",
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.scale = torch.ones(4)\n    def _apply(self, fn, recurse=True):\n"
        "        self.scale = fn(self.scale)\n        return super()._apply(fn, recurse)\n"
        "    def forward(self, x):\n        return x * self.scale\n",
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.scale = torch.ones(4)\n    def cuda(self, device=None):\n"
        "        self.scale = self.scale.cuda(device)\n        return super().cuda(device)\n"
        "    def __setattr__(self, name, value):\n        super().__setattr__(name, value)\n"
        "    def forward(self, x):\n        return x * self.scale\n",
        "import torch\nclass Plain:\n    def __init__(self):\n        self.scale = torch.ones(4)\n"
        "    def forward(self, x):\n        return x * self.scale\n",
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.scale = torch.linspace(0.5, 1.5, 4)\n"
            "    def forward(self, x):\n        return x * self.scale\n",
            fixed="import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.register_buffer(\"scale\", torch.linspace(0.5, 1.5, 4), persistent=False)\n"
            "    def forward(self, x):\n        return x * self.scale\n",
            unsafe=True,
        ),
        Invalid(
            "import torch as th\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self, n):\n"
            "        super().__init__()\n        self.mask = th.tril(th.ones(n, n)).bool()\n"
            "    def forward(self, x):\n        return x.masked_fill(self.mask, 0.0)\n",
            fixed="import torch as th\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self, n):\n"
            "        super().__init__()\n        self.register_buffer(\"mask\", th.tril(th.ones(n, n)).bool(), persistent=False)\n"
            "    def forward(self, x):\n        return x.masked_fill(self.mask, 0.0)\n",
        ),
        Invalid(  # before super().__init__(), register_buffer raises: display-only
            "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        self.ids = torch.arange(4)\n        super().__init__()\n    def forward(self, x):\n"
            "        return x + self.ids\n",
            fixed="import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        self.ids = torch.arange(4)\n        super().__init__()\n    def forward(self, x):\n"
            "        return x + self.ids\n",
            unsafe=True,
        ),
    )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not self._factories:
            return  # (a tensor made on the CPU comes from a torch factory; `could_match` says the same)
        classes = module_classes(self.ctx)
        chain = classes.chain(node)
        if chain is None or chain.members & _OWN_MOVES:
            return
        own = methods(node)
        if "forward" not in own or "__init__" not in own:
            return
        registered = self._registered(node)
        if registered is None:
            return
        init = reachable_methods(self.ctx, node, "__init__")
        forward = reachable_methods(self.ctx, node, "forward")
        subclasses = classes.subclasses(node)
        for assign, target in self._assignments(init):
            name = target.attr.value
            # cheapest first: the uses (syntax), then the scope-free kinds, then the exact kinds and placement
            if name in registered or not self._used_in_computation(node, name, forward, subclasses):
                continue
            if self.ctx.possible_kinds.of(assign.value) is not TENSOR or not self._fresh_cpu_tensor(assign.value):
                continue
            self.report(assign, self.message.format(name=name),
                        self._fix(node, assign, target, init, forward, subclasses))

    # -- what is flagged -------------------------------------------------------------------------------
    @cached_property
    def _factories(self) -> bool:
        return any(name.startswith("torch.") and name[len("torch."):] in FACTORIES
                   for call in self.ctx.nodes(cst.Call) for name in self.ctx.qualified_names(call.func))

    def _registered(self, cls: cst.ClassDef) -> set[str] | None:
        """Names the class registers; None when one is computed (`register_buffer(name, ...)`)."""
        found = set()
        for call in inside(self.ctx, cls, cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in (
                    "register_buffer", "register_parameter", "add_module", "register_module") and call.args:
                key = string_value(call.args[0].value)
                if key is None:
                    return None
                found.add(key)
        return found

    def _assignments(self, functions):
        for function in functions:
            for node in inside(self.ctx, function, cst.Assign):
                if len(node.targets) == 1:
                    target = node.targets[0].target
                    if isinstance(target, cst.Attribute) and dotted_name(target.value) == "self":
                        yield node, target

    def _fresh_cpu_tensor(self, value: cst.BaseExpression) -> bool:
        """A tensor made here on the CPU, not a parameter, and not possibly 0-dim."""
        if self.ctx.kinds.of(value) is not TENSOR or self.ctx.placement.of(value) is not CPU:
            return False
        for node in (value, *descendants(value)):
            if isinstance(node, cst.Call):
                names = self.ctx.qualified_names(node.func)
                if any(n.rsplit(".", 1)[-1] in ("Parameter", "Buffer") for n in names):
                    return False
            if isinstance(node, cst.Attribute) and node.attr.value in ("weight", "bias"):
                return False
        return not self._maybe_scalar(value)

    def _maybe_scalar(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.IfExp):
            return any(self._maybe_scalar(branch) for branch in (value.body, value.orelse) if not is_none(branch))
        node = value
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not self.ctx.is_imported_module(
                node.func.value):
            if node.func.attr.value in _REDUCTIONS and not node.args:
                return True
            if node.func.attr.value in _SHAPING and node.args:
                return False  # (`torch.tensor(mean).view(-1, 1, 1)`: at least one dimension)
            node = node.func.value
        if isinstance(node, cst.Call):
            names = self.ctx.qualified_names(node.func)
            if names & _SCALAR_FACTORIES:
                first = node.args[0].value if node.args else None
                return not isinstance(first, (cst.List, cst.Tuple, cst.ListComp))
            if node.args and isinstance(node.args[0].value, (cst.Tuple, cst.List)) and not node.args[0].value.elements:
                return True  # `torch.zeros(())`
        return False

    def _used_in_computation(self, cls, name: str, forward, subclasses) -> bool:
        """Read in `forward`'s methods where it meets the computation, never moved where it is read and
        never assigned again there."""
        meets = False
        for function in forward + [f for sub in subclasses for f in reachable_methods(self.ctx, sub, "forward")]:
            for node in inside(self.ctx, function, cst.Attribute):
                if not (node.attr.value == name
                        and dotted_name(node.value) == "self"):
                    continue
                parent = self.ctx.parent(node)
                if isinstance(parent, (cst.AssignTarget, cst.AugAssign)) and parent.target is node:
                    return False  # (re-bound where it is used: a cache that follows the input)
                if moved_at_use(self.ctx, node):
                    return False
                meets = meets or meets_module_tensor(self.ctx, node, function)
        return meets

    # -- the fix ---------------------------------------------------------------------------------------
    def _fix(self, cls, assign: cst.Assign, target: cst.Attribute, init, forward, subclasses):
        name = target.attr.value
        title = f'Register it: `self.register_buffer("{name}", ..., persistent=False)`'
        own_init = methods(cls)["__init__"]
        line = self.ctx.parent(assign)
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
                and self.ctx.parent(line) is own_init.body):
            return self.display_only(f"{title} (not a plain statement of `__init__`)")
        body = list(own_init.body.body)
        if not any(self._super_init(statement) for statement in body[:body.index(line)]):
            return self.display_only(f"{title} (not after `super().__init__()`: `register_buffer` raises before it)")
        others = [a for a, t in self._all_assignments(cls, name) if a is not assign]
        if any(self.ctx.enclosing(a, cst.FunctionDef) in init for a in others):
            return self.display_only(f"{title} (`__init__` assigns it twice: `register_buffer` refuses a plain attribute)")
        value = self.ctx.code(assign.value, assign.value)
        edit = self.replace(assign, f'self.register_buffer("{name}", {value}, persistent=False)')
        reason = None
        if others or any(self._all_assignments(sub, name) for sub in subclasses):
            reason = "another method assigns it again: a non-tensor there raises TypeError"
        elif not self._not_floating(assign.value):
            reason = "a floating-point buffer follows `model.half()`/`.double()`, which the attribute did not"
        if reason:
            return self.fix(f"{title} ({reason})", Applicability.UNSAFE, edit)
        return self.fix(title, Applicability.SAFE, edit)

    def _all_assignments(self, cls, name: str):
        return [(node, target) for node, target in self._assignments([cls]) if target.attr.value == name] + [
            (node, node.target) for node in (*inside(self.ctx, cls, cst.AugAssign), *inside(self.ctx, cls, cst.AnnAssign))
            if isinstance(node.target, cst.Attribute)
            and node.target.attr.value == name and dotted_name(node.target.value) == "self"]

    def _super_init(self, statement: cst.CSTNode) -> bool:
        for node in descendants(statement):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "__init__":
                return True
        return False

    def _not_floating(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Comparison):
            return True
        if isinstance(value, cst.Call):
            for arg in value.args:
                if arg.keyword is not None and arg.keyword.value == "dtype":
                    return bool(self.ctx.qualified_names(arg.value) & _NON_FLOAT_DTYPES)
            func = value.func
            if isinstance(func, cst.Attribute) and not self.ctx.is_imported_module(func.value):
                if func.attr.value in _NON_FLOAT_METHODS and not value.args:
                    return True
                return False
            names = self.ctx.qualified_names(func)
            if names & _INT_FACTORIES:
                return True
            if "torch.arange" in names:
                return all(isinstance(a.value, cst.Integer) for a in value.args if a.keyword is None)
            if "torch.tensor" in names and value.args and isinstance(value.args[0].value, (cst.List, cst.Tuple)):
                elements = value.args[0].value.elements
                return bool(elements) and all(isinstance(e.value, cst.Integer) for e in elements)
        return False
