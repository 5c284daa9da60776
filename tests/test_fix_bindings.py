"""Issue 13: "safe" fixes that broke programs through name bindings, layout and options.

Each case was a program that ran before `--fix` and failed after it. A fix that writes `device`
needs `device` bound on every path to the use; DL003's `x = x.to(...)` must not turn a free
variable into a local; the inserted definition must not shadow a star import nor land above a
`global` statement; a form feed in an indentation must not crash the fixer; and the device options
must be valid Python where they are written.

The runtime proofs run the original and the fixed program under devlint's virtual GPU (one CUDA
device simulated on the CPU build, failing where a GPU fails), and the fixed program on the CPU build
as it is, with CUDA hidden.
"""

from __future__ import annotations

import ast
import builtins
import os
import subprocess
import sys
import symtable
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main
from devlint.model import Applicability
from tests.helpers import fix, lint

DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def applicabilities(source: str, code: str) -> list[str]:
    return [f.fix.applicability.value for f in lint(source) if f.code == code and f.fix is not None]


def free_names(source: str) -> dict[str, set[str]]:
    """Per scope, the names read there that no scope binds (symtable's view; globals included)."""
    table = symtable.symtable(source, "<fixed>", "exec")
    module_names = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    found: dict[str, set[str]] = {}

    def visit(scope, enclosing: set[str]) -> None:
        local = {s.get_name() for s in scope.get_symbols() if s.is_assigned() or s.is_imported() or s.is_parameter()}
        for symbol in scope.get_symbols():
            name = symbol.get_name()
            if symbol.is_referenced() and name not in local | enclosing | module_names and name not in dir(builtins):
                found.setdefault(scope.get_name(), set()).add(name)
        for child in scope.get_children():
            visit(child, enclosing | (local if scope.get_type() == "function" else set()))

    visit(table, set())
    return found


# -- 1. `device` bound on one path only -------------------------------------------------------------

def test_a_module_level_device_bound_on_one_branch_gets_a_definition_that_dominates_the_use():
    # The branch rebinds the definition before the fixed line runs: unsafe (issue 29 S7), applied only
    # with --unsafe-fixes.
    source = "import torch, sys\nif '--cpu' in sys.argv:\n    device = torch.device('cpu')\nx = torch.ones(1).cuda()\n"
    assert fix(source, select="DL001") == source and applicabilities(source, "DL001") == ["unsafe"]
    fixed = fix(source, select="DL001", unsafe=True)
    assert fixed == (
        "import torch, sys\n\n" + DEVICE + "if '--cpu' in sys.argv:\n    device = torch.device('cpu')\n"
        "x = torch.ones(1).to(device)\n"
    )


def test_a_device_bound_in_a_main_block_is_not_relied_on_in_a_function_defined_outside_it():
    source = (
        "import torch\n\ndef train(x):\n    return x.cuda()\n\n"
        "if __name__ == '__main__':\n    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "    train(torch.ones(1))\n"
    )
    fixed = fix(source)
    assert fixed.startswith("import torch\n\n" + DEVICE) and "return x.to(device)" in fixed
    assert not free_names(fixed)


def test_a_device_bound_earlier_in_the_same_block_is_reused():
    source = (
        "import torch\nif __name__ == '__main__':\n    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "    x = torch.ones(1).cuda()\n"
    )
    assert fix(source, select="DL001") == source.replace(".cuda()", ".to(device)")
    # bound on every path, but to what a caller may make the CPU: only an unsafe fix reuses it (issue 29 S2)
    source = "import torch\ndef f(x, cpu):\n    device = torch.device('cpu' if cpu else 'cuda')\n    if x:\n        return x.cuda()\n"
    assert fix(source, select="DL001") == source
    assert fix(source, select="DL001", unsafe=True) == source.replace(".cuda()", ".to(device)")


@pytest.mark.parametrize("source", [
    # a conditional local binding makes `device` local to the whole function: a module-level one cannot help
    "import torch\ndef f(cpu):\n    if cpu:\n        device = torch.device('cpu')\n    return torch.ones(1).cuda()\n",
    "import torch\ndef f(cpu):\n    for d in cpu:\n        device = torch.device(d)\n    return torch.ones(1).cuda()\n",
    "import torch\ndef f(cpu):\n    try:\n        device = torch.device(cpu)\n    except ValueError:\n        pass\n"
    "    return torch.ones(1).cuda()\n",
    "import torch\ndef outer(cpu):\n    if cpu:\n        device = torch.device('cpu')\n    def inner():\n"
    "        return torch.ones(1).cuda()\n    return inner\n",
    # `del device` before the use
    "import torch\ndevice = torch.device('cpu')\ndel device\nx = torch.ones(1).cuda()\n",
    "import torch\ndef f():\n    device = torch.device('cpu')\n    del device\n    return torch.ones(1).cuda()\n",
    "import torch\ndevice = torch.device('cpu')\ndef f():\n    global device\n    del device\ndef g():\n    return torch.ones(1).cuda()\n",
])
def test_no_fix_relies_on_a_device_that_may_be_unbound(source):
    assert fix(source) == source
    assert applicabilities(source, "DL001") == ["display-only"]


