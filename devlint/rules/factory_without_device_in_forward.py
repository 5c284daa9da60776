from __future__ import annotations

import libcst as cst

from devlint.model import Applicability, Edit
from devlint.rule import Invalid, Rule
from devlint.analysis.mixing import meets_module_tensor, rebound, tensor_inputs
from devlint.analysis.module_classes import enclosing_method, module_classes, reachable_methods
from devlint.syntax import descendants, find_arg

_FACTORIES = frozenset(f"torch.{n}" for n in
                       "zeros ones empty full arange linspace eye rand randn randint tensor from_numpy".split())
_RANDOM = frozenset({"torch.rand", "torch.randn", "torch.randint"})
_SCALAR_ONLY = frozenset({"torch.tensor"})


class FactoryWithoutDeviceInForward(Rule):
    """
    ## What it does
    Prevents `RuntimeError: Expected all tensors to be on the same device` when a module's `forward`
    makes a tensor on the CPU while its inputs are on the GPU (the virtual GPU reports it with this
    rule's code). Flags a torch factory (`torch.zeros`, `ones`, `empty`, `full`, `arange`, `linspace`,
    `eye`, `rand`, `randn`, `randint`, `tensor`, through any import alias) without `device=`, and
    `torch.from_numpy(...)`, inside `forward` (or a method it calls) of an `nn.Module` subclass whose
    whole base chain devlint can see, when its result (or a local name bound to it, an index or a view
    of it) meets the computation: combined with an input of the method used as a tensor, a parameter,
    a buffer or a submodule's output (`x + torch.zeros(3)`, `torch.cat([x, torch.ones(n, 1)])`,
    `self.proj(torch.arange(n))`).

    On by default: a GPU run of such a module fails at its first forward pass. On the corpora tried
    (pytorch-image-models, detectron2, nanoGPT, vit-pytorch, x-transformers, dino, pytorch-lightning,
    nlp-tutorial, PyTorch-GAN, pytorch-tutorial, attention-is-all-you-need-pytorch, hyunwoongko/transformer)
    its findings were all real bugs: the LSTM hidden states `torch.zeros(...)` of nlp-tutorial's models.

    ## Why is this bad?
    A factory without `device=` makes its tensor on the CPU. Once the model and its inputs are on the
    GPU, combining the two fails; on the CPU nothing is wrong, so the author never sees it.

    ## Example
    ```python
    class Net(nn.Module):
        def forward(self, x):
            return x + torch.arange(x.shape[-1])
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def forward(self, x):
            return x + torch.arange(x.shape[-1], device=x.device)
    ```

    ## Fix safety
    `device=<input>.device` is added to the factory (`torch.from_numpy(a)` becomes
    `torch.from_numpy(a).to(<input>.device)`), where `<input>` is the method's input the result meets,
    or else an input the method uses as a tensor (annotated `Tensor`, asked `.shape`/`.device`/`.size()`,
    given to a submodule), never re-bound in the method. The fix is **unsafe**: an input may live on
    another device than the rest of the model (pipeline or model parallelism), and a random factory on
    the GPU draws other numbers than on the CPU. It is **display-only** where no such input is at hand,
    and for a random factory given a `generator=` (a CPU generator cannot draw on the GPU).

    ## Not flagged
    - Factories given `device=` or moved at once (`torch.zeros(3).to(x.device)`, `.type_as(x)`).
    - 0-dim tensors from `torch.tensor(0.5)` (a 0-dim CPU tensor mixes with CUDA tensors), and
      factories used only as an index (`x[torch.arange(x.shape[0]), labels]`), for their values, or with Python
      numbers and other CPU tensors.
    - Code outside `forward` and the methods it calls, and classes with a base devlint cannot see into.

    ## References
    - [Tensor creation ops: `device`](https://pytorch.org/docs/stable/torch.html#creation-ops)
    - [CUDA semantics: device-agnostic code](https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
    """

    code = "DL010"
    name = "factory-without-device-in-forward"
    message = "`{factory}(...)` makes a CPU tensor in `forward` that meets the module's tensors; pass `device=`"

    VALID = (
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        return x + torch.arange(x.shape[-1], device=x.device)\n",
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        return x * torch.tensor(0.5)\n",
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x, labels):\n"
        "        return x[torch.arange(x.shape[0]), labels]\n",
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        return x + torch.zeros(3).to(x.device)\n",
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        return x + torch.zeros(3).type_as(x)\n",
        "import torch\nclass Helper:\n    def forward(self, x):\n        return x + torch.zeros(3)\n",
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        n = torch.arange(4)\n        return n.tolist()\n",
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
            "        return x + torch.arange(x.shape[-1])\n",
            fixed="import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
            "        return x + torch.arange(x.shape[-1], device=x.device)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch as th\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.proj = nn.Linear(4, 4)\n    def forward(self, x):\n"
            "        pad = th.zeros(x.shape[0], 1)\n        return th.cat([self.proj(x), pad], dim=1)\n",
            fixed="import torch as th\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.proj = nn.Linear(4, 4)\n    def forward(self, x):\n"
            "        pad = th.zeros(x.shape[0], 1, device=x.device)\n        return th.cat([self.proj(x), pad], dim=1)\n",
            unsafe=True,
        ),
        Invalid(
            "import numpy as np, torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x: torch.Tensor):\n"
            "        return x * torch.from_numpy(np.ones(3))\n",
            fixed="import numpy as np, torch, torch.nn as nn\nclass Net(nn.Module):\n"
            "    def forward(self, x: torch.Tensor):\n        return x * torch.from_numpy(np.ones(3)).to(x.device)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x, g):\n"
            "        return x + torch.rand(3, generator=g)\n",
            fixed="import torch, torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x, g):\n"
            "        return x + torch.rand(3, generator=g)\n",
            unsafe=True,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        names = self.ctx.qualified_names(node.func)
        factory = next(iter(names & _FACTORIES), None)
        if factory is None or any(a.keyword is not None and a.keyword.value == "device" for a in node.args):
            return
        if any(a.star == "**" for a in node.args) or (factory in _SCALAR_ONLY and self._maybe_scalar(node)):
            return
        found = enclosing_method(self.ctx, node)
        if found is None:
            return
        function, cls = found
        if module_classes(self.ctx).chain(cls) is None or function not in reachable_methods(self.ctx, cls, "forward"):
            return
        if not meets_module_tensor(self.ctx, node, function):
            return
        self.report(node, self.message.format(factory=factory), self._fix(node, factory, function))

    @staticmethod
    def _maybe_scalar(call: cst.Call) -> bool:
        first = call.args[0].value if call.args else None
        return not isinstance(first, (cst.List, cst.Tuple, cst.ListComp))

    def _fix(self, call: cst.Call, factory: str, function: cst.FunctionDef):
        source = self._input(call, function)
        if source is None:
            return self.display_only("Pass `device=` (no tensor input of the method at hand)")
        title = f"Create it on `{source}.device`"
        if factory in _RANDOM and find_arg(call, "generator", None) is not None:
            return self.display_only(f"{title} (a CPU `generator=` cannot draw on the GPU)")
        reason = "the input may live elsewhere than the model" + (
            ", and random draws differ on the GPU" if factory in _RANDOM else "")
        if factory == "torch.from_numpy":
            return self.fix(f"{title} ({reason})", Applicability.UNSAFE, self.insert_after(call, f".to({source}.device)"))
        device = cst.Arg(cst.parse_expression(f"{source}.device"), keyword=cst.Name("device"),
                         equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        args = list(call.args)
        if args and isinstance(args[-1].comma, cst.Comma):
            args.append(device.with_changes(comma=cst.Comma()))  # (a trailing comma stays trailing)
        else:
            if args:
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(device)
        new = call.with_changes(args=args)
        return self.fix(f"{title} ({reason})", Applicability.UNSAFE, self.replace(call, self.ctx.code(new, call)))

    def insert_after(self, node: cst.CSTNode, content: str) -> Edit:
        _, end = self.ctx.span(node)
        return Edit(end, end, content)

    def _input(self, call: cst.Call, function: cst.FunctionDef) -> str | None:
        """The input the result meets, else the first input the method uses as a tensor (strictly)."""
        candidates = [p.name.value for p in function.params.params if p.name.value not in ("self", "cls")
                      and not rebound(self.ctx, function, p.name.value)]
        met = self._met_inputs(call, set(candidates))
        for name in candidates:
            if name in met and name in tensor_inputs(self.ctx, function):
                return name
        strict = tensor_inputs(self.ctx, function, strict=True)
        return next((name for name in candidates if name in strict), None)

    def _met_inputs(self, call: cst.Call, candidates: set[str]) -> set[str]:
        """Inputs named in the statement around the call (the operands it meets there)."""
        statement = self.ctx.enclosing(call, cst.BaseSmallStatement) or call
        return {n.value for n in descendants(statement) if isinstance(n, cst.Name) and n.value in candidates}
