from __future__ import annotations

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.rules._kinds import PARAMETER_ATTRIBUTES, TENSOR
from devlint.syntax import dotted_name, last_component, string_value

MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "long", "int", "bool", "type", "detach"})
DEVICE_ONLY_MOVES = frozenset({"to", "cuda", "cpu"})
_DEVICE_STRINGS = ("cuda", "cpu", "mps", "meta", "xpu", "hpu", "npu", "xla")


class DiscardedTensorMove(Rule):
    """
    ## What it does
    Flags an expression statement that calls `.to(...)`, `.cuda(...)`, `.cpu()`, `.half()`,
    `.float()`, `.double()`, `.bfloat16()`, `.long()`, `.int()`, `.bool()`, `.type(...)` or
    `.detach()` on a receiver known to be a **tensor** (also the outermost call of a chain, such as
    `x.to(device).float()`, and a list comprehension used as a statement,
    `[t.to(device) for t in ts]`).

    The receiver's kind comes from its provenance in the file (see
    `devlint/rules/_kinds.py`): tensor factories and ops, tensor methods, `.weight`/`.bias`/`.data`/
    `.grad`, `torch.Tensor` annotations, `.parameters()` loops, `register_buffer`, ...

    ## Why is this bad?
    Tensor methods return a new tensor and leave the original untouched, so `t.to(device)` as a
    statement does nothing. Worse, it is silent where the code was written: `t.to("cpu")` returns `t`
    itself when `t` is already there, and the bug only bites on another machine.

    ## Example
    ```python
    x = torch.zeros(3)
    x.to(device)
    ```

    ## Use instead
    ```python
    x = torch.zeros(3)
    x = x.to(device)
    ```

    ## Fix safety
    Re-binding a plain name or a writable attribute (`x = x.to(device)`, `self.buf = self.buf.to(device)`)
    after a device move (`.to(device)`, `.cuda()`, `.cpu()`) is **safe**. After a dtype cast
    (`.half()`, `.to(torch.float16)`, a `.to()` whose argument is not recognisably a device) or
    `.detach()` it changes numerics or autograd downstream: **unsafe**. A statement comprehension
    over a list name becomes `ts = [t.to(device) for t in ts]`. No mechanical fix (**display-only**)
    where re-assignment does not do what the author meant: a `for` loop variable (the container is
    unchanged), a parameter attribute of a module (`self.weight = self.weight.to(...)` raises
    TypeError), `.data`/`.grad`, subscripts, results of calls, and a name the scope does not bind
    itself (a module-level tensor moved inside a function, an outer function's tensor in a closure:
    the assignment would make it local, and the move before it an UnboundLocalError), unless it is
    declared `global`/`nonlocal` there.

    ## Not flagged
    - Modules, which move in place and return themselves: `model.to(device)` for `model = nn.Linear(2, 2)`,
      instances of classes of the file that subclass `nn.Module`, `self.to(device)` in such a class,
      `nn.DataParallel(model).cuda()`, items of `model.modules()`.
    - Receivers of unknown kind: a parameter without annotation, as in `def f(batch): batch.to(device)`;
      results of calling a model or a project function (`out = model(x)` then `out.cpu()`); objects
      whose `.to` works in place (`pipe.to("cuda")`, `data.to(device)` for graph batches).
    - Results that are used: `x = x.to(device)`, `return x.cuda()`, `y = x.float()`.

    ## References
    - [Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    - [Module.to](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
    """

    code = "DL003"
    name = "discarded-tensor-move"
    message = "the result of `.{method}()` is discarded: tensors are not moved in place; assign it"

    VALID = (
        "import torch.nn as nn\nmodel = nn.Linear(2, 2)\nmodel.to(device)\n",
        "import torch.nn as nn\nclass Net(nn.Module):\n    def go(self, device):\n        self.to(device)\n"
        "net = Net()\nnet.to(device)\n",
        "import torch.nn as nn\nnn.DataParallel(model).cuda()\n",
        "for m in model.modules():\n    m.to(device)\n",
        "def f(batch):\n    batch.to(device)\n",
        "out = model(x)\nout.cpu()\n",
        "pipe.to(\"cuda\")\n",
        "data.to(device)\n",
        "import torch\nx = torch.zeros(3)\nx = x.to(device)\n",
        "import torch\ndef f():\n    x = torch.zeros(3)\n    return x.cuda()\n",
        "import torch\nx = torch.zeros(3)\ny = x.float()\n",
        "import torch\nx = torch.zeros(3)\nx = model(x)\nx.to(device)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nx = torch.zeros(3)\nx.to(device)\n",
            fixed="import torch\nx = torch.zeros(3)\nx = x.to(device)\n",
        ),
        Invalid(
            "import torch\ndef f(t: torch.Tensor, device):\n    t.cpu()\n",
            fixed="import torch\ndef f(t: torch.Tensor, device):\n    t = t.cpu()\n",
        ),
        Invalid(
            "import torch\nx = torch.rand(3)\nx.half()\n",
            fixed="import torch\nx = torch.rand(3)\nx = x.half()\n",
            unsafe=True,
        ),
        Invalid("import torch\nx = torch.rand(3)\nx.detach()\n", fixed="import torch\nx = torch.rand(3)\nx.detach()\n"),
        Invalid(
            "import torch\nts = [torch.zeros(1), torch.ones(1)]\n[t.to(device) for t in ts]\n",
            fixed="import torch\nts = [torch.zeros(1), torch.ones(1)]\nts = [t.to(device) for t in ts]\n",
        ),
        Invalid("for p in model.parameters():\n    p.to(device)\n", fixed="for p in model.parameters():\n    p.to(device)\n"),
        Invalid("import torch.nn as nn\nclass M(nn.Module):\n    def f(self, device):\n        self.conv.weight.to(device)\n"),
        Invalid(
            "import torch.nn as nn, torch\nclass M(nn.Module):\n    def __init__(self):\n"
            "        self.register_buffer('mask', torch.ones(3))\n    def f(self, device):\n        self.mask.to(device)\n",
            fixed="import torch.nn as nn, torch\nclass M(nn.Module):\n    def __init__(self):\n"
            "        self.register_buffer('mask', torch.ones(3))\n    def f(self, device):\n"
            "        self.mask = self.mask.to(device)\n",
        ),
        Invalid("import torch\ntorch.rand(3).cuda()\n"),
        Invalid("import torch\nx = torch.cat([a, b])\nx.to(device).float()\n",
                fixed="import torch\nx = torch.cat([a, b])\nx = x.to(device).float()\n", unsafe=True),
    )

    @staticmethod
    def could_match(summary) -> bool:
        return bool(summary.statement_calls & MOVES)

    def visit_Expr(self, node: cst.Expr) -> None:
        value = node.value
        call = value.elt if isinstance(value, cst.ListComp) else value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in MOVES):
            return
        receiver = call.func.value
        if self.ctx.is_imported_module(receiver) or self.ctx.possible_kinds.of(receiver) is not TENSOR:
            return  # settled without scope analysis, as most `model.to(device)` statements are
        if self.ctx.kinds.of(receiver) is not TENSOR:
            return
        message = self.message.format(method=call.func.attr.value)
        fix = self._comprehension_fix(node, value, call) if isinstance(value, cst.ListComp) else self._fix(node, call)
        self.report(value, message, fix)

    # -- fixes -----------------------------------------------------------------------------------------
    def _fix(self, statement: cst.Expr, call: cst.Call):
        root, methods = self._chain(call)
        title = "Assign the result back"
        target = self._rebindable(root)
        if target is None:
            return self.display_only(f"{title}: re-binding `{self.ctx.code(root).strip()}` would not do what was meant")
        applicability = Applicability.SAFE if self._device_only(call) else Applicability.UNSAFE
        return self.fix(f"{title}: `{target} = {target}.{methods[-1]}(...)`", applicability,
                        self.insert_before(statement, f"{target} = "))

    def _comprehension_fix(self, statement: cst.Expr, comp: cst.ListComp, call: cst.Call):
        title = "Assign the moved list back"
        loop = comp.for_in
        root, _ = self._chain(call)
        if (loop.inner_for_in is not None or loop.ifs or not isinstance(loop.iter, cst.Name)
                or not isinstance(loop.target, cst.Name) or not isinstance(root, cst.Name)
                or root.value != loop.target.value or not self._bound_to_list(loop.iter)
                or not self._local(loop.iter)):
            return self.display_only(title)
        applicability = Applicability.SAFE if self._device_only(call) else Applicability.UNSAFE
        return self.fix(f"{title}: `{loop.iter.value} = [...]`", applicability,
                        self.insert_before(statement, f"{loop.iter.value} = "))

    @staticmethod
    def _chain(call: cst.Call) -> tuple[cst.BaseExpression, list[str]]:
        methods = []
        node: cst.BaseExpression = call
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
            methods.append(node.func.attr.value)
            node = node.func.value
        return node, list(reversed(methods))

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

    def _rebindable(self, root: cst.BaseExpression) -> str | None:
        if isinstance(root, cst.Name):
            return None if self._is_loop_variable(root) or not self._local(root) else root.value
        if isinstance(root, cst.Attribute):
            attribute = root.attr.value
            if attribute in PARAMETER_ATTRIBUTES or attribute in ("data", "grad"):
                return None
            if self.ctx.kinds.self_attribute_is_parameter(root):
                return None
            if dotted_name(root) is None:
                return None
            return self.ctx.code(root).strip()
        return None

    def _local(self, name: cst.Name) -> bool:
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

    def _bound_to_list(self, name: cst.Name) -> bool:
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
