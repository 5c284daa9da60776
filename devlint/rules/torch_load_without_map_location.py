from __future__ import annotations

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.rules._device import device_reference
from devlint.syntax import dotted_name, find_arg, has_double_star_args, has_star_args, is_none

LOADERS = frozenset({"torch.load", "torch.serialization.load", "torch.jit.load", "torch.jit._serialization.load"})


class TorchLoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load`, `torch.serialization.load` and `torch.jit.load` (through any import alias)
    called without a `map_location`, by keyword or as the second positional argument, or with
    `map_location=None` written out.

    ## Why is this bad?
    A checkpoint remembers the device each tensor was saved on. Loading a GPU-saved checkpoint on a
    machine without CUDA raises `RuntimeError: Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False`. Even with GPUs, every rank of a distributed job loads onto
    the GPU the checkpoint was saved from.

    ## Example
    ```python
    model.load_state_dict(torch.load("model.pt"))
    checkpoint = torch.load(path)
    ```

    ## Use instead
    ```python
    model.load_state_dict(torch.load("model.pt", map_location="cpu"))
    checkpoint = torch.load(path, map_location=device)
    ```

    ## Fix safety
    Adds `map_location` (or replaces an explicit `None`); **safe**: on a machine with one GPU the
    result lives where it did before. When the loaded object goes straight into `load_state_dict(...)`,
    directly or through a name used only that way, the fix writes `map_location="cpu"`
    (`load_state_dict` copies into the tensors where they already live, and no GPU memory spike or
    rank-0 pile-up happens), and so it is in data-loading code (a `Dataset` class, `__getitem__`), whose
    tensors go to DataLoader workers and `.numpy()`; otherwise `map_location=device`. Where `device` names something that is
    not a device, the fix is **display-only**.

    ## Options
    `--map-location auto|device|cpu` (default `auto`, as above).

    ## Not flagged
    - Other loaders: `np.load(f)`, `pickle.load(f)`, `json.load(f)`, `yaml.load(f)`, `torchaudio.load(f)`,
      `safetensors.torch.load_file(f)`, `self.load(f)`, a local function named `load`.
    - A call that passes `**kwargs`, as in `torch.load(f, **kwargs)`: it may carry `map_location`.
    - Calls under a CUDA condition, e.g. `if torch.cuda.is_available():` (same guards as DL001).
    - `torch.hub.load_state_dict_from_url(url)`: published weights are normally saved from the CPU.

    ## References
    - [torch.load](https://pytorch.org/docs/stable/generated/torch.load.html)
    - [Saving and loading models across devices](https://pytorch.org/tutorials/beginner/saving_loading_models.html#save-on-gpu-load-on-cpu)
    """

    code = "DL002"
    name = "torch-load-without-map-location"
    message = "`torch.load` without `map_location`: a checkpoint saved on a GPU fails to load without one"

    VALID = (
        "import numpy as np\nx = np.load(f)\n",
        "import pickle\nx = pickle.load(f)\n",
        "import json\nx = json.load(f)\n",
        "import yaml\nx = yaml.load(f)\n",
        "import torchaudio\nx = torchaudio.load(f)\n",
        "import safetensors.torch\nx = safetensors.torch.load_file(f)\n",
        "class A:\n    def f(self, f):\n        return self.load(f)\n",
        "def load(f):\n    return f\nx = load(f)\n",
        "import torch\nx = torch.load(f, **kwargs)\n",
        "import torch\nif torch.cuda.is_available():\n    x = torch.load(f)\n",
        "import torch\nsd = torch.hub.load_state_dict_from_url(url)\n",
        "import torch\nx = torch.load(f, map_location='cpu')\n",
        "import torch\nx = torch.load(f, 'cpu')\n",
        "import torch\nx = torch.load(f, weights_only=True, map_location=device)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nmodel.load_state_dict(torch.load('m.pt'))\n",
            fixed="import torch\nmodel.load_state_dict(torch.load('m.pt', map_location=\"cpu\"))\n",
        ),
        Invalid(
            "import torch as th\nstate = th.load(path)\nmodel.load_state_dict(state)\n",
            fixed="import torch as th\nstate = th.load(path, map_location=\"cpu\")\nmodel.load_state_dict(state)\n",
        ),
        Invalid(
            "import torch\ncheckpoint = torch.load(path, weights_only=False)\nepoch = checkpoint['epoch']\n",
            fixed='import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "checkpoint = torch.load(path, weights_only=False, map_location=device)\nepoch = checkpoint['epoch']\n",
        ),
        Invalid(
            "from torch import load as tload\nx = tload(f, map_location=None)\n",
            fixed='from torch import load as tload\nimport torch\n\n'
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "x = tload(f, map_location=device)\n",
        ),
        Invalid(
            "from torch import jit\nm = jit.load('m.pt')\n",
            fixed='from torch import jit\nimport torch\n\n'
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "m = jit.load('m.pt', map_location=device)\n",
        ),
        Invalid("from torch import *\nx = torch.load(f)\n"),
        Invalid(
            "import torch\nclass Digits(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.images = torch.load(\n            path\n        )\n",
            fixed="import torch\nclass Digits(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.images = torch.load(\n            path,\n            map_location=\"cpu\"\n        )\n",
        ),
        Invalid("import torch\nx = torch.serialization.load(f, None)\n"),
    )

    @staticmethod
    def could_match(summary) -> bool:
        # `torch.load` through an import of torch (or an unbound `torch`), or a bare imported `load`.
        roots = summary.call_roots.get("load", set())
        if roots & (summary.torch_names | {"torch"}):
            return True
        return "load" in summary.torch_imports or (summary.star_import and "load" in summary.name_calls)

    def visit_Call(self, node: cst.Call) -> None:
        # Cheapest first: syntax, then the guard logic, and only then qualified names (scope analysis).
        func = node.func
        if isinstance(func, cst.Attribute):
            if func.attr.value != "load":
                return
        elif not (isinstance(func, cst.Name) and func.value in self.ctx.names_imported_from("torch")):
            return
        if has_double_star_args(node):
            return
        given = find_arg(node, "map_location", 1)
        if given is not None and not is_none(given.value):
            return
        if given is None and has_star_args(node):
            return
        if self.ctx.guards.is_guarded(node):
            return
        if not (self.ctx.qualified_names(func) & LOADERS):
            return
        self.report(node, fix=self._fix(node, given))

    def _fix(self, call: cst.Call, given: cst.Arg | None):
        choice = self.ctx.options.map_location
        if choice == "auto":
            choice = "cpu" if self._feeds_load_state_dict(call) or self._in_dataset(call) else "device"
        needs_definition = False
        if choice == "cpu":
            value = '"cpu"'
        else:
            reference = device_reference(self.ctx, call)
            if reference is None:
                return self.display_only('Add `map_location="cpu"` or a torch.device (`device` is bound to something else)')
            value, needs_definition = reference
        title = f"Add `map_location={value}`"
        if given is not None:
            edit = self.replace(given.value, value)
        else:
            edit = self.replace(call, self.ctx.code(self._with_keyword(call, value), call))
        return self.fix(title, Applicability.SAFE, edit, needs_device=needs_definition)

    @staticmethod
    def _with_keyword(call: cst.Call, value: str) -> cst.Call:
        new_arg = cst.Arg(cst.parse_expression(value), keyword=cst.Name("map_location"),
                          equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        args = list(call.args)
        if not args:
            return call.with_changes(args=[new_arg])
        last = args[-1]
        if not isinstance(last.comma, cst.Comma) and "\n" in _code(last.whitespace_after_arg):
            # `load(\n    path\n)`: the new argument goes on its own line, before the closing paren
            separator = cst.Comma(whitespace_after=call.whitespace_before_args)
            args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
            new_arg = new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        elif isinstance(last.comma, cst.Comma):
            # A trailing comma: the new argument takes it (and the newline before `)`), the old
            # last one takes the separator used between earlier arguments.
            previous = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else None
            separator = previous or cst.Comma(whitespace_after=call.whitespace_before_args)
            args[-1] = last.with_changes(comma=separator)
            new_arg = new_arg.with_changes(comma=last.comma)
        return call.with_changes(args=[*args, new_arg])

    def _in_dataset(self, call: cst.Call) -> bool:
        """Data loading code (a Dataset class, `__getitem__`) hands CPU tensors to DataLoader workers."""
        for ancestor in self.ctx.ancestors(call):
            if isinstance(ancestor, cst.FunctionDef) and ancestor.name.value in ("__getitem__", "__iter__", "__len__"):
                return True
            if isinstance(ancestor, cst.ClassDef) and any(
                (dotted_name(base.value) or "").endswith("Dataset") for base in ancestor.bases
            ):
                return True
        return False

    def _feeds_load_state_dict(self, call: cst.Call) -> bool:
        if self._is_load_state_dict_argument(call):
            return True
        parent = self.ctx.parent(call)
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            return False
        target = parent.targets[0].target
        scope = self.ctx.scope(target)
        if scope is None:
            return False
        references = [
            access for assignment in scope.assignments[target.value] if assignment.node is target
            for access in assignment.references
        ]
        return bool(references) and all(self._is_load_state_dict_argument(a.node) for a in references)

    def _is_load_state_dict_argument(self, node: cst.CSTNode) -> bool:
        """`node` (possibly subscripted: `ckpt["model"]`) is the first argument of `.load_state_dict(...)`."""
        child = node
        parent = self.ctx.parent(child)
        while isinstance(parent, (cst.Subscript, cst.SubscriptElement, cst.Index)):
            if isinstance(parent, cst.Subscript) and child is not parent.value:
                return False
            child, parent = parent, self.ctx.parent(parent)
        if not isinstance(parent, cst.Arg):
            return False
        call = self.ctx.parent(parent)
        return (
            isinstance(call, cst.Call)
            and call.args
            and call.args[0] is parent
            and (dotted_name(call.func) or "").endswith("load_state_dict")
        )


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
