"""The scope analysis of a whole file (LibCST's ScopeProvider: 70% of the check of utils/checkpoint.py in
torch's sources, the longest single file of a 16-core run after nn/functional.py) is resolved only where a
rule's answer can depend on it: DL016 asks the syntax first."""

from __future__ import annotations

from functools import cached_property

import pytest

from devlint import facts
from tests.helpers import lint


@pytest.fixture
def resolutions(monkeypatch):
    """How many times a file's scopes were resolved."""
    seen = []
    real = facts.FileFacts.scopes.func

    def scopes(self):
        seen.append(self)
        return real(self)

    spy = cached_property(scopes)
    spy.__set_name__(facts.FileFacts, "scopes")
    monkeypatch.setattr(facts.FileFacts, "scopes", spy)
    return seen


GET_DEVICE_NOT_A_DEVICE = """import torch
def forward(args):
    ids = []
    for arg in args:
        t = torch.as_tensor(arg)
        ids.append(t.get_device())
    return ids
"""



def test_no_scope_analysis_where_the_syntax_already_answers(resolutions):
    assert lint(GET_DEVICE_NOT_A_DEVICE, "DL016") == []
    assert resolutions == []


@pytest.mark.parametrize("source, code", [
    # a device use of a tensor's index: the receiver's kind (through its binding) decides
    ("import torch\ndef f(n):\n    t = torch.ones(2)\n    return torch.zeros(n, device=t.get_device())\n", "DL016"),
    ("import torch\ndef f(x: torch.Tensor, n):\n    dev = x.get_device()\n    return torch.zeros(n, device=dev)\n",
     "DL016"),
])
def test_the_scopes_are_still_asked_where_they_decide(resolutions, source, code):
    assert [f.code for f in lint(source, code)] == [code]
    assert resolutions
