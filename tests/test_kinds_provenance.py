"""Issue 16: what the kind inference proves through loops, containers, annotations, classes, functions
and methods only tensors have, and what it does not prove.

Each case is a small program whose last `X.to(device)` / `.cuda()` / `.cpu()` statement is the
question: its receiver's kind is asserted directly, and DL003 flags that statement exactly when the
receiver is a tensor (a module moves in place; an unknown receiver is never flagged). The scope-free
over-approximation must say TENSOR wherever the inference does.
"""

from __future__ import annotations

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.config import Config
from devlint.context import FileContext
from devlint.engine import check_source
from devlint.analysis.kinds import MODULE, TENSOR, UNKNOWN, KindInference
from tests.helpers import codes

HEAD = "import torch\nimport torch.nn as nn\nfrom torch import Tensor\nimport typing as tp\n"
HEAD += "from typing import Dict, List, Optional, Sequence, Tuple, Union\n\n"

TENSORS = {
    # -- loops and unpacking
    "zip of parameters": (
        "def sync(src, dst, device):\n    for mine, theirs in zip(src.parameters(), dst.parameters()):\n"
        "        theirs.to(device)\n"
    ),
    "zip nested in enumerate": (
        "def sync(a, b, device):\n    for step, (x, y) in enumerate(zip(a.buffers(), b.parameters())):\n"
        "        y.cuda()\n"
    ),
    "named_buffers": "def f(net, device):\n    for key, buf in net.named_buffers():\n        buf.cpu()\n",
    "items of a module's state_dict": (
        "def f(device):\n    layer = nn.Conv2d(1, 1, 3)\n    weights = layer.state_dict()\n"
        "    for key, w in weights.items():\n        w.to(device)\n"
    ),
    "values of a loaded state dict": (
        "def f(path, device):\n    net = nn.GRU(4, 4)\n    blob = torch.load(path, map_location='cpu')\n"
        "    net.load_state_dict(blob)\n    for w in blob.values():\n        w.cuda()\n"
    ),
    "enumerate a list literal": (
        "def f(device):\n    pair = [torch.rand(2), torch.randn(2)]\n    for k, item in enumerate(pair):\n"
        "        item.to(device)\n"
    ),
    "loop over a tuple literal": (
        "def f(a, b, device):\n    for m in (torch.tanh(a), torch.sigmoid(b)):\n        m.cuda()\n"
    ),
    "rows of a tensor": "def f(device):\n    grid = torch.eye(4)\n    for row in grid:\n        row.to(device)\n",
    "comprehension over zip": (
        "def f(xs: List[Tensor], ys, device):\n    [q.to(device) for p, q in zip(ys, xs)]\n"
    ),
    "list() of a comprehension": (
        "def f(n, device):\n    made = list(torch.full((2,), i) for i in range(n))\n    for z in made:\n"
        "        z.cuda()\n"
    ),
    "unpacking an annotated list": (
        "def f(parts: Sequence[Tensor], device):\n    head, tail = parts\n    tail.to(device)\n"
    ),
    # -- annotations of containers
    "list[torch.Tensor] parameter": "def f(xs: list[torch.Tensor], device):\n    for x in xs:\n        x.to(device)\n",
    "List[Tensor] subscript": "def f(xs: List[Tensor], device):\n    xs[-1].cuda()\n",
    "Sequence through a module alias": "def f(xs: tp.Sequence[torch.Tensor], device):\n    for x in xs:\n        x.cpu()\n",
    "Iterable": "def f(xs: tp.Iterable[Tensor], device):\n    for x in xs:\n        x.cpu()\n",
    "dict[str, Tensor] subscript": "def f(feats: dict[str, torch.Tensor], device):\n    feats['img'].to(device)\n",
    "Dict values loop": "def f(feats: Dict[str, Tensor], device):\n    for v in feats.values():\n        v.to(device)\n",
    "Dict items loop": "def f(feats: Dict[str, Tensor], device):\n    for k, v in feats.items():\n        v.to(device)\n",
    "Dict get": "def f(feats: Dict[str, Tensor], device):\n    feats.get('mask').to(device)\n",
    "Tuple[Tensor, ...]": "def f(outs: Tuple[Tensor, ...], device):\n    outs[0].to(device)\n",
    "tuple[Tensor, Tensor]": "def f(outs: tuple[Tensor, Tensor], device):\n    for o in outs:\n        o.cuda()\n",
    "Optional[Tensor]": "def f(mask: Optional[Tensor], device):\n    mask.to(device)\n",
    "Tensor | None": "def f(mask: Tensor | None, device):\n    mask.to(device)\n",
    "Union[None, Tensor]": "def f(mask: Union[None, torch.Tensor], device):\n    mask.to(device)\n",
    "string annotation": "def f(mask: 'torch.Tensor', device):\n    mask.to(device)\n",
    "string container annotation": "def f(ms: 'List[Tensor]', device):\n    ms[0].to(device)\n",
    "Optional list": "def f(ms: Optional[List[Tensor]], device):\n    for m in ms:\n        m.to(device)\n",
    "annotated variable": "def f(device):\n    acc: list[Tensor] = []\n    for a in acc:\n        a.cpu()\n",
    "dict literal of tensors": (
        "def f(device):\n    stats = {'mean': torch.zeros(3), 'std': torch.ones(3)}\n    stats['mean'].to(device)\n"
    ),
    # -- classes
    "attribute assigned in __init__": (
        "class Head(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.anchors = torch.linspace(0, 1, 5)\n    def move(self, device):\n        self.anchors.to(device)\n"
    ),
    "class-level annotation": (
        "class Cache:\n    keys: torch.Tensor\n    def move(self, device):\n        self.keys.cuda()\n"
    ),
    "attribute annotated in a method": (
        "class Cache:\n    def __init__(self):\n        self.vals: Optional[Tensor] = None\n"
        "    def move(self, device):\n        self.vals.cuda()\n"
    ),
    "None first, a tensor later": (
        "class Rnn(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.state = None\n"
        "    def reset(self, n):\n        self.state = torch.zeros(n)\n    def move(self, device):\n"
        "        self.state.to(device)\n"
    ),
    "registered buffer": (
        "class Pos(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('table', torch.arange(10))\n    def move(self, device):\n        self.table.cuda()\n"
    ),
    # -- methods only tensors have
    "result of unsqueeze on an unknown receiver": (
        "def f(model, x, device):\n    out = model(x)\n    wide = out.unsqueeze(1)\n    wide.to(device)\n"
    ),
    "receiver of permute elsewhere": (
        "def f(model, x, device):\n    out = model(x)\n    print(out.permute(1, 0))\n    out.to(device)\n"
    ),
    "parameter used with masked_fill": (
        "def f(scores, pad, device):\n    filled = scores.masked_fill(pad, 0)\n    scores.cpu()\n"
    ),
    "receiver of a query": "def f(x, device):\n    if x.nelement() == 0:\n        return\n    x.to(device)\n",
    "in-place op on a tensor": "def f(device):\n    buf = torch.empty(3).zero_()\n    buf.to(device)\n",
    # -- functions of the file
    "function returning a tensor": (
        "def make(n):\n    if n < 0:\n        return None\n    return torch.zeros(n)\n\n"
        "def f(device):\n    y = make(3)\n    y.to(device)\n"  # (a bare `make(3).to(...)` is a temporary)
    ),
    "recursive function": (
        "def make(n):\n    if n == 0:\n        return torch.ones(1)\n    return make(n - 1)\n\n"
        "def f(device):\n    y = make(4)\n    y.cuda()\n"
    ),
    "method returning a tensor": (
        "class Gen:\n    def sample(self):\n        return torch.randn(2)\n"
        "    def go(self, device):\n        s = self.sample()\n        s.to(device)\n"
    ),
    "no_grad decorated function": (
        "@torch.no_grad()\ndef embed(x):\n    return torch.cat([x, x])\n\n"
        "def f(x, device):\n    e = embed(x)\n    e.cpu()\n"
    ),
    "conditional expression": "def f(a, device):\n    t = torch.zeros(1) if a else torch.ones(1)\n    t.to(device)\n",
}

