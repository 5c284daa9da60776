"""Issue 15, item 1: where the device a fix needs comes from, and where its definition goes.

`device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` queries CUDA where it runs.
At module level that is import time: in a library module it queried CUDA for every importer, and
before a `CUDA_VISIBLE_DEVICES` assignment in `main()` it made the assignment ineffective. Now a
definition goes after the imports only where the fix site runs at import or the file is a script;
elsewhere into the function that runs the site; never before a `CUDA_VISIBLE_DEVICES` setting on
the same path. And a name is reused only when it is known to hold a device.
"""

from __future__ import annotations

import json

import libcst as cst
import pytest

from devlint.config import Config
from devlint.context import FileContext
from devlint.documents import check_document as check_source
from devlint.rules import ALL_RULES
from devlint.analysis.device import device_reference, device_source
from devlint.analysis.device_definition import MODULE_LEVEL, definition_placement
from devlint.analysis.top_level import script_evidence
from tests.helpers import ROOT, fix, lint, parses

DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
MODULE_DEVICE = DEVICE + "\n"


def applicabilities(source: str, code: str = "DL001") -> list[str]:
    return [f.fix.applicability.value for f in lint(source) if f.code == code and f.fix is not None]


def fixed_and_idempotent(source: str, **kwargs) -> str:
    fixed = fix(source, **kwargs)
    compile(fixed, "<fixed>", "exec")
    assert fix(fixed, **kwargs) == fixed
    return fixed


# -- 1. a library module: the definition goes into the function --------------------------------------

def test_a_library_function_gets_its_own_definition_after_its_docstring():
    source = 'import torch\n\n\ndef f(x):\n    """Doc."""\n    y = 1\n    return x.cuda() + y\n'
    assert fixed_and_idempotent(source) == (
        'import torch\n\n\ndef f(x):\n    """Doc."""\n    y = 1\n    ' + DEVICE + "\n    return x.to(device) + y\n"
    )


def test_two_fixes_in_one_function_share_one_definition_before_the_first():
    source = "import torch\n\ndef f(x):\n    a = x.cuda()\n    for i in range(3):\n        b = torch.load(p)\n    return a, b\n"
    fixed = fixed_and_idempotent(source, unsafe=True)  # a returned load's map_location is unsafe
    assert fixed == (
        "import torch\n\ndef f(x):\n    " + DEVICE + "\n    a = x.to(device)\n    for i in range(3):\n"
        "        b = torch.load(p, map_location=device)\n    return a, b\n"
    )


def test_the_second_pass_reuses_the_inserted_local_as_a_dominating_binding():
    source = "import torch\n\ndef f(x):\n    a = x.cuda()\n    b = x.cuda()\n    return a, b\n"
    fixed = fix(source)
    assert fixed.count("device = torch.device(") == 1
    module = cst.parse_module(fixed)
    ctx = FileContext(module)
    second = [c for c in ctx.nodes(cst.Call) if ctx.code(c) == "x.to(device)"][1]
    assert device_reference(ctx, second) == ("device", False)


def test_each_function_gets_one_definition():
    source = "import torch\n\ndef f(x):\n    return x.cuda()\n\ndef g(x):\n    return x.cuda()\n"
    fixed = fixed_and_idempotent(source)
    assert fixed.count("    " + DEVICE + "\n") == 2 and not any(line.startswith("device") for line in fixed.splitlines())


def test_a_body_on_the_def_line_is_display_only():
    source = "import torch\n\ndef f(x): return x.cuda()\n"
    assert applicabilities(source) == ["display-only"]
    assert fix(source) == source


