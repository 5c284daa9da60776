"""Valid Python never crashes devlint (issue 13): what LibCST cannot analyse safely is skipped with a
notice naming the limit, what only LibCST cannot parse is said to be so, and what CPython refuses is
reported as CPython reports it. Crash-prone shapes run through the CLI in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.complexity import MAX_DEPTH, THREAD_DEPTH
from devlint.config import Config
from devlint.documents import check_document as check_source
from devlint.engine import fix_text, lint_text
from devlint.prefilter import summarise

BUGGY = "import torch\nx = torch.zeros(3).cuda()\n"


def devlint(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "devlint", "--no-cache", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def joined(operator: str, count: int) -> str:
    return operator.join(["a"] * count)


# Each crashed the run (segmentation fault, exit 139) or ran for minutes before the fix.
DEEP = {
    "or_chain": "import torch\nx = (" + joined(" or ", 8_000) + ").cuda()\n",
    "call_chain": "import torch\nx = a" + ".abs()" * 3_000 + ".cuda()\n",
    "subscript_chain": "import torch\nx = a" + "[0]" * 3_000 + ".cuda()\n",
}


@pytest.mark.parametrize("name", sorted(DEEP))
@pytest.mark.parametrize("fix", [False, True], ids=["check", "fix"])
def test_deep_valid_code_is_skipped_with_a_notice_and_the_run_goes_on(tmp_path, name, fix):
    source = DEEP[name]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # chains this long need more than 3.11's default to compile
    try:
        compile(source, name, "exec")  # valid Python
    finally:
        sys.setrecursionlimit(limit)
    deep = tmp_path / "deep.py"
    deep.write_text(source)
    (tmp_path / "good.py").write_text(BUGGY)
    proc = devlint("deep.py", "good.py", *(["--fix"] if fix else []), cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr  # not 2 (error) and not -11 (crash)
    assert "deep.py: warning: skipped: expression nesting of" in proc.stderr
    assert f"over devlint's limit of {MAX_DEPTH:,} (LibCST cannot analyse it safely)" in proc.stderr
    assert "error" not in proc.stderr and "Traceback" not in proc.stderr
    assert deep.read_text() == source
    if fix:
        assert ".to(device)" in (tmp_path / "good.py").read_text()
    else:
        assert "good.py:2:20: DL001" in proc.stdout


def test_deep_code_without_candidates_is_checked_not_skipped():
    result = check_source("a.py", ("x = " + joined(" or ", 10_000) + "\n").encode(), Config())
    assert result.error is None and result.notice is None and result.findings == []


def test_depth_just_under_the_limit_is_analysed_and_fixed_on_a_big_stack():
    operands = MAX_DEPTH - 10
    source = "import torch\nx = (" + joined(" or ", operands) + ").cuda()\n"
    assert THREAD_DEPTH < summarise(source).depth <= MAX_DEPTH
    result = check_source("a.py", source.encode(), Config(fix=True))
    assert result.error is None and result.notice is None
    assert result.fixed_source is not None and result.fixed_source.endswith(").to(device)\n")


def test_depth_counts_what_libcst_nests():
    assert summarise("x = " + joined(" or ", 500) + "\n").depth >= 499  # a BooleanOperation per pair
    assert summarise("x = (" + " ".join(["'a'"] * 500) + ")\n").depth >= 500  # a ConcatenatedString per pair
    assert summarise("x = (" + joined(" < ", 500) + ")\n").depth < 10  # one flat Comparison
    assert summarise('x = f"{a}" f"{b}"\ny = "a" "b"\n').depth < 10


def test_many_implicitly_concatenated_strings_are_a_notice_not_the_users_syntax_error():
    source = "import torch\nx = torch.device(" + " ".join(["'cuda'"] * 3_100) + ")\n"
    compile(source, "a.py", "exec")
    result = check_source("a.py", source.encode(), Config())
    assert result.error is None
    assert result.notice is not None and result.notice.startswith("skipped: expression nesting of 3,10")


def test_valid_python_libcst_cannot_parse_is_a_notice():
    source = "import torch\n(g): int\nx = torch.zeros(3).cuda()\n"
    compile(source, "a.py", "exec")
    for config in (Config(), Config(fix=True), Config(add_noqa=True)):
        result = check_source("a.py", source.encode(), config)
        assert result.error is None and result.fixed_source is None
        assert result.notice is not None
        assert result.notice.startswith("skipped: valid Python that LibCST cannot parse (")
        assert "SyntaxError" not in result.notice


@pytest.mark.parametrize("source, expected", [
    ("import torch\ndef f(:\n    pass\n", ("SyntaxError: invalid syntax", 2, 7)),
    ("import torch\nx = 1\n    y = x.cuda()\n", ("IndentationError: unexpected indent", 3, 4)),
])
def test_what_cpython_refuses_is_reported_as_cpython_reports_it(source, expected):
    with pytest.raises(SyntaxError) as refused:
        compile(source, "a.py", "exec")
    result = check_source("a.py", source.encode(), Config())
    assert result.notice is None and result.error is not None
    assert (result.error.message, result.error.line, result.error.column) == expected
    assert expected[0] == f"{type(refused.value).__name__}: {refused.value.msg}"


def test_a_long_cuda_chain_converges_and_other_fixes_apply():
    # 15 calls: well past the former fixed 6 passes; 50 converge the same way (one pass per call) but take
    # over 10 s, as every finding of the chain re-renders the whole chain
    source = ("import torch\n"
              "a = torch.ones(1)" + ".cuda()" * 15 + "\n"
              "b = torch.zeros(2).cuda()\n"
              "def f(t):\n    return t.cuda()\n")
    config = Config(fix=True)
    fixed, applied, remaining = fix_text(source, config)
    assert ".cuda()" not in fixed
    assert "a = torch.ones(1)" + ".to(device)" * 15 + "\n" in fixed
    assert "b = torch.zeros(2).to(device)" in fixed and "return t.to(device)" in fixed
    assert len(applied) == 17 and not remaining
    assert fix_text(fixed, config)[0] == fixed  # idempotent
    compile(fixed, "a.py", "exec")


def test_fixes_that_undo_each_other_stop_at_once(monkeypatch):
    from devlint import engine

    calls = []

    def flip(text, chosen):  # a fix whose result the next pass's fix turns back
        calls.append(text)
        return (text[:-2] if text.endswith("#\n") else text + "#\n"), chosen

    monkeypatch.setattr(engine, "apply_edits", flip)
    monkeypatch.setattr(engine, "define_device", lambda text, options: text)
    with pytest.raises(engine.FixDidNotConverge, match="undo each other"):
        fix_text("import torch\nx = torch.ones(1).cuda()\n", Config(fix=True))
    assert len(calls) <= 3


def _notebook(*cells: str) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                       "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": cell} for cell in cells]}).encode()


@pytest.mark.parametrize("cell", [
    "x = torch.device(" + " ".join(["'cuda'"] * 3_100) + ")\n",
    "x = (" + joined(" or ", MAX_DEPTH + 100) + ").cuda()\n",
    "(g): int\nx = torch.zeros(3).cuda()\n",
])
def test_the_bounds_apply_to_notebook_cells(cell):
    for config in (Config(), Config(fix=True)):
        result = check_source("a.ipynb", _notebook("import torch\n", cell), config)
        assert result.error is None and result.fixed_source is None
        assert result.notice is not None and result.notice.startswith("skipped: ")


def test_lint_text_raises_the_notice_for_callers_that_check_text():
    from devlint.complexity import Unanalysable

    with pytest.raises(Unanalysable):
        lint_text("import torch\nx = (" + joined(" or ", MAX_DEPTH + 100) + ").cuda()\n", Config())


def test_the_default_size_limit_keeps_a_check_within_about_a_gigabyte(tmp_path):
    from devlint.runner import read

    # benchmarks/memory.py: checking takes ~0.6-0.9 GB per MB of ordinary or generated code
    assert Config().max_file_size == 1024 * 1024
    big = tmp_path / "big.py"
    big.write_text("import torch\n" + "x = torch.zeros(3)\n" * 60_000)  # about 1.1 MB
    data, skipped = read(str(big), Config())
    assert data is None and skipped.notice is not None and "--max-file-size" in skipped.notice
    assert read(str(big), Config(max_file_size=2 * 1024 * 1024))[1] is None