MODULES = {
    "list of modules": "def f(blocks: List[nn.Module], device):\n    for b in blocks:\n        b.to(device)\n",
    "Optional module": "def f(net: Optional[nn.Module], device):\n    net.to(device)\n",
    "module attribute": (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.encoder = nn.Linear(2, 2)\n"
        "    def move(self, device):\n        self.encoder.to(device)\n"
    ),
    "annotated with a module class of the file": (
        "class Block(nn.Module):\n    pass\n\ndef f(block: Block, device):\n    block.to(device)\n"
    ),
    "function returning a module": (
        "def build():\n    return nn.Sequential(nn.Linear(2, 2))\n\ndef f(device):\n    net = build()\n    net.to(device)\n"
    ),
    "modules loop with zip": (
        "def f(a, b, device):\n    for x, y in zip(a.modules(), b.children()):\n        y.cuda()\n"
    ),
}

UNKNOWNS = {
    "zip of unknowns": "def f(a, b, device):\n    for x, y in zip(a, b):\n        y.to(device)\n",
    "zip with a starred argument": "def f(a, rest, device):\n    for x, y in zip(*rest):\n        y.to(device)\n",
    "items of an optimizer state_dict": (
        "def f(opt, device):\n    for k, v in opt.state_dict().items():\n        v.to(device)\n"
    ),
    "state_dict of an unknown object": (
        "def f(trainer, device):\n    for k, v in trainer.state_dict().items():\n        v.to(device)\n"
    ),
    "torch.load without a state-dict use": (
        "def f(path, device):\n    ckpt = torch.load(path)\n    for k, v in ckpt.items():\n        v.to(device)\n"
    ),
    "torch.load given to an optimizer": (
        "def f(path, opt, device):\n    state = torch.load(path)\n    opt.load_state_dict(state)\n"
        "    for v in state.values():\n        v.to(device)\n"
    ),
    "torch.load given to a module, rebound after": (
        "def f(path, device):\n    net = nn.Linear(1, 1)\n    sd = torch.load(path)\n    net.load_state_dict(sd)\n"
        "    sd = torch.load(path + '.meta')\n    for v in sd.values():\n        v.to(device)\n"
    ),
    "keys of a tensor dict": "def f(feats: Dict[Tensor, str], device):\n    for k in feats.values():\n        k.to(device)\n",
    "slice of a tensor list": "def f(xs: List[Tensor], device):\n    xs[1:].to(device)\n",
    "list of lists": "def f(xs: List[List[Tensor]], device):\n    for x in xs:\n        x.to(device)\n",
    "union of tensor and module": "def f(x: Union[Tensor, nn.Module], device):\n    x.to(device)\n",
    "union of tensor and list": "def f(x: Union[Tensor, List[Tensor]], device):\n    x.to(device)\n",
    "unknown generic": "def f(x: tp.Callable[[Tensor], Tensor], device):\n    x.to(device)\n",
    "mixed list literal": "def f(device):\n    for m in [torch.zeros(1), nn.Linear(1, 1)]:\n        m.to(device)\n",
    "attribute with a tensor and a module": (
        "class Net(nn.Module):\n    def __init__(self, big):\n        super().__init__()\n        self.proj = torch.eye(2)\n"
        "        if big:\n            self.proj = nn.Linear(2, 2)\n    def move(self, device):\n        self.proj.to(device)\n"
    ),
    "attribute also bound by unpacking": (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.enc = torch.zeros(1)\n"
        "        self.enc, self.dec = build()\n    def move(self, device):\n        self.enc.to(device)\n"
    ),
    "attribute with an unknown assignment": (
        "class Net(nn.Module):\n    def __init__(self, table):\n        super().__init__()\n        self.t = torch.zeros(1)\n"
        "    def load(self, other):\n        self.t = other\n    def move(self, device):\n        self.t.to(device)\n"
    ),
    "attribute assigned in another class": (
        "class A:\n    def __init__(self):\n        self.x = torch.zeros(1)\n"
        "class B:\n    def move(self, device):\n        self.x.to(device)\n"
    ),
    "tensor-only method defined in the file": (
        "class Boxes:\n    def unsqueeze(self, dim):\n        return self\n\n"
        "def f(boxes, device):\n    b = boxes.unsqueeze(0)\n    boxes.to(device)\n    b.to(device)\n"
    ),
    "evidence on another binding": (
        "def f(model, x, device):\n    y = model(x)\n    y.unsqueeze(0)\n    y = model.head\n    y.to(device)\n"
    ),
    "evidence on a name whose type is tested": (
        "def f(obj, device):\n    if isinstance(obj, torch.Tensor):\n        return obj.unsqueeze(0)\n"
        "    obj.to(device)\n"
    ),
    "look-alike methods are no evidence": (
        "def f(a, device):\n    a.reshape(2, 2)\n    a.view(-1)\n    a.transpose(0, 1)\n    a.contiguous()\n"
        "    a.numel()\n    a.to(device)\n"
    ),
    "function returning a tensor or a module": (
        "def make(big):\n    if big:\n        return nn.Linear(2, 2)\n    return torch.zeros(2)\n\n"
        "def f(device):\n    make(True).to(device)\n"
    ),
    "generator function": "def gen():\n    yield torch.zeros(1)\n    return torch.zeros(1)\n\ndef f(device):\n    gen().to(device)\n",
    "unknown decorator": (
        "@register\ndef make():\n    return torch.zeros(1)\n\ndef f(device):\n    make().to(device)\n"
    ),
    "async function": "async def make():\n    return torch.zeros(1)\n\ndef f(device):\n    make().to(device)\n",
    "mutually recursive functions": (
        "def a(n):\n    return b(n)\n\ndef b(n):\n    return a(n)\n\ndef f(device):\n    a(1).to(device)\n"
    ),
    "rebound function name": (
        "def make():\n    return torch.zeros(1)\n\nmake = wrap(make)\n\ndef f(device):\n    make().to(device)\n"
    ),
    "inherited method": (
        "class Base:\n    def sample(self):\n        return torch.zeros(1)\n"
        "class Child(Base):\n    def go(self, device):\n        self.sample().to(device)\n"
    ),
    "function without returns": "def make():\n    pass\n\ndef f(device):\n    make().to(device)\n",
    "conditional expression of tensor and module": (
        "def f(a, device):\n    t = torch.zeros(1) if a else nn.Linear(1, 1)\n    t.to(device)\n"
    ),
}


