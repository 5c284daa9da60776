from __future__ import annotations

import re

import libcst as cst

from devlint.context import target_names
from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.device import device_failure, device_reference, unproven_reference
from devlint.analysis.kinds import MODULE
from devlint.analysis.placement import CPU, DEVICE, KEEPING_METHODS, LOADERS, placement
from devlint.analysis.receivers import doubt
from devlint.analysis.round_trip import written_by_this_run
from devlint.syntax import (dotted_name, find_arg, has_double_star_args, has_star_args, is_none, last_component,
                            name_words, string_value, walk)

BOTH, CPU_ONLY, NEITHER = frozenset({"cpu", "device"}), frozenset({"cpu"}), frozenset()
HOST_ONLY_METHODS = frozenset({"numpy"})
HOST_METHODS = frozenset({"tolist", "item", "keys", "size", "dim", "numel", "__len__"})
HOST_FUNCTIONS = frozenset({"len", "int", "float", "bool", "isinstance", "type"})
COMPARISONS = frozenset({"equal", "allclose", "assert_close", "assert_allclose", "assertEqual",
                         "isclose", "assert_equal", "assert_array_equal", "assert_array_almost_equal"})
# Checkpoint keys that hold numbers (epochs, steps, scores), read as bookkeeping.
BOOKKEEPING_WORDS = frozenset({"epoch", "epochs", "step", "steps", "iteration", "iter", "iters", "best", "acc",
                               "accuracy", "loss", "lr", "score", "metric", "metrics", "args", "config", "cfg",
                               "version", "arch", "opt", "hparams", "hyper", "params"})
