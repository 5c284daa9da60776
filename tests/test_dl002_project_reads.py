"""DL002 asks the guard logic (and through it, how the whole project calls a function) only about
calls that the file's imports make a loader (issue 28: torch's nn/functional.py read and summarised
91 other files of the project, 1.1 s of its 1.8 s, for calls of names imported from torch that load
nothing; utils/checkpoint.py did so for `len(...)` after `from typing import *`)."""

from __future__ import annotations

import pytest

from devlint.config import Config
from devlint.engine import check_source

DL002 = Config(select=("DL002",))

LIBRARY = """\
import torch
{star}from torch import {imported}

STATE = torch.load("state.pt", map_location="cpu")  # (a load: DL002 looks at this file's calls)

def step(x, size=None):
    if size is None:
        raise ValueError("a size is needed")
    return {called}(x)
"""


def _check(tmp_path, imported: str, called: str, star: str = ""):
    (tmp_path / ".git").mkdir()
    (tmp_path / "main.py").write_text("import lib\nlib.step(0, size=3)\n")
    path = tmp_path / "lib.py"
    path.write_text(LIBRARY.format(imported=imported, called=called, star=star))
    return check_source(str(path), path.read_bytes(), DL002)


@pytest.mark.parametrize("called, star", [("relu", ""), ("len", "from typing import *\n")])
def test_a_call_that_loads_nothing_reads_no_other_file(tmp_path, called, star):
    result = _check(tmp_path, "relu", called, star)
    assert result.findings == []
    assert not any(key.startswith("r:") for key in result.dependencies), result.dependencies


def test_a_loader_imported_under_another_name_is_still_checked(tmp_path):
    result = _check(tmp_path, "load as restore", "restore")
    assert [f.code for f in result.findings] == ["DL002"]
    # whether a call passes `size` was asked of the project: the result rests on main.py
    assert f"r:{tmp_path / 'main.py'}" in result.dependencies

