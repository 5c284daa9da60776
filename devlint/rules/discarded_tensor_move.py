from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.analysis.loop_moves import enclosing_loop, is_temporary, iteration_failure
from devlint.analysis.moves import MOVES, MoveRebinding, chain
from devlint.analysis.vocabulary import TENSOR
from devlint.model import Applicability
from devlint.rule import Invalid, Rule


class DiscardedTensorMove(Rule):
    """
    ## What it does
    Flags an expression statement that calls `.to(...)`, `.cuda(...)`, `.cpu()`, `.half()`,
    `.float()`, `.double()`, `.bfloat16()`, `.long()`, `.int()`, `.bool()`, `.type(...)` or
    `.detach()` on a receiver known to be a **tensor** (also the outermost call of a chain, such as
    `x.to(device).float()`, and a list comprehension used as a statement,
    `[t.to(device) for t in ts]`).

    The receiver is a value something holds: a name, an attribute, a
    subscript, or a method result of one (`self.w.to(device)`, `batch[0].to(device)`,
    `x.contiguous().cuda()`); a temporary (a factory's or a call's result no name holds) is not flagged.

    The receiver's kind comes from its provenance in the file (see
    `devlint/analysis/kinds.py`): tensor factories and ops, tensor methods, `.weight`/`.bias`/`.data`/
    `.grad`, `torch.Tensor` annotations, `.parameters()` loops, `register_buffer`, ...
    and from the other files of the project (the project index, `devlint/analysis/project.py`, read with the
    standard `ast` even when the file is checked alone, as pre-commit does): a function imported from
    the project whose every return is a tensor (`batch = make_batch()`, with `from .data import
    make_batch`, `from pkg.data import make_batch as mb`, `import pkg.data as d`, `from . import
    data`) gives tensors; a project class that subclasses `nn.Module` directly or through other
    project classes, in any file, gives modules (not flagged). A name the file re-binds, a function
    that may return something else, and functions that call each other in a cycle stay unknown.
    A test's parameter that pytest fills from a fixture (of the file, or of a conftest.py from the test's
    folder up to the project root) has the kind of what the fixture returns: a tensor, flagged.

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
    Re-binding (`x = x.to(device)`) makes later code see the moved tensor, and code written against the
    original may rely on the tensor staying where it was: a test that moves its input to the GPU
    "by mistake" while the model under test stays on the CPU passes on a GPU machine, and fails after
    the fix. So the fix is **safe** only where the original cannot have worked on a GPU machine: the
    move is a device move (`.to(device)`, `.cuda()`, `.cpu()`) and the moved name is next read, in the
    straight-line code that follows in the same block (entering `with` blocks), where the unmoved
    tensor fails and the moved one is what was meant:

    - given to a module known to be on the target device, `model(x)`, where `model` was moved there
      by the same device expression earlier on the way to the call in the same function
      (`model = Net().to(device)`, or `model.to(device)` / `model.cuda()` on a module), and is neither
      a `DataParallel`-style wrapper nor a class of the file whose `forward` moves its inputs (both
      take CPU inputs);
    - combined by arithmetic (`x * w`, `x += w`) or a torch op (`torch.cat([x, w])`, `torch.matmul(x, w)`)
      with a tensor known to be there (`w = torch.ones(2, device=device)`, `w = y.to(device)`), unless
      `x` may be a 0-dim tensor (`torch.tensor(0.5)`, or of unknown shape), which mixes with CUDA
      tensors;
    - after `.cpu()`, turned `.numpy()` (which fails for a CUDA tensor; the move is a no-op otherwise).

    "Known to be on the target device" is a small local analysis (`_on_device`,
    `_module_on_device`), a stand-in for the placement analysis. Everything else is **unsafe**: a
    next read in a branch or loop, no read at all, a read that works with the tensor where it was
    (`print(x)`, `model(x)` with a CPU model), a dtype cast (`.half()`, `.to(torch.float16)`, a `.to()`
    whose argument is not recognisably a device) or `.detach()` (they change numerics or autograd
    downstream), and a statement comprehension over a list name (`ts = [t.to(device) for t in ts]`).
    A `for` loop variable gets the same levels (`for batch in batches: batch.to(device)` then
    `out = model(batch)`, with `model` moved earlier: **safe**) when every later use is inside the same
    iteration: the moved value is read later in the loop body, the variable is not read after the
    loop (nor by a closure, nor earlier in a loop around it), and the iterated container is not used
    after the loop (`len(...)` of it aside). The re-binding then stays in one pass of the loop, where
    it is what was meant (and never one that DL013 flags).
    No mechanical fix (**display-only**) where re-assignment does not do what the author meant: a
    loop variable whose moves were meant to update the container (nothing reads it later in the
    iteration, or the container or the variable is used after the loop: `for t in tensors: t.to(device)`
    then `use(tensors)`; re-binding leaves the container unchanged; a loop over a module's
    `.parameters()` or `.buffers()`, which meant `model.to(device)`), a parameter attribute of a module
    (`self.weight = self.weight.to(...)` raises TypeError), `.data`/`.grad`, subscripts, method
    results of a held tensor (`x.contiguous().cuda()`), and a name the scope does not bind itself (a module-level tensor moved inside a function,
    an outer function's tensor in a closure: the assignment would make it local, and the move before
    it an UnboundLocalError), unless it is declared `global`/`nonlocal` there.

    ## Not flagged
    - Modules, which move in place and return themselves: `model.to(device)` for `model = nn.Linear(2, 2)`,
      instances of classes of the file that subclass `nn.Module`, `self.to(device)` in such a class,
      `nn.DataParallel(model).cuda()`, items of `model.modules()`.
    - Receivers of unknown kind: a parameter without annotation, as in `def f(batch): batch.to(device)`
      (also a test's parameter whose fixture returns a value of unknown kind, or that the test parametrizes);
      results of calling a model or a project function (`out = model(x)` then `out.cpu()`); objects
      whose `.to` works in place (`pipe.to("cuda")`, `data.to(device)` for graph batches).
    - Results that are used: `x = x.to(device)`, `return x.cuda()`, `y = x.float()`.
    - Temporaries, values no name holds: `torch.zeros(1).to(device)` or `model(x).cpu()` as a
      statement (a deliberate warm-up or synchronisation; nothing can read the moved copy).

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
        "import torch\ntorch.zeros(1).to(device)\n",
        "import torch\nx = torch.zeros(3)\nmodel(x).cpu()\n",
        "import torch\ntorch.rand(3).cuda()\n",
        "import pytest\n@pytest.fixture\ndef batch():\n    return make_graph()\n\ndef test_f(batch):\n    batch.to(device)\n",
    )
    INVALID = (
        Invalid(  # a test's parameter filled by a fixture that returns a tensor
            "import pytest\nimport torch\n@pytest.fixture\ndef x():\n    return torch.zeros(3)\n\n"
            "def test_sum(x, device):\n    x.to(device)\n    assert x.sum() == 0\n",
            fixed="import pytest\nimport torch\n@pytest.fixture\ndef x():\n    return torch.zeros(3)\n\n"
            "def test_sum(x, device):\n    x = x.to(device)\n    assert x.sum() == 0\n",
            unsafe=True,
        ),
        Invalid(  # the original cannot have worked on a GPU: the model is there, the input is not
            "import torch, torch.nn as nn\ndef run(device):\n    model = nn.Linear(3, 1).to(device)\n"
            "    x = torch.zeros(3)\n    x.to(device)\n    return model(x)\n",
            fixed="import torch, torch.nn as nn\ndef run(device):\n    model = nn.Linear(3, 1).to(device)\n"
            "    x = torch.zeros(3)\n    x = x.to(device)\n    return model(x)\n",
        ),
        Invalid(
            "import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nmodel.cuda()\nx = torch.zeros(3)\nx.cuda()\n"
            "with torch.no_grad():\n    y = model(x)\n",
            fixed="import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nmodel.cuda()\nx = torch.zeros(3)\n"
            "x = x.cuda()\nwith torch.no_grad():\n    y = model(x)\n",
        ),
        Invalid(
            "import torch\ndef add(device):\n    w = torch.ones(3, device=device)\n    x = torch.zeros(3)\n"
            "    x.to(device)\n    return x + w\n",
            fixed="import torch\ndef add(device):\n    w = torch.ones(3, device=device)\n    x = torch.zeros(3)\n"
            "    x = x.to(device)\n    return x + w\n",
        ),
        Invalid(
            "import torch\ndef f(t: torch.Tensor):\n    t.cpu()\n    return t.numpy()\n",
            fixed="import torch\ndef f(t: torch.Tensor):\n    t = t.cpu()\n    return t.numpy()\n",
        ),
        Invalid(  # the model stays on the CPU: on a GPU machine the original works, so only --unsafe-fixes
            "import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nx = torch.zeros(3)\nx.cuda()\n"
            "assert torch.equal(model(x), model(torch.zeros(3)))\n",
            fixed="import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nx = torch.zeros(3)\nx.cuda()\n"
            "assert torch.equal(model(x), model(torch.zeros(3)))\n",
        ),
        Invalid(
            "import torch\nx = torch.zeros(3)\nx.to(device)\n",
            fixed="import torch\nx = torch.zeros(3)\nx = x.to(device)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef f(t: torch.Tensor, device):\n    t.cpu()\n",
            fixed="import torch\ndef f(t: torch.Tensor, device):\n    t = t.cpu()\n",
            unsafe=True,
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
            unsafe=True,
        ),
        Invalid("for p in model.parameters():\n    p.to(device)\n", fixed="for p in model.parameters():\n    p.to(device)\n"),
        Invalid("import torch.nn as nn\nclass M(nn.Module):\n    def f(self, device):\n        self.conv.weight.to(device)\n"),
        Invalid(
            "import torch.nn as nn, torch\nclass M(nn.Module):\n    def __init__(self):\n"
            "        self.register_buffer('mask', torch.ones(3))\n    def f(self, device):\n        self.mask.to(device)\n",
            fixed="import torch.nn as nn, torch\nclass M(nn.Module):\n    def __init__(self):\n"
            "        self.register_buffer('mask', torch.ones(3))\n    def f(self, device):\n"
            "        self.mask = self.mask.to(device)\n",
            unsafe=True,
        ),
        Invalid(  # a loop variable read only in its iteration: re-binding is what was meant
            "import torch, torch.nn as nn\ndef run(device):\n    model = nn.Linear(3, 1).to(device)\n"
            "    batches = [torch.zeros(3), torch.ones(3)]\n    for batch in batches:\n        batch.to(device)\n"
            "        out = model(batch)\n",
            fixed="import torch, torch.nn as nn\ndef run(device):\n    model = nn.Linear(3, 1).to(device)\n"
            "    batches = [torch.zeros(3), torch.ones(3)]\n    for batch in batches:\n"
            "        batch = batch.to(device)\n        out = model(batch)\n",
        ),
        Invalid(  # meant to update the container, which is used after the loop
            "import torch\ntensors = [torch.zeros(3)]\nfor t in tensors:\n    t.to(device)\nuse(tensors)\n",
            fixed="import torch\ntensors = [torch.zeros(3)]\nfor t in tensors:\n    t.to(device)\nuse(tensors)\n",
        ),
        Invalid("import torch\nclass M:\n    def f(self, device):\n        self.w = torch.ones(3)\n"
                "        self.w.to(device)\n"),
        Invalid("import torch\nbatch = [torch.zeros(3)]\nbatch[0].to(device)\n"),
        Invalid("import torch\nx = torch.zeros(3)\nx.contiguous().cuda()\n"),
        Invalid("import torch\nx = torch.cat([a, b])\nx.to(device).float()\n",
                fixed="import torch\nx = torch.cat([a, b])\nx = x.to(device).float()\n", unsafe=True),
    )

    def visit_Expr(self, node: cst.Expr) -> None:
        value = node.value
        call = value.elt if isinstance(value, cst.ListComp) else value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in MOVES):
            return
        receiver = call.func.value
        if self.ctx.is_imported_module(receiver) or self.ctx.possible_kinds.of(receiver) is not TENSOR:
            return  # settled without scope analysis, as most `model.to(device)` statements are
        if self.ctx.kinds.of(receiver) is not TENSOR or is_temporary(self.ctx, chain(call)[0]):
            return  # a temporary: nothing holds the value (a warm-up), see analysis/loop_moves
        message = self.message.format(method=call.func.attr.value)
        fix = self._comprehension_fix(node, value, call) if isinstance(value, cst.ListComp) else self._fix(node, call)
        self.report(value, message, fix)

    @cached_property
    def _rebinding(self) -> MoveRebinding:
        return MoveRebinding(self.ctx)

    # -- fixes -----------------------------------------------------------------------------------------
    def _fix(self, statement: cst.Expr, call: cst.Call):
        root, methods = chain(call)
        title = "Assign the result back"
        target = self._rebinding.rebindable(root)
        loop = enclosing_loop(self.ctx, root) if target is None and isinstance(root, cst.Name) else None
        if loop is not None and self._rebinding.local(root):
            failure = iteration_failure(self.ctx, loop, statement, root.value)
            if failure is not None:
                return self.display_only(f"{title}: {failure}")
            target = root.value  # read only in this iteration: re-binding is what was meant
        if target is None:
            return self.display_only(f"{title}: re-binding `{self.ctx.code(root).strip()}` would not do what was meant")
        safe = self._rebinding.could_not_have_worked(statement, call, target)
        applicability = Applicability.SAFE if safe else Applicability.UNSAFE
        return self.fix(f"{title}: `{target} = {target}.{methods[-1]}(...)`", applicability,
                        self.insert_before(statement, f"{target} = "))

    def _comprehension_fix(self, statement: cst.Expr, comp: cst.ListComp, call: cst.Call):
        title = "Assign the moved list back"
        loop = comp.for_in
        root, _ = chain(call)
        if (loop.inner_for_in is not None or loop.ifs or not isinstance(loop.iter, cst.Name)
                or not isinstance(loop.target, cst.Name) or not isinstance(root, cst.Name)
                or root.value != loop.target.value or not self._rebinding.bound_to_list(loop.iter)
                or not self._rebinding.local(loop.iter)):
            return self.display_only(title)
        # the list's later users may rely on its tensors staying where they were (see "Fix safety")
        return self.fix(f"{title}: `{loop.iter.value} = [...]`", Applicability.UNSAFE,
                        self.insert_before(statement, f"{loop.iter.value} = "))
