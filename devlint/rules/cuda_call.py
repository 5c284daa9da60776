from __future__ import annotations

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.device import device_failure, device_source, unproven_reference
from devlint.analysis.kinds import TENSOR
from devlint.syntax import find_arg, is_none


_EQUAL = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


class CudaCall(Rule):
    """
    ## What it does
    Flags every method call `.cuda(...)` (on tensors and modules alike, assigned or not) that can run
    on a machine without CUDA.

    A condition guards only when the run answers it (devlint.analysis.flags): a flag devlint proves
    constant is no guard. `USE_CUDA = True` then `if USE_CUDA: x = x.cuda()` is flagged (a name bound
    only to a literal), and so is `if cuda: v = v.cuda()` in `def one_hot(idx, size, cuda=True)` when no
    call in the project passes `cuda` (`one_hot(i, n)` throughout). Anything devlint cannot see into
    stays a guard: an argparse or click option, an environment variable, a configuration object, an
    imported flag, a parameter some call passes.

    ## Why is this bad?
    `.cuda()` only works where CUDA works. On a CPU-only build of PyTorch it raises
    `AssertionError: Torch not compiled with CUDA enabled`, on a CUDA build without a GPU a
    `RuntimeError`; the same code dies on a laptop, an Apple-silicon Mac or a CPU CI runner.
    `model.cuda()` is as hard-coded as `t.cuda()`.

    ## Example
    ```python
    model = Net().cuda()
    x = x.cuda(non_blocking=True)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    x = x.to(device, non_blocking=True)
    ```

    ## Fix safety
    `x.cuda()` becomes `x.to(device)` (`non_blocking` and `memory_format` are kept). This is **safe**:
    on a machine with one GPU it does exactly what the original did. The device written is, in this
    order: a `device` proven to be the GPU `.cuda()` used and bound on every path to the call (an
    earlier assignment in a block around it of `torch.device("cuda" if torch.cuda.is_available() else
    "cpu")`, `torch.device("cuda")`, a proven tensor's `.device`); one derived from the code at hand:
    `self.device` in a method when the class's `__init__` sets it from such a device before anything
    that could call the method, its bases are `nn.Module` or `object` (`nn.Linear` calls
    `reset_parameters()` from its `__init__`), nothing else assigns it and nothing outside the file can
    subclass the class or reach its instances (a class defined in a function), or
    `y.device` when the moved value is combined with `y` in the same binary operation or torch function
    (`torch.ones(3).cuda() + y`, `torch.cat([a.cuda(), y])`) and `y` is a tensor (by its kind: not a
    model's output, which may be a float, nor a container with its own `cuda()`) whose binding there
    certainly ran and put it on that GPU (`y = x.cuda()`, `y = x.to("cuda")`; not a parameter, a CPU
    tensor, a name rebound between, or one moved in place since: `y.data = y.data.cpu()`); only then a
    definition the fixer inserts (after the imports in a script, in the function otherwise; named
    `_device` after a star import, which may bind `device`). `next(self.parameters()).device` is
    never written: it raises `StopIteration` in a module without parameters and in `nn.DataParallel`
    replicas, and names one device of a model split over several. With a constant device index
    (`x.cuda(1)`, `x.cuda(device=1)`) the rewrite drops which GPU was meant, so it is **unsafe** (applied
    only with `--unsafe-fixes`). With an index computed at run time (`x.cuda(local_rank)`,
    `x.cuda(args.gpu)`, `x.cuda(next(gpus))`) the fix is **display-only**: the expression picks each
    process's own GPU, and `.to(device)` would put every process on the first one (or drop what the
    expression does); `.to(torch.device("cuda", k))` would keep it but still need CUDA. It is unsafe too in a
    file whose classes define their own `cuda()`: `.to(device)` skips that override, which may move what
    `Module.to` does not (a plain tensor attribute), and the program then mixes devices on the GPU. It
    is unsafe, with the reason in its title, where the device written may be the run's device but is not
    proven to be: a `device` parameter ("(`device` is a parameter (line 2): a caller may pass the CPU,
    where this code used the GPU)"), `device = args.device`, `torch.device(name)`. With
    `*args`/`**kwargs`, where `device` names something that is not a device, or where it may be
    unbound at the call and no definition can help (a local bound only on one branch, a `del device`),
    the fix is **display-only**, and its title says which: e.g. "(`device` is a parameter whose default
    is None (line 3): not known to be a device)" or "(`CUDA_VISIBLE_DEVICES` is set later in this
    function (line 9): a definition before this line would query CUDA first)".

    Where the definition binds matters too (devlint.analysis.binding): a file that other files of the
    project import is a library, whatever its `if __name__ == "__main__":` block says (no module-level
    definition: it would query CUDA when they import it); no definition goes into a function that binds
    `torch` (`import torch.distributed` in it, `def run(x, torch=None)`); in code TorchScript compiles
    (`@torch.jit.script`, `torch.jit.script(Net())`) the fix is **display-only**; and where the module's
    `device` may be rebound before the fixed line runs (`if "--cpu" in sys.argv: device = ...`,
    `global device` in a function, `globals().update(vars(args))`) it is **unsafe**.

    ## Not flagged
    - Code under a CUDA condition, i.e. code that only runs where CUDA exists or was asked for:
      `if torch.cuda.is_available(): x = x.cuda()`, `x.cuda() if use_cuda else x`,
      `args.cuda and x.cuda()`, `if not args.no_cuda:`, `if args.gpu is not None:`,
      `if device.type == 'cuda':`, a name assigned from a test (`use_cuda = torch.cuda.is_available()`),
      the `else:` of `if not torch.cuda.is_available():`, code after an early exit under
      `if not torch.cuda.is_available():` (`return x`, `raise`, `sys.exit(0)`, `pytest.skip(...)`,
      `self.skipTest(...)`) or after `assert torch.cuda.is_available()`, code after a call of a
      function of the project that refuses to run without CUDA and cannot return without it
      (`setup_gpu()` whose body is `if not torch.cuda.is_available(): sys.exit("needs a GPU")`; the
      helper may end with `torch.cuda.set_device(rank)` on its other paths), the body of a plain function
      whose every call is such guarded code, in the file and in up to four other files of the project
      (`def train(...)`, called after `setup_gpu()`; a same-named function of another file is another
      function), code after `if not dist.is_initialized(): return` (or a yes/no helper of the file
      that asks it) in a project whose every `init_process_group` is `backend="nccl"`, a function decorated with
      `@unittest.skipIf(not torch.cuda.is_available(), ...)`, `@requires_cuda` or a marker naming the GPU
      (`@pytest.mark.run_only_on('GPU')`), a module with
      `pytestmark = pytest.mark.skipif(...)`, and `if torch.__version__ == 'parrots':` in a test
      skipped by `skipif(torch.__version__ == 'parrots' and not torch.cuda.is_available(), ...)`.
    - GPU-only tests as maintainers mark them: a marker alias defined in the file
      (`gpu_only = pytest.mark.skipif(not torch.cuda.is_available(), reason=...)`, then `@gpu_only`), an
      imported marker whose name requires CUDA (`@skip_if_no_cuda`, `@needs_gpu`), a requirement keyword
      (`@RunIf(min_cuda_gpus=1)`), a test class whose `setUp` calls `self.skipTest(...)` without CUDA, and
      a test file that imports a compiled CUDA-only extension at top level (`import fused_norm_cuda`).
    - GPU-index and CUDA-type checks: `if device >= 0:`, `if device_id != -1:`, `if x.get_device() > -1:`,
      `if isinstance(x, torch.cuda.FloatTensor):`, `if x.type() == 'torch.cuda.HalfTensor':`; loops over
      the GPUs (`for i in range(torch.cuda.device_count()):`); a name that holds None or a CUDA-only
      object (`if self.stream is not None:` after `self.stream = torch.cuda.Stream()`).
    - Flags from run-time sources: `use_cuda = args.cuda`, `USE_GPU = os.environ.get('USE_GPU') == '1'`,
      `if cfg.use_gpu:`, `from config import USE_CUDA`, a flag that is re-bound
      (`use_gpu = '--gpu' in sys.argv` under `if __name__ == '__main__':`), a parameter that some call
      passes (`one_hot(i, n, cuda=args.cuda)`) or whose default is not a literal.
    - Dead code: a branch that a proved constant never takes, e.g. `if USE_CUDA:` after
      `USE_CUDA = False` (bound to nothing else), or `if cuda:` in `def one_hot(idx, size, cuda=False)`
      that no call passes `cuda`.
    - The body of a method named `cuda`, e.g. `def cuda(self, device=None):` (it implements the API).
    - Functions of the `torch.cuda` module such as `torch.cuda.manual_seed(0)`: not a `.cuda()` method call.
    - Functions merely named `cuda`: `cuda(x)`, `utils.cuda(x)` on an imported module.
    - Text in strings and comments: `"x.cuda()"`.

    ## References
    - [Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    - [CUDA semantics: device-agnostic code](https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code)
    """

    code = "DL001"
    name = "cuda-call"
    message = "`.cuda()` hard-codes the CUDA device; use `.to(device)`"

    VALID = (
        "import torch\nif torch.cuda.is_available():\n    x = x.cuda()\n",
        "import torch\ndef train(x):\n    return x.cuda()\nif torch.cuda.is_available():\n    train(torch.ones(1))\n",
        "x = x.cuda() if use_cuda else x\n",
        "args.cuda and x.cuda()\n",
        "import torch\nif not torch.cuda.is_available():\n    pass\nelse:\n    x.cuda()\n",
        "import torch\ndef f(x):\n    if not torch.cuda.is_available():\n        return x\n    return x.cuda()\n",
        'import torch.distributed as dist\ndist.init_process_group(backend="nccl")\n'
        "def reduce(t):\n    if not dist.is_initialized(): return t\n    return t.cuda()\n",
        "import torch, unittest\nclass T(unittest.TestCase):\n"
        "    @unittest.skipIf(not torch.cuda.is_available(), 'no cuda')\n"
        "    def test(self):\n        x.cuda()\n",
        "import pytest, torch\npytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "def test():\n    x.cuda()\n",
        "class M:\n    def cuda(self, device=None):\n        return super().cuda(device)\n",
        "import pytest, torch\ngpu_only = pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "@gpu_only\ndef test():\n    y = torch.ones(2).cuda()\n",
        "from helpers import skip_if_no_cuda\n@skip_if_no_cuda\ndef test(x):\n    y = x.cuda()\n",
        "from helpers import needs_gpu\n@needs_gpu\ndef test(x):\n    y = x.cuda()\n",
        "from tests.helpers import RunIf\n@RunIf(min_cuda_gpus=1)\ndef test(x):\n    y = x.cuda()\n",
        "import torch, unittest\nclass T(unittest.TestCase):\n    def setUp(self):\n"
        "        if not torch.cuda.is_available():\n            self.skipTest('gpu')\n"
        "    def test(self):\n        y = torch.ones(2).cuda()\n",
        "import torch\nimport fused_norm_cuda\ndef test_norm():\n    y = torch.ones(2).cuda()\n"
        "    fused_norm_cuda.forward(y)\n",
        "def f(x, device):\n    if device >= 0:\n        y = x.cuda()\n    return x\n",
        "def f(x, device_id):\n    if device_id != -1:\n        y = x.cuda()\n    return x\n",
        "def f(x, w):\n    if x.get_device() > -1:\n        v = w.cuda()\n    return w\n",
        "import torch\ndef f(x, w):\n    if isinstance(x, torch.cuda.FloatTensor):\n        v = w.cuda()\n",
        "def f(x, w):\n    if x.type() == 'torch.cuda.HalfTensor':\n        v = w.cuda()\n",
        "import torch\nfor i in range(torch.cuda.device_count()):\n    y = torch.ones(2).cuda()\n",
        "import torch\nclass E:\n    def __init__(self):\n        self.stream = None\n"
        "    def start(self):\n        self.stream = torch.cuda.Stream()\n"
        "    def step(self, x):\n        if self.stream is not None:\n            y = x.cuda()\n",
        "import torch\ntorch.cuda.manual_seed(0)\n",
        "def cuda(x):\n    return x\ny = cuda(x)\n",
        "import utils\ny = utils.cuda(x)\n",
        's = "x.cuda()"  # x.cuda()\n',
        "import torch\nuse_cuda = torch.cuda.is_available()\nif use_cuda:\n    model.cuda()\n",
        "if args.gpu is not None:\n    model = model.cuda(args.gpu)\n",
        "import torch\nassert torch.cuda.is_available()\nx.cuda()\n",
        'import os, sys, torch\ndef setup_gpu(rank):\n    if "RANK" in os.environ:\n        pass\n'
        '    elif not torch.cuda.is_available():\n        sys.exit("needs a GPU")\n'
        '    torch.cuda.set_device(rank)\ndef main():\n    setup_gpu(0)\n    return x.cuda()\n',
        'import sys, torch\ndef setup_gpu():\n    if not torch.cuda.is_available(): sys.exit("needs a GPU")\n'
        'setup_gpu()\nx = x.cuda()\n',
        "if device.type == 'cuda':\n    x.cuda()\n",
        "if not args.no_cuda:\n    x = x.cuda()\n",
        "import torch\nif not torch.cuda.is_available():\n    raise SystemExit('needs a GPU')\nx.cuda()\n",
        "import sys, torch\nif not torch.cuda.is_available():\n    sys.exit(0)\nx.cuda()\n",
        "import pytest, torch\ndef test():\n    if not torch.cuda.is_available():\n        pytest.skip('gpu')\n"
        "    x.cuda()\n",
        "import torch, unittest\nclass T(unittest.TestCase):\n    def test(self):\n"
        "        if not torch.cuda.is_available():\n            self.skipTest('gpu')\n        x.cuda()\n",
        "@requires_cuda\ndef test():\n    x.cuda()\n",
        "import pytest\n@pytest.mark.run_only_on('GPU')\ndef test(model):\n    model = model.cuda()\n",
        "import pytest, torch\n@pytest.mark.skipif(\n    torch.__version__ == 'parrots' and not torch.cuda.is_available(),\n"
        "    reason='parrots requires CUDA')\ndef test_pool(x):\n    if torch.__version__ == 'parrots':\n"
        "        x = x.cuda()\n",
        "import os, sys, torch\nuse_cuda = args.cuda\nif use_cuda:\n    x = x.cuda()\n"
        "USE_GPU = os.environ.get('USE_GPU') == '1'\nif USE_GPU:\n    y = y.cuda()\n"
        "if cfg.use_gpu:\n    z = z.cuda()\n",
        "from config import USE_CUDA\nif USE_CUDA:\n    x = x.cuda()\n",
        "import sys\nuse_gpu = True\nif __name__ == '__main__':\n    use_gpu = '--gpu' in sys.argv\n"
        "def f(x):\n    return x.cuda() if use_gpu else x\n",
        "import torch\ndef one_hot(idx, size, cuda=True):\n    v = torch.zeros(1, size)\n"
        "    if cuda: v = v.cuda()\n    return v\nv = one_hot(i, n, cuda=args.cuda)\n",
        "import torch\ndef f(x, cuda=torch.cuda.is_available()):\n    return x.cuda() if cuda else x\n",
        "import torch\nUSE_CUDA = False\nx = torch.zeros(3)\nif USE_CUDA:\n    x = x.cuda()\n",
        "import torch\ndef one_hot(idx, size, cuda=False):\n    v = torch.zeros(1, size)\n"
        "    if cuda: v = v.cuda()\n    return v\nv = one_hot(i, n)\n",
    )
    INVALID = (
        Invalid(  # a constant is no guard
            "import torch\nUSE_CUDA = True\nx = torch.zeros(3)\nif USE_CUDA:\n    x = x.cuda()\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "USE_CUDA = True\nx = torch.zeros(3)\nif USE_CUDA:\n    x = x.to(device)\n",
        ),
        Invalid(  # nothing passes `cuda`: its default decides
            "import torch\ndef one_hot(idx, size, cuda=True):\n    v = torch.zeros(1, size)\n"
            "    if cuda: v = v.cuda()\n    return v\nrows = [one_hot(i, 10) for i in range(3)]\n",
        ),
        Invalid(
            "import torch\nx = torch.zeros(3).cuda()\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "x = torch.zeros(3).to(device)\n",
        ),
        Invalid(
            "import torch as th\nmodel = th.nn.Linear(2, 2).cuda()\n",
            fixed='import torch as th\n\ndevice = th.device("cuda" if th.cuda.is_available() else "cpu")\n'
            "model = th.nn.Linear(2, 2).to(device)\n",
        ),
        Invalid(  # a caller may pass the CPU, where `.cuda()` used the GPU
            "import torch\ndef f(x, device):\n    return x.cuda(non_blocking=True)\n",
            fixed="import torch\ndef f(x, device):\n    return x.to(device, non_blocking=True)\n",
            unsafe=True,
        ),
        Invalid("x = x.cuda(0)\n", fixed="x = x.cuda(0)\n"),
        Invalid(
            "import pytest, torch\n@pytest.mark.skipif(big and not torch.cuda.is_available(), reason='gpu')\n"
            "def test(x):\n    if small:\n        x = x.cuda()\n    return x.cuda() if big else x\n",
            count=1,
        ),
        Invalid(
            "import torch\ndef f(x, device):\n    return x.cuda(non_blocking=True, device=2)\n",
            fixed="import torch\ndef f(x, device):\n    return x.to(device, non_blocking=True)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef f(x, device):\n    return x.cuda(1, True)\n",
            fixed="import torch\ndef f(x, device):\n    return x.to(device, non_blocking=True)\n",
            unsafe=True,
        ),
        Invalid("import torch\ndef f(x, local_rank):\n    return x.cuda(local_rank)\n",
                fixed="import torch\ndef f(x, local_rank):\n    return x.cuda(local_rank)\n", unsafe=True),
        Invalid(
            "import torch\nx = x.cuda(device=1)\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "x = x.to(device)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nclass Net(torch.nn.Module):\n    def cuda(self, device=None):\n"
            "        self.mask = self.mask.cuda(device)\n        return super().cuda(device)\n"
            "net = Net().cuda()\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "class Net(torch.nn.Module):\n    def cuda(self, device=None):\n"
            "        self.mask = self.mask.cuda(device)\n        return super().cuda(device)\n"
            "net = Net().to(device)\n",
            unsafe=True,
        ),
        Invalid("import torch.nn as nn\nmodel = nn.DataParallel(model).cuda()\n"),
        Invalid("import torch\nif torch.cuda.is_available() or force:\n    x.cuda()\n"),
        Invalid("device = 'cuda'\ny = x.cuda()\n", fixed="device = 'cuda'\ny = x.cuda()\n"),
        Invalid("import torch\ndef f(x, cpu):\n    if cpu:\n        device = torch.device('cpu')\n    return x.cuda()\n",
                fixed="import torch\ndef f(x, cpu):\n    if cpu:\n        device = torch.device('cpu')\n    return x.cuda()\n"),
        # a device derived from the code at hand comes before a definition: `y` lives on the GPU here
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    y = x.cuda()\n    return torch.ones(3).cuda() + y\n",
            fixed="import torch\ndef f(x: torch.Tensor):\n    device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n"
            "    y = x.to(device)\n    return torch.ones(3).to(y.device) + y\n",
            count=2,
        ),
        Invalid(
            "import torch\ndef build():\n    class R:\n        def __init__(self):\n"
            "            self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "        def step(self, x):\n            return x.cuda()\n    return R()\n",
            fixed="import torch\ndef build():\n    class R:\n        def __init__(self):\n"
            "            self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "        def step(self, x):\n            return x.to(self.device)\n    return R()\n",
        ),
        # a class another file may subclass (and set `self.device` to the CPU): a definition instead
        Invalid(
            "import torch\nclass R:\n    def __init__(self):\n        self.device = torch.device('cuda')\n"
            "    def step(self, x):\n        return x.cuda()\n",
            fixed="import torch\nclass R:\n    def __init__(self):\n        self.device = torch.device('cuda')\n"
            "    def step(self, x):\n        device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n"
            "        return x.to(device)\n",
        ),
        # `y` went back to the CPU: no `y.device`, a definition instead
        Invalid(
            "import torch\ndef f(x):\n    y = x.cpu()\n    return torch.ones(3).cuda() + y\n",
            fixed="import torch\ndef f(x):\n    y = x.cpu()\n"
            "    device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n"
            "    return torch.ones(3).to(device) + y\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return
        # Cheapest first: the guard logic needs no scope analysis.
        if self._inside_cuda_method(node) or self.ctx.guards.is_guarded(node):
            return
        if self.ctx.is_imported_module(func.value):
            return
        self.report(node, fix=self._fix(node), start_node=func.attr)

    def _cuda_override(self, receiver: cst.BaseExpression) -> str | None:
        """Where a `cuda()` that does more than `return super().cuda(...)` is defined that the call may
        reach: in a class of this file, or in the receiver's project class (imported from another
        file, or a class here built on one, devlint.analysis.project); None if nowhere."""
        if any(f.name.value == "cuda" and isinstance(self.ctx.parent(self.ctx.parent(f)), cst.ClassDef)
               and not _only_calls_super(f) for f in self.ctx.nodes(cst.FunctionDef)):
            return "this file defines a `cuda()` override that `.to()` would skip"
        if self.ctx.kinds.overrides_cuda(receiver):
            return "its class, from another file of the project, overrides `cuda()`, which `.to()` would skip"
        return None

    def _inside_cuda_method(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, cst.FunctionDef) and a.name.value == "cuda" for a in self.ctx.ancestors(node))

    def _fix(self, call: cst.Call):
        title = "Replace `.cuda()` with `.to(device)`"
        if any(arg.star for arg in call.args):
            return self.display_only(title)
        reference, caveat = device_source(self.ctx, call, call), None
        if reference is None:
            unproven = unproven_reference(self.ctx, call)
            if unproven is None:
                return self.display_only(f"{title} ({device_failure(self.ctx, call)})")
            reference, caveat = (unproven[0], False), unproven[1]
        device_name, needs_definition = reference
        if device_name != self.ctx.options.device_name and "." in device_name:
            title = f"Replace `.cuda()` with `.to({device_name})`"
        index = find_arg(call, "device", 0)
        if index is not None and not is_none(index.value) and not isinstance(index.value, cst.Integer):
            # `.cuda(local_rank)`: each process's own GPU; `.to(device)` would put them all on one
            # (and would drop whatever the expression does)
            return self.display_only(f"{title} (the device index is computed at run time: "
                                     "`.to(device)` would drop the GPU it selects)")
        non_blocking = find_arg(call, "non_blocking", 1)
        device_arg = cst.Arg(cst.parse_expression(device_name))
        args = []
        for arg in call.args:
            if arg is index and arg.keyword is None:
                args.append(arg.with_changes(value=device_arg.value))  # keeps its comments and layout
            elif arg is index:
                continue  # `device=k` may follow other keywords; the device goes first
            elif arg is non_blocking and arg.keyword is None:
                args.append(arg.with_changes(keyword=cst.Name("non_blocking"), equal=_EQUAL))
            else:
                args.append(arg)
        if index is not None and index.keyword is not None and call.args[-1] is index and args:
            args[-1] = args[-1].with_changes(comma=index.comma)  # the dropped argument was last
        if index is None or index.keyword is not None:
            args.insert(0, device_arg)
        new_call = call.with_changes(func=call.func.with_changes(attr=cst.Name("to")), args=args)
        unsafe = index is not None and not is_none(index.value)
        if unsafe:
            title += " (drops the device index)"
        elif caveat is not None:
            unsafe = True
            title += f" ({caveat})"
        elif self.ctx.kinds.of(call.func.value) is not TENSOR and (override := self._cuda_override(call.func.value)):
            # `.to(device)` does not call a class's own `cuda()`, which may move what `Module.to` does not
            # (a plain tensor attribute): on the GPU the program then mixes devices (seen on an H100).
            unsafe = True
            title += f" ({override})"
        applicability = Applicability.UNSAFE if unsafe else Applicability.SAFE
        return self.fix(title, applicability, self.replace(call, self.ctx.code(new_call, call)),
                        needs_device=needs_definition)


def _only_calls_super(function: cst.FunctionDef) -> bool:
    """`def cuda(self, device=None): return super().cuda(device)`, with at most a docstring or `pass`."""
    suite = function.body
    lines = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]  # a one-line `def ...: ...`
    if not all(isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) for line in lines):
        return False
    statements = [small for line in lines for small in line.body]
    meaningful = [s for s in statements if not (isinstance(s, cst.Pass) or isinstance(s, cst.Expr)
                                                 and isinstance(s.value, (cst.SimpleString, cst.ConcatenatedString)))]
    return len(meaningful) == 1 and isinstance(meaningful[0], cst.Return) and _is_super_cuda(meaningful[0].value)


def _is_super_cuda(value) -> bool:
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "cuda"
            and isinstance(value.func.value, cst.Call) and isinstance(value.func.value.func, cst.Name)
            and value.func.value.func.value == "super")
