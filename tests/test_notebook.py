"""Notebooks: code cells checked with IPython magics masked, findings by cell, fixes that change only
the sources of code cells and keep every other byte of the file."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from devlint.config import Config
from devlint.documents import check_document as check_source
from devlint.documents.notebook import check_notebook
from devlint.documents.notebook_cells import join_cells
from devlint.notebook_json import cell_source
from tests.test_cli import run

nbformat = pytest.importorskip("nbformat")

FIXTURE = Path(__file__).parent / "fixtures_notebooks" / "train.ipynb"  # as nbformat writes it
LINT = Config()
FIX = Config(fix=True)
DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'


def notebook(*sources, cell_type="code", **top) -> bytes:
    """An nbformat-4 notebook of code cells (a tuple (type, source) for another cell type)."""
    cells = []
    for source in sources:
        kind, source = source if isinstance(source, tuple) else (cell_type, source)
        cell = {"cell_type": kind, "metadata": {}, "source": source.splitlines(True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        cells.append(cell)
    nb = {"cells": cells, "metadata": top.pop("metadata", {}), "nbformat": 4, "nbformat_minor": 4}
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode()


def found(result) -> list[tuple[str, int, int, int]]:
    assert result.error is None, result.error
    return [(f.code, f.cell, f.start.line, f.start.column + 1) for f in result.findings]


def sources(text: str) -> list[str]:
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in json.loads(text)["cells"]]


def fix(data: bytes, config: Config = FIX) -> str:
    result = check_notebook("nb.ipynb", data, config)
    assert result.error is None, result.error
    assert result.fixed_source is not None
    return result.fixed_source


# -- findings ------------------------------------------------------------------------------------------
def test_findings_name_the_cell_among_all_cells_and_the_line_in_it():
    result = check_notebook(str(FIXTURE), FIXTURE.read_bytes(), LINT)
    assert found(result) == [
        ("DL001", 4, 1, 75),  # `.cuda()`, after a markdown cell: cells count whatever their type
        ("DL002", 4, 2, 23),  # torch.load; the `files = !ls data` line below is masked
        ("DL001", 5, 3, 30),  # in a `%%time` cell: its body is Python
        ("DL001", 8, 7, 3),  # after an indented `%time` line and an `evaluate?` help line
    ]  # `y.cuda()` ends cell 8: displayed (Out[8]), not discarded, so no DL003 there  # the %%bash cell 6, the raw cell 9 and the markdown cell 1 mention `.cuda()` too: not code
    assert result.original_source == FIXTURE.read_text(encoding="utf-8") and result.fixed_source is None


def test_the_command_line_shows_the_cell(tmp_path):
    path = tmp_path / "train.ipynb"
    path.write_bytes(FIXTURE.read_bytes())
    text = run(str(path), "--no-cache")
    assert text.exit_code == 1
    assert f"{path}:cell 4:1:75: DL001 [*] `.cuda()`" in text.stdout  # [*]: fixable, as in a .py file
    assert "[*] 4 fixable with the `--fix` option." in text.stdout
    rows = json.loads(run(str(path), "--no-cache", "--output-format", "json").stdout)
    assert [(r["cell"], r["line"], r["column"]) for r in rows][:2] == [(4, 1, 75), (4, 2, 23)]
    edit = rows[0]["fix"]["edits"][0]  # edits are in the cell's lines too
    assert (edit["location"]["line"], edit["location"]["column"]) == (1, 9) and edit["content"].endswith(").to(device)")


def test_check_source_dispatches_notebooks():
    assert found(check_source("a/train.ipynb", FIXTURE.read_bytes(), LINT))[0] == ("DL001", 4, 1, 75)


def test_cell_source_quotes_a_cell():
    text = FIXTURE.read_text(encoding="utf-8")
    assert cell_source(text, 4).splitlines()[0].endswith(".cuda()")
    assert cell_source(text, 99) is None and cell_source("{", 1) is None


# -- fixing --------------------------------------------------------------------------------------------
def test_fix_changes_only_the_sources_of_code_cells(tmp_path):
    path = tmp_path / "train.ipynb"
    path.write_bytes(FIXTURE.read_bytes())
    original = path.read_text(encoding="utf-8")
    result = run(str(path), "--fix", "--no-cache")
    assert result.exit_code == 0, result.output
    assert "Found 4 errors (4 fixed, 0 remaining)." in result.stdout
    fixed = path.read_text(encoding="utf-8")
    nbformat.validate(nbformat.reads(fixed, as_version=4))

    before, after = json.loads(original), json.loads(fixed)
    changed = [i for i, (old, new) in enumerate(zip(before["cells"], after["cells"])) if old != new]
    assert changed == [1, 3, 4, 7] and len(after["cells"]) == len(before["cells"])
    assert all(before["cells"][i]["cell_type"] == "code" for i in changed)
    for old, new in zip(before["cells"], after["cells"]):
        assert isinstance(new["source"], list)  # still a list of lines
        new["source"] = old["source"]
    assert after == before  # outputs, metadata, ids, execution counts: all equal
    # ... and byte for byte: the original is the fixed text with the old sources put back
    assert json.dumps(after, indent=1, ensure_ascii=False) + "\n" == original
    diff = [line for line in difflib.unified_diff(original.splitlines(), fixed.splitlines(), n=0)
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert all(line[1:].startswith('    "') for line in diff), diff  # only lines inside "source" lists

    new = sources(fixed)
    assert new[1] == ("!pip install -q torchvision\n%matplotlib inline\nimport numpy as np\nimport torch\n"
                      f"import torch.nn as nn\nimport matplotlib.pyplot as plt\n\n{DEVICE}")  # magics restored
    assert new[3].splitlines()[0].endswith("nn.Linear(128, 10)).to(device)")
    assert 'torch.load("checkpoint.pt", map_location="cpu")' in new[3] and "files = !ls data" in new[3]
    assert new[4].startswith("%%time\nfor epoch in range(2):\n    x = torch.randn(64, 784).to(device)\n")
    assert new[5] == "%%bash\nnvidia-smi\necho 'model.cuda()'"  # a shell cell is never touched
    assert new[7] == ("def evaluate(batch):\n    %time out = model(batch)\n    return out\n\nevaluate?\n"
                      "y = torch.zeros(3)\ny.to(device)")  # the last expression: displayed, left a statement

    again = run(str(path), "--fix", "--no-cache")
    assert again.exit_code == 0 and "All checks passed!" in again.stdout
    assert path.read_text(encoding="utf-8") == fixed  # a second fix is a no-op


def test_fix_result_carries_texts_and_remaining_findings_in_fixed_coordinates():
    data = notebook("import torch.nn as nn", "import torch\nm = nn.Linear(2, 2).cuda()\n"
                    "m.load_state_dict(torch.load('a.pt'))\ny = torch.ones(2, device='cuda:1')")
    result = check_notebook("nb.ipynb", data, FIX)
    assert result.original_source == data.decode() and result.fixed_source is not None
    assert [(f.code, f.cell) for f in result.applied] == [("DL001", 2), ("DL002", 2)]
    # the device line (and the blank line above it) was inserted above: the remaining finding moved
    # down two lines in cell 2
    assert found(result) == [("DL004", 2, 6, 26)]
    assert sources(result.fixed_source)[1].splitlines()[5] == "y = torch.ones(2, device='cuda:1')"


def test_a_cache_hit_does_not_stop_a_later_fix(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(notebook("import torch", "m = torch.nn.Linear(2, 2).cuda()"))
    cache = str(tmp_path / "cache")
    assert run(str(path), "--cache-dir", cache).exit_code == 1  # the findings are cached
    assert run(str(path), "--cache-dir", cache, "--fix").exit_code == 0
    assert sources(path.read_text())[1] == "m = torch.nn.Linear(2, 2).to(device)"


def test_device_goes_after_the_imports_of_the_cell_that_imports_torch():
    new = sources(fix(notebook("%load_ext autoreload\nimport os", "import numpy as np\nimport torch\n\nx = 1",
                               "t = torch.ones(1).cuda()")))
    assert new == ["%load_ext autoreload\nimport os", f"import numpy as np\nimport torch\n\n{DEVICE}\n\nx = 1",
                   "t = torch.ones(1).to(device)"]


def test_without_an_import_of_torch_the_first_code_cell_gets_one():
    new = sources(fix(notebook(("markdown", "# Title"), "%matplotlib inline\nprint('start')",
                               "from torch import nn\nm = nn.Linear(2, 2).cuda()")))
    assert new[0] == "# Title"
    assert new[1].startswith("%matplotlib inline\nimport torch\n")
    assert DEVICE in new[1] and new[1].endswith("print('start')")
    assert new[2] == "from torch import nn\nm = nn.Linear(2, 2).to(device)"


@pytest.mark.parametrize("layout", [
    dict(indent=2, ensure_ascii=False),  # what some editors write
    dict(indent=1, ensure_ascii=True),
    dict(indent=None),
    dict(indent=4, sort_keys=True),
])
def test_fix_keeps_other_json_layouts_byte_for_byte(layout):
    nb = json.loads(notebook(("markdown", "Déjà vu — ✓"), "import torch\n# café\nx = torch.ones(1).cuda()\nx",
                             "y = 1e-7"))
    nb["metadata"]["scale"] = 1e-7  # re-serialised by Python this would become 1e-07
    text = json.dumps(nb, **layout).replace("1e-07", "1e-7")
    fixed = fix(text.encode())
    nb["cells"][1]["source"] = ["import torch\n", "\n", f"{DEVICE}\n", "# café\n", "x = torch.ones(1).to(device)\n", "x"]
    expected = json.dumps(nb, **layout).replace("1e-07", "1e-7")
    assert fixed == expected


def test_fix_keeps_crlf_files_a_bom_no_final_newline_and_string_sources():
    nb = json.loads(notebook("import torch\r\nx = torch.ones(1).cuda()\r\n"))
    nb["cells"][0]["source"] = "".join(nb["cells"][0]["source"])  # a string, not a list of lines
    text = "\ufeff" + json.dumps(nb, indent=1).replace("\n", "\r\n")  # a Windows checkout, no final newline
    fixed = fix(text.encode())
    nb["cells"][0]["source"] = f"import torch\r\n\r\n{DEVICE}\r\nx = torch.ones(1).to(device)\r\n"
    assert fixed == "\ufeff" + json.dumps(nb, indent=1).replace("\n", "\r\n")


def test_add_noqa_writes_into_the_cells():
    data = notebook("import torch", "%time y = 2\nm = torch.nn.Linear(2, 2).cuda()")
    result = check_notebook("nb.ipynb", data, Config(add_noqa=True))
    assert result.added_noqa == 1 and result.findings == []
    assert sources(result.fixed_source)[1] == "%time y = 2\nm = torch.nn.Linear(2, 2).cuda()  # noqa: DL001"
    assert found(check_notebook("nb.ipynb", result.fixed_source.encode(), LINT)) == []


def test_noqa_comments_work_in_cells():
    data = notebook("import torch", "a = torch.ones(1).cuda()  # noqa: DL001\nb = torch.ones(1).cuda()")
    assert found(check_notebook("nb.ipynb", data, LINT)) == [("DL001", 2, 2, 19)]


# -- magics --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", [
    "%matplotlib inline", "%%time", "!pip install torch", "!!ls", "files = !ls", "t = %timeit -o f()",
    "a, b = !echo 1 2", "?torch.load", "torch.load?", "torch.load??", "%pinfo torch", "pip install torch",
    "cd ..", "/print 1", "%env CUDA_VISIBLE_DEVICES=0",
])
def test_ipython_lines_are_masked(line):
    data = notebook(f"import torch\n{line}\nx = torch.ones(1).cuda()")
    assert found(check_notebook("nb.ipynb", data, LINT)) == [("DL001", 1, 3, 19)]
    assert sources(fix(data))[0].splitlines()[1:4] == ["", DEVICE, line]  # put back as it was


@pytest.mark.parametrize("source", [
    "s = ('%d items'\n     % 3)",  # a continuation line starting with an operator is Python
    "q = '''\n%not a magic\nwhy?\n'''",  # inside a string
    "for i in range(2):\n    a = i\n# why?\n    b = a",  # a comment ending in `?` at any indentation
    "time = 3\npwd = 'here'",  # automagic names used as Python names
    "colors = cycler('color',\n                ['#EE6666', '#3388BB'])",  # ... even over several lines
])
def test_python_that_looks_like_a_magic_is_checked_as_python(source):
    data = notebook(f"import torch\n{source}\nx = torch.ones(1).cuda()")
    assert [f[:3] for f in found(check_notebook("nb.ipynb", data, LINT))] == [("DL001", 1, source.count("\n") + 3)]
    assert not join_cells(json.loads(data)["cells"]).cells[0].placeholders


def test_a_magic_goes_on_over_open_brackets():
    # as in the Python Data Science Handbook; only a trailing backslash continues it in IPython >= 7
    magic = "%timeit np.fromiter((xi + yi for xi, yi in zip(x, y)),\n                    dtype=x.dtype, count=len(x))"
    data = notebook(f"import torch\n{magic}\nx = torch.ones(1).cuda()")
    assert found(check_notebook("nb.ipynb", data, LINT)) == [("DL001", 1, 4, 19)]
    assert magic in sources(fix(data))[0]


def test_magics_inside_blocks_keep_the_block_valid():
    data = notebook("import torch\nfor i in range(2):\n    %time f(i)\nif True:\n    !nvidia-smi \\\n"
                    "      --query\n    files = !ls\nx = torch.ones(1).cuda()")
    assert found(check_notebook("nb.ipynb", data, LINT)) == [("DL001", 1, 8, 19)]
    assert sources(fix(data))[0].endswith("    !nvidia-smi \\\n      --query\n    files = !ls\n"
                                          "x = torch.ones(1).to(device)")


def test_an_assigned_magic_binding_device_keeps_the_fix_away():
    # `device = !echo cuda` binds a list of strings, not a torch device: no fix may write `device`
    data = notebook("import torch\ndevice = !echo cuda\nx = torch.ones(1).cuda()")
    result = check_notebook("nb.ipynb", data, Config(fix=True, unsafe_fixes=True))
    assert result.fixed_source is None and found(result) == [("DL001", 1, 3, 19)]


def test_cell_magics_other_than_python_ones_are_left_out():
    data = notebook("%%bash\nnvidia-smi\nx.cuda()", "%%writefile train.py\nimport torch\nx = torch.ones(1).cuda()",
                    "\n%%capture out\nimport torch\ny = torch.ones(1).cuda()", "%%timeit z = 1\nz.cuda()")
    # %%writefile train.py writes a Python file: checked as that file (tests/test_notebook_cells.py)
    assert found(check_notebook("nb.ipynb", data, LINT)) == [("DL001", 2, 3, 19), ("DL001", 3, 4, 19),
                                                             ("DL001", 4, 2, 3)]


def test_a_notebook_of_magics_only(tmp_path):
    data = notebook("%load_ext autoreload\n%autoreload 2", "!ls", "%%bash\necho hi", "", ("markdown", "text"))
    assert found(check_notebook("nb.ipynb", data, LINT)) == []
    result = check_notebook("nb.ipynb", data, FIX)
    assert result.error is None and result.fixed_source is None
    path = tmp_path / "magic.ipynb"
    path.write_bytes(data)
    assert run(str(path), "--no-cache").exit_code == 0
    assert run(str(path), "--no-cache", "--fix").exit_code == 0 and path.read_bytes() == data


def test_top_level_await_is_fine():
    data = notebook("import torch\nawait asyncio.sleep(0)\nx = torch.ones(1).cuda()")
    assert found(check_notebook("nb.ipynb", data, LINT)) == [("DL001", 1, 3, 19)]


# -- bad input -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("data, message", [
    (b"{not json", "invalid notebook JSON: Expecting property name enclosed in double quotes: line 1 column 2"),
    (b"", "invalid notebook JSON: Expecting value: line 1 column 1"),
    (b"[1, 2]", "invalid notebook JSON: the top level is a JSON list, not an object"),
    (b'{"cells": []}', "invalid notebook JSON: not a Jupyter notebook (no 'nbformat' key)"),
    (b'{"nbformat": 3, "worksheets": []}', "invalid notebook JSON: nbformat 3 is not supported (only nbformat 4)"),
    (b'{"nbformat": 4, "cells": {}}', "invalid notebook JSON: no 'cells' list"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 3}]}',
     "invalid notebook JSON: cell 1 has no source (a string or a list of strings)"),
    (b'{"nbformat": 4, "cells": ["x"]}', "invalid notebook JSON: cell 1 is not an object"),
    (b'\xff\xfe{}', "invalid notebook JSON: not UTF-8: invalid byte b'\\xff' at offset 0"),
    (b"[" * 100_000, "invalid notebook JSON: too deeply nested"),
])
def test_a_broken_notebook_is_an_error_not_a_crash(data, message):
    result = check_source("nb.ipynb", data, FIX)
    assert result.error is not None and not result.error.internal
    assert result.error.message.startswith(message), result.error.message
    assert result.findings == [] and result.fixed_source is None


def test_a_broken_notebook_through_the_command_line(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text("{not json")
    result = run(str(path), "--no-cache")
    assert result.exit_code == 2 and f"{path}: error: invalid notebook JSON" in result.stderr
    assert "Traceback" not in result.output


def test_a_syntax_error_names_the_cell_and_the_other_cells_are_checked():
    data = notebook("import torch", ("markdown", "text"), "x = torch.ones(1)\nm = (", "y = torch.ones(1).cuda()")
    result = check_notebook("nb.ipynb", data, LINT)
    assert result.error is None
    assert result.notice == "skipped: cell 3:2:5: SyntaxError: '(' was never closed (the other cells were checked)"
    assert found(result) == [("DL001", 4, 1, 19)]


def test_a_notebook_in_another_language_is_skipped_with_a_notice():
    data = notebook("library(ggplot2)\nx <- c(1, 2)", metadata={"kernelspec": {"language": "R", "name": "ir"}})
    result = check_notebook("nb.ipynb", data, FIX)
    assert result.error is None and result.findings == [] and result.fixed_source is None
    assert result.notice == "skipped: not a Python notebook (language: R)"


def test_notebooks_are_discovered_in_folders(tmp_path):
    (tmp_path / "nb.ipynb").write_bytes(FIXTURE.read_bytes())
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_bytes(FIXTURE.read_bytes())
    (tmp_path / ".git").mkdir()
    result = run(".", "--output-format", "json", "--no-cache", cwd=tmp_path)
    assert {f["path"] for f in json.loads(result.stdout)} == {"nb.ipynb"}  # as typed: no ./ (issue 17)


# -- any mix of lines ----------------------------------------------------------------------------------
SNIPPETS = [  # each complete, so that most notebooks parse; joined by the cell's newline
    "import torch", "import torch.nn as nn", "from torch import nn", "x = torch.ones(2).cuda()",
    "m = nn.Linear(2, 2).cuda()", "y = torch.load('w.pt')", "x.to('cpu')", "z = torch.zeros(1, device='cuda:0')",
    "%matplotlib inline", "!pip install torch", "files = !ls", "%time f()", "torch.load?", "pip install x",
    "for i in range(2):\n    %time g(i)\n    x = x.cuda()", "s = ('%d'\n     % 1)", "q = '''\n%not magic\n'''",
    "for i in range(2):\n    a = i\n# why?\n    b = a.cuda()", "", "# comment", "device = 'cuda'",
    "def f(d):\n    return d.cuda()", "!nvidia-smi \\\n  -q", "x = 1  # noqa: DL001", "é = torch.ones(1, device='cuda')",
    "if True:\n    !ls\n    files = !ls", "%timeit torch.ones(2,\n    device='cuda')", "m = (",
]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_any_notebook_gives_a_result_and_a_fix_touches_only_sources(newline):
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    magics = ["", "", "", "%%time", "%%bash", "%%writefile t.py", "%%writefile -a t.py"]
    cell = st.tuples(st.sampled_from(["code", "code", "markdown"]), st.sampled_from(magics),
                     st.lists(st.sampled_from(SNIPPETS), max_size=5), st.booleans(), st.sampled_from(["", "", " "]))

    @hypothesis.settings(max_examples=75, deadline=None, derandomize=True)
    @hypothesis.given(st.lists(cell, max_size=5))
    def check(cells):
        texts = [(kind, "\n".join(([magic] if magic else []) + snippets).replace("\n", "\n" + indent)
                  .replace("\n", newline) + (newline if final else ""))  # `indent`: IPython removes it
                 for kind, magic, snippets, final, indent in cells]
        data = notebook(*texts)
        config = Config(select=("ALL",), fix=True, unsafe_fixes=True)
        result = check_notebook("nb.ipynb", data, config)
        if result.error is not None:
            assert not result.error.internal and "SyntaxError" in result.error.message, result.error
            return
        assert all(f.cell is not None for f in result.findings)
        if result.fixed_source is None:
            return
        before, after = json.loads(data), json.loads(result.fixed_source)
        nbformat.validate(nbformat.from_dict(after))
        for old, new in zip(before["cells"], after["cells"]):
            new["source"] = old["source"]
        assert after == before
        again = check_notebook("nb.ipynb", result.fixed_source.encode(), config)
        assert again.error is None and again.fixed_source is None

    check()
