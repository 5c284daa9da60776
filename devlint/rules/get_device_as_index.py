from __future__ import annotations

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.kinds import TENSOR
from devlint.syntax import string_value

# Methods whose `device=` (or first positional argument, for `to`/`cuda`) takes a device.
_DEVICE_METHODS = frozenset({"to", "cuda", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})


class GetDeviceAsIndex(Rule):
    """
    ## What it does
    Prevents `RuntimeError: Device index must not be negative` (what PyTorch and `devlint run
    --virtual-gpu` raise): flags `t.get_device()` used as a device, outside a CUDA check. It returns
    the GPU's index for a CUDA tensor and `-1` for a CPU tensor, and `-1` is not a device.

    The receiver must be known to be a tensor (`devlint/analysis/kinds.py`: a `torch.Tensor` annotation, a torch
    factory or op, a moved value, a tensor-only method called on the same binding, ...): other objects
    have a `get_device()` that returns a device (the IR nodes of `torch._inductor`: seven false
    positives in torch's own sources when unknown receivers were flagged).

    Uses that take a device: `device=` of a torch function or of `.to()`, `.cuda()`, `.new_zeros()`
    and the other `new_*` methods, the first argument of `.to(...)`, `.cuda(...)` and
    `torch.device(...)`, and the index of `torch.device("cuda", ...)`; directly, or through a name
    bound once to `t.get_device()` (`dev = x.get_device()`, then `torch.zeros(3, device=dev)`).

    On by default: the bug crashes the first CPU tensor that reaches it. On 11 real projects (1,665
    files) nothing was flagged; their `get_device()` calls compare indices or feed
    `torch.cuda.set_device`, neither flagged.

    ## Why is this bad?
    Code that works on the GPU, where every tensor has an index, breaks as soon as it meets a CPU
    tensor: on a machine without a GPU, in a CPU test, or on a tensor the author forgot to move.
    `t.device` is the device itself, CPU included, and goes wherever a device goes.

    ## Example
    ```python
    mask = torch.ones(n, device=x.get_device())
    y = y.cuda(x.get_device())
    ```

    ## Use instead
    ```python
    mask = torch.ones(n, device=x.device)
    y = y.to(x.device)
    ```

    ## Fix safety
    `t.get_device()` becomes `t.device`, `.cuda(t.get_device())` becomes `.to(t.device)` and
    `torch.device("cuda", t.get_device())` becomes `torch.device(t.device)`. For a CUDA tensor on GPU
    `k` each names `cuda:k`, as the original did; for a CPU tensor the original raised. So the fix is
    **safe**, except `.cuda(...)` on something that is not known to be a tensor in a file (or project
    class) that defines its own `cuda()`: `.to()` skips that override, so it is **unsafe** there. Through a
    name, every read of the name must be such a use: a name also read as a number (`if dev >= 0`,
    `"cuda:%d" % dev`, `torch.cuda.set_device(dev)`, an unknown function) cannot change type, and the
    fix is **display-only**. With `*args` or other arguments of `.cuda()` than `non_blocking` and
    `memory_format`, it is display-only too.

    ## Not flagged
    - Uses under a CUDA check: `if x.is_cuda: y = y.cuda(x.get_device())`,
      `if x.get_device() >= 0: ...`; a name bound to `x.get_device()` that the code compares with a
      number anywhere (`if dev >= 0:`): the author handles the CPU's index.
    - `torch.cuda.set_device(x.get_device())` and `with torch.cuda.device(x.get_device()):`, which do
      nothing for an index of minus one.
    - Receivers not known to be tensors: `def f(node): return torch.zeros(2, device=node.get_device())`.
    - Reads as a number: `idx = x.get_device()` then `print(idx)`; `device=` of functions outside
      torch (`pipeline(device=x.get_device())`, where minus one often means the CPU).

    ## References
    - [Tensor.get_device](https://pytorch.org/docs/stable/generated/torch.Tensor.get_device.html)
    - [Tensor.device](https://pytorch.org/docs/stable/generated/torch.Tensor.device.html)
    """

    code = "DL016"
    name = "get-device-as-index"
    message = "`.get_device()` is -1 for a CPU tensor, which is not a device; use `.device`"

    VALID = (
        "import torch\ndef f(x: torch.Tensor, y):\n    if x.is_cuda:\n        y = y.cuda(x.get_device())\n    return y\n",
        "def f(node):\n    return torch.zeros(2, device=node.get_device())\n",
        "import torch\ndef f(x):\n    if x.get_device() >= 0:\n        return torch.zeros(2, device=x.get_device())\n",
        "import torch\ndef f(x):\n    dev = x.get_device()\n    if dev >= 0:\n        return torch.zeros(2, device=dev)\n",
        "import torch\nx = torch.ones(1)\ntorch.cuda.set_device(x.get_device())\n",
        "import torch\nx = torch.ones(1)\nwith torch.cuda.device(x.get_device()):\n    pass\n",
        "import torch\nx = torch.ones(1)\nidx = x.get_device()\nprint(idx)\n",
        "import torch\nfrom transformers import pipeline\nx = torch.ones(1)\np = pipeline(device=x.get_device())\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndef f(x: torch.Tensor, n):\n    return torch.ones(n, device=x.get_device())\n",
            fixed="import torch\ndef f(x: torch.Tensor, n):\n    return torch.ones(n, device=x.device)\n",
        ),
        Invalid("import torch\ndef f(x: torch.Tensor, y):\n    return y.to(x.get_device())\n",
                fixed="import torch\ndef f(x: torch.Tensor, y):\n    return y.to(x.device)\n"),
        Invalid(
            "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return y.cuda(x.get_device(), True)\n",
            fixed="import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return y.to(x.device, non_blocking=True)\n",
        ),
        Invalid("import torch as th\nx = th.ones(1)\nd = th.device('cuda', x.get_device())\n",
                fixed="import torch as th\nx = th.ones(1)\nd = th.device(x.device)\n"),
        Invalid("import torch\nx = torch.ones(1)\nd = torch.device(x.get_device())\n",
                fixed="import torch\nx = torch.ones(1)\nd = torch.device(x.device)\n"),
        Invalid(
            "import torch\ndef f(x: torch.Tensor, n):\n    dev = x.get_device()\n    a = torch.zeros(n, device=dev)\n"
            "    return x.new_ones(n, device=dev) + a.to(dev)\n",
            fixed="import torch\ndef f(x: torch.Tensor, n):\n    dev = x.device\n    a = torch.zeros(n, device=dev)\n"
            "    return x.new_ones(n, device=dev) + a.to(dev)\n",
        ),
        Invalid(
            "import torch\ndef f(x: torch.Tensor, a):\n    dev = x.get_device()\n    return a.cuda(dev)\n",
            fixed="import torch\ndef f(x: torch.Tensor, a):\n    dev = x.get_device()\n    return a.cuda(dev)\n",
        ),
        Invalid(
            "import torch\ndef f(x: torch.Tensor, n):\n    dev = x.get_device()\n    print('on', dev)\n"
            "    return torch.zeros(n, device=dev)\n",
            fixed="import torch\ndef f(x: torch.Tensor, n):\n    dev = x.get_device()\n    print('on', dev)\n"
            "    return torch.zeros(n, device=dev)\n",
        ),
        # a method of what a torch function returned (`torch.zeros(2).to`), not a torch function
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return torch.zeros(2).to(x.get_device())\n",
                fixed="import torch\ndef f(x: torch.Tensor):\n    return torch.zeros(2).to(x.device)\n"),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return torch.ones(3).cuda(x.get_device())\n",
                fixed="import torch\ndef f(x: torch.Tensor):\n    return torch.ones(3).to(x.device)\n"),
        Invalid(
            "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def cuda(self, device=None):\n"
            "        return super().cuda(device)\nx = torch.ones(1)\nnet = Net().cuda(x.get_device())\n",
            fixed="import torch, torch.nn as nn\nclass Net(nn.Module):\n    def cuda(self, device=None):\n"
            "        return super().cuda(device)\nx = torch.ones(1)\nnet = Net().to(x.device)\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "get_device") or node.args:
            return
        receiver = func.value
        direct = self._use(node)
        # Neither given as a device nor bound by `dev = t.get_device()`: nothing to flag, whatever the
        # receiver. Asked first, from the syntax alone: the receiver's kind may need the scope analysis
        # of the whole file (most of utils/checkpoint.py's check, for `ids.append(arg.get_device())`).
        if direct is None and not self._assigned_alone(node):
            return
        if self.ctx.is_imported_module(receiver) or self.ctx.kinds.of(receiver) is not TENSOR:
            return  # other objects have a `get_device()` that returns a device (torch._inductor's IR nodes)
        if self.ctx.guards.is_guarded(node):
            return
        receiver_text = self.ctx.code(receiver).strip()
        if direct is not None:
            edits, unsafe = self._rewrite(direct, node, f"{receiver_text}.device")
            # `.cuda(t.get_device())` starts at the `.cuda()` call, before DL001's finding on it: where both
            # fixes apply, this one (which keeps the device) comes first, and DL001's then has nothing left
            start = direct[1] if direct[0] == "cuda" else func.attr
            self.report(node, fix=self._fix(edits, unsafe, None), start_node=start)
            return
        name = self._bound_name(node)
        if name is None:
            return
        uses, other = self._reads(name)
        if other is not None and self._compared(name):
            return  # `if dev >= 0:` somewhere: the author handles the CPU's -1
        uses = [(use, read) for use, read in uses if not self.ctx.guards.is_guarded(read)]
        if not uses:
            return
        reason = None
        rewritten = next((read for use, read in uses if use[0] != "keyword"), None)
        if other is not None:
            reason = f"`{name.value}` is also read as a number (line {self.ctx.span(other)[0].line})"
        elif rewritten is not None:
            # `.cuda(dev)` must become `.to(dev)` too: an edit away from this line, left to the author
            reason = (f"`{name.value}` is also given to `.cuda()` or `torch.device(\"cuda\", ...)` "
                      f"(line {self.ctx.span(rewritten)[0].line}), which take a GPU only")
        edits = [self.replace_between(func.attr, node, "device")]
        self.report(node, fix=self._fix(edits, False, reason), start_node=func.attr)

    def _fix(self, edits, unsafe: bool | str, reason: str | None):
        title = "Use `.device` instead of `.get_device()`"
        if reason is not None or edits is None:
            return self.display_only(f"{title} ({reason or 'other arguments of `.cuda()`'})")
        if unsafe:
            return self.fix(f"{title} ({unsafe})", Applicability.UNSAFE, *edits)
        return self.fix(title, Applicability.SAFE, *edits)

    # -- where the value goes ------------------------------------------------------------------------------
    def _use(self, value: cst.CSTNode):
        """("keyword"|"first"|"index", call) where `value` is given as a device; None otherwise."""
        arg = self.ctx.parent(value)
        call = self.ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or arg.value is not value or arg.star:
            return None
        # `torch.zeros(2).to` is named `torch.zeros.to` through the call: a method of its result
        names = self.ctx.qualified_names(call.func) if _plain_dotted(call.func) else set()
        torch_function = any(n.startswith("torch.") for n in names)
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) and not torch_function else None
        positional = [a for a in call.args if a.keyword is None]
        if arg.keyword is not None:
            if arg.keyword.value != "device":
                return None
            if method in _DEVICE_METHODS or torch_function and not any(n.startswith("torch.cuda.") for n in names):
                return ("cuda" if method == "cuda" else "keyword", call)
            return None
        if names & {"torch.device"}:
            if positional and positional[0] is arg:
                return ("keyword", call)
            if len(positional) == 2 and positional[1] is arg and string_value(positional[0].value) == "cuda":
                return ("index", call)
            return None
        if method in ("to", "cuda") and positional and positional[0] is arg:
            return (method if method == "cuda" else "keyword", call)
        return None

    def _rewrite(self, use, value: cst.CSTNode, device: str):
        """The edits that make `use` take the device `device` (given where `value` is), and why they are
        unsafe (False if safe); (None, False) where no edit can."""
        how, call = use
        if how == "keyword":
            return [self.replace(value, device)], False
        if how == "index":
            first = [a for a in call.args if a.keyword is None][0]
            return [self.replace_between(first.value, value, device)], False
        return self._cuda_to_to(call, value, device)

    def _cuda_to_to(self, call: cst.Call, value: cst.CSTNode, device: str):
        """`.cuda(k, non_blocking)` -> `.to(<device>, non_blocking=...)`."""
        args = []
        for position, arg in enumerate(call.args):
            if arg.star:
                return None, False
            if arg.value is value:
                continue
            keyword = arg.keyword.value if arg.keyword is not None else ("non_blocking" if position == 1 else None)
            if keyword not in ("non_blocking", "memory_format"):
                return None, False
            args.append(f"{keyword}={self.ctx.code(arg.value).strip()}")
        edit = self.replace_between(call.func.attr, call, f"to({', '.join([device] + args)})")
        receiver = call.func.value
        unsafe: bool | str = False
        if self.ctx.kinds.of(receiver) is not TENSOR and (self.ctx.kinds.overrides_cuda(receiver) or any(
                f.name.value == "cuda" and isinstance(self.ctx.parent(self.ctx.parent(f)), cst.ClassDef)
                for f in self.ctx.nodes(cst.FunctionDef))):
            unsafe = "a class here defines its own `cuda()`, which `.to()` skips"
        return [edit], unsafe

    # -- through a name -----------------------------------------------------------------------------------
    def _assigned_alone(self, value: cst.Call) -> bool:
        """`dev = t.get_device()`: the value of an assignment to one name."""
        target = self.ctx.parent(value)
        return isinstance(target, cst.Assign) and len(target.targets) == 1 and isinstance(target.targets[0].target,
                                                                                           cst.Name)

    def _bound_name(self, value: cst.Call) -> cst.Name | None:
        """`dev` of `dev = t.get_device()`, when that is the only binding of `dev` in its scope."""
        if not self._assigned_alone(value):
            return None
        name = self.ctx.parent(value).targets[0].target
        if len(self.ctx.bindings(name)) != 1:
            return None
        return name

    def _compared(self, name: cst.Name) -> bool:
        return any(isinstance(self.ctx.parent(access.node), (cst.Comparison, cst.ComparisonTarget))
                   for access in self.ctx.bindings(name)[0].references)

    def _reads(self, name: cst.Name):
        """The reads of `name` that are device uses (use, node), and the first read that is not."""
        assignment = self.ctx.bindings(name)[0]
        uses, other = [], None
        for access in sorted(assignment.references, key=lambda a: self.ctx.span(a.node)[0]):
            use = self._use(access.node)
            if use is None or (use[0] == "cuda" and use[1].func.value is access.node):
                other = other or access.node
            else:
                uses.append((use, access.node))
        return uses, other


def _plain_dotted(node: cst.CSTNode) -> bool:
    """`a.b.c`: names and attributes only, no call or subscript on the way."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)
