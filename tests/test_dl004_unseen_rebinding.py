"""DL004: a module-level device default that the file may re-bind unseen is a default, not a hard-coded device.

Held-out evaluation (issue 23, helper E): scripts that read their settings as `device = "cuda"` and then
`exec(open("configurator.py").read())`, whose configurator writes `globals()[key]` from `--device=cpu`,
were flagged although the user overrides the default on the command line. Both sides are tested.
"""

from __future__ import annotations

import pytest

from tests.helpers import lint


def dl004(source: str) -> list[int]:
    return [f.start.line for f in lint(source, select="DL004")]


NOT_FLAGGED = [
    # a configurator run with exec after the defaults
    'import torch\ndevice = "cuda"\nexec(open("configurator.py").read())\nx = torch.zeros(2, device=device)\n',
    # the same with torch.device, and with a command-line namespace written over the globals
    'import torch\ndevice = torch.device("cuda")\nexec(code)\nx = torch.zeros(2, device=device)\n',
    'import torch\ndevice = "cuda:0"\nglobals().update(vars(args))\nx = torch.ones(1, device=device)\n',
    'import sys, torch\ndevice = "cuda"\nfor a in sys.argv[1:]:\n    k, v = a[2:].split("=")\n    globals()[k] = v\n'
    'x = torch.ones(1, device=device)\n',
]

STILL_FLAGGED = [
    # no unseen write at all
    ('import torch\ndevice = "cuda"\nx = torch.zeros(2, device=device)\n', [2]),
    # `globals()` only read: nothing is re-bound
    ('import torch\ndevice = "cuda"\nif "device" in globals():\n    x = torch.zeros(2, device=device)\n', [2]),
    ('import torch\ndevice = "cuda"\nseen = globals().get("device")\nx = torch.zeros(2, device=device)\n', [2]),
    # exec cannot re-bind a function's local
    ('import torch\ndef run(code):\n    device = "cuda"\n    exec(code)\n    return torch.zeros(2, device=device)\n', [3]),
    # a literal given to torch directly is no variable that anything re-binds
    ('import torch\nexec(open("configurator.py").read())\nx = torch.zeros(2, device="cuda")\n', [3]),
]


@pytest.mark.parametrize("source", NOT_FLAGGED)
def test_a_default_the_file_may_rebind_unseen_is_not_flagged(source):
    assert dl004(source) == []


@pytest.mark.parametrize("source, lines", STILL_FLAGGED)
def test_a_device_nothing_rebinds_is_still_flagged(source, lines):
    assert dl004(source) == lines
