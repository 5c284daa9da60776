"""Notebooks as people write them (issue 17): a cell that does not parse is reported and skipped while
the other cells are checked and fixed; IPython's own transformations apply first (a cell indented by
its first line, shell aliases); `%%writefile NAME.py` cells are checked as the file they write; a
cell's last expression is displayed, not discarded (DL003)."""

from __future__ import annotations

import json

import pytest

from devlint.config import Config, FixOptions
from devlint.documents.notebook import check_notebook
from devlint.documents.notebook_cells import prepare
from tests.test_cli import run
from tests.test_notebook import DEVICE, found, notebook, sources

LINT = Config()
FIX = Config(fix=True)
CUDA = "x = torch.ones(1).cuda()"


def check(*cells, config: Config = LINT, **top):
    return check_notebook("nb.ipynb", notebook(*cells, **top), config)


def fixed_sources(*cells, config: Config = FIX) -> list[str]:
    result = check(*cells, config=config)
    assert result.error is None, result.error
    assert result.fixed_source is not None
    return sources(result.fixed_source)


# -- a cell that does not parse ---------------------------------------------------------------------
def test_an_unparseable_cell_is_reported_once_and_the_others_are_checked():
    result = check("import torch", "criterion = # TODO", CUDA, ("markdown", "## Train"), "m = (", CUDA)
    assert result.error is None
    assert result.notice == ("skipped: cell 2:1:13: SyntaxError: invalid syntax; cell 5:1:5: SyntaxError: '(' was "
                             "never closed (the other cells were checked)")
    assert found(result) == [("DL001", 3, 1, 19), ("DL001", 6, 1, 19)]  # before and after the broken cells


def test_fixes_reach_the_other_cells_and_never_the_skipped_one():
    broken = "for epoch in range(3):\n    loss = # your code here\n    x = torch.ones(1).cuda()\n"
    new = fixed_sources("import torch", broken, CUDA)
    assert new == [f"import torch\n\n{DEVICE}", broken, "x = torch.ones(1).to(device)"]


def test_a_skipped_cell_that_may_bind_device_keeps_the_fixes_that_need_it_away():
    # `device` may be bound in the cell devlint cannot read: writing `.to(device)` could use that one
    cells = ("import torch", "device = torch.device('cuda:1') if ok else # TODO", CUDA)
    result = check(*cells, config=FIX)
    assert result.fixed_source is None and [f[:2] for f in found(result)] == [("DL001", 3)]
    assert result.findings[0].fix.applicability.value == "display-only"
    # a skipped cell that does not mention it changes nothing for the others
    assert fixed_sources("import torch", "model = # TODO", CUDA)[2] == "x = torch.ones(1).to(device)"


def test_other_fixes_still_reach_a_crlf_notebook_with_a_skipped_cell():
    cells = ("import torch\r\n", "device = torch.device('cuda') if ok else # TODO\r\n",
             "x = torch.ones(1).cuda()\r\nm = torch.nn.Linear(1, 1)\r\nm.load_state_dict(torch.load(p))\r\n")
    new = fixed_sources(*cells, config=Config(fix=True, fix_options=FixOptions(map_location="cpu")))
    assert new == [cells[0], cells[1], 'x = torch.ones(1).cuda()\r\nm = torch.nn.Linear(1, 1)\r\nm.load_state_dict(torch.load(p, map_location="cpu"))\r\n']


def test_a_notebook_whose_code_cells_all_fail_to_parse():
    result = check("x = # TODO", "y = (", config=FIX)
    assert result.error is None and result.findings == [] and result.fixed_source is None
    assert result.notice.startswith("skipped: cell 1:1:5: SyntaxError") and "cell 2:1:5" in result.notice


def test_a_cell_only_libcst_cannot_parse_is_skipped_alone():
    result = check("import torch", "(g): int\ny = 1", CUDA)
    assert result.error is None
    assert result.notice.startswith("skipped: cell 2: valid Python that LibCST cannot parse (")
    assert found(result) == [("DL001", 3, 1, 19)]


