"""A model passed to a function may come back moved (devlint.analysis.param_moves, asked by the placement
fact): a file saved from it is CPU data only where every function it was given leaves it in place.

Each program loads `m.pt` before saving it (so no round trip clears the load): the load is cleared only
when the saved `model.state_dict()` is CPU data."""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint
from tests.test_cache_staleness import cached_and_fresh
from tests.test_cli import write

PROGRAM = '''
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)


def log(model):
    print(model)
    return len(list(model.parameters()))


{train}


model = Net()
train(model, torch.ones(2))
state = torch.load("m.pt")
torch.save(model.state_dict(), "m.pt")
'''

LEAVES_IT = {
    "reads_and_calls": "def train(model, x):\n    model.train()\n    out = model(x)\n    return out.sum()",
    "hands_to_a_reader": "def train(model, x):\n    if model is not None:\n        log(model)\n    return x",
    "by_keyword": "def train(model, x):\n    return log(model=model)",
}
MAY_MOVE = {
    "moves_it": "def train(model, x):\n    model.cuda()\n    return model(x)",
    "moves_an_alias": "def train(model, x):\n    net = model\n    net.to('cuda')",
    "hands_to_an_outside_call": "def train(model, x):\n    trainer.fit(model)",
    "returns_it": "def train(model, x):\n    return model",
    "stores_it": "def train(model, x):\n    REGISTRY.append(model)",
    "decorated": "@trace\ndef train(model, x):\n    return model(x)",
    "moves_by_apply": "def train(model, x):\n    model.apply(init)",
}


def _flagged(train: str) -> int:
    return len(lint(textwrap.dedent(PROGRAM.format(train=train)), select="DL002"))


@pytest.mark.parametrize("name", sorted(LEAVES_IT))
def test_a_function_that_leaves_the_model_in_place_keeps_it_cpu_data(name):
    assert _flagged(LEAVES_IT[name]) == 0


@pytest.mark.parametrize("name", sorted(MAY_MOVE))
def test_a_function_that_may_move_the_model_makes_its_place_unknown(name):
    assert _flagged(MAY_MOVE[name]) == 1


def test_an_outside_callee_a_call_after_the_save_and_an_unpacking_call():
    outside = PROGRAM.format(train="").replace("train(model, torch.ones(2))", "accelerator.prepare(model)")
    assert len(lint(outside, select="DL002")) == 1
    after = PROGRAM.format(train="").replace("train(model, torch.ones(2))\n", "") + "accelerator.prepare(model)\n"
    assert lint(after, select="DL002") == []  # (given away after the save: the file was written from the CPU)
    unpacked = PROGRAM.format(train=LEAVES_IT["reads_and_calls"]).replace(
        "train(model, torch.ones(2))", "train(model, *[torch.ones(2)])")
    assert len(lint(unpacked, select="DL002")) == 1


SIBLING = "def train(model, x):\n    model.train(){move}\n    return model(x)\n"
USER = ("import torch\nimport trainer\n\nmodel = torch.nn.Linear(2, 2)\ntrainer.train(model, torch.ones(2))\n"
        "state = torch.load('m.pt')\ntorch.save(model.state_dict(), 'm.pt')\n")


def test_a_project_function_is_read_and_its_changes_followed(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    write(root / "trainer.py", SIBLING.format(move=""))
    write(root / "main.py", USER)
    assert cached_and_fresh(root, "main.py", "--select", "DL002") == ([], [])
    write(root / "trainer.py", SIBLING.format(move="\n    model.to('cuda')"))
    assert cached_and_fresh(root, "main.py", "--select", "DL002") == ([("main.py", "DL002")],) * 2
