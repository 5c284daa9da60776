"""DL006 leaves old-PyTorch fallbacks alone, and its fixes leave no unused `torch.cuda.amp` import."""

from __future__ import annotations

import ast

import pytest

from tests.helpers import codes, fix

_GRAD = "scaler = torch.cuda.amp.GradScaler()"


def _in(condition: str, branch: str = "if") -> str:
    """The CUDA-only scaler in the `if` branch, or in the `else` branch, of `condition`."""
    if branch == "if":
        return f"import torch\nif {condition}:\n    {_GRAD}\n"
    return f"import torch\nif {condition}:\n    scaler = torch.amp.GradScaler('cuda')\nelse:\n    {_GRAD}\n"


FALLBACKS = {
    "string <": _in('torch.__version__ < "2.4"'),
    "string <=": _in('torch.__version__ <= "2.3.1"'),
    "string >= else": _in('torch.__version__ >= "2.4"', "else"),
    "version on the right": _in('"2.4" > torch.__version__'),
    "packaging parse": "import torch\nfrom packaging import version\n"
    + _in('version.parse(torch.__version__) < version.parse("2.3")').split("\n", 1)[1],
    "packaging Version >= else": "import torch\nfrom packaging.version import Version\n"
    + _in('Version(torch.__version__) >= Version("2.4")', "else").split("\n", 1)[1],
    "packaging module path": "import torch, packaging.version\n"
    + _in('packaging.version.parse(torch.__version__).release < (2, 4)').split("\n", 1)[1],
    "tuple constant": "import torch\nTORCH_VERSION = tuple(map(int, torch.__version__.split('.')[:2]))\n"
    + _in("TORCH_VERSION < (2, 4)").split("\n", 1)[1],
    "tuple under another name": "import torch\n_tv = tuple(map(int, torch.__version__.split('+')[0].split('.')))\n"
    + _in("_tv < (2, 4)").split("\n", 1)[1],
    "startswith": _in('torch.__version__.startswith("1.")'),
    "is_torch_version <": _in('is_torch_version("<", "2.4")'),
    "is_torch_version >= else": _in('is_torch_version(">=", "2.4.0")', "else"),
    "compare_version operator.lt": "import operator\n" + _in('compare_version("torch", operator.lt, "2.4.0")'),
    "named helper": _in('is_torch_greater_or_equal("2.4")', "else"),
    "flag GREATER_EQUAL else": _in("_TORCH_GREATER_EQUAL_2_4", "else"),
    "flag not GREATER_EQUAL": _in("not _TORCH_GREATER_EQUAL_2_4"),
    "flag GE is False": _in("TORCH_GE_2_4 is False"),
    "flag LT": _in("TORCH_LT_2_4"),
    "flag attribute": _in("imports.TORCH_VERSION_LESS_THAN_2_4"),
    "flag PLUS else": _in("TORCH_2_4_PLUS", "else"),
    "assigned test": "import torch\nOLD_TORCH = torch.__version__ < '2.4'\n" + _in("OLD_TORCH").split("\n", 1)[1],
    "and with old": _in("use_amp and TORCH_LT_2_4"),
    "hasattr torch amp": _in('not hasattr(torch, "amp")'),
    "hasattr torch.amp GradScaler else": _in('hasattr(torch.amp, "GradScaler")', "else"),
    "elif after new": "import torch\nif torch.__version__ >= '2.4':\n    pass\nelif use_amp:\n    " + _GRAD + "\n",
    "conditional expression": "import torch\n"
    "scaler = torch.amp.GradScaler('cuda') if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()\n",
    "after an early return": "import torch\ndef make():\n    if _TORCH_GREATER_EQUAL_2_4:\n"
    "        return torch.amp.GradScaler('cuda')\n    return torch.cuda.amp.GradScaler()\n",
    "except after torch.amp": "import torch\ntry:\n    s = torch.amp.GradScaler(device='cuda')\n"
    "except (AttributeError, TypeError):\n    s = torch.cuda.amp.GradScaler()\n",
    "except after from torch import autocast": "import torch\ntry:\n    from torch import autocast\n"
    "    ctx = autocast('cuda')\nexcept ImportError:\n    ctx = torch.cuda.amp.autocast()\n",
    "shim body AttributeError": "import torch\ntry:\n    s = torch.cuda.amp.GradScaler()\nexcept AttributeError:\n    s = None\n",
    "shim body ImportError": "import torch\ntry:\n    ctx = torch.cuda.amp.autocast()\nexcept (ImportError, ModuleNotFoundError):\n"
    "    ctx = None\n",
    "import shim both ways": "try:\n    from torch.amp import autocast\nexcept ImportError:\n"
    "    from torch.cuda.amp import autocast\nwith autocast():\n    pass\n",
    "assignment shim": "import torch\ntry:\n    autocast = torch.cuda.amp.autocast\n"
    "except (ImportError, AttributeError):\n    autocast = None\nwith autocast():\n    pass\n",
    "decorator in old branch": "import torch\nif TORCH_LT_2_4:\n    class F(torch.autograd.Function):\n"
    "        @staticmethod\n        @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n"
    "        def forward(ctx, x):\n            return x\n",
}