def test_exit_codes_and_output_on_the_command_line(tmp_path):
    # The skipped cell is a warning, as a file skipped for its size: it does not change the exit code,
    # which comes from the findings (0 with --exit-zero); a run that found nothing still says so.
    path = tmp_path / "course.ipynb"
    path.write_bytes(notebook("import torch", "criterion = # TODO", CUDA))
    text = run(str(path), "--no-cache")
    assert text.exit_code == 1
    assert f"{path}: warning: skipped: cell 2:1:13: SyntaxError: invalid syntax (the other cells were checked)" \
        in text.stderr
    assert f"{path}:cell 3:1:19: DL001" in text.stdout
    assert run(str(path), "--no-cache", "--exit-zero").exit_code == 0
    assert run(str(path), "--no-cache", "--fix").exit_code == 0
    assert sources(path.read_text())[1:] == ["criterion = # TODO", "x = torch.ones(1).to(device)"]
    clean = run(str(path), "--no-cache")
    assert clean.exit_code == 0 and "All checks passed!" not in clean.stdout
    # the notebook was checked, only a cell was not: the summary does not call it a skipped file
    assert "1 notebook had cells skipped" in clean.stdout and "file was skipped" not in clean.stdout


def test_a_notebook_read_from_stdin_names_its_skipped_cell(tmp_path):
    from click.testing import CliRunner

    from devlint.cli import main

    stdin = CliRunner().invoke(main, ["-", "--stdin-filename", "course.ipynb", "--no-cache"],
                               input=notebook("import torch", "criterion = # TODO"), catch_exceptions=False)
    assert "course.ipynb: warning: skipped: cell 2:1:13: SyntaxError" in stdin.stderr


# -- IPython's transformations ----------------------------------------------------------------------
def test_a_cell_indented_by_its_first_line_is_checked_as_ipython_runs_it():
    cell = " import torch\n x = torch.ones(1).cuda()\n if x.sum():\n     y = torch.zeros(1).cuda()\n"
    result = check(cell)
    assert result.notice is None and found(result) == [("DL001", 1, 2, 20), ("DL001", 1, 4, 25)]  # as written
    assert fixed_sources(cell) == [f" import torch\n\n {DEVICE}\n x = torch.ones(1).to(device)\n if x.sum():\n"
                                   "     y = torch.zeros(1).to(device)\n"]


def test_the_indent_goes_only_from_lines_that_start_with_it():
    # IPython's leading_indent: a string's continuation line without the indent is kept as it is
    cell = "    import torch\n    doc = '''\nnot indented\n    '''\n    x = torch.ones(1).cuda()"
    assert found(check(cell)) == [("DL001", 1, 5, 23)]
    assert fixed_sources(cell)[0] == (f"    import torch\n\n    {DEVICE}\n    doc = '''\nnot indented\n    '''\n"
                                      "    x = torch.ones(1).to(device)")


def test_an_indented_cell_with_magics():
    cell = "  %load_ext autoreload\n  import torch\n  !nvidia-smi\n  x = torch.ones(1).cuda()"
    assert found(check(cell)) == [("DL001", 1, 4, 21)]
    assert fixed_sources(cell)[0] == f"  %load_ext autoreload\n  import torch\n\n  {DEVICE}\n  !nvidia-smi\n" \
                                     "  x = torch.ones(1).to(device)"


def test_valid_python_is_not_dedented():
    # an indented comment first: Python reads the cell as it is, and so does devlint
    cell = "  # setup\nimport torch\nif True:\n  x = torch.ones(1).cuda()"
    assert found(check(cell)) == [("DL001", 1, 4, 21)]
    assert not prepare(json.loads(notebook(cell))["cells"]).main.cells[0].prefix


@pytest.mark.parametrize("line", ["ls ./embeddings/", "mkdir -p out", "cat train.log", "rm -rf runs/"])
def test_shell_aliases_are_automagics(line):
    assert found(check(f"import torch\n{line}\n{CUDA}")) == [("DL001", 1, 3, 19)]


def test_shell_alias_names_used_as_python():
    assert found(check(f"import torch\nls = [1]\ncat = ls\n{CUDA}")) == [("DL001", 1, 4, 19)]


