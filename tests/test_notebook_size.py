"""A notebook's size limit counts its code cells, not its embedded outputs (issue 23).

A notebook with 13 KB of code and 1.5 MB of plots was skipped as "over the size limit". The limit
(`--max-file-size`) now measures the code cells' source; the file's raw size keeps a bound 32 times
higher, so that no run reads gigabytes. A `.py` file is still measured by its bytes.
"""

from __future__ import annotations

import base64
import json

from devlint.config import Config
from devlint.runner import check_file, read
from devlint.size_limit import NOTEBOOK_RAW_FACTOR
from tests.test_cli import run

CODE = "import torch\nx = torch.zeros(3).cuda()\n"


def _notebook(path, code: str, image_bytes: int = 0, markdown: str = ""):
    outputs = [{"output_type": "display_data", "metadata": {},
                "data": {"image/png": base64.b64encode(bytes(image_bytes)).decode()}}] if image_bytes else []
    cells = [{"cell_type": "code", "execution_count": 1, "metadata": {}, "source": code, "outputs": outputs}]
    if markdown:
        cells.insert(0, {"cell_type": "markdown", "metadata": {}, "source": markdown})
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "cells": cells,
                                "metadata": {"language_info": {"name": "python"}}}))
    return path


def test_a_notebook_with_little_code_and_big_plots_is_checked(tmp_path):
    code = CODE + "# a line of the analysis that follows\n" * 350  # ~13 KB of code
    path = _notebook(tmp_path / "plots.ipynb", code, image_bytes=1_100_000)  # ~1.5 MB of PNG in base64
    assert 1_400_000 < path.stat().st_size and len(code) > 13_000
    result = run(str(path), "--isolated", "--no-cache")
    assert result.exit_code == 1 and "DL001" in result.stdout and "skipped" not in result.output


def test_markdown_cells_do_not_count_either(tmp_path):
    path = _notebook(tmp_path / "notes.ipynb", CODE, markdown="Some prose.\n" * 500)
    result = check_file(str(path), Config(max_file_size=1000), write=False)
    assert result.notice is None and [f.code for f in result.findings] == ["DL001"]


def test_a_notebook_whose_code_is_over_the_limit_is_skipped(tmp_path):
    path = _notebook(tmp_path / "long.ipynb", CODE + "y = 1\n" * 2000, image_bytes=1000)
    config = Config(max_file_size=10_000)
    data, problem = read(str(path), config)
    assert problem is None  # the file itself is well under the raw bound
    result = check_file(str(path), config, write=False, data=data)
    assert result.findings == [] and result.notice is not None
    assert result.notice.startswith("skipped: its code cells hold 12") and "(10000; see --max-file-size)" in result.notice


def test_a_notebook_file_over_the_raw_bound_is_not_read(tmp_path):
    config = Config(max_file_size=1000)
    path = _notebook(tmp_path / "huge.ipynb", CODE, image_bytes=NOTEBOOK_RAW_FACTOR * 1000)
    data, problem = read(str(path), config)
    assert data is None and problem.notice is not None
    assert f"over the size limit for a notebook's file ({NOTEBOOK_RAW_FACTOR * 1000}" in problem.notice
    small = _notebook(tmp_path / "small.ipynb", CODE, image_bytes=NOTEBOOK_RAW_FACTOR * 500)
    assert read(str(small), config)[1] is None


def test_a_python_file_is_still_measured_by_its_bytes(tmp_path):
    path = tmp_path / "big.py"
    path.write_text(CODE + "# comment\n" * 200)
    data, problem = read(str(path), Config(max_file_size=1000))
    assert data is None and "(1000; see --max-file-size)" in problem.notice
