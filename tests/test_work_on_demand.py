"""Work a file's check does only where an answer can depend on it (issue 28: the longest single files
of a 16-core run on torch's sources set its end).

- The scope analysis of a whole file (LibCST's ScopeProvider: 70% of the check of utils/checkpoint.py)
  is resolved only where a rule's answer can depend on it: DL016 asks the syntax first.
- A file's `noqa` comments are read (tokenized: in Python on 3.10 and 3.11, 12% of nn/functional.py's
  check) only when there is a finding to silence or DL100 looks for unused directives."""

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


# -- the comments of a file with nothing to silence ---------------------------------------------------------
NOQA_WITHOUT_FINDINGS = "import torch\nx = torch.ones(2)  # noqa: E501\ny = x + 1  # noqa\n"


def test_a_file_without_findings_is_not_tokenized_for_its_noqa_comments(monkeypatch):
    # (Python 3.10 and 3.11 tokenize in Python: 12% of nn/functional.py's check, which has no finding)
    from devlint import engine
    from devlint.config import Config

    parsed = []
    real = engine.parse_suppressions
    monkeypatch.setattr(engine, "parse_suppressions", lambda text: parsed.append(text) or real(text))
    assert engine.lint_text(NOQA_WITHOUT_FINDINGS, Config()) == []  # (the default rules: DL100 is off)
    assert parsed == []
    # a finding, or DL100 (unused directives) selected: the comments are read
    assert engine.lint_text("import torch\nx = torch.ones(2).cuda()  # noqa: DL001\n", Config()) == []
    assert len(parsed) == 1
    assert [f.code for f in lint(NOQA_WITHOUT_FINDINGS, "DL100")] == []
    assert len(parsed) == 2
    assert [f.code for f in lint("x = 1  # noqa: DL001\n")] == ["DL100"]  # (every rule: DL001 and DL100)