def _question(source: str) -> tuple[FileContext, cst.BaseExpression]:
    """The receiver of the last move statement."""
    ctx = FileContext(cst.parse_module(source))
    moves = []
    for call in ctx.nodes(cst.Call):
        func = call.func
        statement = ctx.parent(call)
        if isinstance(statement, cst.ListComp):
            statement = ctx.parent(statement)
        if (isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda", "cpu")
                and isinstance(statement, cst.Expr)):
            moves.append(call)
    last = max(moves, key=lambda c: (ctx.positions[c].start.line, ctx.positions[c].start.column))
    return ctx, last.func.value


def _line_of_question(source: str) -> int:
    ctx, receiver = _question(source)
    return ctx.positions[receiver].start.line


def _case(table, name):
    return HEAD + table[name]


@pytest.mark.parametrize("name", TENSORS)
def test_tensor_cases(name):
    source = _case(TENSORS, name)
    ctx, receiver = _question(source)
    assert ctx.kinds.of(receiver) is TENSOR
    assert ctx.possible_kinds.of(receiver) is TENSOR
    assert (_line_of_question(source), "DL003") in codes(source, "DL003")


@pytest.mark.parametrize("name", MODULES)
def test_module_cases(name):
    source = _case(MODULES, name)
    ctx, receiver = _question(source)
    assert ctx.kinds.of(receiver) is MODULE
    assert codes(source, "DL003") == []