def test_a_device_rebound_to_the_cpu_on_one_branch_is_not_reused():
    # with `cpu` set, `.to(device)` would stay on the CPU where `.cuda()` went to the GPU (issue 29 S2)
    source = (
        "import torch\ndef f(cpu):\n    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "    if cpu:\n        device = torch.device('cpu')\n    return torch.ones(1).cuda()\n"
    )
    assert fix(source, select="DL001", unsafe=True) == source
    assert applicabilities(source, "DL001") == ["display-only"]


def test_a_device_bound_after_the_use_in_the_module_gets_a_definition_before_it():
    source = "import torch\nx = torch.ones(1).cuda()\ndevice = torch.device('cpu')\n"
    assert fix(source, select="DL001") == "import torch\n\n" + DEVICE + "x = torch.ones(1).to(device)\ndevice = torch.device('cpu')\n"


def test_every_fix_needing_the_device_name_checks_the_binding():
    source = (
        "import torch, sys\nif '--cpu' in sys.argv:\n    device = torch.device('cpu')\n"
        "a = torch.load('p.pt')\nb = torch.ones(1, device='cuda')\nc = torch.cuda.FloatTensor(2)\n"
    )
    fixed = fix(source, unsafe=True)  # (the branch may rebind the definition first: issue 29 S7)
    assert fixed.startswith("import torch, sys\n\n" + DEVICE)
    assert not free_names(fixed)


# -- 2. DL003 never turns a free variable into a local -----------------------------------------------

@pytest.mark.parametrize("source", [
    "import torch\nx = torch.zeros(3)\ndef f():\n    x.to(device)\n    return x\n",
    "import torch\ndef outer():\n    x = torch.zeros(3)\n    def inner():\n        x.cpu()\n    return inner\n",
    "import torch\nx = torch.zeros(3)\nclass A:\n    x.to(device)\n",
    "import torch\nts = [torch.zeros(1)]\ndef f():\n    [t.to(device) for t in ts]\n",
])
def test_a_discarded_move_of_an_enclosing_scope_tensor_is_display_only(source):
    assert fix(source, select="DL003") == source
    assert applicabilities(source, "DL003") == ["display-only"]


@pytest.mark.parametrize("declaration", ["global x", "nonlocal x"])
def test_a_discarded_move_of_a_declared_global_or_nonlocal_is_still_fixed(declaration):
    if declaration == "global x":
        source = "import torch\nx = torch.zeros(3)\ndef f():\n    global x\n    x.to(device)\n"
    else:
        source = "import torch\ndef outer():\n    x = torch.zeros(3)\n    def inner():\n        nonlocal x\n        x.cpu()\n"
    fixed = fix(source, select="DL003", unsafe=True)  # unsafe since issue 15: offered, not applied by --fix
    assert fixed != source and ("x = x.to(device)" in fixed or "x = x.cpu()" in fixed)
    compile(fixed, "<fixed>", "exec")


def test_a_discarded_move_of_a_local_is_still_fixed():
    source = "import torch\ndef f(device):\n    x = torch.zeros(3)\n    x.to(device)\n    return x\n"
    assert fix(source, select="DL003", unsafe=True) == source.replace("    x.to(device)", "    x = x.to(device)")
    source = "import torch\ndef f(device):\n    ts = [torch.zeros(1)]\n    [t.to(device) for t in ts]\n"
    assert "ts = [t.to(device) for t in ts]" in fix(source, select="DL003", unsafe=True)


# -- 3. the inserted definition shadows nothing and lands below what must come first -----------------

def test_a_star_import_of_torch_is_not_shadowed():
    source = "from torch import *\nx = ones(1).cuda()\nd = device('cpu')\n"
    fixed = fix(source)
    assert "\ndevice =" not in fixed and "d = device('cpu')" in fixed
    assert "_device = torch.device(" in fixed and "x = ones(1).to(_device)" in fixed
    assert fix(fixed) == fixed


def test_a_star_import_alternative_name_is_reused_and_never_shadows_a_free_use():
    source = "from torch import *\nx = ones(1, device='cuda')\n"
    fixed = fix(source)
    assert "x = ones(1, device=_device)" in fixed and fixed.count("_device = ") == 1
    # `_device` read but bound nowhere in the file: it comes from somewhere devlint cannot see
    source = "from torch import *\nprint(_device)\nx = ones(1).cuda()\n"
    assert fix(source) == source