@pytest.mark.parametrize("source, expected", [
    # the innermost function whose body runs the site
    ("import torch\ndef outer():\n    def inner(x):\n        return x.cuda()\n    return inner\n",
     "import torch\ndef outer():\n    def inner(x):\n        " + DEVICE + "\n        return x.to(device)\n    return inner\n"),
    # a method
    ("import torch\nclass M:\n    def move(self, x):\n        if x is not None:\n            x = x.cuda()\n        return x\n",
     "import torch\nclass M:\n    def move(self, x):\n        " + DEVICE + "\n        if x is not None:\n"
     "            x = x.to(device)\n        return x\n"),
    # async def
    ("import torch\nasync def f(xs):\n    return [x.cuda() for x in xs]\n",
     "import torch\nasync def f(xs):\n    " + DEVICE + "\n    return [x.to(device) for x in xs]\n"),
    # a lambda in a function: a closure variable of the function
    ("import torch\ndef f(x):\n    g = lambda: x.cuda()\n    return g\n",
     "import torch\ndef f(x):\n    " + DEVICE + "\n    g = lambda: x.to(device)\n    return g\n"),
    # a decorator of a nested definition runs in the outer function: before the decorator
    ("import torch\ndef f(x):\n    @register(x.cuda())\n    def g():\n        pass\n    return g\n",
     "import torch\ndef f(x):\n    " + DEVICE + "\n    @register(x.to(device))\n    def g():\n        pass\n    return g\n"),
    # a class body inside a function runs with the function
    ("import torch\ndef f(x):\n    class C:\n        t = x.cuda()\n    return C\n",
     "import torch\ndef f(x):\n    " + DEVICE + "\n    class C:\n        t = x.to(device)\n    return C\n"),
    # tabs and CRLF are kept
    ("import torch\r\ndef f(x):\r\n\treturn x.cuda()\r\n",
     "import torch\r\ndef f(x):\r\n\t" + DEVICE + "\r\n\treturn x.to(device)\r\n"),
])
def test_local_placement_shapes(source, expected):
    assert fixed_and_idempotent(source) == expected


def test_torch_is_imported_for_a_local_definition():
    source = "def f(model):\n    return model.cuda()\n"
    fixed = fixed_and_idempotent(source)
    assert fixed.startswith("import torch\n") and "    " + DEVICE + "\n    return model.to(device)\n" in fixed


# -- 2. where a module-level definition is right --------------------------------------------------------

@pytest.mark.parametrize("source", [
    "import torch\nx = torch.ones(1).cuda()\n",  # the site runs at import
    "import torch\nclass C:\n    t = torch.ones(1).cuda()\n",  # a class body at module level
    "import torch\nTABLE = [t.cuda() for t in ts]\n",
])
def test_a_site_that_runs_at_import_gets_a_module_level_definition(source):
    fixed = fixed_and_idempotent(source)
    assert fixed.startswith("import torch\n\n" + MODULE_DEVICE)


@pytest.mark.parametrize("tail", [
    "if __name__ == '__main__':\n    f(1)\n",
    "f(1)\n",  # a bare call that does work
    "for i in range(3):\n    f(i)\n",
    "with open('x') as h:\n    pass\n",
    "args = parser.parse_args()\n",
])
def test_a_script_gets_a_module_level_definition(tail):
    source = "import torch\n\ndef f(x):\n    return x.cuda()\n\n" + tail
    fixed = fixed_and_idempotent(source)
    assert fixed.startswith("import torch\n\n" + MODULE_DEVICE) and "return x.to(device)" in fixed
    assert script_evidence(FileContext(cst.parse_module(source)))


@pytest.mark.parametrize("tail", [
    "logging.basicConfig(level=logging.INFO)\n",
    "logger.setLevel(logging.INFO)\n",
    "warnings.filterwarnings('ignore')\n",
    "sys.path.append('..')\n",
    "MODELS.register_module(Net)\n",
    "__all__.extend(['f'])\n",
    "logger = logging.getLogger(__name__)\n",
    "'''A docstring.'''\n",
])
def test_library_set_up_is_no_evidence_of_a_script(tail):
    source = "import torch\n\ndef f(x):\n    return x.cuda()\n\n" + tail
    assert not script_evidence(FileContext(cst.parse_module(source)))
    fixed = fixed_and_idempotent(source)
    assert "    " + DEVICE + "\n    return x.to(device)" in fixed and "\n" + MODULE_DEVICE not in fixed


def test_a_notebook_is_a_script():
    cells = ["import torch\n", "def f(x):\n    return x.cuda()\n", "y = f(torch.ones(1))\n"]
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c} for c in cells]}
    result = check_source("a.ipynb", json.dumps(notebook).encode(), Config(select=("DL001",), fix=True))
    sources = ["".join(c["source"]) for c in json.loads(result.fixed_source)["cells"]]
    assert sources[0] == "import torch\n\n" + MODULE_DEVICE
    assert sources[1] == "def f(x):\n    return x.to(device)\n"


def test_a_module_level_definition_reaches_the_functions_of_the_same_file():
    source = "import torch\na = torch.ones(1).cuda()\n\ndef f():\n    return torch.ones(1).cuda()\n"
    fixed = fixed_and_idempotent(source)
    assert fixed.count("device = torch.device(") == 1 and fixed.startswith("import torch\n\n" + MODULE_DEVICE)