@pytest.mark.parametrize("name", UNKNOWNS)
def test_unknown_cases(name):
    source = _case(UNKNOWNS, name)
    ctx, receiver = _question(source)
    assert ctx.kinds.of(receiver) is UNKNOWN
    assert (_line_of_question(source), "DL003") not in codes(source, "DL003")


ALL = [_case(TENSORS, n) for n in TENSORS] + [_case(MODULES, n) for n in MODULES] + [_case(UNKNOWNS, n) for n in UNKNOWNS]


@pytest.mark.parametrize("source", ALL)
def test_over_approximation_and_order(source):
    """Every expression: the scope-free inference says TENSOR where the exact one does, and a kind does
    not depend on what was asked before."""
    module = cst.parse_module(source)
    ctx = FileContext(module)
    nodes = [node for kind, found in ctx.nodes_by_type.items() if issubclass(kind, cst.BaseExpression)
             for node in found]
    forwards = [ctx.kinds.of(node) for node in nodes]
    backwards = KindInference(FileContext(module))
    assert [backwards.of(node) for node in reversed(nodes)] == forwards[::-1]
    assert all(ctx.possible_kinds.of(n) is TENSOR for n, kind in zip(nodes, forwards) if kind is TENSOR)


def test_loop_variable_move_is_display_only():
    """A loop variable cannot be re-bound to move the container's item: the finding has no fix."""
    from tests.helpers import fix

    source = _case(TENSORS, "zip of parameters")
    assert fix(source, select="DL003", unsafe=True) == source