def test_a_builtin_device_name_is_not_shadowed():
    fixed = fix("import torch\nx = torch.ones(1).cuda()\nprint(type(x))\n", device_name="type", select="DL001")
    assert "_type = torch.device(" in fixed and "x = torch.ones(1).to(_type)" in fixed


@pytest.mark.parametrize("source, expected", [
    ("import torch\nglobal device\nx = torch.ones(1).cuda()\n",
     "import torch\nglobal device\n\n" + DEVICE + "x = torch.ones(1).to(device)\n"),
    ("import torch\nx = torch.ones(1).cuda()\nglobal device\n", None),
    ("import torch\nif x:\n    global device\ny = torch.ones(1).cuda()\n", None),
    ("import torch\ndef f():\n    x = torch.ones(1).cuda()\n    global device\n", None),
])
def test_the_definition_never_lands_above_a_global_statement(source, expected):
    fixed = fix(source, select="DL001")
    assert fixed == (source if expected is None else expected)
    compile(fixed, "<fixed>", "exec")


@pytest.mark.parametrize("source", [
    '"""Doc."""; x = 1\ny = torch.ones(1).cuda()\n',
    '"""Doc."""; import torch\nx = torch.ones(1).cuda()\n',
    '"""Doc."""; x = 1\nimport torch\ny = torch.ones(1).cuda()\n',
    "from __future__ import annotations; x = 1\ny = torch.ones(1).cuda()\n",
    '"""Doc."""\nfrom __future__ import annotations; x = 1\nimport torch\ny = torch.ones(1).cuda()\n',
])
def test_the_definition_never_lands_above_a_docstring_or_future_import(source):
    fixed = fix(source)
    compile(fixed, "<fixed>", "exec")
    assert ast.get_docstring(ast.parse(fixed)) == ast.get_docstring(ast.parse(source))


# -- 4. a form feed in an indentation -----------------------------------------------------------------

@pytest.mark.parametrize("source", [
    "import torch\nif x:\n\f    y.cuda()\n",
    "import torch\nif x:\n\f    y = y.cuda()\n\f    z = z.cuda()\n",
    "\fimport torch\n\fx = torch.ones(1).cuda()\n",
    "import torch\n\f\ndef f():\n\f    return torch.load(\n\f        p)\n",
    "import torch\nif x:\n    \f    y = y.cuda()\n",
    "import torch\nclass A:\n\f    def f(self):\n\f        self.t = torch.cuda.FloatTensor(2)\n",
    # LibCST renders the first line's form feed on the block's other lines too, and drops leading ones
    "\f\fimport torch\ndef f(a, b):\n\f    t = a.cuda()\n    return t.cuda()\nx = torch.zeros(3).cuda()\n",
    "\fimport numpy\n\fx = numpy.ones(1)\ny = torch.load(p)\n",
])
def test_a_form_feed_in_an_indentation_is_kept_and_fixed_around(source):
    fixed = fix(source, unsafe=True)  # a returned or module-level load is an unsafe DL002 fix
    assert fixed != source and fixed.count("\f") == source.count("\f")
    compile(fixed, "<fixed>", "exec")
    original = set(source.splitlines())
    assert all("device" in line or line in ("import torch", "") for line in fixed.splitlines() if line not in original)
    assert fix(fixed, unsafe=True) == fixed


# -- 5. the device options are validated --------------------------------------------------------------

@pytest.fixture
def run_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def run(*args: str, pyproject: str | None = None):
        (tmp_path / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
        if pyproject is not None:
            (tmp_path / "pyproject.toml").write_text(pyproject)
        return CliRunner().invoke(main, ["a.py", "--no-cache", *args])

    return run


@pytest.mark.parametrize("expression", ["yield 1", "await f()", "*a", ")", "1\nimport os", "1; import os", "",
                                        "x = 1", "lambda: (yield", "a\\\n+ b"])
def test_an_invalid_device_expression_is_a_usage_error(run_cli, tmp_path, expression):
    result = run_cli("--fix", "--device-expression", expression)
    assert result.exit_code == 2, result.output
    assert f"devlint: error: --device-expression: {expression!r} is not a single expression valid at module level" in result.output
    assert (tmp_path / "a.py").read_text() == "import torch\nx = torch.ones(1).cuda()\n"


@pytest.mark.parametrize("name", ["__debug__", "class", "None", "True", "1x", "a.b", "", "dev ice", "\ufb01", "torch"])
def test_an_invalid_device_name_is_a_usage_error(run_cli, tmp_path, name):
    result = run_cli("--fix", "--device-name", name)
    assert result.exit_code == 2, result.output
    assert f"devlint: error: --device-name: {name!r}" in result.output
    assert (tmp_path / "a.py").read_text() == "import torch\nx = torch.ones(1).cuda()\n"


def test_invalid_device_options_in_pyproject_are_a_usage_error(run_cli):
    result = run_cli(pyproject='[tool.devlint]\ndevice-expression = "yield 1"\n')
    assert result.exit_code == 2 and "device-expression: 'yield 1' is not a single expression" in result.output
    assert "pyproject.toml" in result.output
    result = run_cli(pyproject='[tool.devlint]\ndevice-name = "__debug__"\n')
    assert result.exit_code == 2 and "device-name: '__debug__'" in result.output


@pytest.mark.parametrize("name, expression", [
    ("match", "cuda"), ("dev", "accelerator"), ("_", "torch.device('cpu')"), ("device", "torch.device('cpu')  # here"),
    ("device", "get_device()"), ("device", "(yield_ := 1)"), ("d", "lambda: 1"), ("d\u00e9vice", "cuda"),
])
def test_valid_device_options_are_accepted_and_written(run_cli, tmp_path, name, expression):
    result = run_cli("--fix", "--device-name", name, "--device-expression", expression)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "a.py").read_text()
    compile(text, "a.py", "exec")
    assert f"x = torch.ones(1).to({name})" in text