def test_a_lambda_at_module_level_of_a_library_runs_later_and_is_display_only():
    source = "import torch\nmove = lambda x: x.cuda()\n"
    assert applicabilities(source) == ["display-only"]


def test_a_maybe_bound_module_device_does_not_stop_a_local_definition():
    source = ("import torch, os\nif os.environ.get('CPU'):\n    device = torch.device('cpu')\n\n"
              "def f(x):\n    return x.cuda()\n")
    fixed = fixed_and_idempotent(source)
    assert "def f(x):\n    " + DEVICE + "\n    return x.to(device)\n" in fixed


@pytest.mark.parametrize("body", [
    "    global device\n    return x.cuda()\n",
    "    print(device)\n    return x.cuda()\n",  # a read the new local would capture
])
def test_a_function_that_mentions_the_name_gets_no_local_definition(body):
    source = "import torch\ndef f(x):\n" + body
    assert applicabilities(source) == ["display-only"]


def test_placement_is_reported_for_the_site():
    source = "import torch\ndef f(x):\n    y = 1\n    return x.cuda()\n"
    ctx = FileContext(cst.parse_module(source))
    [call] = [c for c in ctx.nodes(cst.Call) if ctx.code(c) == "x.cuda()"]
    placement = definition_placement(ctx, call)
    assert placement is not MODULE_LEVEL and placement.function.name.value == "f"
    assert placement.statement is placement.function.body.body[1]
    assert device_reference(ctx, call) == ("device", True)


# -- 3. reuse a name only when it holds a device ---------------------------------------------------------

@pytest.mark.parametrize("parameter", [
    "device=None", "device=0", "device='cuda:1'", "device: Optional[str] = None", "device: int = 0",
    "*device", "**device", "device=torch.device('cpu')",
])
def test_a_parameter_not_known_to_hold_a_device_is_not_reused(parameter):
    source = f"import torch\nclass M:\n    def move(self, x, {parameter}):\n        return x.cuda()\n"
    assert applicabilities(source) == ["display-only"]
    assert fix(source) == source


def test_a_cuda_override_with_a_none_device_parameter_is_not_bound():
    source = "import torch\nclass M:\n    def cuda(self, device=None):\n        self.buf = self.buf.to(torch.device('cuda'))\n        return self\n"
    assert ".to(device)" not in fix(source, unsafe=True)


@pytest.mark.parametrize("parameter", ["device", "device: torch.device", "device=torch.device('cuda')",
                                       "device=get_device()"])
def test_a_parameter_that_may_hold_the_device_is_reused_only_by_an_unsafe_fix(parameter):
    # a caller may pass the CPU, where `.cuda()` used the GPU (issue 29 S2)
    source = f"import torch\ndef f(x, {parameter}):\n    return x.cuda()\n"
    assert applicabilities(source) == ["unsafe"]
    assert fix(source) == source
    assert fix(source, unsafe=True) == source.replace("x.cuda()", "x.to(device)")


# -- 4. CUDA_VISIBLE_DEVICES -------------------------------------------------------------------------------

SEMSEG_LIKE = '''import os
import torch


def parse():
    return object()


def main():
    args = parse()
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(args.gpus)
    model = build()
    model = torch.nn.DataParallel(model.cuda())
    worker(model)


def worker(model):
    """Train."""
    state = torch.load("w.pth")
    model.load_state_dict(state)
    x = torch.ones(1).cuda()
    return model(x)


if __name__ == "__main__":
    main()
'''


def test_visible_devices_set_in_main_keeps_every_definition_after_it():
    fixed = fixed_and_idempotent(SEMSEG_LIKE, select="DL00")  # the rules it was written for, not DL018
    assert "\n" + MODULE_DEVICE not in fixed  # no module-level query at import
    lines = fixed.splitlines()
    setting = lines.index('    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(args.gpus)')
    definitions = [i for i, line in enumerate(lines) if line.strip() == DEVICE]
    assert len(definitions) == 2 and all(i > setting for i in definitions)
    assert "torch.nn.DataParallel(model.to(device))" in fixed and "x = torch.ones(1).to(device)" in fixed


