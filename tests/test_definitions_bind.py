"""Definitions that bind (issue 29, S4-S8): a definition never reads a `torch` the function binds, never
goes into TorchScript, never at module level of a file other project files import; a device name that
may be rebound before the fixed line runs makes the fix unsafe; names compare as Python reads them (NFKC).
Each reproducer of the issue is a test here; the runtime proofs are batched in one slow test at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.config import Config
from devlint.engine import check_source
from devlint.model import Applicability
from tests.helpers import fix, lint, run_python

DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'


def _fixes(source: str, code: str = "DL001") -> list[tuple[str, str]]:
    return [(f.fix.applicability.value, f.fix.title) for f in lint(source) if f.code == code and f.fix]


# -- S4: a definition in a function that binds torch --------------------------------------------------
S4_LIBRARY = {
    # `import torch.distributed` later in the function makes `torch` local: UnboundLocalError before it
    "import-later": "import torch\n\n\ndef run(x):\n    y = x.cuda()\n    import torch.distributed\n    return y\n",
    "parameter": "import torch\n\n\ndef run(x, torch=None):\n    return x.cuda()\n",
    "enclosing-local": "import torch\n\n\ndef outer(torch):\n    def inner(x):\n        return x.cuda()\n    return inner\n",
    "enclosing-import": ("import torch\n\n\ndef outer():\n    import torch.nn.functional\n    def inner(x):\n"
                         "        return x.cuda()\n    return inner\n"),
}


@pytest.mark.parametrize("source", S4_LIBRARY.values(), ids=S4_LIBRARY.keys())
def test_no_definition_in_a_function_that_binds_torch(source):
    assert fix(source) == source
    [(level, title)] = _fixes(source)
    assert level == "display-only"
    assert "`torch` is bound in this function or one around it" in title
    assert "a definition here would not read the torch module" in title


def test_a_script_defines_the_device_at_module_level_instead():
    source = ("import torch\n\n\ndef run(x, torch=None):\n    return x.cuda()\n\n\n"
              "if __name__ == '__main__':\n    print(run(torch.ones(2)))\n")
    assert fix(source) == source.replace("import torch\n", f"import torch\n\n{DEVICE}\n", 1).replace(
        "x.cuda()", "x.to(device)")


def test_torch_bound_in_a_nested_function_only_does_not_matter():
    source = "import torch\n\n\ndef run(x):\n    def helper(torch):\n        return torch\n    return x.cuda()\n"
    assert fix(source).endswith(f"        return torch\n    {DEVICE}\n    return x.to(device)\n")


# -- S5: TorchScript -----------------------------------------------------------------------------------
S5 = {
    "decorator": ("import torch\n\n\n@torch.jit.script\ndef f(x):\n    return x.cuda()\n\n\nprint(f(torch.ones(2)))\n",
                  "`f`"),
    "alias": ("import torch as th\nfrom torch.jit import script\n\n\n@script\ndef f(x):\n    return x.cuda()\n\n\n"
              "print(f(th.ones(2)))\n", "`f`"),
    "renamed": ("import torch\nfrom torch.jit import script as compile_it\n\n\n@compile_it\ndef f(x):\n"
                "    return x.cuda()\n", "`f`"),
    "call": "import torch\n\n\ndef f(x):\n    return x.cuda()\n\n\ng = torch.jit.script(f)\nprint(g(torch.ones(2)))\n",
    "called-by-scripted": ("import torch\n\n\ndef helper(x):\n    return x.cuda()\n\n\n@torch.jit.script\ndef f(x):\n"
                           "    return helper(x)\n\n\nprint(f(torch.ones(2)))\n", "`helper`"),
    "module-instance": ("import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.cuda()\n\n\n"
                        "net = Net()\nm = torch.jit.script(net)\nprint(m(torch.ones(2)))\n", "`forward`"),
    "submodule": ("import torch\n\n\nclass Sub(torch.nn.Module):\n    def forward(self, x):\n        return x.cuda()\n\n\n"
                  "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.sub = Sub()\n\n"
                  "    def forward(self, x):\n        return self.sub(x)\n\n\nm = torch.jit.script(Net())\n", "`forward`"),
    "script-method": ("import torch\n\n\nclass Net(torch.jit.ScriptModule):\n    @torch.jit.script_method\n"
                      "    def forward(self, x):\n        return x.cuda()\n\n\nprint(Net()(torch.ones(2)))\n", "`forward`"),
    "method": ("import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.cuda()\n\n\n"
               "f = torch.jit.script(Net.forward)\n", "`forward`"),
    "class": ("import torch\n\n\n@torch.jit.script\nclass P:\n    def __init__(self, x: torch.Tensor):\n"
              "        self.x = x.cuda()\n", "`P`"),
}


@pytest.mark.parametrize("case", S5.values(), ids=S5.keys())
def test_a_fix_in_torchscript_is_display_only(case):
    source, owner = case if isinstance(case, tuple) else (case, "`f`")
    assert fix(source, unsafe=True) == source
    [(level, title)] = _fixes(source)
    assert level == "display-only"
    assert f"TorchScript compiles {owner}" in title and "cannot read a Python `device` global" in title


def test_other_rules_fixes_in_torchscript_are_display_only_too():
    source = "import torch\n\n\n@torch.jit.script\ndef f(x):\n    return torch.ones(3, device='cuda') + x\n"
    assert fix(source, unsafe=True) == source
    assert all(f.fix.applicability is Applicability.DISPLAY_ONLY for f in lint(source) if f.fix)


def test_the_init_of_a_scripted_module_runs_in_python_and_is_fixed():
    source = ("import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.w = torch.ones(2).cuda()\n\n    def forward(self, x):\n        return x.cuda() + self.w\n\n\n"
              "m = torch.jit.script(Net())\n")
    assert [level for level, _ in _fixes(source)] == ["safe", "display-only"]


def test_a_method_torchscript_ignores_is_fixed():
    source = ("import torch\n\n\nclass Net(torch.nn.Module):\n    @torch.jit.ignore\n    def helper(self, x):\n"
              "        return x.cuda()\n\n    def forward(self, x):\n        return self.helper(x)\n\n\n"
              "m = torch.jit.script(Net())\n")
    assert _fixes(source) == [("safe", "Replace `.cuda()` with `.to(device)`")]


# -- S6: a file other project files import is a library for placement --------------------------------
MODEL = """import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x)


