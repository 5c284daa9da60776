"""A `device` bound on every path before a fix site is reused, never defined twice (issue 23).

Both branches of an `if`/`else`, a `try` body and each of its handlers, a `with` body: the binding has
run whenever the fixed line does. It is reused when each binding is the run's device (issue 29): a
side of `if torch.cuda.is_available():` holding what the conditional expression would give there.
A choice by anything else (`if args.cpu:`) may be the CPU on a GPU machine: only an unsafe fix reuses it.
"""

from __future__ import annotations

import pytest

from tests.helpers import fix, lint

AVAILABLE = "torch.cuda.is_available()"
RUN = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'


def _dl001(source: str) -> list[tuple[str, str]]:
    return [(f.fix.applicability.value, f.fix.title) for f in lint(source, select="DL001")]


def _definitions(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip().startswith("device ="))


REUSED = {
    "module-level if/else": "import torch\nif torch.cuda.is_available():\n    device = torch.device('cuda')\n"
    "else:\n    device = torch.device('cpu')\nx = torch.ones(2).cuda()\n",
    "in a function": "import torch\ndef f():\n    if torch.cuda.is_available():\n        device = torch.device('cuda')\n"
    "    else:\n        device = torch.device('cpu')\n    return torch.ones(2).cuda()\n",
    "through not": "import torch\nif not torch.cuda.is_available():\n    device = torch.device('cpu')\n"
    "else:\n    device = torch.device('cuda:0')\nx = torch.ones(2).cuda()\n",
    "a name bound to the availability": "import torch\nuse_cuda = torch.cuda.is_available()\nif use_cuda:\n"
    "    device = torch.device('cuda')\nelse:\n    device = torch.device('cpu')\nx = torch.ones(2).cuda()\n",
    "elif": "import torch\nif torch.cuda.is_available():\n    device = torch.device('cuda')\n"
    "elif torch.backends.mps.is_available():\n    device = torch.device('mps')\nelse:\n    device = torch.device('cpu')\n"
    "x = torch.ones(2).cuda()\n",
    "an else that cannot fall through": "import torch\nif torch.cuda.is_available():\n    device = torch.device('cuda')\n"
    "else:\n    raise SystemExit('no GPU')\nx = torch.ones(2).cuda()\n",
    "try and its handler": f"import torch\ntry:\n    import apex\n    device = {RUN}\nexcept ImportError:\n"
    f"    device = {RUN}\nx = torch.ones(2).cuda()\n",
    "a with body": f"import torch\nwith open('log.txt', 'w') as log:\n    device = {RUN}\nx = torch.ones(2).cuda()\n",
    "a use in a later block": "import torch\nif torch.cuda.is_available():\n    device = torch.device('cuda')\n"
    "else:\n    device = torch.device('cpu')\nfor i in range(2):\n    x = torch.ones(2).cuda()\n",
}


@pytest.mark.parametrize("source", REUSED.values(), ids=REUSED.keys())
def test_a_run_device_bound_on_every_path_is_reused_by_a_safe_fix(source):
    assert [level for level, _ in _dl001(source)] == ["safe"]
    fixed = fix(source, select="DL001")
    assert _definitions(fixed) == _definitions(source)  # no second `device = ...`
    assert "torch.ones(2).to(device)" in fixed


NOT_PROVEN = {  # bound on every path, but the CPU may be chosen on a GPU machine
    "a command-line choice": ("import torch\nif args.cpu:\n    device = torch.device('cpu')\nelse:\n"
                              "    device = torch.device('cuda')\nx = torch.ones(2).cuda()\n", "unsafe"),
    "in a function": ("import torch\ndef f(args):\n    if args.cpu:\n        device = torch.device('cpu')\n"
                      "    else:\n        device = torch.device('cuda')\n    return torch.ones(2).cuda()\n", "unsafe"),
    "the CPU when CUDA fails": ("import torch\ntry:\n    device = torch.device('cuda')\nexcept Exception:\n"
                                "    device = torch.device('cpu')\nx = torch.ones(2).cuda()\n", "display-only"),
    "strings, not devices": ("import torch\nif args.cpu:\n    device = 'cpu'\nelse:\n    device = 'cuda'\n"
                             "x = torch.ones(2).cuda()\n", "display-only"),
    # as `torch.accelerator.current_accelerator() if args.accel else torch.device("cpu")` is (pytorch/examples)
    "an accelerator or the CPU": ("import torch\nif args.accel:\n    device = torch.accelerator.current_accelerator()\n"
                                  "else:\n    device = torch.device('cpu')\nx = torch.ones(2).cuda()\n", "display-only"),
    "another GPU": ("import torch\nif args.cpu:\n    device = torch.device('cpu')\nelse:\n"
                    "    device = torch.device('cuda:1')\nx = torch.ones(2).cuda()\n", "display-only"),
    "the CPU on the CUDA side": ("import torch\nif torch.cuda.is_available():\n    device = torch.device('cpu')\n"
                                 "else:\n    device = torch.device('cpu')\nx = torch.ones(2).cuda()\n", "display-only"),
}


@pytest.mark.parametrize("source, level", NOT_PROVEN.values(), ids=NOT_PROVEN.keys())
def test_a_device_on_every_path_that_is_not_proven_is_never_defined_again(source, level):
    [(found, title)] = _dl001(source)
    assert found == level and "`device` is bound to" in title, title
    assert fix(source, select="DL001") == source
    fixed = fix(source, select="DL001", unsafe=True)
    assert _definitions(fixed) == _definitions(source)
    assert (fixed != source) == (level == "unsafe")


SOME_PATHS = {  # not bound on every path: the fixer still writes its own definition first
    "no else": "import torch\nif torch.cuda.is_available():\n    device = torch.device('cuda')\nx = torch.ones(2).cuda()\n",
    "a handler that passes": f"import torch\ntry:\n    device = {RUN}\nexcept ImportError:\n    pass\n"
    "x = torch.ones(2).cuda()\n",
    "a loop": f"import torch\nfor _ in range(1):\n    device = {RUN}\nx = torch.ones(2).cuda()\n",
    "suppress": f"import torch, contextlib\nwith contextlib.suppress(Exception):\n    device = {RUN}\n"
    "x = torch.ones(2).cuda()\n",
}


@pytest.mark.parametrize("source", SOME_PATHS.values(), ids=SOME_PATHS.keys())
def test_a_device_bound_on_some_paths_only_gets_a_definition(source):
    fixed = fix(source, select="DL001", unsafe=True)
    assert _definitions(fixed) == _definitions(source) + 1 and "torch.ones(2).to(device)" in fixed
