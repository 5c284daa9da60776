"""Notebooks: code cells checked with magics masked, findings by cell, fixes that change only code cells."""

from __future__ import annotations

import json

import pytest

from tests.test_cli import run

nbformat = pytest.importorskip("nbformat")


def make_notebook(path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Training on the GPU\nCall `x.cuda()` first."),
        nbformat.v4.new_code_cell("%matplotlib inline\n!pip install tqdm\nimport torch\nimport torch.nn as nn"),
        nbformat.v4.new_code_cell(
            "model = nn.Linear(4, 2).cuda()\nmodel.load_state_dict(torch.load('ckpt.pt'))\n"
            "x = torch.randn(8, 4)\nfiles = !ls\nx.to('cpu')\nout = model(x)"),
        nbformat.v4.new_code_cell("%%time\nfor i in range(3):\n    x.cuda()"),
        nbformat.v4.new_code_cell("for step in range(2):\n    y = x.cuda()\n    %time z = y * 2\n    ok = x.is_cuda?"),
    ]
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="loss 0.1\n"),
                           nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})]
    nb.cells[2].execution_count = 7
    nbformat.write(nb, str(path))
    return path


def test_findings_point_to_the_cell_and_line(tmp_path):
    path = make_notebook(tmp_path / "train.ipynb")
    result = run(str(path), "--output-format", "json", "--no-cache")
    found = [(f["code"], f["cell"], f["line"], f["column"]) for f in json.loads(result.stdout)]
    assert found == [("DL001", 3, 1, 25), ("DL002", 3, 2, 23), ("DL003", 3, 5, 1), ("DL001", 5, 2, 11)]
    text = run(str(path), "--no-cache")
    assert f"{path}:cell 3:1:25: DL001" in text.stdout


def test_fix_changes_only_code_cells_and_stays_valid(tmp_path):
    path = make_notebook(tmp_path / "train.ipynb")
    original_text = path.read_text()
    before = json.loads(original_text)
    result = run(str(path), "--fix", "--no-cache")
    assert result.exit_code == 0, result.output
    after = json.loads(path.read_text())
    nbformat.validate(nbformat.reads(path.read_text(), as_version=4))
    assert {k: v for k, v in after.items() if k != "cells"} == {k: v for k, v in before.items() if k != "cells"}
    changed = []
    for index, (old, new) in enumerate(zip(before["cells"], after["cells"])):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
        if old["source"] != new["source"]:
            assert old["cell_type"] == "code"
            changed.append(index)
    assert changed == [1, 2, 4]
    sources = ["".join(cell["source"]) for cell in after["cells"]]
    assert "%matplotlib inline\n!pip install tqdm\nimport torch\n" in sources[1]
    assert 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in sources[1]
    assert "model = nn.Linear(4, 2).to(device)" in sources[2] and "files = !ls" in sources[2]
    assert sources[3] == "%%time\nfor i in range(3):\n    x.cuda()"  # a cell magic is never touched
    assert "    %time z = y * 2\n    ok = x.is_cuda?" in sources[4]
    # the JSON layout is kept: putting the old sources back gives the original bytes
    fixed_text = path.read_text()
    for old, new in zip(before["cells"], after["cells"]):
        new["source"] = old["source"]
    assert json.dumps(after, indent=1, ensure_ascii=False) + "\n" == original_text
    assert run(str(path), "--fix", "--no-cache").exit_code == 0
    assert path.read_text() == fixed_text


def test_broken_notebook_json_is_reported(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text("{not json")
    result = run(str(path), "--no-cache")
    assert result.exit_code == 2 and f"{path}: error: invalid notebook JSON" in result.stderr


def test_notebooks_are_discovered_in_folders(tmp_path):
    make_notebook(tmp_path / "nb.ipynb")
    (tmp_path / ".git").mkdir()
    result = run(".", "--output-format", "json", "--no-cache", cwd=tmp_path)
    assert {f["path"] for f in json.loads(result.stdout)} == {"./nb.ipynb"}


def test_a_notebook_of_magics_only(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext autoreload\n%autoreload 2"), nbformat.v4.new_code_cell("!ls")]
    path = tmp_path / "magic.ipynb"
    nbformat.write(nb, str(path))
    assert run(str(path), "--no-cache").exit_code == 0
