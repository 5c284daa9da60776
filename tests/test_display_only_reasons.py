"""Every display-only title that could not write a device names the real cause (issue 17 item 6): one
test per reason of `devlint.analysis.device.device_failure` and of the rules' torch checks."""

from __future__ import annotations

import pytest

from devlint.model import Applicability
from tests.helpers import lint

CASES = [
    # (id, rule, source, words the title must contain)
    ("bound-later", "DL001",
     "import torch\ndef f(x):\n    y = x.cuda()\n    device = torch.device('cuda')\n    return y, device\n",
     "`device` is bound only later in this scope (line 4), after this use"),
    ("string", "DL001", "import torch\ndevice = 'cuda'\ny = torch.ones(2).cuda()\n",
     "`device` is bound to a string, `'cuda'` (line 2): not known to be a device"),
    ("number", "DL001", "import torch\ndef f(x):\n    device = 0\n    return x.cuda()\n",
     "`device` is bound to a number, `0` (line 3)"),
    ("none-value", "DL001", "import torch\ndef f(x):\n    device = None\n    return x.cuda()\n",
     "`device` is bound to None, `None` (line 3)"),
    ("other-value", "DL001", "import torch\ndef f(x, args):\n    device = args.gpu_id\n    return x.cuda()\n",
     "`device` is bound to `args.gpu_id` (line 3): not provably the GPU this code used (it may be the CPU)"),
    # issue 29 S2: a device reused only where it is proven to be the GPU `.cuda()` used
    ("cpu-device", "DL001", "import torch\ndevice = torch.device('cpu')\ndef f(x):\n    return x.cuda()\n",
     "`device` is bound to `torch.device('cpu')` (line 2): the CPU, where this code used the GPU"),
    ("other-gpu", "DL001", "import torch\ndevice = torch.device('cuda:1')\ndef f(x):\n    return x.cuda()\n",
     "`device` is bound to `torch.device('cuda:1')` (line 2): another GPU than the one this code used"),
    # (a parameter, `torch.device("cuda" if args.cuda else "cpu")`: unsafe, tests/test_derived_devices.py)
    ("none-default", "DL001", "import torch\ndef f(x, device=None):\n    return x.cuda()\n",
     "`device` is a parameter whose default is None (line 2): not known to be a device"),
    ("string-default", "DL001", "import torch\ndef f(x, device='cuda:1'):\n    return x.cuda()\n",
     "`device` is a parameter with the default `'cuda:1'` (line 2): a caller may pass the CPU"),
    ("star-parameter", "DL001", "import torch\ndef f(x, *device):\n    return x.cuda()\n",
     "`device` is a `*device` parameter (line 2): a tuple, not a device"),
    ("double-star-parameter", "DL001", "import torch\ndef f(x, **device):\n    return x.cuda()\n",
     "`device` is a `**device` parameter (line 2): a dict, not a device"),
    ("function", "DL001", "import torch\ndef device():\n    pass\ny = torch.ones(2).cuda()\n",
     "`device` is a function defined in this file (line 2), not a device"),
    ("class", "DL001", "import torch\nclass device:\n    pass\ny = torch.ones(2).cuda()\n",
     "`device` is a class defined in this file (line 2), not a device"),
    ("import", "DL001", "import torch\nfrom config import device\ny = torch.ones(2).cuda()\n",
     "`device` is imported (line 2): not known to be a device"),
    ("loop-variable", "DL001", "import torch\nfor device in devices:\n    y = torch.ones(2).cuda()\n",
     "`device` is a loop variable (line 2), not known to be a device"),
    ("with", "DL001", "import torch\nwith open('f') as device:\n    y = torch.ones(2).cuda()\n",
     "`device` is bound by a `with` statement (line 2)"),
    ("except", "DL001",
     "import torch\ntry:\n    pass\nexcept OSError as device:\n    y = torch.ones(2).cuda()\n",
     "`device` is bound to an exception (line 4), not a device"),
    ("unpacking", "DL001", "import torch\ndef f(x, pair):\n    device, rank = pair\n    return x.cuda()\n",
     "`device` is bound by unpacking (line 3)"),
    ("annotation-only", "DL001", "import torch\ndef f(x):\n    device: torch.device\n    return x.cuda()\n",
     "`device` is only annotated (line 3)"),
    ("deleted", "DL001",
     "import torch\ndef f(x):\n    device = torch.device('cuda')\n    del device\n    return x.cuda()\n",
     "`del device` (line 4) may unbind `device` here"),
    ("branch", "DL001",
     "import torch\ndef f(x, c):\n    if c:\n        device = torch.device('cuda')\n    return x.cuda()\n",
     "`device` may be unbound here: its binding (line 4) is on a branch, in a loop or in a `try`"),
    ("global-later", "DL001", "import torch\ndef f(x):\n    y = x.cuda()\n    global device\n    device = 1\n",
     "`global device` comes after this use (line 4): a use of `device` here does not compile"),
    ("torch-rebound", "DL001", "torch = None\ndef f(x):\n    return x.cuda()\n",
     "`torch` names something other than the torch module here"),
    ("torch-bound-in-the-function", "DL001",
     "import torch\ndef f(x):\n    y = x.cuda()\n    import torch.distributed\n    return y\n",
     "`torch` is bound in this function or one around it (line 4: `import torch.distributed`): a definition "
     "here would not read the torch module"),
    ("visible-devices-in-function", "DL001",
     "import os\nimport torch\ndef main(x):\n    y = x.cuda()\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
     "    return y\n",
     "`CUDA_VISIBLE_DEVICES` is set later in this function (line 5): a definition before this line would "
     "query CUDA first"),
    ("visible-devices-in-main-block", "DL001",
     "import os\nimport torch\nif __name__ == '__main__':\n    x = torch.ones(2).cuda()\n"
     "    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n",
     "`CUDA_VISIBLE_DEVICES` is set later in this main block (line 5)"),
    ("visible-devices-at-module-level", "DL001",
     "import os\nimport torch\nx = torch.ones(2).cuda()\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n",
     "`CUDA_VISIBLE_DEVICES` is set (line 4) after the imports: a module-level definition would query CUDA "
     "before it"),
    ("called-before-visible-devices", "DL001",
     "import os\nimport torch\ndef setup(x):\n    return x.cuda()\ndef main(x):\n    setup(x)\n"
     "    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n",
     "`setup` may run before `CUDA_VISIBLE_DEVICES` is set: a definition in it would query CUDA first"),
    ("one-line-def", "DL001", "import torch\ndef f(x): return x.cuda()\n",
     "the function's body is on the `def` line: there is no line to define `device` on"),
    ("star-import", "DL001", "import torch\nfrom helpers import *\ndef f(x):\n    print(_device)\n    return x.cuda()\n",
     "`_device` is read without a binding in this file (a star import may bind it): a definition would shadow it"),
    ("function-reads-outer", "DL001",
     "import torch\nif ready:\n    device = torch.device('cuda')\ndef f(x):\n    print(device)\n    return x.cuda()\n",
     "the module-level `device` (line 3) may not be bound when this runs, and this function also reads it "
     "(line 5)"),
    ("library-lambda", "DL001", "import torch\nmove = lambda x: x.cuda()\n",
     "a library module: a module-level `device` would query CUDA at import, and this code runs in no function"),
    ("above-the-imports", "DL001", "import os\nx = torch.ones(2).cuda()\nimport torch\n",
     "this code runs above the end of the imports, where a module-level definition would go"),
    ("torch-imported-in-a-function", "DL001", "def f(x):\n    import torch\n    return x.cuda()\n",
     "torch is imported only inside a function, not at module level"),
    # the other rules that write a device give the same reasons
    ("dl004", "DL004", "import torch\ndef f(x, device=None):\n    return x.to('cuda')\n",
     "`device` is a parameter whose default is None (line 2)"),
    ("dl005", "DL005", "import torch\ndef f(x, device=None):\n    return torch.cuda.FloatTensor(2, 3)\n",
     "`device` is a parameter whose default is None (line 2)"),
    ("dl006", "DL006", "import torch\ndef f(x, device=None):\n    return torch.cuda.amp.GradScaler()\n",
     "`device` is a parameter whose default is None (line 2)"),
    # (no "torch is not imported" case for a reused device: a device is proven only through torch's names)
    ("dl006-torch-rebound", "DL006",
     "from torch.cuda.amp import custom_fwd\ntorch = None\n@custom_fwd(cast_inputs=float32)\ndef f(x):\n    return x\n",
     "`torch` names something other than the torch module here"),
]


@pytest.mark.parametrize("rule, source, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_display_only_title_names_the_real_cause(rule, source, expected):
    options = {"map_location": "device"} if rule == "DL002" else {}
    titles = [f.fix.title for f in lint(source, rule, **options)
              if f.code == rule and f.fix is not None and f.fix.applicability is Applicability.DISPLAY_ONLY]
    assert titles, f"no display-only {rule} fix"
    assert any(expected in title for title in titles), titles
    assert not any("bound to something else" in title for title in titles)


def test_dl002_names_the_cause():
    source = "import torch\ndef f(path, device=None):\n    return torch.load(path)\n"
    [finding] = lint(source, "DL002", map_location="device")
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY
    assert finding.fix.title == ('Add `map_location="cpu"` or a torch.device (`device` is a parameter whose default '
                                 "is None (line 2): not known to be a device)")
