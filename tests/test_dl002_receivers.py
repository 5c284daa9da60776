"""`map_location="cpu"` is safe only into a `load_state_dict` that copies into storage it owns (issue 23).

An `nn.Module`'s without `assign=True`, a `torch.optim` optimizer's or LR scheduler's and a `GradScaler`'s
copy the loaded tensors into their own, which stay where they are. With `assign=True` the loaded tensors
become the parameters; a class that is not a module (an EMA helper that stores the dict) or an object of
unknown kind may keep them as they were loaded. There the fix is unsafe, and its title says why. The
proof runs each case under the virtual GPU, before and after the fix.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import fix, lint, run_python


def _fixes(source: str, **options) -> list[tuple[str, str]]:
    return [(f.fix.applicability.value, f.fix.title) for f in lint(textwrap.dedent(source), select="DL002", **options)]


SAFE = [("safe", 'Add `map_location="cpu"`')]

COPYING = {
    "module": "model = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load(p))\n",
    "module_assign_false": "model = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load(p), assign=False)\n",
    "module_attribute": "class Runner:\n    def __init__(self):\n        self.net = torch.nn.Linear(3, 1)\n\n"
                        "    def restore(self, p):\n        self.net.load_state_dict(torch.load(p))\n",
    "annotated_module": "def restore(net: torch.nn.Module, p):\n    net.load_state_dict(torch.load(p))\n",
    "optimizer": "opt = torch.optim.AdamW(params, lr=0.1)\nopt.load_state_dict(torch.load(p))\n",
    "annotated_optimizer": "def restore(opt: torch.optim.Optimizer, p):\n    opt.load_state_dict(torch.load(p))\n",
    "scheduler": "sched = torch.optim.lr_scheduler.StepLR(opt, 3)\nsched.load_state_dict(torch.load(p))\n",
    "grad_scaler": "from torch.amp import GradScaler\nscaler = GradScaler('cuda')\nscaler.load_state_dict(torch.load(p))\n",
    "cuda_grad_scaler": "scaler = torch.cuda.amp.GradScaler()\nscaler.load_state_dict(torch.load(p))\n",
    "keyword_state_dict": "model = torch.nn.Linear(3, 1)\nmodel.load_state_dict(state_dict=torch.load(p))\n",
}


@pytest.mark.parametrize("name", list(COPYING))
def test_receivers_that_copy_get_the_safe_cpu_fix(name):
    assert _fixes("import torch\n" + COPYING[name]) == SAFE


KEEPING = {
    "assign_true": ("model = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load(p), assign=True)\n",
                    "with `assign=True` the loaded tensors become the parameters of `model`"),
    "assign_positional": ("model = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load(p), True, True)\n",
                          "with `assign=True`"),
    "assign_variable": ("model = torch.nn.Linear(3, 1)\nmodel.load_state_dict(torch.load(p), assign=fast)\n",
                        "`assign=` may be True"),
    "project_class": ("class EMA:\n    def load_state_dict(self, state):\n        self.shadow = state\n\n"
                      "ema = EMA()\nema.load_state_dict(torch.load(p))\n", "`ema` is not known to be an nn.Module"),
    "unknown": ("model = build(cfg)\nmodel.load_state_dict(torch.load(p))\n", "`model` is not known to be"),
    "parameter": ("def restore(net, p):\n    net.load_state_dict(torch.load(p))\n", "`net` is not known to be"),
    "rebound_optimizer": ("opt = torch.optim.SGD(params, lr=0.1)\nopt = wrap(opt)\nopt.load_state_dict(torch.load(p))\n",
                          "`opt` is not known to be"),
}


@pytest.mark.parametrize("name", list(KEEPING))
def test_receivers_that_may_keep_the_tensors_get_an_unsafe_fix_that_says_why(name):
    source, reason = KEEPING[name]
    [(applicability, title)] = _fixes("import torch\n" + source)
    assert applicability == "unsafe"
    assert reason in title


def test_an_explicit_cpu_choice_into_a_keeping_receiver_is_unsafe_too():
    source, _ = KEEPING["assign_true"]
    [(applicability, title)] = _fixes("import torch\n" + source, map_location="cpu")
    assert applicability == "unsafe" and title.startswith('Add `map_location="cpu"` (with `assign=True`')


# -- the proof on the virtual GPU ----------------------------------------------------------------------------------
HEAD = '''
import os
import torch

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
'''
# Each loads its file as `os.path.abspath(name)`, a path devlint cannot tell is the one just saved: a round trip
# of the same path is not flagged (devlint.analysis.round_trip), and these programs prove the receivers' fixes.
PROGRAMS = {
    # safe: copied into the module's own parameters, which stay on the device
    "into_module.py": HEAD + '''
source = torch.nn.Linear(3, 2).to(device)
torch.save(source.state_dict(), "module.pt")
model = torch.nn.Linear(3, 2).to(device)
model.load_state_dict(torch.load(os.path.abspath("module.pt")))
print("module", round(model(torch.ones(1, 3, device=device)).sum().item(), 4))
''',
    # safe: an optimizer casts its state to its parameters' device
    "into_optimizer.py": HEAD + '''
model = torch.nn.Linear(3, 2).to(device)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
model(torch.ones(4, 3, device=device)).sum().backward()
opt.step()
torch.save(opt.state_dict(), "opt.pt")
again = torch.optim.Adam(model.parameters(), lr=0.1)
again.load_state_dict(torch.load(os.path.abspath("opt.pt")))
model.zero_grad()
model(torch.ones(4, 3, device=device)).sum().backward()
again.step()
print("optimizer", round(model.weight.sum().item(), 4))
''',
    # unsafe: with assign=True the CPU tensors become the parameters
    "assign_true.py": HEAD + '''
source = torch.nn.Linear(3, 2).to(device)
torch.save(source.state_dict(), "assign.pt")
model = torch.nn.Linear(3, 2).to(device)
model.load_state_dict(torch.load(os.path.abspath("assign.pt")), assign=True)
print("assign", round(model(torch.ones(1, 3, device=device)).sum().item(), 4))
''',
    # unsafe: an EMA helper keeps the tensors it is given
    "ema_helper.py": HEAD + '''
class EMA:
    def __init__(self, model):
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def update(self, model):
        for k, v in model.state_dict().items():
            self.shadow[k].mul_(0.5).add_(v, alpha=0.5)

    def state_dict(self):
        return self.shadow

    def load_state_dict(self, state):
        self.shadow = state


model = torch.nn.Linear(3, 2).to(device)
ema = EMA(model)
torch.save(ema.state_dict(), "ema.pt")
ema.load_state_dict(torch.load(os.path.abspath("ema.pt")))
ema.update(model)
print("ema", round(sum(v.sum().item() for v in ema.shadow.values()), 4))
''',
}
RUN_ALL = '''
import runpy, sys
for name in sys.argv[1:]:
    try:
        runpy.run_path(name, run_name="__main__")
    except Exception as error:
        print(name, "raised", type(error).__name__, str(error).splitlines()[0][:80])
'''
SAFE_PROGRAMS = ("into_module.py", "into_optimizer.py")
UNSAFE_PROGRAMS = ("assign_true.py", "ema_helper.py")


@pytest.mark.slow
def test_virtual_gpu_safe_receivers_keep_the_output_and_the_others_break_with_cpu(tmp_path):
    pytest.importorskip("torch")
    for name, source in PROGRAMS.items():
        (tmp_path / name).write_text(source)
        expected = SAFE if name in SAFE_PROGRAMS else [("unsafe", None)]
        found = _fixes(source)
        assert [(a, None if a == "unsafe" else t) for a, t in found] == expected, (name, found)
    (tmp_path / "run_all.py").write_text(RUN_ALL)
    names = list(PROGRAMS)

    def run(*args, **env):
        return run_python(tmp_path, *args, **env)

    before = run("-m", "devlint", "run", "--virtual-gpu", "run_all.py", *names)
    assert before.returncode == 0, before.stderr
    assert "raised" not in before.stdout and len(before.stdout.splitlines()) == 4, before.stdout

    # the safe fixes: the same output on the (virtual) GPU, and the fixed programs run with CUDA hidden;
    # what a safe label would have written into the other receivers (`map_location="cpu"`) breaks them
    forced = []
    for name in names:
        (tmp_path / name).write_text(fix(PROGRAMS[name], select="DL002"))
        if name in UNSAFE_PROGRAMS:
            assert (tmp_path / name).read_text() == PROGRAMS[name]  # not applied by --fix
            forced.append(f"cpu_{name}")
            (tmp_path / forced[-1]).write_text(fix(PROGRAMS[name], select="DL002", unsafe=True, map_location="cpu"))
            assert 'map_location="cpu"' in (tmp_path / forced[-1]).read_text()
        else:
            assert 'map_location="cpu"' in (tmp_path / name).read_text()
    after = run("-m", "devlint", "run", "--virtual-gpu", "run_all.py", *names, *forced)
    assert after.returncode == 0, after.stderr
    lines = after.stdout.splitlines()
    assert lines[:4] == before.stdout.splitlines(), after.stdout
    assert len(lines) == 6 and all("raised" in line for line in lines[4:]), after.stdout
    hidden = run("run_all.py", *SAFE_PROGRAMS, CUDA_VISIBLE_DEVICES="")
    assert hidden.stdout.splitlines() == before.stdout.splitlines()[:2], hidden.stdout