STILL_FLAGGED = {
    "new-version branch": _in('torch.__version__ >= "2.4"'),
    "else of an old test": _in('torch.__version__ < "2.4"', "else").replace(
        "scaler = torch.amp.GradScaler('cuda')", "pass"),
    "flag GREATER_EQUAL true branch": _in("_TORCH_GREATER_EQUAL_2_4"),
    "after an old-version exit": "import torch\ndef f():\n    if not _TORCH_GREATER_EQUAL_2_4:\n"
    "        raise RuntimeError('too old')\n    return torch.cuda.amp.GradScaler()\n",
    "not a version": _in("epoch < 4"),
    "another library's version": "import numpy, torch\n" + _in('numpy.__version__ < "2"').split("\n", 1)[1],
    "another library's flag": _in("_NUMPY_LT_2_0"),
    "try catching everything else": "import torch\ntry:\n    ctx = torch.cuda.amp.autocast()\nexcept Exception:\n"
    "    ctx = None\n",
    "except without a torch.amp attempt": "import torch\ntry:\n    import apex\nexcept ImportError:\n"
    "    ctx = torch.cuda.amp.autocast()\n",
    "hasattr of something else": _in('hasattr(model, "amp")', "else"),
}


@pytest.mark.parametrize("source", FALLBACKS.values(), ids=FALLBACKS.keys())
def test_old_torch_fallbacks_are_not_flagged(source):
    assert codes(source, select="DL006") == []


@pytest.mark.parametrize("source", STILL_FLAGGED.values(), ids=STILL_FLAGGED.keys())
def test_code_that_also_runs_on_a_new_torch_is_flagged(source):
    assert [code for _, code in codes(source, select="DL006")] == ["DL006"]


# -- the imports the fixes make unused ------------------------------------------------------------------
def _unused_imports(source: str) -> set[str]:
    """Names an import binds that nothing else in the file reads (pyflakes' F401, without pyflakes)."""
    tree = ast.parse(source)
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add(alias.asname or alias.name.split(".")[0])
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return bound - read


def _fixed(source: str) -> str:
    fixed = fix(source, select="DL006", unsafe=True)
    assert fix(fixed, select="DL006", unsafe=True) == fixed, "a second --fix must change nothing"
    return fixed


def test_every_name_of_the_import_used_only_by_fixed_calls_goes():
    fixed = _fixed("import torch\nfrom torch.cuda.amp import autocast, GradScaler\n\n\n"
                   "def train(device):\n    scaler = GradScaler()\n    with autocast():\n        pass\n"
                   "    with autocast(dtype=torch.bfloat16):\n        pass\n")
    assert fixed == ("import torch\n\n\ndef train(device):\n    scaler = torch.amp.GradScaler(torch.device(device).type)\n"
                     "    with torch.amp.autocast(torch.device(device).type):\n        pass\n"
                     "    with torch.amp.autocast(torch.device(device).type, dtype=torch.bfloat16):\n        pass\n")
    assert "torch.cuda.amp" not in fixed and _unused_imports(fixed) == set()


def test_only_the_names_the_fixes_made_unused_go():
    source = ("import torch\nfrom torch.cuda.amp import custom_fwd, GradScaler, autocast  # amp\n"
              "def step(device, scaler: GradScaler):\n    with autocast():\n        return scaler\n")
    fixed = _fixed(source)
    # `custom_fwd` was unused before devlint came; `GradScaler` is still read by the annotation
    assert "from torch.cuda.amp import custom_fwd, GradScaler  # amp\n" in fixed
    assert _unused_imports(fixed) == {"custom_fwd"}


def test_a_parenthesised_import_keeps_its_layout():
    fixed = _fixed("import torch\nfrom torch.cuda.amp import (\n    GradScaler,\n    autocast,  # mixed precision\n"
                   "    custom_fwd,\n)\ndef f(device):\n    s = GradScaler()\n    with autocast():\n        pass\n"
                   "    return custom_fwd\n")
    assert fixed.startswith("import torch\nfrom torch.cuda.amp import (\n    custom_fwd,\n)\n")
    assert _unused_imports(fixed) == set()


