from __future__ import annotations

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.kinds import MODULE
from devlint.analysis.placement import DEVICE, KEEPING_METHODS
from devlint.syntax import find_arg, last_component, name_words


class NumpyOfDeviceTensor(Rule):
    """
    ## What it does
    Prevents `TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the
    tensor to host memory first.` (what a GPU and `devlint run --virtual-gpu` raise): flags `.numpy()`
    on a tensor that lives on the run's device, with no `.cpu()` in between.

    "Lives on the device" is the placement fact (`devlint/analysis/placement.py`): the value was moved
    with `.to(device)` / `.cuda()`, created with `device=...`, or is derived from such values by tensor
    methods and ops (`x.to(device).argmax(1)`, `a + b`); or it came out of calling a module that was
    moved there (`model = Net().to(device)`, then `out = model(x)`, whatever `x` is), directly or
    through a name bound to that call.

    On by default: the bug crashes every GPU run that reaches it, and the finding needs the placement
    fact's evidence. On 11 real projects (detectron2, pytorch-lightning, mmcv, pytorch/examples and
    seven tutorial and research repositories, 1,665 files) it found nothing left to fix; its one
    finding there, a move to `self._cpu_device`, was a false positive, now excluded.

    ## Why is this bad?
    NumPy arrays live in host memory. `.numpy()` of a CUDA tensor raises, so code written and tested on
    a CPU machine (where `.to(device)` kept the tensor on the CPU) crashes on the first machine with a
    GPU, often at the very end of an evaluation loop.

    ## Example
    ```python
    model = Net().to(device)
    out = model(x.to(device))
    pred = out.argmax(1).numpy()
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    out = model(x.to(device))
    pred = out.argmax(1).cpu().numpy()
    ```

    ## Fix safety
    `.cpu()` is inserted before `.numpy()`, and `.detach().cpu()` where the value comes from a module
    call with no `.detach()` on the way and outside `with torch.no_grad():` (a module's output may
    require grad, and `.numpy()` of such a tensor raises on every machine). The fix is **safe**: where the tensor is on a GPU the original
    raised; where it is on the CPU `.cpu()` returns the tensor itself and `.detach()` a view of the
    same memory, so the array still shares memory with the tensor as before.

    ## Not flagged
    - Tensors not known to be on the device: `def f(t): return t.numpy()`, `torch.zeros(3).numpy()`,
      `x.to("cpu").numpy()`, `x.cuda().cpu().numpy()`, and a move to a name that says "cpu",
      `x.to(self._cpu_device).numpy()`.
    - Calls of an unknown module (`out = model(x)` where nothing moved `model`).
    - `.numpy(force=True)`, which copies to the CPU itself.

    ## References
    - [Tensor.numpy](https://pytorch.org/docs/stable/generated/torch.Tensor.numpy.html)
    - [Tensor.cpu](https://pytorch.org/docs/stable/generated/torch.Tensor.cpu.html)
    """

    code = "DL011"
    name = "numpy-of-device-tensor"
    message = "`.numpy()` of a tensor on the device raises on a GPU; call `.cpu()` first"

    VALID = (
        "def f(t):\n    return t.numpy()\n",
        "import torch\na = torch.zeros(3).numpy()\n",
        "b = x.to(\"cpu\").numpy()\n",
        "c = x.cuda().cpu().numpy()\n",
        "class E:\n    def f(self, x):\n        return x.to(self._cpu_device).numpy()\n",
        "out = model(x)\nout.numpy()\n",
        "import torch\nd = torch.ones(2, device='cuda').numpy(force=True)\n",
        "import numpy as np\ne = np.numpy()\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndef f(x, device):\n    y = x.to(device) * 2\n    return y.numpy()\n",
            fixed="import torch\ndef f(x, device):\n    y = x.to(device) * 2\n    return y.cpu().numpy()\n",
        ),
        Invalid("a = x.cuda().argmax(1).numpy()\n", fixed="a = x.cuda().argmax(1).cpu().numpy()\n"),
        Invalid(
            "import torch.nn as nn\nmodel = nn.Linear(3, 1).to(device)\nout = model(x)\npred = out.argmax(1).numpy()\n",
            fixed="import torch.nn as nn\nmodel = nn.Linear(3, 1).to(device)\nout = model(x)\n"
            "pred = out.argmax(1).detach().cpu().numpy()\n",
        ),
        Invalid(
            "import torch as th\nmodel = th.nn.Linear(3, 1).cuda()\nnp_out = model(x).detach().numpy()\n",
            fixed="import torch as th\nmodel = th.nn.Linear(3, 1).cuda()\nnp_out = model(x).detach().cpu().numpy()\n",
        ),
        Invalid(
            "import torch\nw = torch.ones(3, device=device)\nprint((w + 1)\n      .numpy())\n",
            fixed="import torch\nw = torch.ones(3, device=device)\nprint((w + 1)\n      .cpu().numpy())\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "numpy"):
            return
        receiver = func.value
        if self.ctx.is_imported_module(receiver) or find_arg(node, "force", 0) is not None:
            return
        module_call, detached = self._module_output(receiver)
        if module_call is None and self.ctx.placement.of(receiver) is not DEVICE:
            return
        if _moved_to_a_cpu_name(receiver):
            return
        if self.ctx.kinds.of(receiver) is MODULE:
            return
        may_require_grad = module_call is not None and not detached and not self._without_grad(module_call)
        insert = ".detach().cpu()" if may_require_grad else ".cpu()"
        # after the dot, so that parentheses and line breaks before it stay as they are
        fix = self.fix(f"Insert `{insert}` before `.numpy()`", Applicability.SAFE,
                       self.insert_before(func.attr, insert[1:] + "."))
        self.report(node, fix=fix, start_node=func.attr)

    def _without_grad(self, node: cst.CSTNode) -> bool:
        """Inside `with torch.no_grad():` or `with torch.inference_mode():` (nothing requires grad)."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.With) and any(
                    isinstance(item.item, cst.Call) and self.ctx.qualified_names(item.item.func)
                    & {"torch.no_grad", "torch.inference_mode"} for item in ancestor.items):
                return True
        return False

    # -- a module's output on the device ---------------------------------------------------------------
    def _module_output(self, expr: cst.BaseExpression) -> tuple[cst.Call | None, bool]:
        """The call of a module placed on the device that `expr` derives from through placement-keeping
        methods (`model(x).argmax(1)`), directly or through a name's latest binding, or None; and
        whether a `.detach()` (or `.data`) lies between the two."""
        detached = False
        for _ in range(20):  # a chain of names bound from names is short; stay bounded
            while True:
                if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
                    detached, expr = True, expr.value
                elif isinstance(expr, cst.Subscript):
                    expr = expr.value  # `model(x)[0]`: an item of the output lives where it does
                elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                        and expr.func.attr.value in KEEPING_METHODS:
                    detached = detached or expr.func.attr.value == "detach"
                    expr = expr.func.value
                else:
                    break
            if isinstance(expr, cst.Call):
                callee = expr.func
                if self.ctx.kinds.of(callee) is MODULE and self.ctx.placement.of(callee) is DEVICE:
                    return expr, detached
                return None, False
            if not isinstance(expr, cst.Name):
                return None, False
            binding = self._latest_binding(expr)
            value = None if binding is None else self.ctx.assigned_value(binding)
            if value is None:
                return None, False
            expr = value
        return None, False

    def _latest_binding(self, name: cst.Name) -> cst.CSTNode | None:
        """The binding of `name` in its own scope that takes effect last before this use."""
        scope = self.ctx.scope(name)
        use = self.ctx.positions.get(name)
        if scope is None or use is None:
            return None
        here = (use.start.line, use.start.column)
        earlier = []
        for assignment in self.ctx.bindings(name):
            if assignment.scope is not scope:
                return None  # read from another scope: any binding may be the one
            position = self.ctx.effective_position(assignment.node)
            if position is not None and position <= here:
                earlier.append((position, assignment.node))
        return max(earlier, key=lambda item: item[0])[1] if earlier else None


def _moved_to_a_cpu_name(expr: cst.BaseExpression) -> bool:
    """`x.to(self._cpu_device)`, `x.to(cpu_dev)`: the placement fact reads any name with "device" in it
    as the run's device (detectron2's `self._cpu_device = torch.device("cpu")` was flagged); a name
    that says "cpu" is not."""
    while isinstance(expr, (cst.Call, cst.Subscript)):
        if isinstance(expr, cst.Subscript):
            expr = expr.value
            continue
        if not isinstance(expr.func, cst.Attribute):
            return False
        if expr.func.attr.value == "to":
            target = find_arg(expr, "device", 0)
            return target is not None and "cpu" in name_words(last_component(target.value) or "")
        expr = expr.func.value
    return False