# -- %%writefile ------------------------------------------------------------------------------------
def test_a_writefile_cell_is_checked_and_fixed_as_its_own_file():
    written = "%%writefile train.py\nimport torch\nx = torch.ones(1).cuda()\n"
    appended = "%%writefile -a train.py\nmodel = torch.nn.Linear(1, 1)\nmodel.load_state_dict(torch.load('w.pt'))\n"
    cells = (written, "import torch\n!python train.py", appended)
    assert found(check(*cells)) == [("DL001", 1, 3, 19), ("DL002", 3, 3, 23)]  # lines count the %%writefile line
    new = fixed_sources(*cells)
    # the file defines its own device (it runs in its own process); the notebook needed none
    assert new == [f"%%writefile train.py\nimport torch\n\n{DEVICE}\nx = torch.ones(1).to(device)\n",
                   "import torch\n!python train.py",
                   "%%writefile -a train.py\nmodel = torch.nn.Linear(1, 1)\n"
                   "model.load_state_dict(torch.load('w.pt', map_location=\"cpu\"))\n"]


def test_a_writefile_without_imports_keeps_the_magic_first():
    new = fixed_sources("%%writefile model.py\nx = torch.ones(1).cuda()")
    assert new[0].startswith("%%writefile model.py\nimport torch\n")
    assert new[0].endswith(f"{DEVICE}\nx = torch.ones(1).to(device)")


def test_writefile_files_are_separate_modules():
    # a second %%writefile of the same name starts the file again; other files are other modules
    cells = ("%%writefile a.py\nimport torch\ndevice = 'cpu'\n", "%%writefile a.py\nimport torch\nx = torch.load(p)",
             "%%writefile b.py\nimport torch\ny = torch.load(p)")
    result = check(*cells)
    assert [f[:2] for f in found(result)] == [("DL002", 2), ("DL002", 3)]
    assert len(prepare(json.loads(notebook(*cells))["cells"]).files) == 3


def test_writefile_of_other_files_and_broken_bodies():
    result = check("%%writefile config.yaml\nlr: 0.1\ncuda: x.cuda()", "%%writefile run.sh\npython x.py",
                   "%%writefile bad.py\n!ls\n", f"import torch\n{CUDA}")
    assert found(result) == [("DL001", 4, 2, 19)]
    assert result.notice == ("skipped: cell 3:2:1: SyntaxError: invalid syntax, in the body of %%writefile bad.py "
                             "(the other cells were checked)")  # a .py file holds no IPython syntax


# -- the last expression of a cell is displayed -----------------------------------------------------
def test_dl003_leaves_the_displayed_last_expression_alone():
    cells = ("import torch\nx = torch.ones(1)\nx.to('cpu')", "y = torch.ones(1)\n[t.cpu() for t in [y]]")
    result = check(*cells, config=Config(select=("DL003",)))
    assert found(result) == []
    assert check(*cells, config=Config(select=("DL003",), fix=True)).fixed_source is None


@pytest.mark.parametrize("tail", [
    "x.to('cpu');",  # a trailing semicolon: nothing is displayed
    "x.to('cpu')  ;  # quiet",
    "x.to('cpu')\n%time f()",  # the magic is the cell's last statement
    "x.to('cpu')\nprint(x)",  # not the last statement
    "if True:\n    x.to('cpu')",  # inside a block: the last statement is the `if`
    "x.to('cpu'); y = 1",
])
def test_dl003_still_flags_a_discarded_move_in_a_notebook(tail):
    result = check(f"import torch\nx = torch.ones(1)\n{tail}", config=Config(select=("DL003",)))
    assert [f[:2] for f in found(result)] == [("DL003", 1)]


def test_the_displayed_expression_is_still_checked_by_the_other_rules():
    cell = "import torch\nx = torch.ones(1)\nx.cuda()"
    assert [f[0] for f in found(check(cell, config=Config(select=("ALL",))))] == ["DL001"]
    assert fixed_sources(cell)[0] == f"import torch\n\n{DEVICE}\nx = torch.ones(1)\nx.to(device)"
    noqa = check(cell, config=Config(add_noqa=True))
    assert sources(noqa.fixed_source)[0].endswith("x.cuda()  # noqa: DL001")


def test_dl003_flags_the_last_expression_of_a_writefile_file():
    result = check("%%writefile a.py\nimport torch\nx = torch.ones(1)\nx.to('cpu')", config=Config(select=("DL003",)))
    assert [f[:3] for f in found(result)] == [("DL003", 1, 4)]  # a file: nothing is displayed