def test_several_names_of_one_import_over_several_passes():
    source = ("import torch\nfrom torch.cuda.amp import GradScaler, autocast, custom_fwd\n"
              "class F(torch.autograd.Function):\n    @staticmethod\n    @custom_fwd(cast_inputs=torch.float32)\n"
              "    def forward(ctx, x):\n        return x\n"
              "def train(device):\n    with autocast():\n        return GradScaler()\n")
    fixed = _fixed(source)
    assert "torch.cuda.amp" not in fixed and "import torch\nclass F" in fixed.replace(
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', "")
    assert _unused_imports(fixed) == set()
    compile(fixed, "<fixed>", "exec")


def test_a_module_alias_goes_with_its_last_use():
    fixed = _fixed("import torch\nimport torch.cuda.amp as amp\ndef f(device):\n    with amp.autocast():\n"
                   "        return amp.GradScaler()\n")
    assert fixed == ("import torch\ndef f(device):\n    with torch.amp.autocast(torch.device(device).type):\n"
                     "        return torch.amp.GradScaler(torch.device(device).type)\n")


def test_an_import_inside_a_function_goes_too():
    fixed = _fixed("import torch\ndef f(device):\n    from torch.cuda.amp import autocast\n"
                   "    with autocast():\n        pass\n")
    assert fixed == "import torch\ndef f(device):\n    with torch.amp.autocast(torch.device(device).type):\n        pass\n"


def test_an_import_alone_in_its_block_becomes_pass():
    fixed = _fixed("import torch\nif use_amp:\n    from torch.cuda.amp import autocast\n"
                   "def f(device):\n    with autocast():\n        pass\n")
    assert fixed.startswith("import torch\nif use_amp:\n    pass\n")
    compile(fixed, "<fixed>", "exec")


@pytest.mark.parametrize("source", [
    # a use the rule does not fix: under a CUDA guard, in a version fallback, silenced, display-only
    "import torch\nfrom torch.cuda.amp import autocast\ndef f(device):\n    with autocast():\n        pass\n"
    "    if torch.cuda.is_available():\n        with autocast():\n            pass\n",
    "import torch\nfrom torch.cuda.amp import autocast\ndef f(device):\n    with autocast():\n        pass\n"
    "    if TORCH_LT_2_4:\n        with autocast():\n            pass\n",
    "import torch\nfrom torch.cuda.amp import autocast\ndef f(device):\n    with autocast():\n        pass\n"
    "    with autocast():  # noqa: DL006\n        pass\n",
    "import torch\nfrom torch.cuda.amp import autocast\ndef f(device, flags):\n    with autocast():\n        pass\n"
    "    with autocast(*flags):\n        pass\n",
    # a reference that is not a call: a base class, a re-export, an alias
    "import torch\nfrom torch.cuda.amp import GradScaler\nclass Mine(GradScaler):\n    pass\n"
    "def f(device):\n    return GradScaler()\n",
    "import torch\nfrom torch.cuda.amp import autocast\n__all__ = ['autocast']\ndef f(device):\n"
    "    with autocast():\n        pass\n",
    "import torch\nfrom torch.cuda.amp import autocast\nctx = autocast\ndef f(device):\n    with autocast():\n        pass\n",
])
def test_an_import_still_needed_stays(source):
    fixed = _fixed(source)
    assert "from torch.cuda.amp import autocast\n" in fixed or "from torch.cuda.amp import GradScaler\n" in fixed


def test_an_import_that_was_already_unused_stays():
    source = "import torch\nfrom torch.cuda.amp import autocast\ndef f(device):\n    return torch.cuda.amp.GradScaler()\n"
    assert "from torch.cuda.amp import autocast\n" in _fixed(source)


def test_without_unsafe_fixes_nothing_changes():
    source = "import torch\nfrom torch.cuda.amp import autocast\ndef f(device):\n    with autocast():\n        pass\n"
    assert fix(source, select="DL006") == source


def test_a_removed_first_statement_takes_the_blank_lines_after_it():
    fixed = _fixed("import torch\ndef f(device, scaler=None):\n    if scaler is None:\n"
                   "        from torch.cuda.amp import GradScaler\n\n        scaler = GradScaler()\n    return scaler\n")
    assert fixed == ("import torch\ndef f(device, scaler=None):\n    if scaler is None:\n"
                     "        scaler = torch.amp.GradScaler(torch.device(device).type)\n    return scaler\n")
