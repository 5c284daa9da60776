from __future__ import annotations

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.module_classes import enclosing_method, inside, methods, module_classes, reachable_methods
from devlint.analysis.mixing import rebound, submodule_inputs
from devlint.syntax import descendants, dotted_name, string_value

# torch.nn classes whose instances always hold parameters (left out: those whose keywords may turn them
# off, such as `affine=False`, and containers).
_WITH_PARAMETERS = frozenset(
    """
    Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d Embedding
    EmbeddingBag LSTM GRU RNN LSTMCell GRUCell RNNCell MultiheadAttention PReLU Transformer
    TransformerEncoderLayer TransformerDecoderLayer
    """.split()
)
_NO_AFFINE = ("affine", "elementwise_affine", "bias", "_weight", "_freeze")


class ModuleDeviceAttribute(Rule):
    """
    ## What it does
    Prevents `AttributeError: 'Net' object has no attribute 'device'` (the virtual GPU reports it
    with this rule's code). Flags `<m>.device` where `<m>` is certainly an instance of a `torch.nn`
    class (`nn.Linear(2, 2).device`) or of a project class whose whole base chain devlint can see and
    ends in `torch.nn` classes (`model = Net()`, then `model.device`; `self.encoder.device` where
    every assignment of `self.encoder` is such a call; `self.device` in a method of such a class), and
    no class of that chain defines `device` (a class attribute, a method or property, an assignment to
    `self.device`, `register_buffer("device", ...)`).

    On by default: it flags code that cannot run on any machine. On the corpora tried
    (pytorch-image-models, detectron2, nanoGPT, vit-pytorch, x-transformers, dino, pytorch-lightning,
    nlp-tutorial, PyTorch-GAN, pytorch-tutorial, attention-is-all-you-need-pytorch, hyunwoongko/transformer)
    its one finding was a real bug (`self.proj.device` of an `nn.Conv2d` in timm's `HybridEmbed`), and
    the classes that define `device` (detectron2's meta-architectures, x-transformers) were recognised.

    ## Why is this bad?
    `nn.Module` has no `device` attribute: a model's parameters may live on several devices, so the
    module itself does not have one. `model.device` raises `AttributeError` on every machine, with or
    without a GPU. It is widely written because Hugging Face's `PreTrainedModel` and Lightning's
    `LightningModule` do define it, and tutorials carry the habit over to plain modules.

    ## Example
    ```python
    model = nn.Linear(4, 2)
    x = torch.zeros(3, 4, device=model.device)
    ```

    ## Use instead
    ```python
    model = nn.Linear(4, 2)
    x = torch.zeros(3, 4, device=next(model.parameters()).device)
    ```

    ## Fix safety
    The original always raises, so any fix that works where the module has parameters is an
    improvement. `<m>.device` becomes `next(<m>.parameters()).device`, **safe** where the module
    certainly has parameters: a `torch.nn` class that always has them (`Linear`, `Conv2d`, `Embedding`,
    `LSTM`, ...) or a class of the file whose `__init__` (or a class of the file it inherits from)
    assigns one of those, an `nn.Parameter` or such a class to `self.<name>` unconditionally. Inside
    `forward` (or a method it calls) on `self`, the fix is instead the device of an input of that method
    given as it is to a submodule there (`x.device` after `self.proj(x)`: the input is where the model
    is, or the method fails anyway; an input the method moves itself, `x.to(self.device)`, may come from
    the CPU), never re-bound: `parameters()` is empty in the replicas `nn.DataParallel` runs, so
    `next(self.parameters())` there raises `StopIteration`; without such an input the
    `next(self.parameters()).device` fix is **unsafe** for that reason. On a module not known to have
    parameters (`nn.ReLU()`, a class built on unknown calls, a project class of another file) the fix
    is **display-only**: `next(...)` would raise `StopIteration`.

    ## Not flagged
    - Receivers whose class devlint does not know: parameters, results of functions, attributes of
      other objects (`pipe.model.device`).
    - Classes with a base devlint cannot see into: `class Net(PreTrainedModel)`, `class Net(LightningModule)`,
      `class Net(nn.Module, SomeMixin)`, a metaclass, and `nn.parallel.DistributedDataParallel`, which
      sets `self.device`.
    - Classes that define `device` anywhere in the chain, or may define any attribute (`__getattr__`,
      `setattr(self, name, value)` with a computed name, a write through `self.__dict__` or `vars(self)`
      such as `self.__dict__.update(locals())`), and `self.device` in a class that a class of the
      file extends with a `device`, or in an abstract base (named `BaseEncoder`, with an `@abstractmethod`
      or a `raise NotImplementedError`) whose subclasses in other files may define it.
    - A read guarded by `hasattr(m, 'device')` or inside `try: ... except AttributeError:`.
    - Assignments: `self.device = device` (it defines the attribute).

    ## References
    - [Module (no `device` attribute)](https://pytorch.org/docs/stable/generated/torch.nn.Module.html)
    - [DataParallel: parameters of replicas](https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html)
    """

    code = "DL012"
    name = "module-device-attribute"
    message = "`nn.Module` has no `device` attribute: `{receiver}.device` raises AttributeError"

    VALID = (
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self, device):\n"
        "        super().__init__()\n        self.device = device\n    def f(self):\n        return self.device\n",
        "import torch.nn as nn\nclass Net(nn.Module):\n    @property\n    def device(self):\n"
        "        return next(self.parameters()).device\nnet = Net()\nprint(net.device)\n",
        "from transformers import PreTrainedModel\nclass Net(PreTrainedModel):\n    def f(self):\n"
        "        return self.device\n",
        "def f(model):\n    return model.device\n",
        "import torch.nn as nn\nclass BaseEncoder(nn.Module):\n    def f(self):\n        return self.device\n",
        "from abc import abstractmethod\nimport torch.nn as nn\nclass Encoder(nn.Module):\n    @abstractmethod\n    def g(self):\n"
        "        pass\n    def f(self):\n        return self.device\n",
        "import torch.nn as nn\nclass Encoder(nn.Module):\n    def g(self):\n        raise NotImplementedError\n"
        "    def f(self):\n        return self.device\n",
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __getattr__(self, name):\n"
        "        return super().__getattr__(name)\n    def f(self):\n        return self.device\n",
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self, **kw):\n        super().__init__()\n"
        "        for name, value in kw.items():\n            setattr(self, name, value)\n"
        "    def f(self):\n        return self.device\n",
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self, device='cpu'):\n        super().__init__()\n"
        "        self.__dict__.update(locals())\nprint(Net().device)\n",
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self, **kw):\n        super().__init__()\n"
        "        vars(self).update(kw)\nprint(Net(device='cpu').device)\n",
        "from lightning import LightningModule\nclass Net(LightningModule):\n    def f(self):\n        return self.device\n",
        "import torch.nn as nn\nfrom mixins import SomeMixin\nclass Net(nn.Module, SomeMixin):\n    def f(self):\n"
        "        return self.device\n",
        "import torch.nn as nn\nddp = nn.parallel.DistributedDataParallel(nn.Linear(2, 2))\nprint(ddp.device)\n",
        "def f(pipe):\n    return pipe.model.device\n",
        "import torch.nn as nn\nm = nn.Linear(2, 2)\nd = m.device if hasattr(m, 'device') else None\n",
        "import torch.nn as nn\nm = nn.Linear(2, 2)\ntry:\n    d = m.device\nexcept AttributeError:\n    d = None\n",
        "import torch.nn as nn\nclass Base(nn.Module):\n    def f(self):\n        return self.device\n"
        "class Child(Base):\n    def __init__(self):\n        super().__init__()\n        self.device = 'cpu'\n",
        "import torch\nx = torch.zeros(2)\nprint(x.device)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 2)\nx = torch.zeros(3, 4, device=model.device)\n",
            fixed="import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 2)\n"
            "x = torch.zeros(3, 4, device=next(model.parameters()).device)\n",
        ),
        Invalid(
            "from torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(2, 2)\nnet = Net().eval()\nprint(net.device)\n",
            fixed="from torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(2, 2)\nnet = Net().eval()\nprint(next(net.parameters()).device)\n",
        ),
        Invalid(
            "import torch as th\nclass Net(th.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = th.nn.Linear(2, 2)\n    def forward(self, x):\n"
            "        return self.fc(x) + th.ones(2, device=self.device)\n",
            fixed="import torch as th\nclass Net(th.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = th.nn.Linear(2, 2)\n    def forward(self, x):\n"
            "        return self.fc(x) + th.ones(2, device=x.device)\n",
        ),
        Invalid(  # in forward without a tensor input at hand: DataParallel replicas have no parameters
            "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(2, 2)\n    def forward(self, batch):\n"
            "        return self.fc(batch['x'].to(self.device))\n",
            fixed="import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(2, 2)\n    def forward(self, batch):\n"
            "        return self.fc(batch['x'].to(next(self.parameters()).device))\n",
            unsafe=True,
        ),
        Invalid("import torch.nn as nn\nact = nn.ReLU()\nprint(act.device)\n",
                fixed="import torch.nn as nn\nact = nn.ReLU()\nprint(act.device)\n", unsafe=True),
    )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "device" or not self._read(node):
            return
        receiver = node.value
        in_forward = False
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            found = self._self_chain(node)
            if found is None:
                return
            chain, cls = found
            in_forward = any(f is self._method(node) for f in reachable_methods(self.ctx, cls, "forward"))
        else:
            chain = module_classes(self.ctx).instance_chain(receiver)
            if chain is None:
                return
            cls = chain.local
        if chain.binds("device") or self._guarded(node, receiver):
            return
        text = self.ctx.code(receiver).strip()
        self.report(node, self.message.format(receiver=text), self._fix(node, receiver, cls, in_forward))

    def _read(self, node: cst.Attribute) -> bool:
        parent = self.ctx.parent(node)
        if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and parent.target is node:
            return False
        return not isinstance(parent, (cst.Del, cst.Element, cst.StarredElement)) or not isinstance(
            self.ctx.parent(parent), (cst.AssignTarget, cst.Del))

    def _method(self, node: cst.CSTNode):
        found = enclosing_method(self.ctx, node)
        return found[0] if found else None

    def _self_chain(self, node: cst.Attribute):
        """`self` in a method (not a static or class method, not a nested function) of a module class."""
        found = enclosing_method(self.ctx, node)
        if found is None:
            return None
        function, cls = found
        params = function.params.params
        if not params or params[0].name.value != "self" or any(
                (dotted_name(d.decorator) or "").endswith(("staticmethod", "classmethod")) for d in function.decorators):
            return None
        classes = module_classes(self.ctx)
        chain = classes.chain(cls)
        if chain is None:
            return None
        for sub in classes.subclasses(cls):  # a subclass of the file may supply `device`
            sub_chain = classes.chain(sub)
            if sub_chain is None or sub_chain.binds("device"):
                return None
        if self._meant_to_be_extended(cls):
            return None
        return chain, cls

    def _meant_to_be_extended(self, cls: cst.ClassDef) -> bool:
        """An abstract base (`Base...`/`Abstract...`, an `@abstractmethod`, `raise NotImplementedError`):
        its subclasses, in other files too, may define `device`."""
        if cls.name.value.startswith(("Base", "Abstract", "_Base")):
            return True
        for function in methods(cls).values():
            if any((dotted_name(d.decorator) or "").endswith("abstractmethod") for d in function.decorators):
                return True
        return any(isinstance(r.exc, (cst.Name, cst.Call)) and "NotImplementedError" in (
            dotted_name(r.exc.func if isinstance(r.exc, cst.Call) else r.exc) or "") for r in inside(self.ctx, cls, cst.Raise))

    def _guarded(self, node: cst.CSTNode, receiver: cst.BaseExpression) -> bool:
        text = self.ctx.code(receiver).strip()
        for ancestor in self.ctx.ancestors(node):
            test = getattr(ancestor, "test", None)
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and test is not None and self._hasattr(test, text):
                return True
            if isinstance(ancestor, cst.BooleanOperation) and self._hasattr(ancestor.left, text):
                return True
            if isinstance(ancestor, cst.Try) and any(self._catches_attribute_error(h) for h in ancestor.handlers):
                return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
        return False

    def _hasattr(self, test: cst.CSTNode, text: str) -> bool:
        for node in (test, *descendants(test)):
            if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "hasattr"
                    and len(node.args) >= 2 and string_value(node.args[1].value) == "device"):
                return True
        return False

    def _catches_attribute_error(self, handler: cst.ExceptHandler) -> bool:
        if handler.type is None:
            return True
        names = {dotted_name(n) for n in (handler.type, *descendants(handler.type))}
        return bool(names & {"AttributeError", "Exception", "BaseException"})

    # -- the fix ---------------------------------------------------------------------------------------
    def _fix(self, node: cst.Attribute, receiver: cst.BaseExpression, cls: cst.ClassDef | None, in_forward: bool):
        text = self.ctx.code(receiver).strip()
        if in_forward:
            function = self._method(node)
            inputs = submodule_inputs(self.ctx, function) if function is not None else set()
            ordered = [p.name.value for p in function.params.params
                       if p.name.value in inputs and not rebound(self.ctx, function, p.name.value)]
            if ordered:
                return self.fix(f"Use the device of the input `{ordered[0]}`", Applicability.SAFE,
                                self.replace(node, f"{ordered[0]}.device"))
        replacement = f"next({text}.parameters()).device"
        title = f"Use `{replacement}`"
        if not self._has_parameters(receiver, cls):
            return self.display_only(f"{title} (not known to have parameters: `next()` would raise StopIteration)")
        if in_forward:
            return self.fix(f"{title} (`parameters()` is empty in `nn.DataParallel` replicas)", Applicability.UNSAFE,
                            self.replace(node, replacement))
        return self.fix(title, Applicability.SAFE, self.replace(node, replacement))

    def _has_parameters(self, receiver: cst.BaseExpression, cls: cst.ClassDef | None, depth: int = 0) -> bool:
        if depth > 6:
            return False
        if cls is not None:
            return self._class_has_parameters(cls, depth)
        value = receiver
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
                "to", "eval", "train", "cuda", "cpu", "float", "half", "double", "requires_grad_"):
            value = value.func.value
        if isinstance(value, cst.Name):
            values = [self.ctx.assigned_value(a.node) for a in self.ctx.bindings(value)]
            return bool(values) and all(v is not None and self._has_parameters(v, None, depth + 1) for v in values)
        if isinstance(value, cst.Attribute) and dotted_name(value.value) == "self":  # `self.proj`
            values = module_classes(self.ctx).self_attribute_values(value)
            return bool(values) and all(self._has_parameters(v, None, depth + 1) for v in values)
        return isinstance(value, cst.Call) and self._creates_parameters(value, depth)

    def _creates_parameters(self, call: cst.Call, depth: int) -> bool:
        names = self.ctx.qualified_names(call.func)
        if any(n.startswith("torch.nn.") and n.rsplit(".", 1)[-1] in _WITH_PARAMETERS for n in names):
            return not any(a.keyword is not None and a.keyword.value in _NO_AFFINE for a in call.args)
        if any(n in ("torch.nn.Parameter", "torch.nn.parameter.Parameter") for n in names):
            return True
        if any(n.rsplit(".", 1)[-1] in ("Sequential", "ModuleList") and n.startswith("torch.nn.") for n in names):
            return any(self._has_parameters(e.value, None, depth + 1) for a in call.args
                       for e in (a.value.elements if isinstance(a.value, (cst.List, cst.Tuple)) else [a]))
        classes = module_classes(self.ctx)
        local = classes.instance_chain(call)
        return local is not None and local.local is not None and self._class_has_parameters(local.local, depth + 1)

    def _class_has_parameters(self, cls: cst.ClassDef, depth: int) -> bool:
        """Does `__init__` (of the class or of a class of the file it extends) certainly create one?"""
        if depth > 6:
            return False
        init = next((item for item in cls.body.body if isinstance(item, cst.FunctionDef)
                     and item.name.value == "__init__"), None) if isinstance(cls.body, cst.IndentedBlock) else None
        if init is not None and isinstance(init.body, cst.IndentedBlock):
            for line in init.body.body:  # unconditional statements only
                if not isinstance(line, cst.SimpleStatementLine):
                    continue
                for small in line.body:
                    if isinstance(small, cst.Assign) and any(
                            isinstance(t.target, cst.Attribute) and dotted_name(t.target.value) == "self"
                            for t in small.targets) and isinstance(small.value, cst.Call) and \
                            self._creates_parameters(small.value, depth + 1):
                        return True
        classes = module_classes(self.ctx)
        for base in cls.bases:
            local = classes._local_classes.get(base.value.value) if isinstance(base.value, cst.Name) else None
            if local is not None and self._class_has_parameters(local, depth + 1):
                return True
        return False
