from __future__ import annotations

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.kinds import TENSOR
from devlint.analysis.placement import DEVICE
from devlint.syntax import find_arg, is_none

# torch.<name>(...) factories that take `device=`.
FACTORIES = frozenset(
    """
    zeros ones empty full eye arange range linspace logspace rand randn randint randperm tensor as_tensor
    scalar_tensor empty_strided tril_indices triu_indices zeros_like ones_like empty_like full_like rand_like
    randn_like randint_like
    """.split()
)
# They draw from the device's generator when created there: other numbers than the CPU's.
RANDOM = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like"})
# Exact in every dtype: created in the target dtype or converted to it, the values are the same.
EXACT = frozenset({"zeros", "ones", "empty", "eye", "zeros_like", "ones_like", "empty_like"})
_SKIPPED_FACTORY_ARGS = frozenset({"device", "out", "pin_memory"})


class MoveAfterCreation(Rule):
    """
    ## What it does
    Prevents no error: a performance rule. The virtual GPU runs both forms alike. Flags a torch
    factory whose result is moved to the device straight away, `torch.zeros(3, 4).to(device)` (or
    `.cuda()` under a CUDA check): the tensor is allocated and filled on the CPU, then copied.
    Factories: `torch.zeros`, `ones`, `empty`, `full`, `eye`, `arange`, `range`, `linspace`,
    `logspace`, `rand`, `randn`, `randint`, `randperm`, `tensor`, `as_tensor`, `scalar_tensor`, the
    `*_like` functions and a few more, through any import alias.

    Off by default (select it with `--select DL018`): it is never a bug, and it is frequent. On 11 real
    projects (1,665 files: mmcv 70, detectron2 18, pytorch-lightning 15, yunjey/pytorch-tutorial 13,
    pytorch/examples 4, dino 2) it made 122 findings, all of the pattern (a sample of 20 read by hand),
    77 with a safe fix, 39 unsafe for a random factory, 6 for a dtype or `requires_grad`; the bug rules
    DL011, DL013 and DL016 made none on the same files. Pyrefly ships the same check opt-in as
    `redundant-to-call`.

    ## Why is this bad?
    The CPU allocation, the CPU fill and the host-to-device copy are wasted work, and a synchronising
    one in a training step. `device=` creates the tensor where it is used.

    ## Example
    ```python
    mask = torch.zeros(3, 4).to(device)
    ```

    ## Use instead
    ```python
    mask = torch.zeros(3, 4, device=device)
    ```

    ## Fix safety
    `device=` is added to the factory and the move dropped (`non_blocking` has nothing left to do). This
    is **safe** where the tensor is the same: same values, same dtype. It is **unsafe** (the title says
    why) for random factories (`torch.rand`, `randn`, `randint`, `randperm`, ... draw from the
    device's generator: other numbers on a GPU for the same seed), when the move also converts the
    dtype (`.to(device, torch.half)`: created in that dtype, `arange`, `linspace` and `full` can give
    other values than converted; not `zeros`, `ones`, `empty`, `eye` and their `_like` forms, exact in
    every dtype), with `requires_grad=True` (the result becomes a leaf, where the moved copy
    was not: `.grad` then fills where it stayed `None`), and for `.cuda(k)` with anything but a literal
    index (`device=None` would mean the CPU where `.cuda(None)` meant the current GPU). With `**kwargs`
    in the factory, other arguments of the move (`memory_format`, `copy`) or a comment inside the move
    (it would be lost) it is **display-only**.

    Beside DL001: `torch.zeros(3).cuda()` outside a CUDA check is DL001's (`.cuda()` needs CUDA); its
    fix writes `torch.zeros(3).to(device)`, which this rule then turns into `torch.zeros(3,
    device=device)` on the next pass of `--fix`. Under a CUDA check, `.cuda()` becomes
    `device="cuda"`.

    ## Not flagged
    - Moves whose result is discarded: `torch.zeros(3).to(device)` as a statement (DL003).
    - `.cuda()` outside a CUDA check: `x = torch.zeros(3).cuda()` (DL001).
    - Moves to the CPU, to a tensor's device and dtype, or to something not known to be a device:
      `torch.zeros(3).to("cpu")`, `torch.zeros(3).to(other)`, `torch.zeros(3).to(torch.half)`.
    - Factories given `device=`, `out=` or `pin_memory=`: `torch.zeros(3, device="cpu").to(device)`,
      `torch.ones(2, out=buf).to(device)`, `torch.ones(2, pin_memory=True).to(device)`;
      `torch.from_numpy(a).to(device)` (no `device=` to give).
    - A factory, then another method, then the move: `torch.zeros(3).float().to(device)`.

    ## References
    - [Tensor creation ops](https://pytorch.org/docs/stable/torch.html#creation-ops)
    - [Performance tuning guide: create tensors directly on the target device](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#create-tensors-directly-on-the-target-device)
    """

    code = "DL018"
    name = "move-after-creation"
    message = "`torch.{factory}(...)` is created on the CPU and then copied; create it with `device=`"
    default_enabled = False

    VALID = (
        "import torch\ntorch.zeros(3).to(device)\n",
        "import torch\nx = torch.zeros(3).cuda()\n",
        "import torch\na = torch.zeros(3).to(\"cpu\")\nb = torch.zeros(3).to(other)\nc = torch.zeros(3).to(torch.half)\n",
        "import torch\nd = torch.zeros(3, device=\"cpu\").to(device)\ng = torch.ones(2, out=buf).to(device)\n"
        "h = torch.ones(2, pin_memory=True).to(device)\n",
        "import torch\ne = torch.from_numpy(a).to(device)\n",
        "import torch\nf = torch.zeros(3).float().to(device)\n",
    )
    INVALID = (
        Invalid("import torch\nmask = torch.zeros(3, 4).to(device)\n",
                fixed="import torch\nmask = torch.zeros(3, 4, device=device)\n"),
        Invalid("import torch as th\ndef f(x):\n    return th.arange(5, dtype=th.long).to(x.device, non_blocking=True)\n",
                fixed="import torch as th\ndef f(x):\n    return th.arange(5, dtype=th.long, device=x.device)\n"),
        Invalid("import torch\nif torch.cuda.is_available():\n    ids = torch.tensor([1, 2]).cuda()\n",
                fixed="import torch\nif torch.cuda.is_available():\n    ids = torch.tensor([1, 2], device=\"cuda\")\n"),
        Invalid("from torch import ones\nw = ones(\n    2,\n    3,\n).to(device=dev)\n",
                fixed="from torch import ones\nw = ones(\n    2,\n    3, device=dev,\n)\n"),
        Invalid("import torch\nnoise = torch.randn(8).to(device)\n",
                fixed="import torch\nnoise = torch.randn(8, device=device)\n", unsafe=True),
        Invalid("import torch\nr = torch.arange(0, 1, 0.1).to(device, torch.half)\n",
                fixed="import torch\nr = torch.arange(0, 1, 0.1, dtype=torch.half, device=device)\n", unsafe=True),
        Invalid("import torch\nw = torch.zeros(3, dtype=torch.half).to(device, torch.float64)\n",
                fixed="import torch\nw = torch.zeros(3, dtype=torch.float64, device=device)\n"),
        Invalid("import torch\nw = torch.zeros(3).to(  # noqa: E501\n    device)\n",
                fixed="import torch\nw = torch.zeros(3).to(  # noqa: E501\n    device)\n"),
        Invalid("import torch\nw = torch.zeros(3, requires_grad=True).to(device)\n",
                fixed="import torch\nw = torch.zeros(3, requires_grad=True, device=device)\n", unsafe=True),
        Invalid("import torch\nw = torch.zeros(3).to(device, memory_format=torch.channels_last)\n",
                fixed="import torch\nw = torch.zeros(3).to(device, memory_format=torch.channels_last)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda")):
            return
        factory = func.value
        if not isinstance(factory, cst.Call):
            return
        tail = self._factory(factory)
        if tail is None or isinstance(self.ctx.parent(node), cst.Expr):
            return  # a discarded move is DL003's
        if any(a.keyword is not None and a.keyword.value in _SKIPPED_FACTORY_ARGS for a in factory.args):
            return
        if func.attr.value == "cuda":
            if not self.ctx.guards.is_guarded(node) and not self._inside_cuda_method(node):
                return  # DL001's: `.cuda()` needs CUDA; its fix leaves a `.to(device)` for this rule
            target = self._cuda_target(node)
        else:
            target = self._to_target(node)
        if target is None:
            return
        self.report(node, self.message.format(factory=tail), self._fix(node, factory, tail, target))

    def _factory(self, call: cst.Call) -> str | None:
        for name in self.ctx.qualified_names(call.func):
            if name.startswith("torch.") and name[len("torch."):] in FACTORIES:
                return name[len("torch."):]
        return None

    def _inside_cuda_method(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, cst.FunctionDef) and a.name.value == "cuda" for a in self.ctx.ancestors(node))

    # -- what the move says --------------------------------------------------------------------------------
    def _cuda_target(self, call: cst.Call):
        """(device text, dtype text, unsafe reason, other arguments) for `.cuda(...)`."""
        index = find_arg(call, "device", 0)
        others = [a for a in call.args if a is not index and not _is_keyword(a, "non_blocking")
                  and not (a.keyword is None and call.args.index(a) == 1)]
        if index is None or is_none(index.value):
            return '"cuda"', None, None, others
        if isinstance(index.value, cst.Integer):
            return f'"cuda:{index.value.value}"', None, None, others
        reason = "`device=None` would mean the CPU, where `.cuda(None)` meant the current GPU"
        return self.ctx.code(index.value).strip(), None, reason, others

    def _to_target(self, call: cst.Call):
        """(device text, dtype text, unsafe reason, other arguments) for `.to(...)`; None when the target
        is not known to be a device other than the CPU."""
        device = find_arg(call, "device", None)
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in call.args):
            return None
        if device is None:
            if not positional:
                return None
            device = positional[0]
        if self.ctx.kinds.of(device.value) is TENSOR or self.ctx.placement.target(device.value) is not DEVICE:
            return None
        dtype = find_arg(call, "dtype", None)
        rest = [a for a in positional if a is not device]
        if dtype is None and rest:
            dtype = rest[0]  # `.to(device, torch.half)`
        others = [a for a in call.args if a not in (device, dtype) and not _is_keyword(a, "non_blocking")
                  and not (a.keyword is None and a in rest[1:2])]  # `.to(device, dtype, non_blocking)`
        dtype_text = self.ctx.code(dtype.value).strip() if dtype is not None else None
        return self.ctx.code(device.value).strip(), dtype_text, None, others

    # -- the fix -------------------------------------------------------------------------------------------
    def _fix(self, move: cst.Call, factory: cst.Call, tail: str, target):
        device, dtype, reason, others = target
        title = "Create it on the device with `device=`"
        if others or any(a.star == "**" for a in factory.args):
            return self.display_only(f"{title} (the move has other arguments, or the factory `**kwargs`)")
        render = cst.Module([]).code_for_node
        if "#" in render(move)[len(render(factory)):]:
            return self.display_only(f"{title} (a comment inside the move would be lost)")
        if reason is None and tail in RANDOM:
            reason = "random numbers come from the device's generator: other values on a GPU for the same seed"
        if reason is None and dtype is not None and tail not in EXACT:
            reason = f"created as `{dtype}` rather than converted to it, which can give other values"
        grad = find_arg(factory, "requires_grad", None)
        if reason is None and grad is not None and not (isinstance(grad.value, cst.Name) and grad.value.value == "False"):
            reason = "the result becomes a leaf that requires grad, where the moved copy was not one"
        args, added = list(factory.args), [_keyword("device", device)]
        given = find_arg(factory, "dtype", None)
        if dtype is not None and given is not None:
            args[args.index(given)] = given.with_changes(value=cst.parse_expression(dtype))  # in place
        elif dtype is not None:
            added.insert(0, _keyword("dtype", dtype))
        if args and isinstance(args[-1].comma, cst.Comma):
            # a trailing comma stays trailing: the new arguments go before it
            added[-1] = added[-1].with_changes(comma=args[-1].comma)
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = factory.with_changes(args=[*args, *added])
        edit = self.replace(move, self.ctx.code(new, move))
        if reason is not None:
            return self.fix(f"{title} ({reason})", Applicability.UNSAFE, edit)
        return self.fix(title, Applicability.SAFE, edit)


def _is_keyword(arg: cst.Arg, name: str) -> bool:
    return arg.keyword is not None and arg.keyword.value == name


def _keyword(name: str, value: str) -> cst.Arg:
    return cst.Arg(cst.parse_expression(value), keyword=cst.Name(name),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
