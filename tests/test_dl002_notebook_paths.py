"""DL002 in notebooks and through functions of the file: a notebook sees its sibling modules as a script
beside them does (devlint.documents.notebook's project view), a function that only loads the path it is
given is no writer of it (devlint.analysis.path_readers), and a path parameter that every call fills with a
file this run wrote is one (devlint.analysis.param_paths). Both sides of each."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from devlint.config import Config
from devlint.documents.notebook import check_notebook
from tests.helpers import lint
from tests.test_cache_staleness import cached_and_fresh
from tests.test_cli import write

DL002 = Config(select=("DL002",))


def notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": textwrap.dedent(s).lstrip("\n").splitlines(True)} for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}) + "\n"


def flagged_cells(path: Path, text: str) -> list[tuple[int, int]]:
    result = check_notebook(str(path), text.encode(), DL002)
    assert result.error is None, result.error
    return [(f.cell, f.start.line) for f in result.findings]


# -- a notebook's sibling modules ------------------------------------------------------------------------
SIBLING = '''
import torch
from torch import nn


class Network(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]){move}
'''
# loaded before the save below: only the save's CPU data clears the load
SAVES_A_SIBLING_INSTANCE = notebook(
    "import torch\nimport fc_model\n",
    "def restore(path):\n    return torch.load(path)\n",
    "model = fc_model.Network([4, 3, 2])\nstate = torch.load('checkpoint.pth')\n",
    "torch.save(model.state_dict(), 'checkpoint.pth')\n",
)


def test_a_notebook_sees_the_classes_of_its_sibling_module_and_follows_their_changes(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    write(root / "fc_model.py", SIBLING.format(move=""))
    write(root / "lesson.ipynb", SAVES_A_SIBLING_INSTANCE)
    assert cached_and_fresh(root, "lesson.ipynb", "--select", "DL002") == ([("lesson.ipynb", "DL002")],) * 2
    # (the load in `restore` of a parameter stays: `restore` is never called)
    write(root / "fc_model.py", SIBLING.format(move="\n        self.cuda()"))
    cached, fresh = cached_and_fresh(root, "lesson.ipynb", "--select", "DL002")
    assert cached == fresh == [("lesson.ipynb", "DL002")] * 2


# -- a function of the file that only loads the path it is given ------------------------------------------
def test_a_function_that_only_loads_its_path_is_no_writer():
    source = '''
        import torch
        def load_checkpoint(filepath):
            checkpoint = torch.load(filepath)
            return checkpoint
        def run(model):
            torch.save(model.state_dict(), "checkpoint.pth")
            state = torch.load("checkpoint.pth")
            return load_checkpoint("checkpoint.pth"), state
    '''
    # the load of the parameter of a public function stays: another file may call it with any path
    assert [f.start.line for f in lint(textwrap.dedent(source), select="DL002")] == [4]


def test_a_function_that_hands_its_path_on_may_write_it():
    source = '''
        import torch
        def load_checkpoint(filepath):
            fetch(filepath)
            return torch.load(filepath)
        def run(model):
            torch.save(model.state_dict(), "checkpoint.pth")
            state = torch.load("checkpoint.pth")
            return load_checkpoint("checkpoint.pth"), state
    '''
    assert [f.start.line for f in lint(textwrap.dedent(source), select="DL002")] == [5, 8]


# -- a path parameter that every call fills with a file this run wrote ------------------------------------
def test_a_private_function_every_call_of_which_passes_a_saved_file():
    source = '''
        import torch
        def _restore(path):
            return torch.load(path)
        def run(model):
            torch.save(model.state_dict(), "a.pt")
            first = _restore("a.pt")
            torch.save(model.state_dict(), "b.pt")
            return first, _restore(path="b.pt")
    '''
    assert lint(textwrap.dedent(source), select="DL002") == []


def test_a_call_with_another_file_or_a_public_function_keeps_the_finding():
    base = '''
        import torch
        def {name}(path):
            return torch.load(path)
        def run(model, other):
            torch.save(model.state_dict(), "a.pt")
            return {name}("a.pt"), {name}({second})
    '''
    for name, second in [("_restore", "other"), ("restore", '"a.pt"')]:
        found = lint(textwrap.dedent(base.format(name=name, second=second)), select="DL002")
        assert [f.start.line for f in found] == [4], (name, second)
    handed = '''
        import torch
        def _restore(path):
            return torch.load(path)
        def run(model, pool):
            torch.save(model.state_dict(), "a.pt")
            return _restore("a.pt"), pool.map(_restore, ["b.pt"])
    '''
    assert [f.start.line for f in lint(textwrap.dedent(handed), select="DL002")] == [4]


def test_a_notebook_function_is_called_only_by_the_notebook(tmp_path):
    saves_then_restores = notebook(
        "import torch\n",
        "def load_checkpoint(filepath):\n    checkpoint = torch.load(filepath)\n    return checkpoint\n",
        "torch.save({'w': torch.zeros(2).cuda()}, 'checkpoint.pth')\n",
        "model = load_checkpoint('checkpoint.pth')\n",
    )
    assert flagged_cells(tmp_path / "lesson.ipynb", saves_then_restores) == []
    # the call before the save: the file may come from an earlier run
    restores_first = notebook(
        "import torch\n",
        "def load_checkpoint(filepath):\n    checkpoint = torch.load(filepath)\n    return checkpoint\n",
        "model = load_checkpoint('checkpoint.pth')\n",
        "torch.save({'w': torch.zeros(2).cuda()}, 'checkpoint.pth')\n",
    )
    assert flagged_cells(tmp_path / "lesson.ipynb", restores_first) == [(2, 2)]


def test_a_training_loop_at_a_notebooks_top_level_may_be_skipped(tmp_path):
    """The best-so-far save of a training cell (devlint.analysis.best_so_far) clears a later load in a
    script, not in a notebook's top level: its reader may skip the training cell."""
    cells = (
        "import math, torch\nmodel = torch.nn.Linear(2, 2).cuda()\n",
        ("best = math.inf\nfor epoch in range(1, 31):\n    loss = evaluate(model)\n    if loss <= best:\n"
         "        torch.save(model.state_dict(), 'model.pt')\n        best = loss\n"),
        "model.load_state_dict(torch.load('model.pt'))\n",
    )
    assert flagged_cells(tmp_path / "lesson.ipynb", notebook(*cells)) == [(3, 1)]
    assert lint("\n".join(cells), select="DL002") == []
