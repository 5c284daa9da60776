from __future__ import annotations

import libcst as cst

from devlint.context import target_names
from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.cache_folders import in_cpu_cache_folder
from devlint.analysis.device import device_failure, device_reference, unproven_reference
from devlint.analysis.kinds import MODULE
from devlint.analysis.loaded_data import in_dataset, names_data
from devlint.analysis.placement import CPU, DEVICE, KEEPING_METHODS, LOADERS, placement
from devlint.analysis.receivers import doubt
from devlint.analysis.round_trip import written_by_this_run
from devlint.syntax import (dotted_name, find_arg, has_double_star_args, has_star_args, is_none, name_words,
                            string_value, walk, with_keyword)

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
    - A file whose every writer found wrote CPU data (values the placement fact puts on the CPU, or no tensors at all:
      strings, numbers, PIL images, containers of those not filled later with other values, the result of a function
      annotated `-> str` (or another tensor-free type) or whose every return is a string), named by the same string, the
      same binding of a name in its scope, or the same expression of those (`tmp_path / "t.pt"`, `os.path.join(tmp_path,
      "m.pt")`, `str(tmp_path / "t.pt")`), also over `self` attributes set only in `__init__` (or properties returning
      such a path) in a class that writes the file (`os.path.join(self.root, "obj.pt")`), and a re-bound name by the
      binding a read certainly sees. The writers followed:
      - `torch.save` in the same file (or notebook): `torch.save(model.state_dict(), "m.pt")` of a model
        built and kept on the CPU, then `torch.load("m.pt")`; also an instance of a class of the file or
        the project that moves nothing to a device, built from CPU values: `torch.save(norm, "norm.pt")`;
      - a function of the file or the project that saves its path parameter: `save_vocab(words, "vocab.pt")` where
        `save_vocab` does `torch.save(words, path)` and `words` is a list of strings (or writes the path with nothing
        but the bytes of an `io.BytesIO()` that `torch.save` wrote);
      - a pytest fixture of the file (or of a conftest.py from the test's folder up to the project root)
        that returns or yields a path it saved CPU data to, which the test receives as its parameter:
        `def test_restores(weights):` with a fixture `weights` that ends `torch.save(model.state_dict(),
        path)` and `return path`.
      A save of a value that went to the device (moved by .cuda() or .to(...) to anything but the CPU, a
      model moved in place, or passed where it may be) or of unknown place leaves the load flagged, and
      so does a path that differs or cannot be told, another call that may write it (a call named like a
      writer, such as save_checkpoint or fit, or an open for writing, unless it calls a function of the file
      that only loads that path: `load_checkpoint(p)` doing `torch.load(p)`), and a parameter pytest may
      parametrize. A notebook sees the project as a script in its folder does (the classes of its sibling modules).
    - A file this run wrote before loading it, whatever it holds: `torch.save(model.state_dict(), p)` then
      `torch.load(p)`, or `torch.jit.save(m, "m.pt")` then `torch.jit.load("m.pt")`, the save an earlier statement of a
      block that holds the load in the same function or module body, so that it runs first on every path (not in a
      branch, nor in a loop body the load is after); a name bound again after the load (`path = other` next) still
      names the saved file there. Also a save that the first turn of a `for ... in range(...)` loop before the load
      makes: a statement of the loop body, or the best-so-far save `if score > best:` with `best` started at an
      infinity every score beats (`-math.inf`, `float("inf")` for a loss); a run of no epoch, or of NaN scores only,
      is taken as outside the program's use. Not at a notebook's top level, where a reader skips the training cell
      to load a checkpoint from elsewhere. A save under any other condition stays flagged. Every device the saved tensors name exists in this process. Also a
      cache of one function, `if os.path.exists(f):` with `return torch.load(f)`, where every writer of `f` is a
      `torch.save(ids, f)` in that function of CPU data or of a tokenizer's `return_tensors="pt"` output never moved
      (built on the CPU): the file can only come from an earlier run of that code. A path re-bound between, or another
      call that may bring the file from elsewhere (a copy, a download, an open for writing), leaves the load flagged.
    - A file of a cache folder, `torch.load(os.path.join(folder, f"{k}.pt"))`, whose every possible writer of that name
      pattern in the folder is a `torch.save` of CPU data (through containers: `d[k].append(t[k])`, `torch.cat(v)`, a
      tokenizer's output) and that nothing copies or downloads into (a name from a listing has no pattern).
      Also a file of a listing, `list(Path(d).glob("*--*--words.pt"))`, whose pattern the template of a CPU-data save there takes
      in (`d + "/{m}--{t}--words.pt".format(...)`, an f-string, % or +), every save that may match saving CPU data too
      (`args.d` of a function the file passes its `args` to is one folder; a download or archive brings no file of the scheme).
      Also the path parameter of a function that no other file can call (nested, named `_...`, or in a notebook)
      whose every call passes such a file: `load_checkpoint("m.pt")` after `torch.save(state, "m.pt")`.
    - A file in a folder made empty this run (pytest's tmp_path/tmpdir, tmp_path_factory.mktemp(), tempfile's mkdtemp(),
      TemporaryDirectory(), a fixture of those): `torch.load(tmp_path / "m.pt")` after `trainer.fit(tmp_path)`: its writer
      ran here. Not a path that may leave it, gettempdir(), a folder of unknown origin, nor a folder copied or downloaded into.
      Also a file that an object built in the same function on such a folder names by an attribute or a method
      (`saver = Saver(folder, "run")`, then `torch.load(saver.last_checkpoint)`), unless it also gets a place or a
      download, or is re-bound or redirected; and a private helper's folder parameter that every direct call in the file
      fills with such a folder (`_check(tmp_path / "1", engine)`), or every hand-off of the helper to a launcher with a
      literal `args=` tuple: `torch.multiprocessing.spawn(_check, args=(tmp_path / "1",), nprocs=2)` (a spawn passes
      the index first), `threading.Thread(target=_check, args=(tmp_path,))`.

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
        # a function that writes its path with the bytes of a buffer torch.save wrote
        "import io\nimport torch\ndef save_words(words, path):\n    buffer = io.BytesIO()\n    torch.save(words, buffer)\n"
        "    with open(path, \"wb\") as f:\n        f.write(buffer.getvalue())\n\nsave_words([\"a\"], \"w.pt\")\n"
        "words = torch.load(\"w.pt\")\n",
        # a path under an attribute of the instance, written by the class from a function's string result
        "import os\nimport torch\ndef describe(obj) -> str:\n    return str(obj)\n\nclass Cache:\n    def __init__(self, root):\n"
        "        self.root = root\n\n    def changed(self, obj):\n"
        "        return torch.load(os.path.join(self.root, \"obj.pt\")) != describe(obj)\n\n"
        "    def write(self, obj):\n        torch.save(describe(obj), os.path.join(self.root, \"obj.pt\"))\n",
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
        # a cache folder written with CPU data under the loaded name pattern
        "import os\nimport torch\ndef tokens(tokenizer, folder, texts, keys):\n"
        "    if all(os.path.exists(os.path.join(folder, f\"{k}.pt\")) for k in keys):\n"
        "        return {k: torch.load(os.path.join(folder, f\"{k}.pt\")) for k in keys}\n    d = {k: [] for k in keys}\n"
        "    for text in texts:\n        t = tokenizer(text, return_tensors=\"pt\")\n        for k in keys:\n"
        "            d[k].append(t[k])\n    for k, v in d.items():\n        torch.save(torch.cat(v), os.path.join(folder, f\"{k}.pt\"))\n",
        "import torch\ndef test_fit(trainer, tmp_path):\n    trainer.fit(tmp_path)\n    torch.load(tmp_path / \"m.pt\")\n",
        # a file that an object built on a fresh folder names, in a helper every call gives a fresh folder
        "import torch\ndef _check(folder, engine):\n    saver = Saver(folder, \"run\")\n"
        "    saver(engine, {\"model\": torch.nn.Linear(2, 2)})\n    torch.load(saver.last_checkpoint)\n\n"
        "def test_saves(tmp_path, engine):\n    _check(tmp_path / \"1\", engine)\n",
        # the same helper run by a launcher that gets it with its arguments (a spawn passes the index first)
        "import torch\ndef _check(index, folder):\n    saver = Saver(folder, \"run\")\n    saver(engine, {\"model\": torch.nn.Linear(2, 2)})\n"
        "    torch.load(saver.last_checkpoint)\n\ndef test_saves(tmp_path):\n    torch.multiprocessing.spawn(_check, args=(tmp_path / \"1\",), nprocs=2)\n",
        "import threading\nimport torch\ndef _check(folder):\n    train(folder)\n    torch.load(folder / \"last.pt\")\n\n"
        "def test_saves(tmp_path):\n    threading.Thread(target=_check, args=(tmp_path,)).start()\n",
        # a path name bound again after the load
        "import torch\ndef export(model, home):\n    path = home + \"/model.pt\"\n    torch.save(model, path)\n"
        "    model = torch.load(path, weights_only=False)\n    other = home + \"/package.pt\"\n    path = other\n"
        "    return model, path\n",
        # the first turn of a counted loop saves: a best-so-far score from an infinity every score beats
        "import math\nimport torch\ndef train(model, epochs):\n    best = -math.inf\n    for epoch in range(epochs):\n"
        "        score = evaluate(model)\n        if score > best:\n            best = score\n"
        "            torch.save(model.state_dict(), \"best.pt\")\n    model.load_state_dict(torch.load(\"best.pt\"))\n",
        "import torch\ndef fit(model, epochs):\n    best_loss = float(\"inf\")\n    for _ in range(epochs):\n"
        "        loss = validate(model)\n        if loss < best_loss:\n            best_loss = loss\n"
        "            torch.save(model, \"best.pt\")\n    return torch.load(\"best.pt\", weights_only=False)\n",
        "import time\nfrom pathlib import Path\nimport torch\ndef words(d, texts):\n    found = list(Path(d).glob(\"*--*--words.pt\"))\n    if found:\n"
        "        return torch.load(found[0])\n    torch.save([str(t) for t in texts], d + \"/{m}--{t}--words.pt\".format(m=1, t=time.time()))\n",
        # the same, the folder of `args` passed on to the writer, with an archive unpacked there
        "import zipfile\nfrom pathlib import Path\nimport torch\ndef fetch(args):\n    zipfile.ZipFile(\"c.zip\").extractall(args.d)\n"
        "def build(args, texts):\n    torch.save([str(t) for t in texts], args.d + \"/{m}--words.pt\".format(m=1))\n"
        "def words(args, texts):\n    fetch(args)\n    found = list(Path(args.d).glob(\"*--words.pt\"))\n"
        "    return torch.load(found[0]) if found else build(args, texts)\n",
        # a function that only loads its path parameter, every call of which passes a file saved before it
        "import torch\ndef _load_checkpoint(p):\n    return torch.load(p)\n\ndef restore(model, state):\n"
        "    torch.save(state, \"m.pt\")\n    model.load_state_dict(_load_checkpoint(\"m.pt\"))\n",
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
        # Cheapest first: syntax, what the name refers to through the file's imports, and only then
        # the guard logic, which may ask how the whole project calls a function (the project index).
        # Asked first, it made torch's nn/functional.py read and summarise 91 other files of the
        # project, for calls that load nothing.
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
        if not (self.ctx.qualified_names(func) & LOADERS):
            return
        if self.ctx.guards.is_guarded(node):
            return
        path = find_arg(node, "f", 0)
        if path is not None and placement(self.ctx).saved_on_cpu(path.value):
            return  # this file wrote it from values on the CPU: it loads anywhere
        if path is not None and written_by_this_run(self.ctx, node, path.value):
            return  # written by this run (before, a CPU cache, in a folder made this run): its devices exist here
        if path is not None and in_cpu_cache_folder(self.ctx, node, path.value):
            return  # a file of a cache folder whose every writer saves CPU data
        self.report(node, fix=self._fix(node, given))

    def _fix(self, call: cst.Call, given: cst.Arg | None):
        keeps = self._keeping_values(call)
        choice = self.ctx.options.map_location
        if choice == "auto":
            # (data: a vocabulary, a cache, an expected output rather than a checkpoint)
            choice = "cpu" if "cpu" in keeps or names_data(self.ctx, call) or self._data_evidence else "device"
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
            edit = self.replace(call, self.ctx.code(with_keyword(call, "map_location", value), call))
        return self.fix(title, applicability, edit, needs_device=needs_definition)

    # -- which map_location keeps what the program does --------------------------------------------
    def _keeping_values(self, call: cst.Call) -> frozenset:
        """The map_location values ("cpu", "device") under which every use of the loaded value behaves as
        it did without one (each tensor restored where it was saved). Sets `_data_evidence` when a use
        treats it as data (compared, turned into numpy, called on CPU inputs)."""
        self._data_evidence = False
        self._doubts: list[str] = []
        if in_dataset(self.ctx, call):
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
        if any(c.func.attr.value in {"eval", "train", "parameters", "named_parameters", "modules", "children",
                                     "state_dict"} for c in chain[:-1]):
            return True
        return self._used_as_module(statement, name)

    def _used_as_module(self, statement: cst.CSTNode, name: str) -> bool:
        for later in self._following(statement):
            for node in (n for n, _ in walk(later) if isinstance(n, cst.Name) and n.value == name):
                parent = self.ctx.parent(node)
                if isinstance(parent, cst.Call) and parent.func is node or isinstance(parent, cst.Attribute) and (
                        parent.attr.value in ("eval", "train", "parameters", "named_parameters", "modules", "children",
                                              "forward")):
                    return True
        return False
