"""DL003 on loop variables and temporaries (issue 23).

`for batch in batches: batch.to(device); out = model(batch)`: re-binding the loop variable is what was
meant when every later use is in the same iteration, so the fix gets the level every DL003 fix gets
(safe where the original cannot have worked on a GPU). Where the moves were meant to update the
container (it, or the variable, is used after the loop; nothing reads the variable later in the
iteration; a module's parameters) the fix stays display-only, and the fix never writes a loop that
DL013 flags. A discarded move of a temporary no name holds (`torch.zeros(1).to(device)`, a warm-up)
is not a finding.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import codes, fix, lint, run_python

H = "import torch\nimport torch.nn as nn\n"
MODEL = "def run(device):\n    model = nn.Linear(3, 1).to(device)\n    batches = [torch.zeros(3), torch.ones(3)]\n"


def _dl003(source: str) -> list[tuple[str, str]]:
    return [(f.fix.applicability.value, f.fix.title) for f in lint(source, select="DL003")]


# -- 1. loop variables read only in their iteration ------------------------------------------------
SAFE = {
    "model call in the loop": H + MODEL + "    for batch in batches:\n        batch.to(device)\n"
    "        out = model(batch)\n",
    "module level, .cuda() on both": H + "model = nn.Linear(3, 1)\nmodel.cuda()\nbatches = [torch.zeros(3)]\n"
    "for batch in batches:\n    batch.cuda()\n    print(model(batch))\n",
    "enumerate, len() of the container after the loop": H + MODEL + "    total = 0\n"
    "    for i, batch in enumerate(batches):\n        batch.to(device)\n        total += model(batch).sum()\n"
    "    return total / len(batches)\n",
    "parameters of other functions named alike": H + "model = nn.Linear(3, 1).cuda()\nbatches = [torch.zeros(3)]\n"
    "for batch in batches:\n    batch.cuda()\n    model(batch)\ndef train(batch, batches):\n    return model(batch), batches\n",
    "an epoch loop around, train and validation loops over one name": H + MODEL + "    val = [torch.ones(3)]\n"
    "    for epoch in range(2):\n        for batch in batches:\n            batch.to(device)\n"
    "            model(batch)\n        for batch in val:\n            print(batch)\n",
}

UNSAFE = {
    "first read works anywhere": H + MODEL + "    for batch in batches:\n        batch.to(device)\n"
    "        print(batch)\n        model(batch)\n",
    # an item of unknown shape may be a 0-dim tensor, which mixes with CUDA tensors
    "arithmetic with a tensor on the device": H + "def run(device):\n    w = torch.ones(3, device=device)\n"
    "    xs = [torch.zeros(3)]\n    for x in xs:\n        x.to(device)\n        y = x * w\n",
    "a dtype cast": H + "xs = [torch.zeros(3)]\nfor x in xs:\n    x.half()\n    print(x)\n",
}

DISPLAY_ONLY = {
    "the container is used after the loop": (
        H + "tensors = [torch.zeros(3)]\nfor t in tensors:\n    t.to(device)\n    print(t)\nuse(tensors)\n",
        "`tensors` is used after the loop (line 7)"),
    "nothing reads the variable later in the iteration": (
        H + "tensors = [torch.zeros(3)]\nfor t in tensors:\n    t.to(device)\n",
        "nothing reads `t` later in the iteration"),
    "the variable is read after the loop": (
        H + MODEL + "    for batch in batches:\n        batch.to(device)\n        model(batch)\n"
        "    return model(batch)\n", "`batch` is read after the loop (line 9)"),
    "the variable is read in the loop's else": (
        H + MODEL + "    for batch in batches:\n        batch.to(device)\n        model(batch)\n"
        "    else:\n        print(batch)\n", "`batch` is read after the loop (line 10)"),
    "a closure in the loop reads it": (
        H + MODEL + "    fs = []\n    for batch in batches:\n        batch.to(device)\n"
        "        fs.append(lambda: model(batch))\n        model(batch)\n", "a function defined in the loop reads"),
    "read earlier in a loop around it": (
        H + MODEL + "    for epoch in range(2):\n        if epoch:\n            print(batch)\n"
        "        for batch in batches:\n            batch.to(device)\n            model(batch)\n",
        "`batch` is read after the loop (line 8)"),
    "the container is used earlier in a loop around it": (
        H + MODEL + "    for epoch in range(2):\n        evaluate(batches)\n        for batch in batches:\n"
        "            batch.to(device)\n            model(batch)\n", "`batches` is used after the loop (line 7)"),
    "a function of the module iterates the container later": (
        H + "model = nn.Linear(3, 1).cuda()\nbatches = [torch.zeros(3)]\nfor batch in batches:\n    batch.cuda()\n"
        "    model(batch)\ndef evaluate():\n    for batch in batches:\n        print(batch)\n",
        "`batches` is used after the loop (line 9)"),
    "a module's parameters": (
        H + "net = nn.Linear(2, 2)\nfor p in net.parameters():\n    p.to(device)\n    print(p)\n",
        "meant to be the module's: `net.to(...)`"),
    "declared global": (
        H + "def run(device):\n    global t\n    for t in [torch.zeros(3)]:\n        t.to(device)\n        print(t)\n",
        "`t` is declared `global`"),
}


@pytest.mark.parametrize("source", SAFE.values(), ids=SAFE.keys())
def test_a_loop_variable_read_only_in_its_iteration_is_fixed_safely(source):
    assert [level for level, _ in _dl003(source)] == ["safe"]
    fixed = fix(source, select="DL003")
    assert fixed != source and fix(fixed, select="DL003") == fixed
    assert [c for _, c in codes(fixed) if c in ("DL003", "DL013")] == []  # no DL013 for the written loop


@pytest.mark.parametrize("source", UNSAFE.values(), ids=UNSAFE.keys())
def test_a_loop_variable_whose_original_may_have_worked_is_an_unsafe_fix(source):
    assert [level for level, _ in _dl003(source)] == ["unsafe"]
    assert fix(source, select="DL003") == source
    fixed = fix(source, select="DL003", unsafe=True)
    assert fixed != source and [c for _, c in codes(fixed) if c == "DL013"] == []


@pytest.mark.parametrize("source, reason", DISPLAY_ONLY.values(), ids=DISPLAY_ONLY.keys())
def test_moves_meant_to_update_the_container_stay_display_only(source, reason):
    [(level, title)] = _dl003(source)
    assert level == "display-only" and reason in title, title
    assert fix(source, unsafe=True, select="DL003") == source


def test_the_safe_loop_fix_rebinds_only_the_loop_variable():
    source = SAFE["model call in the loop"]
    assert fix(source, select="DL003") == source.replace("        batch.to(device)\n",
                                                          "        batch = batch.to(device)\n")


# -- 2. temporaries ----------------------------------------------------------------------------------
TEMPORARIES = [
    "import torch\ntorch.zeros(1).to(device)\n",
    "import torch\ntorch.zeros(1).cuda()\n",
    "import torch\nx = torch.zeros(3)\nmodel(x).to(device)\n",
    "import torch\nx = torch.zeros(3)\ny = torch.ones(3)\n(x + y).cuda()\n",
    "import torch\ntorch.zeros(1).cuda().float()\n",
    "import torch\n[torch.zeros(1).cuda() for _ in range(2)]\n",
]

HELD = [
    "import torch\nclass M:\n    def f(self, device):\n        self.w = torch.ones(3)\n        self.w.to(device)\n",
    "import torch\nbatch = [torch.zeros(3)]\nbatch[0].to(device)\n",
    "import torch\nx = torch.zeros(3)\nx.contiguous().cuda()\n",
    "import torch\nx = torch.zeros(3)\nx.to(device).float()\n",
]


@pytest.mark.parametrize("source", TEMPORARIES)
def test_a_discarded_move_of_a_temporary_is_not_flagged(source):
    assert codes(source, select="DL003") == []


@pytest.mark.parametrize("source", HELD)
def test_a_move_of_something_held_is_still_flagged(source):
    assert [c for _, c in codes(source, select="DL003")] == ["DL003"]


# -- runtime proof on the virtual GPU ------------------------------------------------------------------
_HEAD = '''
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 1).to(device)
batches = [torch.randn(2, 3) for _ in range(3)]
'''
_FUNCTION = '''
import torch
import torch.nn as nn

torch.manual_seed(0)


def evaluate(device):
    model = nn.Linear(3, 1).to(device)
    batches = [torch.randn(2, 3) for _ in range(3)]{loop}
    return sum(outs) / len(batches)


print(f"{{evaluate(torch.device('cuda' if torch.cuda.is_available() else 'cpu')):.5f}}")
'''
PROGRAMS = {
    "module_loop.py": _HEAD + '''
total = 0.0
for batch in batches:
    batch.to(device)
    total += model(batch).sum().item()
print(f"{total:.5f}")
''',
    "function_loop.py": _FUNCTION.format(loop="""
    outs = []
    for i, batch in enumerate(batches):
        batch.to(device)
        outs.append(model(batch).sum().item() * i)"""),
}
# written by hand, device-agnostic: the inputs go to the model's device inside the computation
AGNOSTIC = {
    "module_loop.py": _HEAD + '''
total = sum(model(b.to(device)).sum().item() for b in batches)
print(f"{total:.5f}")
''',
    "function_loop.py": _FUNCTION.format(loop="""
    outs = [model(b.to(device)).sum().item() * i for i, b in enumerate(batches)]"""),
}
_RUNNER = '''
import runpy, sys
for name in sys.argv[1:]:
    try:
        runpy.run_path(name, run_name="__main__")
    except Exception as error:  # one line per program: the batch goes on
        print(name, "failed:", type(error).__name__)
'''


@pytest.mark.slow
def test_the_loop_fix_repairs_the_programs_on_the_virtual_gpu_and_without_cuda(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "run_all.py").write_text(_RUNNER)
    for folder, programs in (("original", PROGRAMS), ("agnostic", AGNOSTIC), (".", PROGRAMS)):
        (tmp_path / folder).mkdir(exist_ok=True)
        for name, text in programs.items():
            (tmp_path / folder / name).write_text(textwrap.dedent(text).lstrip())
    names = list(PROGRAMS)
    fixed = run_python(tmp_path, "-m", "devlint", "--fix", "--no-cache", "--isolated", *names)
    for name in names:
        assert "batch = batch.to(device)" in (tmp_path / name).read_text(), fixed.stdout
    assert "DL013" not in fixed.stdout and "DL003" not in fixed.stdout, fixed.stdout

    # one run on the virtual GPU: the originals, then the fixed programs
    gpu = run_python(tmp_path, "-m", "devlint", "run", "--virtual-gpu", "run_all.py",
                     *(f"original/{n}" for n in names), *names)
    lines = gpu.stdout.splitlines()
    assert len(lines) == 4, gpu.stdout + gpu.stderr
    assert [line.split()[1:] for line in lines[:2]] == [["failed:", "RuntimeError"]] * 2  # cannot work on a GPU
    # one run with CUDA hidden: the fixed programs, then the hand-written ones; all agree
    hidden = run_python(tmp_path, "run_all.py", *names, *(f"agnostic/{n}" for n in names), CUDA_VISIBLE_DEVICES="")
    cpu = hidden.stdout.splitlines()
    assert len(cpu) == 4 and "failed" not in hidden.stdout, hidden.stdout + hidden.stderr
    assert cpu[:2] == cpu[2:] == lines[2:]