@pytest.mark.parametrize("source", [
    # the site runs before the setting in the same function
    "import os, torch\ndef main():\n    x = torch.ones(1).cuda()\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n",
    # the same statement sets it
    "import os, torch\ndef main(a):\n    if a:\n        os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n        x = torch.ones(1).cuda()\n",
    # a function called before the setting
    "import os, torch\ndef prepare():\n    return torch.ones(1).cuda()\ndef main():\n    prepare()\n"
    "    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n",
    # a call after the site to a function that sets it
    "import os, torch\ndef select():\n    os.environ.setdefault('CUDA_VISIBLE_DEVICES', '0')\n"
    "def main():\n    x = torch.ones(1).cuda()\n    select()\n",
    # a module-level site before a setting in the main block
    "import os, torch\nx = torch.ones(1).cuda()\nif __name__ == '__main__':\n    os.putenv('CUDA_VISIBLE_DEVICES', '1')\n",
])
def test_no_definition_before_a_visible_devices_setting_on_the_same_path(source):
    assert "display-only" in applicabilities(source)
    assert "is_available" not in fix(source)


@pytest.mark.parametrize("setting", [
    "os.environ['CUDA_VISIBLE_DEVICES'] = '1'",
    "os.environ.update({'CUDA_VISIBLE_DEVICES': '1'})",
    "os.environ.update(env)",
    "os.environ[key] = value",
    "os.putenv('CUDA_VISIBLE_DEVICES', '1')",
])
def test_a_setting_in_the_main_block_moves_a_script_definition_into_the_functions(setting):
    source = f"import os, torch\ndef f(x):\n    return x.cuda()\nif __name__ == '__main__':\n    {setting}\n    f(1)\n"
    fixed = fixed_and_idempotent(source)
    assert "def f(x):\n    " + DEVICE + "\n    return x.to(device)\n" in fixed


def test_a_setting_above_the_definition_keeps_the_module_level_definition():
    source = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nimport torch\nx = torch.ones(1).cuda()\n"
    assert fixed_and_idempotent(source, select="DL00") == source.replace("import torch\n", "import torch\n\n" + MODULE_DEVICE).replace(
        ".cuda()", ".to(device)")


def _dl008(source: str) -> set[tuple[int, str]]:
    return {(f.start.line, f.message) for f in lint(source, select="DL008")}


