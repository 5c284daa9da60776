"""DL017 (issue 27): `x.cuda(async=True)`, PyTorch 0.3 code that does not parse on Python 3.7+, is
reported beside the syntax error and renamed by --fix, which then checks the rest of the file."""

from __future__ import annotations

import json

import pytest

from devlint.config import Config
from devlint.documents import check_document as check_source
from devlint.model import Applicability
from devlint.rescue import async_arguments
from tests.test_cli import run, write
from tests.test_notebook import notebook

OLD = "import torch\nfor x, y in loader:\n    y = y.cuda(async=True)\n    x = x.cuda()\n"
DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'


def check(source: str, **options):
    return check_source("-", source.encode(), Config(**options))


def where(result) -> list[tuple[str, int, int]]:
    return [(f.code, f.start.line, f.start.column + 1) for f in result.findings]


# -- what the tokens say -------------------------------------------------------------------------------
@pytest.mark.parametrize("source, expected", [
    ("x.cuda(async=True)\n", [(1, 7, "cuda", True)]),
    ("f(a, g(b,\n  async = c[1, 2]),  # c\n  d)\n", [(2, 2, "g", False)]),
    ("m(x)(async=1)\nv[0](async=2)\n", [(1, 5, None, False), (2, 5, None, False)]),
    # Not call arguments: parameter lists, a lambda's parameters, `async` as a value or keyword.
    ("def f(async=1): pass\nclass C(async=1): pass\n", []),
    ("f(key=lambda async=1: 0)\nif (async): pass\nh(async)\nh(x, async == 1)\n", []),
    ("async def f():\n    async with g(a=1): pass\n", []),
])
def test_async_arguments_are_call_arguments_only(source, expected):
    found = [(a.start.line, a.start.column, a.callee, a.method) for a in async_arguments(source)]
    assert found == expected


def test_a_comment_between_async_and_the_equals_sign_is_still_found():
    assert where(check("import torch\ny = y.cuda(async  # old\n    = True)\n")) == [("DL017", 2, 12)]


def test_the_statement_end_is_known_for_a_noqa_on_its_last_line():
    [argument] = async_arguments("y = f(\n    async=True,\n)\nz = 1\n")
    assert (argument.end.line, argument.end.column, argument.last_line) == (2, 14, 3)


def test_the_tokens_before_an_unterminated_string_are_read():
    assert [a.start.line for a in async_arguments('x.cuda(async=True)\ns = "no end\n')] == [1]


# -- without --fix: the syntax error stays, explained -------------------------------------------------
def test_without_fix_the_syntax_error_stays_and_the_finding_explains_it():
    result = check(OLD)
    assert (result.error.message, result.error.line, result.error.column) == ("SyntaxError: invalid syntax", 3, 16)
    assert where(result) == [("DL017", 3, 16)]
    [finding] = result.findings
    assert "non_blocking=" in finding.message and "3.7" in finding.message
    assert finding.fix.applicability is Applicability.SAFE and result.fixed_source is None


def test_cli_prints_the_error_then_the_finding_and_exits_2(tmp_path):
    write(tmp_path / "train.py", OLD)
    result = run("--no-cache", "train.py", cwd=tmp_path)
    assert result.exit_code == 2
    assert "train.py:3:16: error: SyntaxError: invalid syntax" in result.output
    assert "train.py:3:16: DL017 [*] `async=` does not parse" in result.output
    assert (tmp_path / "train.py").read_text() == OLD


@pytest.mark.parametrize("options", [{"select": ("DL001",)}, {"ignore": ("DL017",)}])
def test_not_selected_it_is_the_plain_syntax_error_of_before(options):
    result = check(OLD, **options)
    assert result.error.line == 3 and result.findings == []
    assert check(OLD, fix=True, **options).fixed_source is None


def test_a_noqa_on_the_last_line_of_the_statement_silences_it():
    assert check("import torch\ny = y.cuda(\n    async=True,\n)  # noqa: DL017\n").findings == []


@pytest.mark.parametrize("comment", ["  # noqa: DL017", "  # noqa", ""])
def test_noqa_silences_it_and_fix_then_leaves_the_argument(comment):
    source = OLD.replace("(async=True)", "(async=True)" + comment)
    if not comment:
        source = "# devlint: noqa: DL017\n" + source
    assert check(source).findings == []
    fixed = check(source, fix=True)
    assert fixed.fixed_source is None and fixed.error is not None and fixed.findings == []
    assert check(source, ignore_noqa=True).findings != []


