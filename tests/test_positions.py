"""Positions computed statement by statement are LibCST's PositionProvider ranges, node for node."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from devlint.positions import LazyPositions
from devlint.syntax import walk
from tests.helpers import REAL_FILES, ROOT

LAYOUTS = [
    "",
    "\n",
    "# only a comment\n",
    "x = 1",  # no trailing newline
    "# header\n\nimport torch\n\n\nx = torch.ones(1).cuda()\n\n# footer\n",
    "import torch\r\nif x:\r\n    y = (1,\r\n         2)\r\n# tail\r\n",
    "a = 1\rb = [\r  2]\r",
    "def f(\n    a,\n):\n    '''doc\n    string'''\n    return a; b = 2\n\n\n@dec\nclass C:\n    x: int = 3\n",
    "x = f'''multi\nline {y}\n'''\nz = 1 \\\n    + 2\n",
]


def _expected(module: cst.Module):
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def _parents(module: cst.Module) -> dict:
    return {node: parent for node, parent in walk(module) if parent is not None}


def _assert_same(source: str) -> None:
    module = cst.parse_module(source)
    expected = _expected(module)
    lazy = LazyPositions(module, _parents(module))
    nodes = [node for node, _ in walk(module)]
    # asked in reverse order, so that statements are rendered out of order
    for node in reversed(nodes):
        assert (node in lazy) == (node in expected), node
        if node in expected:
            assert lazy[node] == expected[node], (type(node).__name__, lazy[node], expected[node])


@pytest.mark.parametrize("source", LAYOUTS)
def test_same_ranges_for_every_layout(source):
    _assert_same(source)


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_ranges_on_real_files(path):
    _assert_same(path.read_text(encoding="utf-8"))


def test_only_the_asked_statement_is_rendered():
    source = "a = 1\nb = [\n    2]\nc = 3\n"
    module = cst.parse_module(source)
    lazy = LazyPositions(module, _parents(module))
    target = module.body[1]
    assert lazy[target] == _expected(module)[target]
    rendered = {n for n in lazy._computed}
    assert module.body[0] not in rendered and module.body[2] not in rendered


def _depth_first(node: cst.CSTNode, parent: cst.CSTNode | None = None):
    """(node, parent) in field order, depth first, without tokens and whitespace: what `walk` promises."""
    import dataclasses

    from devlint.syntax import _SKIPPED

    yield node, parent
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        for child in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(child, cst.CSTNode) and not isinstance(child, _SKIPPED):
                yield from _depth_first(child, node)


@pytest.mark.parametrize("source", LAYOUTS + ["f(a, *b, c=d, **e)[g:h, i](j) if k else [l for m in n if o]\n"]
                         + [path.read_text() for path in REAL_FILES[:20]])
def test_the_walk_gives_every_node_once_after_its_parent_in_field_order(source):
    module = cst.parse_module(source)
    assert [(id(n), id(p)) for n, p in walk(module)] == [(id(n), id(p)) for n, p in _depth_first(module)]