def _fixed_texts():
    for rule in ALL_RULES:
        select = getattr(rule, "EXAMPLES_SELECT", rule.code)
        for case in rule.INVALID:
            if parses(case.code):
                yield f"{rule.code}:{case.code[:30]!r}", case.code, select
    for path in sorted(ROOT.glob("tests/fixtures/DL*/*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"), "ALL"
    yield "semseg-like", SEMSEG_LIKE, "ALL"


CASES = list(_fixed_texts())


@pytest.mark.parametrize("name, source, select", CASES, ids=[c[0] for c in CASES])
def test_dl008_reports_nothing_new_on_fixed_text(name, source, select):
    """Every INVALID example of every rule and every fixture, fixed with the unsafe fixes too."""
    fixed = fix(source, select=select, unsafe=True)
    assert len(_dl008(fixed)) <= len(_dl008(source))
    assert {m for _, m in _dl008(fixed)} <= {m for _, m in _dl008(source)}
    if "CUDA_VISIBLE_DEVICES" in source:
        _assert_no_query_before_a_setting(source, fixed)


def _assert_no_query_before_a_setting(source: str, fixed: str) -> None:
    """Stronger than DL008 (which looks at module level only): a module-level definition devlint
    wrote comes after every setting, and they are all at module level."""
    lines = fixed.splitlines()
    original = source.splitlines()
    written = [i for i, line in enumerate(lines)
               if line.strip().endswith(DEVICE.split(" = ", 1)[1]) and line not in original]
    settings = [i for i, line in enumerate(lines) if "CUDA_VISIBLE_DEVICES" in line and ("=" in line or "(" in line)
                and not line.lstrip().startswith(("print", "#")) and ".get(" not in line]
    for i in written:
        if not lines[i].startswith((" ", "\t")):
            assert all(not lines[s].startswith((" ", "\t")) and s < i for s in settings), fixed


def test_a_main_block_that_sets_the_variable_gets_its_definition_after_the_setting():
    source = ("import torch\n\nclass Net(torch.nn.Module):\n    pass\n\nif __name__ == '__main__':\n    import os\n"
              "    os.environ['CUDA_VISIBLE_DEVICES'] = '0, 1'\n    x = torch.rand(4).cuda()\n    model = Net().cuda()\n")
    fixed = fixed_and_idempotent(source)
    assert fixed == source.replace("    x = torch.rand(4).cuda()\n", "    " + DEVICE + "\n    x = torch.rand(4).to(device)\n").replace(
        "Net().cuda()", "Net().to(device)")
    assert not _dl008(fixed)


def test_a_main_block_site_before_the_setting_is_display_only():
    source = "import os, torch\nif __name__ == '__main__':\n    x = torch.rand(4).cuda()\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
    assert applicabilities(source) == ["display-only"]


def test_a_local_definition_after_a_star_import_is_called_underscore_device():
    source = "from torch import *\nimport torch\ndef f(x):\n    return x.cuda()\n"
    assert fixed_and_idempotent(source) == (
        "from torch import *\nimport torch\ndef f(x):\n    _" + DEVICE + "\n    return x.to(_device)\n"
    )


def test_an_enclosing_functions_device_parameter_is_reused_by_a_nested_function():
    source = "import torch\ndef outer(device):\n    def inner(x):\n        return x.cuda()\n    return inner\n"
    assert fix(source, unsafe=True) == source.replace("x.cuda()", "x.to(device)")  # (unsafe: a parameter)


# -- 5. `self.device` (offered by `device_source`, for rules that write an expression) -------------------

def _source_at_cuda_call(source: str):
    ctx = FileContext(cst.parse_module(source))
    [call] = [c for c in ctx.nodes(cst.Call) if ctx.code(c) == "x.cuda()"]
    return device_source(ctx, call), device_reference(ctx, call)


RUN_DEVICE = "torch.device('cuda' if torch.cuda.is_available() else 'cpu')"


# (a class defined in a function: one another file could subclass never offers it, tests/test_derived_devices.py)
@pytest.mark.parametrize("init, other, expected", [
    (f"self.device = {RUN_DEVICE}", "", ("self.device", False)),
    ("self.device = torch.device(args.device)", "", ("device", True)),  # `args.device` may be the CPU
    ("self.device = torch.device('cpu')", "", ("device", True)),  # not where `.cuda()` put it
    ("self.device = args.device_name", "", ("device", True)),  # not known to be a device
    (f"if args:\n                self.device = {RUN_DEVICE}", "", ("device", True)),  # on a branch
    (f"self.device = {RUN_DEVICE}", "        def to_cpu(self):\n            self.device = 'cpu'\n", ("device", True)),
    (f"self.device = {RUN_DEVICE}", "        def device(self):\n            return 1\n", ("device", True)),
])
def test_self_device_is_offered_only_when_the_class_sets_it_from_a_device(init, other, expected):
    source = (f"import torch\ndef build(args):\n    class R:\n        def __init__(self):\n            {init}\n{other}"
              "        def step(self, x):\n            return x.cuda()\n    return R()\n")
    source_answer, reference_answer = _source_at_cuda_call(source)
    assert source_answer == expected
    assert reference_answer == ("device", True)  # old callers get names only


def test_a_bound_device_name_comes_before_self_device():
    source = (f"import torch\ndef build():\n    class R:\n        def __init__(self):\n            self.device = {RUN_DEVICE}\n"
              f"        def step(self, x):\n            device = {RUN_DEVICE}\n            return x.cuda()\n    return R()\n")
    assert _source_at_cuda_call(source)[0] == ("device", False)


def test_a_fix_that_edits_several_statements_gets_its_definition_before_the_first():
    # DL006 rewrites every use of an imported `autocast` at once: the definition must reach them all
    # (seen on NeMo's vits.py, where it went before the last use only: `device` was unbound above it)
    source = ("import torch\nfrom torch.cuda.amp import autocast\n\n\nclass M:\n    def step(self, x):\n"
              "        with autocast(enabled=True):\n            a = x + 1\n"
              "        with autocast(enabled=False):\n            b = x + 2\n        return a, b\n")
    fixed = fixed_and_idempotent(source, unsafe=True)
    lines = fixed.splitlines()
    definition = next(i for i, line in enumerate(lines) if line.strip().startswith("device = torch.device("))
    assert all(i > definition for i, line in enumerate(lines) if "device.type" in line)


def test_a_fix_whose_edits_span_two_functions_is_not_applied_without_a_shared_definition():
    source = ("import torch\nfrom torch.cuda.amp import autocast\n\n\ndef f(x):\n    with autocast():\n"
              "        return x + 1\n\n\ndef g(x):\n    with autocast():\n        return x + 2\n")
    fixed = fixed_and_idempotent(source, unsafe=True)
    compile(fixed, "<fixed>", "exec")
    for function in fixed.split("\ndef ")[1:]:
        assert "device.type" not in function or "device = torch.device(" in function