# -- with --fix: renamed, then checked and fixed like any file ------------------------------------------
def test_fix_renames_then_fixes_the_rest_of_the_file_in_the_same_run():
    result = check(OLD, fix=True)
    assert result.error is None and result.findings == []
    assert result.fixed_source == (f"import torch\n\n{DEVICE}\nfor x, y in loader:\n"
                                   "    y = y.to(device, non_blocking=True)\n    x = x.to(device)\n")
    assert sorted(f.code for f in result.applied) == ["DL001", "DL001", "DL017"]


def test_fix_writes_the_file_and_a_second_run_is_clean(tmp_path):
    write(tmp_path / "train.py", OLD)
    assert run("--no-cache", "--fix", "train.py", cwd=tmp_path).exit_code == 0
    assert "non_blocking=True" in (tmp_path / "train.py").read_text()
    assert run("--no-cache", "train.py", cwd=tmp_path).exit_code == 0


def test_crlf_and_tabs_keep_the_positions():
    source = "import torch\r\nif 1:\r\n\ty = y.cuda(\tasync=True)\r\n"
    result = check(source)
    assert where(result) == [("DL017", 3, 14)]
    assert check(source, select=("DL017",), fix=True).fixed_source == source.replace("async", "non_blocking")


def test_a_file_broken_otherwise_is_not_touched_and_the_remaining_error_is_reported():
    source = "import torch\ny = y.cuda(async=True); print 'done'\n"
    result = check(source, fix=True)
    assert result.fixed_source is None and result.applied == []
    # The error the rename leaves, at its column in the file as written.
    assert (result.error.line, result.error.column) == (2, 25)
    assert "print" in result.error.message
    [finding] = result.findings
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY and "not applied" in finding.fix.title


def test_a_def_with_an_async_parameter_is_not_flagged_and_keeps_the_file_as_it_is():
    source = "def cuda(self, device=None, async=False):\n    return self.to(device, async=async)\n"
    lint, fixed = check(source), check(source, fix=True)
    assert lint.error.line == 1 and where(lint) == [("DL017", 2, 28)]  # the call's argument only
    assert fixed.fixed_source is None and (fixed.error.line, fixed.error.column) == (1, 29)


def test_another_callee_is_reported_with_a_display_only_fix_and_not_renamed():
    source = "import torch\nx = to_gpu(x, async=True)\n"
    result = check(source, fix=True)
    [finding] = result.findings
    assert result.fixed_source is None and result.error.line == 2
    assert "`to_gpu`" in finding.message and finding.fix.applicability is Applicability.DISPLAY_ONLY


def test_stdin_fix_prints_the_fixed_file(tmp_path):
    from click.testing import CliRunner

    from devlint.cli import main

    result = CliRunner().invoke(main, ["--fix", "-"], input="import torch\ny = y.cuda(async=True)\n")
    assert result.exit_code == 0 and "y = y.to(device, non_blocking=True)" in result.output


def test_the_cache_keeps_no_result_of_a_file_that_does_not_parse(tmp_path):
    write(tmp_path / "train.py", OLD)
    for _ in range(2):  # the second run reads what the first stored
        result = run("--cache-dir", "cache", "train.py", cwd=tmp_path)
        assert result.exit_code == 2 and "DL017" in result.output and "SyntaxError" in result.output
    assert run("--cache-dir", "cache", "--fix", "train.py", cwd=tmp_path).exit_code == 0
    assert run("--cache-dir", "cache", "train.py", cwd=tmp_path).exit_code == 0


# -- notebooks ----------------------------------------------------------------------------------------------
def test_a_notebook_cell_is_reported_then_rescued_and_a_cell_broken_otherwise_left(tmp_path):
    data = notebook("import torch\nx = torch.zeros(2)\n", "%time y = x.cuda(async=True)\nz = x.cuda(async=True)\n",
                    "print 'hi'\nw = x.cuda(async=True)\n", "v = x.cuda(async=True)  # noqa: DL017\n")
    lint = check_source("nb.ipynb", data, Config())
    assert [(f.code, f.cell, f.start.line, f.start.column + 1) for f in lint.findings] == [
        ("DL017", 2, 1, 18), ("DL017", 2, 2, 12), ("DL017", 3, 2, 12)]
    assert "cell 2:" in lint.notice and lint.error is None
    fixed = check_source("nb.ipynb", data, Config(fix=True))
    cells = [("".join(c["source"])) for c in json.loads(fixed.fixed_source)["cells"]]
    assert cells[1] == "%time y = x.cuda(non_blocking=True)\nz = x.to(device, non_blocking=True)\n"
    assert cells[2:] == ["print 'hi'\nw = x.cuda(async=True)\n", "v = x.cuda(async=True)  # noqa: DL017\n"]
    assert [(f.cell, f.fix.applicability) for f in fixed.findings] == [(3, Applicability.DISPLAY_ONLY)]
    assert "cell 2:" not in fixed.notice and "cell 3:" in fixed.notice
