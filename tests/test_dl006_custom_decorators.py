"""DL006 and `torch.cuda.amp.custom_fwd` / `custom_bwd` (evaluation shape S7, mmpretrain's dcnv3_func.py).

Without `cast_inputs` (torch 2.13's torch/cuda/amp/autocast_mode.py) they are
`functools.partial(torch.amp.custom_fwd, device_type="cuda")` plus a FutureWarning: nothing is disabled or
computed in another precision on a machine without CUDA, so they are not flagged. With `cast_inputs` the
decorator still is (a device-generic program runs CPU autocast, where a CUDA decorator casts nothing).
"""

from __future__ import annotations

import pytest

from tests.helpers import lint

NOT_FLAGGED = {
    "bare_fwd_and_bwd": "import torch\nfrom torch.cuda.amp import custom_bwd, custom_fwd\n\n"
    "class Op(torch.autograd.Function):\n    @staticmethod\n    @custom_fwd\n    def forward(ctx, x):\n"
    "        return x\n\n    @staticmethod\n    @custom_bwd\n    def backward(ctx, g):\n        return g\n",
    "called_without_cast_inputs": "import torch\n@torch.cuda.amp.custom_fwd()\ndef f(ctx, x):\n    return x\n",
    "cast_inputs_none": "import torch\n@torch.cuda.amp.custom_fwd(cast_inputs=None)\ndef f(ctx, x):\n    return x\n",
    "wrapping_call": "import torch\ndef f(ctx, x):\n    return x\nf = torch.cuda.amp.custom_fwd(f)\n",
}
FLAGGED = {
    "cast_inputs": "import torch\n@torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\ndef f(ctx, x):\n    return x\n",
    "keywords_that_may_hold_cast_inputs": "import torch\n@torch.cuda.amp.custom_fwd(**options)\ndef f(ctx, x):\n"
    "    return x\n",
    # the rest of the namespace keeps its finding
    "autocast_beside_a_bare_decorator": "import torch\nfrom torch.cuda.amp import autocast, custom_fwd\n"
    "@custom_fwd\ndef f(ctx, x):\n    return x\ndef g(device):\n    with autocast():\n        pass\n",
}


@pytest.mark.parametrize("name", sorted(NOT_FLAGGED))
def test_decorator_without_cast_inputs_is_not_flagged(name):
    assert lint(NOT_FLAGGED[name], select="DL006") == []


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_cast_inputs_and_the_rest_stay_flagged(name):
    assert len(lint(FLAGGED[name], select="DL006")) == 1