def make_input():
    return torch.ones(1, 2).cuda()


if __name__ == "__main__":
    print(Net().cuda()(make_input()).shape)
"""
TRAIN = """import os
import sys

import model

if "--cpu" in sys.argv:
    os.environ["CUDA_VISIBLE_DEVICES"] = ""

x = model.make_input()
print(x.device.type)
"""


def _project(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text("")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _fixed(path: Path) -> str:
    # (DL001 alone: DL018 would go on to write `torch.ones(1, 2, device=device)`)
    result = check_source(str(path), path.read_bytes(), Config(select=("DL001",), fix=True))
    assert result.error is None, result.error
    return result.fixed_source


def test_a_model_with_a_self_test_that_a_script_imports_gets_local_definitions(tmp_path):
    _project(tmp_path, {"model.py": MODEL, "train.py": TRAIN})
    fixed = _fixed(tmp_path / "model.py")
    assert f"\n{DEVICE}\n" not in fixed  # nothing at module level queries CUDA when train.py imports it
    assert f"def make_input():\n    {DEVICE}\n    return torch.ones(1, 2).to(device)\n" in fixed
    assert f'if __name__ == "__main__":\n    {DEVICE}\n    print(Net().to(device)(' in fixed


def test_the_same_file_that_nothing_imports_is_a_script(tmp_path):
    _project(tmp_path, {"model.py": MODEL, "train.py": TRAIN.replace("import model\n", "")})
    assert _fixed(tmp_path / "model.py").startswith(f"import torch\n\n{DEVICE}\n")


@pytest.mark.parametrize("importer", [
    "from model import make_input\n",
    "from . import model\n",
    "def main():\n    import model\n",
    "from pkg.model import Net\n",
])
def test_any_import_from_the_project_makes_it_a_library(tmp_path, importer):
    if "pkg" in importer or "from ." in importer:
        _project(tmp_path, {"pkg/__init__.py": "", "pkg/model.py": MODEL, "pkg/train.py": importer})
        path = tmp_path / "pkg" / "model.py"
    else:
        _project(tmp_path, {"model.py": MODEL, "train.py": importer})
        path = tmp_path / "model.py"
    assert f"\n{DEVICE}\n" not in _fixed(path)


def test_without_a_project_marker_only_the_folder_and_its_packages_are_looked_in(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "old.py").write_text("import model\n")  # not a package: not looked in
    assert _fixed(tmp_path / "model.py").startswith(f"import torch\n\n{DEVICE}\n")
    (tmp_path / "train.py").write_text("import model\n")
    other = tmp_path / "copy"
    other.mkdir()
    (other / "model.py").write_text(MODEL)
    (other / "train.py").write_text("import model\n")
    assert f"\n{DEVICE}\n" not in _fixed(other / "model.py")


def test_a_project_too_large_to_list_counts_as_importing(tmp_path, monkeypatch):
    from devlint.analysis import importers

    monkeypatch.setattr(importers, "MAX_FILES", 2)
    _project(tmp_path, {"model.py": MODEL.replace("    print(Net().cuda()(make_input()).shape)\n",
                                                  "    y = torch.ones(2).cuda()\n    device = torch.device('cpu')\n"),
                        "a.py": "", "b.py": ""})
    path = tmp_path / "model.py"
    result = check_source(str(path), path.read_bytes(), Config(select=("DL001",)))
    [title] = [f.fix.title for f in result.findings if f.start.line == 18]
    assert "the project is too large to tell whether other files import this one" in title


def test_a_main_block_site_of_a_library_says_why_when_nothing_can_be_placed(tmp_path):
    # the main block binds `device` after the site: no local definition there, none at module level
    source = MODEL.replace("    print(Net().cuda()(make_input()).shape)\n",
                           "    y = torch.ones(2).cuda()\n    device = torch.device('cpu')\n")
    _project(tmp_path, {"model.py": source, "train.py": "import model\n"})
    path = tmp_path / "model.py"
    result = check_source(str(path), path.read_bytes(), Config(select=("DL001",)))
    [title] = [f.fix.title for f in result.findings if f.start.line == 18]
    assert "`train.py` of the project imports this file: a module-level `device` would query CUDA" in title
    assert f"r:{path.parent / 'train.py'}" in result.dependencies  # checked again when it changes


# -- S7: a later rebinding of the module's device ------------------------------------------------------
S7_REUSED = {
    "argv-branch": ("import sys\nimport torch\n\ndevice = torch.device('cuda')\nif '--cpu' in sys.argv:\n"
                    "    device = torch.device('cpu')\n\n\ndef f(x):\n    return x.cuda()\n\n\nprint(f(torch.ones(2)))\n"),
    "match": ("import sys\nimport torch\n\ndevice = torch.device('cuda')\nmatch sys.argv[1:]:\n    case ['--cpu']:\n"
              "        device = torch.device('cpu')\n\n\ndef f(x):\n    return x.cuda()\n\n\nprint(f(torch.ones(2)))\n"),
    "match-capture": ("import sys\nimport torch\n\ndevice = torch.device('cuda')\nmatch sys.argv[1:]:\n"
                      "    case ['--device', device]:\n        pass\n\n\ndef f(x):\n    return x.cuda()\n"),
    "global-in-function": ("import torch\n\ndevice = torch.device('cuda')\n\n\ndef setup(cpu):\n    global device\n"
                           "    if cpu:\n        device = torch.device('cpu')\n\n\ndef f(x):\n    return x.cuda()\n"),
    "globals-update": ("import argparse\nimport torch\n\ndevice = torch.device('cuda')\n\n\ndef f(x):\n"
                       "    return x.cuda()\n\n\np = argparse.ArgumentParser()\np.add_argument('--device', default='cpu')\n"
                       "globals().update(vars(p.parse_args()))\nprint(f(torch.ones(2)))\n"),
    "globals-item": ("import torch\n\ndevice = torch.device('cuda')\n\n\ndef f(x):\n    return x.cuda()\n\n\n"
                     "globals()['device'] = torch.device('cpu')\n"),
    "vars-item": "import torch\n\ndevice = torch.device('cuda')\nvars()['device'] = 'cpu'\nx = torch.ones(2).cuda()\n",
    "sys-modules": ("import sys\nimport torch\n\ndevice = torch.device('cuda')\n"
                    "setattr(sys.modules[__name__], 'device', torch.device('cpu'))\n\n\ndef f(x):\n    return x.cuda()\n"),
}


@pytest.mark.parametrize("source", S7_REUSED.values(), ids=S7_REUSED.keys())
def test_a_reused_device_that_may_be_rebound_before_the_fixed_line_makes_the_fix_unsafe(source):
    [(level, title)] = _fixes(source)
    # (the reuse analysis may refuse a CPU rebinding first, issue 29 S2: display-only is no less safe)
    assert (level == "unsafe" and ("rebound" in title or "rebind" in title)) or level == "display-only", title
    assert fix(source, "DL001") == source
    if level == "unsafe":
        assert ".to(device)" in fix(source, "DL001", unsafe=True)


S7_INSERTED = {
    "argv-branch": ("import sys\nimport torch\n\nif '--cpu' in sys.argv:\n    device = torch.device('cpu')\n\n\n"
                    "def f(x):\n    return x.cuda()\n\n\nprint(f(torch.ones(2)))\n"),
    "globals-update": ("import argparse\nimport torch\n\n\ndef f(x):\n    return x.cuda()\n\n\n"
                       "p = argparse.ArgumentParser()\np.add_argument('--device', default='cpu')\n"
                       "globals().update(vars(p.parse_args()))\nprint(f(torch.ones(2)))\n"),
    # a builtin `device` the file reads elsewhere: a module-level definition would shadow it
    "builtins": ("import builtins\nimport torch\n\nbuiltins.device = torch.device('cpu')\n\n\ndef g(x):\n"
                 "    return x.to(device)\n\n\ndef f(x):\n    return x.cuda()\n\n\nprint(f(torch.ones(2)), g(torch.ones(2)))\n"),
}


@pytest.mark.parametrize("source", S7_INSERTED.values(), ids=S7_INSERTED.keys())
def test_an_inserted_device_that_may_be_rebound_or_shadow_a_builtin_makes_the_fix_unsafe(source):
    [(level, title)] = _fixes(source)
    assert level == "unsafe", title
    assert fix(source, "DL001") == source


@pytest.mark.parametrize("source", [
    # the binding after a line that runs once at import cannot reach it
    "import torch\n\nx = torch.ones(2).cuda()\ndevice = torch.device('cpu')\nprint(x)\n",
    # bound again to the run's device
    ("import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nif True:\n"
     "    device = torch.device('cuda')\n\n\ndef f(x):\n    return x.cuda()\n"),
    # reads of globals() write nothing
    "import torch\n\nprint('device' in globals(), globals().get('x'))\n\n\ndef f(x):\n    return x.cuda()\n",
    # `builtins.device` with a module-level device already: the module's shadows the builtin anyway
    ("import builtins\nimport torch\n\nbuiltins.device = torch.device('cpu')\ndevice = torch.device('cuda')\n\n\n"
     "def f(x):\n    return x.cuda()\n"),
    # a definition local to the function: nothing outside rebinds it
    ("import sys\nimport torch\n\nif '--cpu' in sys.argv:\n    device = torch.device('cpu')\n\n\n"
     "def f(x):\n    return x.cuda()\n"),
])
def test_rebindings_that_cannot_reach_the_fixed_line_keep_it_safe(source):
    assert [level for level, _ in _fixes(source)] == ["safe"]


# -- S8: names as Python reads them ----------------------------------------------------------------------
def test_a_fullwidth_device_is_the_device_python_binds():
    source = "import torch\n\n\uff44\uff45\uff56\uff49\uff43\uff45 = 'cpu'\n\n\ndef f(x):\n    return x.cuda()\n\n\nprint(f(torch.ones(2)))\n"
    assert fix(source) == source
    [(level, title)] = _fixes(source)
    assert level == "display-only" and "`device` is bound to a string" in title


def test_normalised_names_are_found_everywhere_names_are_compared():
    # `x.ｃｕｄａ()` calls cuda(); `import ｔｏｒｃｈ` binds torch; a `ｄｅｖｉｃｅ` parameter is a device in scope
    assert _fixes("import torch\nx = torch.ones(2).\uff43\uff55\uff44\uff41()\nprint(x)\n")[0][0] == "safe"
    fixed = fix("import \uff54\uff4f\uff52\uff43\uff48\nx = torch.ones(2).cuda()\nprint(x)\n")
    assert "import torch\n" not in fixed and DEVICE in fixed  # no second import of torch
    source = "import torch\n\n\ndef f(x, \uff44\uff45\uff56\uff49\uff43\uff45):\n    return x.cuda()\n"
    # (a parameter is reused only by an unsafe fix: a caller may pass the CPU)
    assert fix(source, unsafe=True) == source.replace("x.cuda()", "x.to(device)")


def test_the_kinds_see_a_normalised_binding():
    # `ｘ` is bound to a tensor: `x.cuda()` as a statement discards the moved copy (DL003)
    assert "DL003" in [f.code for f in lint("import torch\n\uff58 = torch.ones(2)\nx.cuda()\n")]


def test_a_name_whose_normal_form_is_longer_keeps_positions():
    source = "import torch\n\n\ndef f(\ufb01le, x):\n    return x.cuda()\n"  # `ﬁle` is `file`: one character more
    assert "x.to(device)" in fix(source)


# -- runtime proofs under the virtual GPU: one process runs every program (runpy), as few runs as can be ------
PROOFS = {
    # S4: a script: the definition goes to module level, not into the functions that bind torch
    "s4.py": ("import torch\n\n\ndef run(x, torch=None):\n    y = x.cuda()\n    return (y * 2).sum().item()\n\n\n"
              "def run2(x):\n    y = x.cuda() + 1\n    import torch.distributed\n    return y.sum().item()\n\n\n"
              "if __name__ == '__main__':\n    print(run(torch.ones(3)), run2(torch.ones(3)))\n"),
    # S7: the branch that rebinds is not taken here; the fix is unsafe, applied with --unsafe-fixes only
    "s7.py": ("import sys\nimport torch\n\nif '--cpu' in sys.argv:\n    device = torch.device('cpu')\n\n\n"
              "def f(x):\n    return x.cuda()\n\n\nprint(f(torch.ones(2)).device.type)\n"),
    # S8: the fullwidth `device` is the `device` DL001 writes: DL004 makes it the run's device, then DL001
    # reuses it (no definition above it that it would overwrite with "cuda")
    "s8.py": ("import torch\n\n\uff44\uff45\uff56\uff49\uff43\uff45 = 'cuda'\n\n\ndef f(x):\n    return x.cuda()\n\n\n"
              "print(f(torch.ones(2)).device.type, device)\n"),
    "model.py": MODEL,  # S6, with train.py
    "train.py": TRAIN,
    "s5.py": S5["decorator"][0],  # (TorchScript runs real CUDA kernels: not under the virtual GPU)
    "all.py": ("import runpy\nimport sys\n\nfor program in sys.argv[1:]:\n    print('--', program)\n"
               "    runpy.run_path(program, run_name='__main__')\n"),
}


def _fix_file(path: Path, unsafe: bool = False) -> None:
    result = check_source(str(path), path.read_bytes(), Config(select=("ALL",), fix=True, unsafe_fixes=unsafe))
    assert result.error is None, result.error
    if result.fixed_source is not None:
        path.write_text(result.fixed_source)


@pytest.mark.slow
def test_fixes_keep_the_virtual_gpu_output_and_run_without_cuda(tmp_path):
    pytest.importorskip("torch")
    _project(tmp_path, PROOFS)

    def run(*args, **extra):
        return run_python(tmp_path, *args, **extra)

    programs = ["s4.py", "s7.py", "s8.py", "train.py", "model.py"]
    before = run("-m", "devlint", "run", "--virtual-gpu", "all.py", *programs)
    assert before.returncode == 0, before.stderr[-800:]
    for name in [*programs, "s5.py"]:
        _fix_file(tmp_path / name)
    fixed = {name: (tmp_path / name).read_text() for name in PROOFS}
    # where the fix would break the program it is not safe: unchanged (the fast tests assert level and reason)
    assert [n for n in ("s5.py", "s7.py") if fixed[n] != PROOFS[n]] == []
    assert [n for n in ("s4.py", "s8.py", "model.py") if fixed[n] == PROOFS[n]] == []
    assert "torch.device" not in fixed["s8.py"]
    _fix_file(tmp_path / "s7.py", unsafe=True)  # S7 with --unsafe-fixes: the same here, the branch not taken
    assert (tmp_path / "s7.py").read_text() != PROOFS["s7.py"]
    after = run("-m", "devlint", "run", "--virtual-gpu", "all.py", *programs)
    assert (after.returncode, after.stdout) == (0, before.stdout), after.stderr[-800:]
    hidden = run("all.py", *programs, CUDA_VISIBLE_DEVICES="")
    assert hidden.returncode == 0, hidden.stderr[-800:]
    # S6: the library's definition runs when called, after train.py hid CUDA for --cpu (at module level
    # it ran at import, before, and chose the GPU)
    cpu = run("-m", "devlint", "run", "--virtual-gpu", "train.py", "--cpu")
    assert (cpu.returncode, cpu.stdout) == (0, "cpu\n"), cpu.stderr[-800:]
