from __future__ import annotations

import libcst as cst

from devlint.rule import Invalid, Rule
from devlint.analysis.kinds import TENSOR
from devlint.analysis.moves import MOVES
from devlint.syntax import dotted_name, walk


class ReboundLoopVariableMove(Rule):
    """
    ## What it does
    Prevents `RuntimeError: Expected all tensors to be on the same device, but found at least two
    devices, cuda:0 and cpu!` (what a GPU and `devlint run --virtual-gpu` raise when the items are used
    later): flags `for t in batch: t = t.to(device)` (or `.cuda()`, `.float()`, any tensor move or cast)
    where the loop only re-binds its variable, and the moved value is never read: not later in the
    loop body, not after the loop. The container is unchanged.

    The loop variable must be known to be a tensor (`devlint/analysis/kinds.py`: items of a list of tensors, of
    `.parameters()`, of a `list[Tensor]`, the values of a `dict[str, Tensor]`'s `.items()`, ...).

    On by default: display-only, so it never writes, and precise (a tensor loop variable whose moved
    value is never read). On 11 real projects (1,665 files) it found nothing: the bug lives in
    beginners' code more than in maintained repositories.

    ## Why is this bad?
    Assigning to the loop variable re-binds a name; it does not replace the item in the list. Tensor
    moves return a new tensor, so after the loop every item is where it was, and the first operation
    that combines them with the model's tensors fails on the GPU (or, for a cast, silently computes in
    the old dtype).

    ## Example
    ```python
    for t in batch:
        t = t.to(device)
    ```

    ## Use instead
    ```python
    batch = [t.to(device) for t in batch]
    ```

    ## Fix safety
    **Display-only**: the message gives the comprehension that does what was meant
    (`batch = [t.to(device) for t in batch]`; `d = {k: v.to(device) for k, v in d.items()}` for a
    dictionary's items; `batch[i] = t.to(device)` inside `for i, t in enumerate(batch)`). It is not
    applied: a list comprehension turns a tuple into a list, code elsewhere may hold the old list, and a
    loop over `model.parameters()` means `model.to(device)`.

    ## Not flagged
    - Loops that read the moved value: `for x, y in loader:` with `x = x.to(device)` then
      `loss = model(x)`.
    - Modules and unknown items, which may move in place: `for m in models: m = m.to(device)`,
      `for t in batch: t = t.cuda()` with `batch` a parameter.
    - A loop variable read after the loop: `for t in ts: t = t.float()` then `print(t)`.

    ## References
    - [Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    - [The for statement](https://docs.python.org/3/reference/compound_stmts.html#the-for-statement)
    """

    code = "DL013"
    name = "rebound-loop-variable-move"
    message = "re-binding the loop variable `{name}` leaves {container} unchanged; meant: `{meant}`"

    VALID = (
        "import torch\nts = [torch.zeros(1)]\nfor x, y in loader:\n    x = x.to(device)\n    loss = model(x)\n"
        "for t in ts:\n    t = t.to(device)\n    print(t)\n",
        "import torch.nn as nn\nmodels = [nn.Linear(2, 2)]\nfor m in models:\n    m = m.to(device)\n",
        "def f(batch, device):\n    for t in batch:\n        t = t.cuda()\n",
        "import torch\nts = [torch.zeros(1)]\nfor t in ts:\n    t = t.float()\nprint(t)\n",
        "import torch\nts = [torch.zeros(1)]\nfor t in ts:\n    t = t.float()\n    ts.append(t)\n",
    )
    INVALID = (
        Invalid("import torch\nbatch = [torch.zeros(2), torch.ones(2)]\nfor t in batch:\n    t = t.to(device)\n"),
        Invalid(
            "import torch\nfrom typing import List\ndef f(xs: List[torch.Tensor], device):\n    for x in xs:\n"
            "        x = x.to(device)\n        x = x.float()\n    return xs\n"
        ),
        Invalid("import torch\ndef f(d: dict[str, torch.Tensor]):\n    for k, v in d.items():\n        v = v.cuda()\n"
                "    return d\n"),
        Invalid("import torch\nts = [torch.zeros(1)]\nfor i, t in enumerate(ts):\n    t = t.half()\n"),
        Invalid("for p in model.parameters():\n    p = p.to(device)\n"),
    )

    def visit_For(self, node: cst.For) -> None:
        if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
            return
        body = list(node.body.body)
        names = {n.value: n for n in _target_names(node.target)}
        for index in range(len(body) - 1, -1, -1):
            found = _rebinding(body[index], names)
            if found is None:
                continue
            name, value = found
            if self._read_later(node, body, index, name) or self.ctx.kinds.of(_root(value)) is not TENSOR:
                continue
            # earlier re-bindings of the same name feed this one: `x = x.to(d)` then `x = x.float()`
            chain = self.ctx.code(value).strip()
            for earlier in reversed(body[:index]):
                previous = _rebinding(earlier, {name: names[name]})
                if previous is None:
                    break
                chain = self.ctx.code(previous[1]).strip() + chain[len(name):]
            container, meant = self._meant(node, name, chain)
            container = container if container.startswith("the ") else f"`{container}`"
            message = self.message.format(name=name, container=container, meant=meant)
            self.report(body[index], message, self.display_only(f"Assign the moved items back: `{meant}`"))
            return

    def _read_later(self, loop: cst.For, body: list, index: int, name: str) -> bool:
        """Is the re-bound value read: later in the loop body, in a nested function, or after the loop?"""
        for statement in body[index + 1:]:
            if _reads(statement, name):
                return True
        if any(isinstance(n, (cst.FunctionDef, cst.Lambda)) and _reads(n, name) for n, _ in walk(loop.body)):
            return True
        scope_root = self.ctx.enclosing(loop, (cst.FunctionDef,)) or self.ctx.module
        end = self.ctx.span(loop)[1]
        for each, _ in walk(scope_root):
            if isinstance(each, cst.Name) and each.value == name and self.ctx.span(each)[0] > end:
                return True
            if isinstance(each, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in each.names):
                return True
        return False

    def _meant(self, loop: cst.For, name: str, chain: str) -> tuple[str, str]:
        iterable, target = loop.iter, loop.target
        text = self.ctx.code(iterable).strip()
        call = iterable if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) else None
        if isinstance(target, cst.Name) and isinstance(iterable, (cst.Name, cst.Attribute)):
            return text, f"{text} = [{chain} for {name} in {text}]"
        if call is not None and call.func.attr.value in ("parameters", "buffers") and dotted_name(call.func.value):
            owner = self.ctx.code(call.func.value).strip()
            meant = f"{owner}{chain[len(name):]}" if chain.startswith(f"{name}.to(") else f"{owner}.to(...)"
            return f"the parameters of `{owner}`", meant
        if call is not None and call.func.attr.value == "items" and isinstance(target, cst.Tuple) \
                and len(target.elements) == 2 and dotted_name(call.func.value) is not None:
            owner = self.ctx.code(call.func.value).strip()
            key = self.ctx.code(target.elements[0].value).strip()
            return owner, f"{owner} = {{{key}: {chain} for {key}, {name} in {owner}.items()}}"
        if isinstance(iterable, cst.Call) and dotted_name(iterable.func) == "enumerate" and iterable.args \
                and isinstance(target, cst.Tuple) and len(target.elements) == 2 \
                and dotted_name(iterable.args[0].value) is not None:
            owner = self.ctx.code(iterable.args[0].value).strip()
            index = self.ctx.code(target.elements[0].value).strip()
            return owner, f"{owner}[{index}] = {chain}"
        return text, f"[{chain} for {self.ctx.code(target).strip()} in {text}]"


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []


def _root(value: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        value = value.func.value
    return value


def _rebinding(statement: cst.CSTNode, names: dict) -> tuple[str, cst.Call] | None:
    """(name, value) for `name = name.<move>(...)...` of a loop variable: every call of the chain a move."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
        return None
    name = small.targets[0].target.value
    value = small.value
    node = value
    if not isinstance(node, cst.Call):
        return None
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
        node = node.func.value
    if not (isinstance(node, cst.Name) and node.value == name and name in names):
        return None
    return name, value


def _reads(root: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n, _ in walk(root))