DATA_WORDS = frozenset({"vocab", "vocabulary", "voc", "cache", "cached", "data", "dataset", "feature", "features",
                        "feats", "sample", "samples", "label", "labels", "target", "targets", "token", "tokens",
                        "tokenizer", "dictionary", "examples", "example", "expected", "reference", "golden", "stats",
                        "statistics", "mean", "std", "vectors", "splits", "image", "images", "mask", "masks"})


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
    Adds `map_location` (or replaces an explicit `None`). Without one, `torch.load` restores each
    tensor where it was saved, so no single value keeps what every program does: `"cpu"` moves
    GPU-saved tensors off the GPU, `device` moves CPU-saved ones onto it. The fix follows the loaded
    value (directly, through a name it is bound to, and through string keys such as `ckpt["model"]`)
    and is **safe**, writing `map_location="cpu"`, only when the value's device provably does not
    matter:
    - it goes into a `load_state_dict(...)` that copies it into tensors the receiver owns, where they
      already live: an `nn.Module`'s without `assign=True`, a `torch.optim` optimizer's or LR scheduler's,
      a `GradScaler`'s (the receiver's kind comes from its provenance: `model = Net()`,
      `opt = torch.optim.SGD(...)`, a parameter annotated `nn.Module` or `torch.optim.Optimizer`);
    - it is moved explicitly right away: `torch.load(p).to(device)`, `torch.load(p).cuda()`, or
      `model = torch.load(p)` followed by `model.to(device)` / `model.cuda()` of a model used as one;
    - it is read as bookkeeping (`ckpt["epoch"]`, `ckpt["best_acc"]`: numbers, and a 0-dim CPU tensor
      mixes with CUDA ones) or turned into Python values (`.tolist()`, `.item()`, `len(...)`);
    - it is used as CPU data, where the program ran on a GPU only if the file was saved from the CPU:
      `.numpy()`, `np.asarray(...)`, compared with values that live on the CPU (`torch.equal(expected,
      out)`, `(out == expected).all()`, `torch.testing.assert_close`), or fed to a model that lives on
      the CPU;
    - it is loaded in data-loading code (a `Dataset` class, `__getitem__`), whose tensors go to
      DataLoader workers;
    - it is not used at all (a local name never read, a thrown-away result).

    Everywhere else (a whole model or a tensor used further, a vocabulary or cache object, a name kept
    at module level) the fix is **unsafe**. So is a `load_state_dict` that may keep the loaded tensors as
    they are, whose title says why: `assign=True` (or an `assign=` that is not a literal `False`) makes them
    the module's parameters, on the CPU with `"cpu"`; a class that is not an `nn.Module` (an EMA helper
    that stores the dict) or a receiver of unknown kind may keep them on the CPU while the rest of the
    program is on the GPU (seen on an H200: "Expected all tensors to be on the same device"). An unsafe
    fix writes `map_location="cpu"` where the value looks like data (a use as CPU data on one path,
    compared, a whole model called on CPU inputs, whose forward may move them to its weights; a name or
    path such as `vocab`, `cache`, `features`, `expected`), otherwise
    `map_location=device`. Where `device` names something that is not a device, the fix is
    **display-only**.

    ## Options
    `--map-location auto|device|cpu` (default `auto`, as above). An explicit `cpu` or `device` always
    writes that value; the fix is safe only where that value keeps behaviour by the cases above
    (`device` keeps it for `load_state_dict`, explicit moves and Python values, not for CPU data,
    bookkeeping keys or data-loading code), else unsafe.

    ## Not flagged
    - Other loaders: `np.load(f)`, `pickle.load(f)`, `json.load(f)`, `yaml.load(f)`, `torchaudio.load(f)`,
      `safetensors.torch.load_file(f)`, `self.load(f)`, a local function named `load`.
    - A call that passes `**kwargs`, as in `torch.load(f, **kwargs)`: it may carry `map_location`.
    - Calls under a CUDA condition, e.g. `if torch.cuda.is_available():` (same guards as DL001).
    - `torch.hub.load_state_dict_from_url(url)`: published weights are normally saved from the CPU.
    - A file whose every writer found wrote CPU data (values the placement fact puts on the CPU, or no
      tensors at all: strings, numbers, PIL images, containers of those not filled later with other
      values), named by the same string, the same binding of a name in its scope, or the same expression
      of those (`tmp_path / "t.pt"`, `os.path.join(tmp_path, "m.pt")`, `str(tmp_path / "t.pt")`). The writers followed:
      - `torch.save` in the same file (or notebook): `torch.save(model.state_dict(), "m.pt")` of a model
        built and kept on the CPU, then `torch.load("m.pt")`; also an instance of a class of the file or
        the project that moves nothing to a device, built from CPU values: `torch.save(norm, "norm.pt")`;
      - a function of the file or the project that saves its path parameter: `save_vocab(words,
        "vocab.pt")` where `save_vocab` does `torch.save(words, path)` and `words` is a list of strings;
      - a pytest fixture of the file (or of a conftest.py from the test's folder up to the project root)
        that returns or yields a path it saved CPU data to, which the test receives as its parameter:
        `def test_restores(weights):` with a fixture `weights` that ends `torch.save(model.state_dict(),
        path)` and `return path`.
      A save of a value that went to the device (moved by .cuda() or .to(...) to anything but the CPU, a
      model moved in place, or passed where it may be) or of unknown place leaves the load flagged, and
      so does a path that differs or cannot be told, another call that may write it (a call named like a
      writer, such as save_checkpoint or fit, or an open for writing), and a parameter pytest may parametrize.
    - A file this run wrote before loading it, whatever it holds: `torch.save(model.state_dict(), p)` then
      `torch.load(p)`, or `torch.jit.save(m, "m.pt")` then `torch.jit.load("m.pt")`, the save an earlier statement of a
      block that holds the load in the same function or module body, so that it runs first on every path (not in a
      branch, nor in a loop body the load is after). Every device the saved tensors name exists in this process. Also a
      cache of one function, `if os.path.exists(f):` with `return torch.load(f)`, where every writer of `f` is a
      `torch.save(ids, f)` in that function of CPU data or of a tokenizer's `return_tensors="pt"` output never moved
      (built on the CPU): the file can only come from an earlier run of that code. A path re-bound between, or another
      call that may bring the file from elsewhere (a copy, a download, an open for writing), leaves the load flagged.
    - A file in a folder made empty this run (pytest's tmp_path/tmpdir, tmp_path_factory.mktemp(), tempfile's mkdtemp(),
      TemporaryDirectory(), a fixture of those): `torch.load(tmp_path / "m.pt")` after `trainer.fit(tmp_path)`: its writer
      ran here. Not a path that may leave it, gettempdir(), a folder of unknown origin, nor a folder copied or downloaded into.

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
        # saved from the CPU in this file: the same literal path, or a name bound once
        'import torch\nmodel = torch.nn.Linear(3, 1)\ntorch.save(model.state_dict(), "m.pt")\n'
        'model.load_state_dict(torch.load("m.pt"))\n',
        "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(2, 1)\n\nnet = Net()\nPATH = 'net.pth'\ntorch.save(net, PATH)\n"
        "net = torch.load(PATH, weights_only=False)\nprint(net(torch.ones(2)))\n",
        # the same binding of a name in one function; an expression of the same names
        "import os\nimport torch\ndef test_save(tmp_path):\n    model = torch.nn.Linear(8, 32)\n"
        "    path = os.path.join(tmp_path, \"m.pt\")\n    torch.save(model, path)\n"
        "    model = torch.load(path, weights_only=False)\n    torch.save(torch.ones(2), tmp_path / \"t.pt\")\n"
        "    print(torch.load(str(tmp_path / \"t.pt\")))\n",
        # an instance of a class that moves nothing, built from CPU values
        "import torch\nclass Normalizer:\n    def __init__(self, n):\n        self.mean = torch.zeros(n)\n\n"
        "norm = Normalizer(3)\ntorch.save(norm, \"norm.pt\")\nnorm = torch.load(\"norm.pt\", weights_only=False)\n",
        # a function that saves its path parameter, called with data that holds no tensor
        "import torch\ndef save_vocab(words, path):\n    torch.save(words, path)\n\n"
        "words = [\"a\", \"b\"]\nsave_vocab(words, \"vocab.pt\")\nvocab = torch.load(\"vocab.pt\")\n",
        # a pytest fixture that returns a path it saved CPU data to
        "import pytest\nimport torch\n@pytest.fixture\ndef weights(tmp_path):\n    model = torch.nn.Linear(2, 2)\n"
        "    path = tmp_path / \"w.pt\"\n    torch.save(model.state_dict(), path)\n    return path\n\n"
        "def test_restores(weights):\n    model = torch.nn.Linear(2, 2)\n"
        "    model.load_state_dict(torch.load(weights))\n",
        # a round trip: saved just before by this run, from wherever the model is
        "import torch\ndef snapshot(model, p):\n    torch.save(model.state_dict(), p)\n"
        "    model.load_state_dict(torch.load(p))\n",
        "import torch\nm = torch.jit.script(torch.nn.Linear(2, 2).cuda())\ntorch.jit.save(m, \"m.pt\")\n"
        "m = torch.jit.load(\"m.pt\")\n",
        # a cache this function writes from a tokenizer's output (CPU tensors)
        "import os\nimport torch\ndef tokens(tokenizer, f, texts):\n    if os.path.exists(f):\n"
        "        return torch.load(f)\n    ids = tokenizer(texts, return_tensors=\"pt\")[\"input_ids\"]\n"
        "    torch.save(ids, f)\n    return ids\n",
        "import torch\ndef test_fit(trainer, tmp_path):\n    trainer.fit(tmp_path)\n    torch.load(tmp_path / \"m.pt\")\n",
    )
    INVALID = (
        Invalid(
            "import torch\nmodel = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load('m.pt'))\n",
            fixed="import torch\nmodel = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load('m.pt', map_location=\"cpu\"))\n",
        ),
        Invalid(
            "import torch as th\nopt = th.optim.SGD(params, lr=0.1)\nstate = th.load(path)\nopt.load_state_dict(state)\n",
            fixed="import torch as th\nopt = th.optim.SGD(params, lr=0.1)\nstate = th.load(path, map_location=\"cpu\")\n"
            "opt.load_state_dict(state)\n",
        ),
        Invalid(
            "import torch\ndef resume(model: torch.nn.Module, path):\n    checkpoint = torch.load(path, weights_only=False)\n"
            "    model.load_state_dict(checkpoint['model'])\n    return checkpoint['epoch']\n",
            fixed="import torch\ndef resume(model: torch.nn.Module, path):\n"
            "    checkpoint = torch.load(path, weights_only=False, map_location=\"cpu\")\n"
            "    model.load_state_dict(checkpoint['model'])\n    return checkpoint['epoch']\n",
        ),
        # moved right after: where it was loaded no longer matters
        Invalid(
            "import torch\ndef restore(path, device):\n    return torch.load(path).to(device)\n",
            fixed="import torch\ndef restore(path, device):\n    return torch.load(path, map_location=\"cpu\").to(device)\n",
        ),
        Invalid(
            "import torch\ndef restore(path, device, x):\n    net = torch.load(path)\n    net.to(device)\n"
            "    return net(x.to(device))\n",
            fixed="import torch\ndef restore(path, device, x):\n    net = torch.load(path, map_location=\"cpu\")\n"
            "    net.to(device)\n    return net(x.to(device))\n",
        ),
        # used as CPU data: the program ran on a GPU only if the file was saved from the CPU
        Invalid(
            "import torch\ndef read_mask(path):\n    return torch.load(path).numpy()\n",
            fixed="import torch\ndef read_mask(path):\n    return torch.load(path, map_location=\"cpu\").numpy()\n",
        ),
        Invalid(
            "import torch\nclass Digits(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.images = torch.load(\n            path\n        )\n",
            fixed="import torch\nclass Digits(torch.utils.data.Dataset):\n    def __init__(self, path):\n"
            "        self.images = torch.load(\n            path,\n            map_location=\"cpu\"\n        )\n",
        ),
        # the device matters: unsafe, with the value that keeps what the name suggests
        Invalid(
            "import torch\ndef restore(path, device):\n    net = torch.load(path)\n    return net\n",
            fixed="import torch\ndef restore(path, device):\n    net = torch.load(path, map_location=device)\n    return net\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef read_vocab(path):\n    vocab = torch.load(path)\n    return vocab\n",
            fixed="import torch\ndef read_vocab(path):\n    vocab = torch.load(path, map_location=\"cpu\")\n    return vocab\n",
            unsafe=True,
        ),
        Invalid(
            "from torch import load as tload\nx = tload(f, map_location=None)\n",
            fixed='import torch\nfrom torch import load as tload\n\n'
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "x = tload(f, map_location=device)\n",
            unsafe=True,
        ),
        Invalid(
            "from torch import jit\nm = jit.load('m.pt')\n",
            fixed='import torch\nfrom torch import jit\n\n'
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "m = jit.load('m.pt', map_location=device)\n",
            unsafe=True,
        ),
        # a receiver that may keep the loaded tensors as they are: unsafe, and the title says why
        Invalid(
            "import torch\nmodel = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load('m.pt'), assign=True)\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "model = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load('m.pt', map_location=device), assign=True)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nclass EMA:\n    def load_state_dict(self, state):\n        self.shadow = state\n\n"
            "ema = EMA()\nema.load_state_dict(torch.load('ema.pt'))\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "class EMA:\n    def load_state_dict(self, state):\n        self.shadow = state\n\n"
            "ema = EMA()\nema.load_state_dict(torch.load('ema.pt', map_location=device))\n",
            unsafe=True,
        ),
        # saved from a model that went to the GPU, loaded where it may come from an earlier run: still flagged
        Invalid(
            "import torch\nmodel = torch.nn.Linear(3, 1).cuda()\nif save:\n    torch.save(model.state_dict(), 'm.pt')\n"
            "model.load_state_dict(torch.load('m.pt'))\n",
            fixed="import torch\nmodel = torch.nn.Linear(3, 1).cuda()\nif save:\n    torch.save(model.state_dict(), 'm.pt')\n"
            "model.load_state_dict(torch.load('m.pt', map_location=\"cpu\"))\n",
        ),
        Invalid("from torch import *\nx = torch.load(f)\n"),
        Invalid("import torch\nx = torch.serialization.load(f, None)\n"),
    )

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
        path = find_arg(node, "f", 0)
        if path is not None and placement(self.ctx).saved_on_cpu(path.value):
            return  # this file wrote it from values on the CPU: it loads anywhere
        if path is not None and written_by_this_run(self.ctx, node, path.value):
            return  # written by this run (before, a CPU cache, in a folder made this run): its devices exist here
        self.report(node, fix=self._fix(node, given))

    def _fix(self, call: cst.Call, given: cst.Arg | None):
        keeps = self._keeping_values(call)
        choice = self.ctx.options.map_location
        if choice == "auto":
            choice = "cpu" if "cpu" in keeps or self._cpu_data(call) else "device"
        applicability = Applicability.SAFE if choice in keeps else Applicability.UNSAFE
        needs_definition = False
        if choice == "cpu":
            value = '"cpu"'
        else:
            # A device not proven to be the run's (a parameter) is fine here: the fix is safe only where
            # `keeps` found that where the load puts the values does not matter, and unsafe anyway otherwise.
            reference = device_reference(self.ctx, call)
            if reference is None and (unproven := unproven_reference(self.ctx, call)) is not None:
                reference = (unproven[0], False)
            if reference is None:
                return self.display_only(f'Add `map_location="cpu"` or a torch.device ({device_failure(self.ctx, call)})')
            value, needs_definition = reference
        title = f"Add `map_location={value}`"
        if applicability is Applicability.UNSAFE and self._doubts:
            title += f" ({self._doubts[0]})"
        if given is not None:
            edit = self.replace(given.value, value)
        else:
            edit = self.replace(call, self.ctx.code(self._with_keyword(call, value), call))
        return self.fix(title, applicability, edit, needs_device=needs_definition)

    # -- which map_location keeps what the program does --------------------------------------------
    def _keeping_values(self, call: cst.Call) -> frozenset:
        """The map_location values ("cpu", "device") under which every use of the loaded value behaves as
        it did without one (each tensor restored where it was saved). Sets `_data_evidence` when a use
        treats it as data (compared, turned into numpy, called on CPU inputs)."""
        self._data_evidence = False
        self._doubts: list[str] = []
        if self._in_dataset(call):
            return CPU_ONLY  # data-loading code hands CPU tensors to DataLoader workers
        keeps = BOTH
        for use in self._uses(call, set()):
            keeps = keeps & use
            if not keeps:
                break
        return keeps

    def _uses(self, expr: cst.CSTNode, seen: set) -> list[frozenset]:
        """For each use of the value of `expr`, the map_location values that keep its behaviour."""
        ctx = self.ctx
        parent = ctx.parent(expr)
        if isinstance(parent, cst.Attribute) and parent.value is expr:
            call = ctx.parent(parent)
            method = parent.attr.value
            if not (isinstance(call, cst.Call) and call.func is parent):
                return [BOTH] if method in ("shape", "dtype", "ndim") else [NEITHER]
            if method in ("cuda", "cpu"):
                return [BOTH]  # moved explicitly: where it was loaded no longer matters
            if method == "to":
                target = placement(ctx).move_target(call)
                if target in (CPU, DEVICE):
                    return [BOTH]
                return self._uses(call, seen) if target is None else [NEITHER]  # (None: a dtype only)
            if method in HOST_ONLY_METHODS:
                self._data_evidence = True
                return [CPU_ONLY]  # `.numpy()` of a tensor not on the CPU raises
            if method in HOST_METHODS:
                return [BOTH]  # the same Python values wherever the tensor is
            if method == "get" and call.args and string_value(call.args[0].value) is not None:
                return self._keyed(call, string_value(call.args[0].value), seen)
            if method in KEEPING_METHODS:
                return self._uses(call, seen)
            return [NEITHER]
        if isinstance(parent, cst.Subscript) and parent.value is expr:
            elements = parent.slice
            key = string_value(elements[0].slice.value) if len(elements) == 1 and isinstance(
                elements[0].slice, cst.Index) else None
            return self._keyed(parent, key, seen) if key is not None else self._uses(parent, seen)
        if isinstance(parent, cst.Arg) and parent.value is expr:
            return [self._as_argument(parent)]
        if isinstance(parent, cst.Call) and parent.func is expr:
            # a whole loaded model called on CPU inputs: saved on the CPU, unless its forward moves its
            # inputs to where its weights are (then "cpu" would run it on the CPU): unsafe, with "cpu"
            inputs = [placement(ctx).of(a.value) for a in parent.args]
            self._data_evidence |= bool(inputs) and all(p is CPU for p in inputs)
            return [NEITHER]
        if isinstance(parent, cst.Comparison):
            return [self._compared(parent, expr)]
        if isinstance(parent, cst.ComparisonTarget) and parent.comparator is expr:
            return [self._compared(ctx.parent(parent), expr)]
        if isinstance(parent, cst.Expr):
            return []  # the value is thrown away
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is expr:
            return self._bound_uses(parent, seen)
        return [NEITHER]

    def _keyed(self, node: cst.CSTNode, key: str, seen: set) -> list[frozenset]:
        """`ckpt["epoch"]`: bookkeeping keys hold numbers (a 0-dim CPU tensor mixes with CUDA ones)."""
        if set(name_words(key)) & BOOKKEEPING_WORDS:
            return [CPU_ONLY]
        return self._uses(node, seen)

    def _as_argument(self, arg: cst.Arg) -> frozenset:
        ctx = self.ctx
        call = ctx.parent(arg)
        if not isinstance(call, cst.Call):
            return NEITHER
        names = ctx.qualified_names(call.func) | {dotted_name(call.func) or ""}
        if (call.args[0] is arg or arg.keyword is not None and arg.keyword.value == "state_dict") and any(
                n.endswith("load_state_dict") for n in names):
            reason = doubt(ctx, call)
            if reason is None:
                return BOTH  # copied into the receiver's own tensors, where they already live
            self._doubts.append(reason)
            return NEITHER
        if any(n.startswith(("numpy.", "np.")) for n in names):
            self._data_evidence = True
            return CPU_ONLY  # numpy converts it: a tensor not on the CPU raises
        if names & HOST_FUNCTIONS:
            return BOTH
        if any(n.rsplit(".", 1)[-1] in COMPARISONS for n in names):
            self._data_evidence = True  # an expected value, compared
            others = [a.value for a in call.args if a is not arg and a.keyword is None]
            if others and all(placement(ctx).of(o) is CPU for o in others):
                return CPU_ONLY  # compared with CPU values: it ran only if the loaded value was on the CPU too
            return NEITHER
        if ctx.kinds.of(call.func) is MODULE and placement(ctx).of(call.func) is CPU:
            return CPU_ONLY  # the input of a model that lives on the CPU
        return NEITHER

    def _compared(self, comparison: cst.Comparison, expr: cst.CSTNode) -> frozenset:
        operands = [comparison.left] + [c.comparator for c in comparison.comparisons]
        if any(isinstance(c.operator, (cst.In, cst.NotIn)) for c in comparison.comparisons):
            return BOTH if expr is not comparison.left else NEITHER  # `"model" in ckpt`
        if any(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in comparison.comparisons):
            return BOTH
        others = [o for o in operands if o is not expr]
        self._data_evidence = True
        if others and all(placement(self.ctx).of(o) is CPU for o in others):
            return CPU_ONLY
        return NEITHER

    def _bound_uses(self, statement: cst.CSTNode, seen: set) -> list[frozenset]:
        """Uses through the name the statement binds (`ckpt = torch.load(p)`)."""
        target = statement.targets[0].target if isinstance(statement, cst.Assign) and len(
            statement.targets) == 1 else getattr(statement, "target", None)
        if not isinstance(target, cst.Name):
            return [NEITHER]  # an attribute or several targets: uses we do not follow
        if target in seen:
            return []
        seen.add(target)
        scope = self.ctx.scope(target)
        if scope is None:
            return [NEITHER]
        if self._moved_next(statement, target.value):
            return [BOTH]
        rebound = self._rebound_after(statement, target.value)
        uses: list[frozenset] = []
        for assignment in scope.assignments[target.value]:
            if assignment.node is not target:
                continue
            if not assignment.references and scope is scope.globals:
                return [NEITHER]  # a module-level name may be read by other modules
            for access in assignment.references:
                position = self.ctx.positions.get(access.node)
                if rebound is not None and position is not None and (position.start.line, position.start.column) > rebound:
                    continue  # after a later `name = ...` in the same block: another value
                uses.extend(self._uses(access.node, seen))
        return uses

    def _rebound_after(self, statement: cst.CSTNode, name: str) -> tuple[int, int] | None:
        """Where the first later statement of the same block that binds `name` ends."""
        for later in self._following(statement):
            if not isinstance(later, cst.SimpleStatementLine):
                break  # (a compound statement may bind it on one path only)
            for small in later.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    if any(n.value == name for t in targets for n in target_names(t)):
                        end = self.ctx.positions[small].end
                        return (end.line, end.column)
        return None

    def _following(self, statement: cst.CSTNode) -> list[cst.CSTNode]:
        line = self.ctx.parent(statement)
        block = self.ctx.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
        body = list(getattr(block, "body", ()))
        index = next((i for i, s in enumerate(body) if s is line), None)
        return [] if index is None else body[index + 1:]

    def _moved_next(self, statement: cst.CSTNode, name: str) -> bool:
        """`model = torch.load(p)` followed by `model.to(device)` / `model.cuda()` (a module, moved in place)."""
        following = self._following(statement)
        if not following or not isinstance(following[0], cst.SimpleStatementLine):
            return False
        small = following[0].body[0]
        if not isinstance(small, cst.Expr):
            return False
        chain = []
        node = small.value
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            chain.append(node)
            node = node.func.value
        if not (isinstance(node, cst.Name) and node.value == name and chain):
            return False
        move = chain[-1]
        method = move.func.attr.value
        if method == "to":
            if placement(self.ctx).move_target(move) not in (CPU, DEVICE):
                return False
        elif method not in ("cuda", "cpu"):
            return False
        # a tensor's `t.to(device)` would be thrown away: only a module (used as one) moves in place
        module_methods = {"eval", "train", "parameters", "named_parameters", "modules", "children", "state_dict"}
        if any(c.func.attr.value in module_methods for c in chain[:-1]):
            return True
        return self._used_as_module(statement, name)

    def _used_as_module(self, statement: cst.CSTNode, name: str) -> bool:
        for later in self._following(statement):
            for node in _names_in(later, name):
                parent = self.ctx.parent(node)
                if isinstance(parent, cst.Call) and parent.func is node:
                    return True
                if isinstance(parent, cst.Attribute) and parent.attr.value in (
                    "eval", "train", "parameters", "named_parameters", "modules", "children", "forward"
                ):
                    return True
        return False

    def _cpu_data(self, call: cst.Call) -> bool:
        """Is the loaded value data (a vocabulary, a cache, an expected output) rather than a checkpoint?"""
        words: set[str] = set()
        parent = self.ctx.parent(call)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            for target in targets:
                last = last_component(target)
                if last:
                    words.update(name_words(last))
        path = find_arg(call, "f", 0)
        if path is not None:
            text = string_value(path.value)
            last = last_component(path.value)
            for part in re.split(r"[^A-Za-z0-9]+", text or last or ""):
                words.update(name_words(part))
        return bool(words & DATA_WORDS) or self._data_evidence

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


def _names_in(root: cst.CSTNode, name: str) -> list[cst.Name]:
    return [node for node, _ in walk(root) if isinstance(node, cst.Name) and node.value == name]


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