def test_attribute_move_is_fixed():
    from tests.helpers import fix

    source = _case(TENSORS, "attribute assigned in __init__")
    # unsafe since issue 15 (later code may rely on the tensor staying where it was), still offered
    assert "self.anchors = self.anchors.to(device)" in fix(source, select="DL003", unsafe=True)


# -- cycles through the new steps --------------------------------------------------------------------
NAMES = st.sampled_from(["a", "b", "x", "t"])
STATEMENTS = [
    "{a} = {b}",
    "{a}, {b} = {b}, {a}",
    "{a} = {b}.unsqueeze(0)",
    "{a}.permute(1, 0)",
    "{a} = f_{b}({a})",
    "{a} = self.m_{b}()",
    "{a} = [{b}, {c}]",
    "{a} = {{'k': {b}}}",
    "{a} = {b}['k']",
    "{a} = {b}.get('k')",
    "{a} = {b}[0]",
    "{a} = list({b})",
    "{a} = {b}.state_dict()",
    "{a} = torch.load({b})",
    "{b}.load_state_dict({a})",
    "{a}: List[Tensor] = {b}",
    "self.{a}, self.{b} = {c}",
    "self.{a} = {b}",
    "self.{a} = self.{b}",
    "{a}.to(device)",
    "self.{a}.cuda()",
    "[{c}.to(device) for {c}, {a} in zip({a}, {b})]",
    "return {a}",
    "return f_{a}({b})",
    "return self.m_{a}()",
]
BLOCKS = ["for {a}, {b} in zip({b}, {a}):", "for {a} in {b}.values():", "for {c}, {a} in {b}.items():",
          "for {a} in {a}:", "if {a}:"]


@st.composite
def cyclic_programs(draw) -> str:
    def block(indent: int, depth: int) -> list[str]:
        lines = []
        for _ in range(draw(st.integers(1, 4))):
            names = {key: draw(NAMES) for key in "abc"}
            if depth < 2 and draw(st.booleans()):
                lines.append(" " * indent + draw(st.sampled_from(BLOCKS)).format(**names))
                lines.extend(block(indent + 4, depth + 1))
            else:
                lines.append(" " * indent + draw(st.sampled_from(STATEMENTS)).format(**names))
        return lines

    lines = ["import torch", "import torch.nn as nn", "from typing import List", "from torch import Tensor"]
    for name in ("a", "b", "x", "t"):
        if draw(st.booleans()):
            lines += [f"def f_{name}(a, b=None, x=None, t=None, device=None):", *block(4, 0)]
    lines.append("class M(nn.Module):")
    for name in ("a", "b", "x", "t"):
        lines += [f"    def m_{name}(self, a=None, b=None, x=None, t=None, device=None):", *block(8, 0)]
    return "\n".join(lines) + "\n"


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(cyclic_programs())
def test_cyclic_programs_end_and_are_consistent(source):
    compile(source, "generated", "exec")
    assert check_source("cycles.py", source.encode(), Config(select=("ALL",))).error is None
    module = cst.parse_module(source)
    ctx = FileContext(module)
    nodes = [node for kind, found in ctx.nodes_by_type.items() if issubclass(kind, cst.BaseExpression)
             for node in found]
    forwards = [ctx.kinds.of(node) for node in nodes]
    backwards = KindInference(FileContext(module))
    assert [backwards.of(node) for node in reversed(nodes)] == forwards[::-1]
    assert all(ctx.possible_kinds.of(n) is TENSOR for n, kind in zip(nodes, forwards) if kind is TENSOR)