# -- runtime proofs: the original runs on the virtual GPU, the fixed program there and on the CPU ----

def python(tmp_path: Path, script: str, *args: str, gpu: bool = False) -> subprocess.CompletedProcess:
    path = tmp_path / "program.py"
    path.write_text(script)
    if gpu:  # devlint's virtual GPU: the program sees one CUDA device and fails where a GPU would
        command = [sys.executable, "-m", "devlint", "run", "--virtual-gpu", str(path), *args]
        env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    else:
        command = [sys.executable, str(path), *args]
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)


RUNTIME_CASES = {
    "branch": ("import sys\nimport torch\nif '--cpu' in sys.argv:\n    device = torch.device('cpu')\n"
               "x = torch.ones(2).cuda()\nprint(x.sum().item())\n", ["", "--cpu"]),
    "main-block": ("import torch\ndef train(x):\n    return x.cuda().sum().item()\n"
                   "if __name__ == '__main__':\n    import sys\n    if '--cpu' in sys.argv:\n"
                   "        device = torch.device('cpu')\n    print(train(torch.ones(2)))\n", ["", "--cpu"]),
    "local-branch": ("import sys\nimport torch\ndef f(cpu):\n    if cpu:\n        device = torch.device('cpu')\n"
                     "    return torch.ones(2).cuda().sum().item()\nprint(f('--cpu' in sys.argv))\n", ["", "--cpu"]),
    "del": ("import torch\ndevice = torch.device('cpu')\nt = torch.ones(2).to(device)\ndel device\n"
            "print(torch.ones(2).cuda().sum().item())\n", [""]),
    "module-tensor": ("import torch\ndevice = torch.device('cpu')\nx = torch.zeros(3)\ndef f():\n    x.to(device)\n"
                      "    return x.sum().item()\nprint(f())\n", [""]),
    "closure": ("import torch\ndef outer():\n    x = torch.zeros(3)\n    def inner():\n        x.cpu()\n"
                "        return x.sum().item()\n    return inner()\nprint(outer())\n", [""]),
    "star-import": ("from torch import *\nx = ones(2).cuda()\nd = device('cpu')\nprint(x.sum().item(), d)\n", [""]),
    "global-statement": ("import torch\nglobal device\nx = torch.ones(2).cuda()\nprint(x.sum().item())\n", [""]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(RUNTIME_CASES))
def test_the_fixed_program_runs_where_the_original_ran(tmp_path, case):
    pytest.importorskip("torch")
    source, argvs = RUNTIME_CASES[case]
    fixed = fix(source)
    for args in argvs:
        extra = [args] if args else []
        original = python(tmp_path, source, *extra, gpu=True)
        assert original.returncode == 0, original.stderr
        # the fixed program runs on the same (virtual) GPU machine, and on the CPU where nothing
        # hard-coded CUDA is left in it
        after = python(tmp_path, fixed, *extra, gpu=True)
        assert after.returncode == 0, f"{fixed}\n{after.stderr}"
        assert after.stdout == original.stdout
        if ".cuda()" not in fixed:
            on_cpu = python(tmp_path, fixed, *extra)
            assert on_cpu.returncode == 0 and on_cpu.stdout == original.stdout, f"{fixed}\n{on_cpu.stderr}"


def test_findings_are_kept_when_fixes_become_display_only():
    source = "import torch\ndef f(cpu):\n    if cpu:\n        device = torch.device('cpu')\n    return torch.ones(1).cuda()\n"
    [finding] = [f for f in lint(source) if f.code == "DL001"]
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY
