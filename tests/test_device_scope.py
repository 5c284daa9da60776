"""The scope-free answer of `_may_be_visible` never contradicts LibCST's scope analysis."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.context import FileContext
from devlint.analysis.device import device_reference
from devlint.analysis.device_reuse import _may_be_visible
from tests.helpers import REAL_FILES, ROOT

SNIPPETS = [
    "def f(device):\n    pass\ndef g(x):\n    return x.cuda()\n",
    "class C:\n    device = 1\n    y = x.cuda()\n    def m(self):\n        return x.cuda()\n",
    "def f():\n    global device\n    device = 1\ndef g():\n    return x.cuda()\n",
    "def f():\n    device = 1\n    def g():\n        nonlocal device\n        device = 2\n    return x.cuda()\n",
    "def f():\n    [device for device in ds]\n    return x.cuda()\n",
    "def f():\n    [(device := d) for d in ds]\n    return x.cuda()\n",
    "def f(x):\n    for device in ds:\n        pass\n    return x.cuda()\n",
    "try:\n    pass\nexcept E as device:\n    pass\nx.cuda()\n",
    "def f():\n    with o as device:\n        pass\ng = lambda device: x.cuda()\nh = lambda: x.cuda()\n",
    "match p:\n    case {'d': device}:\n        pass\nx.cuda()\n",
    "def device():\n    pass\nx.cuda()\n",
    "def f():\n    from m import device\ndef g():\n    return x.cuda()\n",
    "def f():\n    device: int\ndef g(device=x.cuda()):\n    return x.cuda()\n",
]


def _check(source: str, every_name: bool = True) -> int:
    """At every call (where fixes write `device`) and, with `every_name`, every name: is a binding the
    scope-free answer rules out really out of scope? (Real files check calls only: names x nodes x
    bindings grows with the square of a file's size.)"""
    ctx = FileContext(cst.parse_module(source))
    names = set(ctx.binding_sites) | {"device"}
    decided = 0
    for node in ctx.nodes(cst.Call) + (ctx.nodes(cst.Name) if every_name else []):
        scope = ctx.scope(node)
        if scope is None:
            continue
        for name in names:
            if not _may_be_visible(ctx, node, name):
                decided += 1
                assert name not in scope, (name, ctx.code(node))
    return decided


@pytest.mark.parametrize("source", SNIPPETS)
def test_snippets(source):
    _check(source)


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_real_files(path):
    _check(path.read_text(encoding="utf-8"), every_name=False)


def test_a_device_parameter_of_another_function_is_settled_without_scope_analysis():
    ctx = FileContext(cst.parse_module("import torch\ndef f(device):\n    pass\ndef g(x):\n    return x.cuda()\n"))
    call = ctx.nodes(cst.Call)[0]
    assert device_reference(ctx, call) == ("device", True)
    assert "scopes" not in ctx.__dict__  # the whole-file scope analysis was not run
