"""What the fixer writes: the device definition, reuse of a bound device, aliases, options, convergence."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint import engine
from devlint.config import Config
from devlint.context import FixOptions
from devlint.engine import check_source
from tests.helpers import fix, lint

DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def test_definition_goes_after_docstring_future_and_imports():
    source = '"""Doc."""\nfrom __future__ import annotations\nimport os\nimport torch\n\nx = torch.ones(1).cuda()\n'
    assert fix(source, select="DL001") == (
        '"""Doc."""\nfrom __future__ import annotations\nimport os\nimport torch\n\n' + DEVICE + "\nx = torch.ones(1).to(device)\n"
    )


def test_definition_uses_the_torch_alias():
    assert fix("import torch as th\nx = th.ones(1).cuda()\n", select="DL001") == (
        'import torch as th\n\ndevice = th.device("cuda" if th.cuda.is_available() else "cpu")\nx = th.ones(1).to(device)\n'
    )


def test_import_torch_is_added_only_when_nothing_binds_it():
    fixed = fix("import numpy as np\nmodel = build().cuda()\n")
    assert fixed == "import numpy as np\nimport torch\n\n" + DEVICE + "model = build().to(device)\n"
    assert fix("import torch.nn as nn\nimport torch\nm = nn.Linear(1, 1).cuda()\n").count("import torch\n") == 1


def test_definition_follows_a_late_torch_import():
    source = "import os\nos.environ['X'] = '1'\nimport torch\nx = torch.ones(1).cuda()\n"
    assert fix(source, select="DL001") == "import os\nos.environ['X'] = '1'\nimport torch\n\n" + DEVICE + "x = torch.ones(1).to(device)\n"


def test_definition_does_not_split_the_import_block_after_a_late_torch_import():
    source = "import os\n__author__ = 'me'\nimport torch\nimport numpy as np\nx = np.ones(1)\ny = torch.ones(1).cuda()\n"
    assert fix(source, select="DL001") == (
        "import os\n__author__ = 'me'\nimport torch\nimport numpy as np\n\n" + DEVICE
        + "x = np.ones(1)\ny = torch.ones(1).to(device)\n"
    )


def test_defined_once_for_many_fixes_and_rules():
    source = "import torch\na = torch.ones(1).cuda()\nb = torch.load(p)\ndef f():\n    return torch.ones(1).cuda()\n"
    fixed = fix(source, unsafe=True)  # an unused module-level load's fix is unsafe (issue 15)
    assert fixed.count("device = torch.device(") == 1
    assert "torch.load(p, map_location=device)" in fixed


def test_reuses_a_device_bound_in_scope():
    source = "import torch\ndef f(x):\n    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n    return x.cuda()\n"
    assert fix(source) == source.replace("x.cuda()", "x.to(device)")
    source = "import torch\ndef f(x, device):\n    return x.cuda()\n"  # a caller may pass the CPU: unsafe
    assert fix(source, unsafe=True) == "import torch\ndef f(x, device):\n    return x.to(device)\n"
    source = "import torch\ndev = 1\ndevice = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')\ny = torch.ones(1).cuda()\n"
    assert fix(source).count("device = ") == 1


@pytest.mark.parametrize(
    "binding",
    ["device = 'cuda'", "def device():\n    return 1", "from x import device", "device = Something()"],
)
def test_device_bound_to_something_else_is_never_used(binding):
    source = f"import torch\n{binding}\nx = torch.ones(1).cuda()\n"
    assert fix(source, select="DL001") == source  # (DL004 would give `device = 'cuda'` a CPU fallback)
    [finding] = [f for f in lint(source) if f.code == "DL001"]
    assert finding.fix.applicability.value == "display-only"


def test_device_assigned_later_in_the_same_function_is_not_used():
    source = "import torch\ndef f(x):\n    y = x.cuda()\n    device = torch.device('cpu')\n    return y\n"
    assert fix(source) == source


def test_device_name_option():
    fixed = fix("import torch\nx = torch.ones(1).cuda()\n", device_name="dev", select="DL001")
    assert 'dev = torch.device("cuda"' in fixed and "x = torch.ones(1).to(dev)" in fixed


def test_accelerator_expression_option():
    fixed = fix("import torch\nx = torch.ones(1).cuda()\n", device_expression="accelerator")
    assert (
        "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
        'else torch.device("cpu")\n' in fixed
    )


@pytest.mark.parametrize("choice, expected", [("auto", '"cpu"'), ("device", "device"), ("cpu", '"cpu"')])
def test_map_location_option(choice, expected):
    fixed = fix("import torch\nm = torch.nn.Linear(2, 2)\nm.load_state_dict(torch.load(p))\n", map_location=choice)
    assert f"torch.load(p, map_location={expected})" in fixed


def test_map_location_cpu_for_a_name_only_fed_to_load_state_dict():
    built = "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    source = built + "sd = torch.load(p)\nmodel.load_state_dict(sd['model'])\nopt.load_state_dict(sd['opt'])\n"
    assert "torch.load(p, map_location=\"cpu\")" in fix(source)
    # a receiver of unknown kind may keep the tensors where they load: unsafe
    assert "torch.load(p)" in fix(source.replace(built, "import torch\n"))
    source = built + "sd = torch.load(p)\nmodel.load_state_dict(sd)\nprint(sd)\n"
    assert "torch.load(p)" in fix(source)  # printed too: where it lives may matter, so unsafe
    assert "torch.load(p, map_location=device)" in fix(source, unsafe=True)


def test_map_location_none_is_replaced_in_place():
    assert fix("import torch\nx = torch.load(p, map_location=None)\n", map_location="cpu", unsafe=True) == (
        "import torch\nx = torch.load(p, map_location=\"cpu\")\n"
    )
    assert fix("import torch\nx = torch.load(p, None)\n", map_location="cpu", unsafe=True) == (
        "import torch\nx = torch.load(p, \"cpu\")\n")


def test_comments_and_formatting_around_a_fix_are_kept():
    source = (
        "import torch\n\n\ndef f(x):\n    # move it\n    y = (\n        x  # the input\n        .cuda()  # here\n    )\n"
        "    return y\n"
    )
    fixed = fix(source)
    # a library function: the definition goes into it, before the statement (after its comment)
    assert fixed == source.replace(".cuda()  # here", ".to(device)  # here").replace(
        "    y = (\n", "    " + DEVICE + "    y = (\n"
    )
    script = source + "\nif __name__ == '__main__':\n    f(1)\n"
    assert fix(script) == script.replace(".cuda()  # here", ".to(device)  # here").replace(
        "import torch\n", "import torch\n\n" + DEVICE
    )


def test_nested_fixes_converge_in_several_passes():
    source = "import torch\nx = torch.ones(1).cuda().cuda()\n"
    fixed = fix(source)
    # DL001 twice, then DL018 (move-after-creation) on the factory the first move now follows
    assert "x = torch.ones(1, device=device).to(device)" in fixed
    assert fix(fixed) == fixed


def test_a_file_that_does_not_converge_is_an_internal_error_and_untouched(monkeypatch):
    monkeypatch.setattr(engine, "MAX_FIX_PASSES", 1)
    source = b"import torch\nx = torch.ones(1).cuda().cuda()\n"
    result = check_source("a.py", source, Config(fix=True))
    assert result.error is not None and result.error.internal
    assert "did not converge" in result.error.message
    assert result.fixed_source is None


def test_discarded_move_rebinding_keeps_comments():
    source = "import torch\nx = torch.ones(1)\nx.to(device)  # move\n"
    assert fix(source, unsafe=True) == "import torch\nx = torch.ones(1)\nx = x.to(device)  # move\n"


def test_every_fix_result_parses():
    source = "import torch\nclass A:\n    def f(self):\n        return [t.cuda() for t in torch.ones(2, 2)]\n"
    cst.parse_module(fix(source))


def test_fix_options_are_part_of_the_config():
    config = Config(fix=True, fix_options=FixOptions(device_name="d"))
    result = check_source("a.py", b"import torch\nx = torch.ones(1).cuda()\n", config)
    assert "x = torch.ones(1).to(d)" in result.fixed_source
