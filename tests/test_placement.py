"""The placement fact (devlint/analysis/placement.py): where a value lives, asked at `probe(value)`."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from devlint.context import FileContext
from devlint.analysis.placement import CPU, DEVICE, UNKNOWN, placement


def _probe(source: str):
    ctx = FileContext(cst.parse_module(textwrap.dedent(source)))
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    assert calls, "the snippet must call probe(...)"
    return ctx, calls[-1].args[0].value


def where(source: str):
    ctx, expr = _probe(source)
    return placement(ctx).of(expr)


CASES = {
    # factories and Python values
    "import torch\nprobe(torch.zeros(3))": CPU,
    "import torch\nprobe(torch.zeros(3, device='cuda'))": DEVICE,
    "import torch\nprobe(torch.zeros(3, device='cpu'))": CPU,
    "import torch\nimport numpy as np\nprobe(torch.from_numpy(np.ones(3)))": CPU,
    "import torch\nprobe(torch.ones(2, device=dev))": DEVICE,
    "import torch\nprobe(torch.ones(2, device=spec))": UNKNOWN,
    "probe(3)": CPU,
    "probe(x.item())": CPU,
    # moves
    "import torch\nprobe(torch.zeros(3).cuda())": DEVICE,
    "import torch\nprobe(torch.zeros(3).to('cuda:0'))": DEVICE,
    "import torch\nprobe(torch.zeros(3).cuda().type_as(torch.ones(1)))": CPU,  # the other's type and device
    "import torch\nprobe(torch.zeros(3).to(device))": DEVICE,
    "import torch\nprobe(torch.zeros(3).to(args.device))": DEVICE,
    "import torch\nprobe(torch.zeros(3).to(torch.device('cpu')))": CPU,
    "import torch\nprobe(torch.zeros(3).to(torch.float16))": CPU,
    "import torch\nprobe(x.cuda().cpu())": CPU,
    "import torch\nprobe(x.to(dtype=torch.half))": UNKNOWN,
    "import torch\ndevice = torch.device('cpu')\nprobe(torch.zeros(3).to(device))": CPU,
    "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "probe(torch.zeros(3).to(device))": DEVICE,
    # ops keep their operands' placement; literal numbers do not count
    "import torch\na = torch.ones(2)\nprobe(a * 2 + torch.zeros(2))": CPU,
    "import torch\na = torch.ones(2).cuda()\nprobe(a * 2 + torch.zeros(2).cuda())": DEVICE,
    "import torch\na = torch.ones(2).cuda()\nprobe(torch.cat([a, torch.zeros(2)]))": UNKNOWN,
    # names: the last binding before the use; parameters are unknown
    "import torch\nx = torch.ones(2).cuda()\nx = torch.ones(2)\nprobe(x)": CPU,
    "import torch\ndef f(x):\n    probe(x)": UNKNOWN,
    # loads
    "import torch\nprobe(torch.load(p, map_location='cpu'))": CPU,
    "import torch\nprobe(torch.load(p, map_location=device))": DEVICE,
    "import torch\nprobe(torch.load(p))": UNKNOWN,
    "import torch\nprobe(torch.load(p, map_location=lambda s, loc: s))": UNKNOWN,
    # modules: built on the CPU, moved in place
    "import torch\nm = torch.nn.Linear(3, 1)\nprobe(m.state_dict())": CPU,
    "import torch\nm = torch.nn.Linear(3, 1, device='cuda')\nprobe(m.state_dict())": DEVICE,
    "import torch\nm = torch.nn.Linear(3, 1)\nm.cuda()\nprobe(m.state_dict())": DEVICE,
    "import torch\nm = torch.nn.Linear(3, 1)\nm.to(device)\nprobe(m)": DEVICE,
    "import torch\nm = torch.nn.Linear(3, 1)\nm.to(torch.float64)\nprobe(m)": CPU,
    "import torch\nm = torch.nn.Linear(3, 1)\nprobe(m)\nm.cuda()": CPU,
    "import torch\nm = torch.nn.Linear(3, 1)\nfor _ in range(2):\n    probe(m)\n    m.cuda()": UNKNOWN,
    "import torch\nm = torch.nn.Linear(3, 1)\ndef go():\n    m.cuda()\nprobe(m)": UNKNOWN,
    "import torch\ndef train(net):\n    net.cuda()\nm = torch.nn.Linear(3, 1)\ntrain(m)\nprobe(m)": UNKNOWN,
    "import torch\nm = torch.nn.Linear(3, 1)\nother = torch.nn.Linear(3, 1)\nother.cuda()\nprobe(m)": CPU,
    "import torch\nm = torch.nn.Linear(3, 1)\nalias = m\nalias.cuda()\nprobe(m)": UNKNOWN,
    "import torch\nm = torch.nn.Linear(3, 1)\nprobe(m(torch.ones(3)))": CPU,
    "import torch\nm = torch.nn.Linear(3, 1).cuda()\nprobe(m(torch.ones(3).cuda()))": DEVICE,
    "import torch\nm = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\nprobe(opt.state_dict())": CPU,
    # classes of the file: CPU unless their code moves something
    "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.fc = torch.nn.Linear(2, 1)\nprobe(Net())": CPU,
    "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.fc = torch.nn.Linear(2, 1).cuda()\nprobe(Net())": UNKNOWN,
    # containers and loops
    "import torch\nm = torch.nn.Linear(3, 1)\nfor epoch in range(3):\n    probe({'epoch': epoch, 'model': m.state_dict()})": CPU,
    "import torch\nprobe([torch.ones(1), torch.ones(1).cuda()])": UNKNOWN,
}


@pytest.mark.parametrize("source", list(CASES))
def test_placement(source):
    assert where(source) is CASES[source]


@pytest.mark.parametrize("source", [
    "a = b\nb = a\nprobe(a)",
    "x = x\nprobe(x)",
    "import torch\nm = m.to(m)\nprobe(m)",
    "import torch\nd = d.device\nprobe(torch.zeros(1).to(d))",
])
def test_cycles_answer_unknown(source):
    assert where(source) in (UNKNOWN, DEVICE)


def test_targets():
    ctx, _ = _probe("import torch\nprobe(0)\n")
    p = placement(ctx)
    parse = cst.parse_expression
    # (fresh nodes: no scope metadata; literal and dotted forms only)
    assert p.target(parse("'cpu'")) is CPU
    assert p.target(parse("'cuda:1'")) is DEVICE
    assert p.target(parse("0")) is DEVICE
    assert p.target(parse("'meta'")) is UNKNOWN


def test_one_analysis_per_file():
    ctx, _ = _probe("probe(1)")
    assert placement(ctx) is placement(ctx)


SAVED = {
    "import torch\nm = torch.nn.Linear(3, 1)\ntorch.save(m.state_dict(), 'm.pt')\nprobe('m.pt')": True,
    "import torch\nm = torch.nn.Linear(3, 1)\nP = 'm.pt'\ntorch.save(m.state_dict(), P)\nprobe(P)": True,
    "import os, torch\nm = torch.nn.Linear(3, 1)\nP = os.path.join(d, 'm.pt')\ntorch.save(m, P)\nprobe(P)": True,
    "import torch\nm = torch.nn.Linear(3, 1)\nP = 'm.pt'\ntorch.save(m.state_dict(), 'm.pt')\nprobe(P)": True,
    "import torch\nm = torch.nn.Linear(3, 1)\ntorch.save(m.state_dict(), 'm.pt')\nprobe('other.pt')": False,
    "import torch\nm = torch.nn.Linear(3, 1)\ntorch.save(m.state_dict(), f'{d}/m.pt')\nprobe(f'{d}/m.pt')": False,
    # a re-bound name: each read names the file of the binding it certainly sees (devlint.analysis.self_paths)
    "import torch\nm = torch.nn.Linear(3, 1)\nP = 'a.pt'\nP = 'b.pt'\ntorch.save(m, P)\nprobe(P)": True,
    "import torch\nm = torch.nn.Linear(3, 1)\nP = 'a.pt'\ntorch.save(torch.ones(1).cuda(), P)\nP = 'b.pt'\n"
    "torch.save(m, P)\nprobe(P)": True,
    "import torch\nm = torch.nn.Linear(3, 1)\nP = 'b.pt'\ntorch.save(torch.ones(1).cuda(), P)\nP = 'b.pt'\n"
    "torch.save(m, P)\nprobe(P)": False,
    "import torch\nm = torch.nn.Linear(3, 1)\nP = 'a.pt'\nif c:\n    P = 'b.pt'\ntorch.save(m, P)\nprobe(P)": False,
    "import torch\nm = torch.nn.Linear(3, 1)\nP = 'a.pt'\ntorch.save(m, P)\nP = 'b.pt'\nprobe(P)": False,
    "import torch\nm = torch.nn.Linear(3, 1)\nP = 'a.pt'\ntorch.save(m, P)\nif c:\n    P = other\nprobe(P)": False,
    "import torch\nm = torch.nn.Linear(3, 1).cuda()\ntorch.save(m.state_dict(), 'm.pt')\nprobe('m.pt')": False,
    "import torch\nm = torch.nn.Linear(3, 1)\ntorch.save(m.state_dict(), 'm.pt')\n"
    "torch.save(m.cuda().state_dict(), 'm.pt')\nprobe('m.pt')": False,
    "import torch\ndef f(m):\n    torch.save(m.state_dict(), 'm.pt')\nprobe('m.pt')": False,
    "import torch\nprobe('m.pt')": False,
}


@pytest.mark.parametrize("source", list(SAVED))
def test_saved_on_cpu(source):
    ctx, path = _probe(source)
    assert placement(ctx).saved_on_cpu(path) is SAVED[source]


@pytest.mark.parametrize("source, expected", [
    ("import torch\nm = torch.nn.Linear(3, 1)\nm.cuda()\nm.cpu()\nprobe(m)", CPU),
    ("import torch\nm = torch.nn.Linear(3, 1)\nif flag:\n    m.cuda()\nprobe(m)", UNKNOWN),
    ("import torch\nm = torch.nn.Linear(3, 1)\nif flag:\n    m.cuda()\nm.to(device)\nprobe(m)", DEVICE),
])
def test_the_last_certain_move_decides(source, expected):
    assert where(source) is expected


def test_a_move_of_a_new_module_moves_nothing_else():
    assert where("import torch\nm = torch.nn.Linear(3, 1)\ng = torch.nn.Linear(3, 1).cuda()\nprobe(m)") is CPU
    assert where("import torch\nm = torch.nn.Linear(3, 1)\ng = build().cuda()\nprobe(m)") is UNKNOWN


def test_moves_of_other_names_reach_only_an_object_that_escapes():
    kept = "import torch\nm = torch.nn.Linear(3, 1)\ndef f(x):\n    return x.cuda()\nprint(m)\nprobe(m.weight)"
    passed = "import torch\nm = torch.nn.Linear(3, 1)\ndef f(x):\n    x.cuda()\nf(m)\nprobe(m)"
    stored = "import torch\nm = torch.nn.Linear(3, 1)\nholder.net = m\nholder.net.cuda()\nprobe(m)"
    assert where(kept) is CPU
    assert where(passed) is UNKNOWN
    assert where(stored) is UNKNOWN


def test_every_expression_of_the_fixtures_gets_an_answer():
    from tests.helpers import ROOT

    for path in sorted(ROOT.glob("tests/fixtures/DL*/*.py")):
        ctx = FileContext(cst.parse_module(path.read_text()))
        p = placement(ctx)
        for kind in (cst.Call, cst.Subscript):
            for node in ctx.nodes(kind):
                assert p.of(node) in (CPU, DEVICE, UNKNOWN)
        for call in ctx.nodes(cst.Call):
            if call.args:
                p.saved_on_cpu(call.args[0].value)
