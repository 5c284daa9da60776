"""DL002: values that hold no tensor by their function's definition, and saves through an in-memory
buffer (issue 23, devlint.analysis.host_returns and devlint.analysis.buffer_saves). Each both ways."""

from __future__ import annotations

import textwrap

import pytest

from devlint.analysis import project as project_module
from tests.test_cache_staleness import cached_and_fresh
from tests.test_cli import run, write
from tests.helpers import lint

SAVED = '''
import typing
import torch
from typing import Dict, List, Optional


def describe(obj){returns}:
{body}


def save(obj):
    torch.save(describe(obj), "described.pt")


def changed(obj):
    return torch.load("described.pt") != describe(obj)
'''


def _lines(source: str) -> list[int]:
    return [f.start.line for f in lint(textwrap.dedent(source), select="DL002")]


def _load_line(source: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if "torch.load(" in line)


@pytest.mark.parametrize("returns", [" -> str", " -> 'str'", " -> Optional[str]", " -> str | None",
                                     " -> List[str]", " -> Dict[str, typing.Tuple[int, ...]]"])
def test_a_function_annotated_to_return_no_tensor_is_cpu_data(returns):
    assert _lines(SAVED.format(returns=returns, body="    return obj.name")) == []


@pytest.mark.parametrize("returns", [" -> torch.Tensor", " -> Dict[str, torch.Tensor]", " -> List",
                                     " -> typing.Any", ""])
def test_a_function_annotated_otherwise_is_not(returns):
    source = SAVED.format(returns=returns, body="    return obj.name")
    assert _lines(source) == [_load_line(source)]


@pytest.mark.parametrize("body", [
    "    if obj is None:\n        return 'None'\n    return f'<{obj}>'",
    "    return str(obj).lower()",
])
def test_a_function_whose_every_return_is_a_string_is_cpu_data(body):
    assert _lines(SAVED.format(returns="", body=body)) == []
    assert _lines(SAVED.format(returns=" -> Described", body=body)) == []  # an alias the file does not define


@pytest.mark.parametrize("body", [
    "    if obj is None:\n        return 'None'\n    return obj",  # one return of unknown data
    "    if obj is None:\n        return 'None'",  # may end without a return (None): still no tensor, but unproven
    "    yield 'None'",  # a generator
    "    return torch.ones(2).cuda()",
])
def test_a_function_with_another_return_is_not(body):
    source = SAVED.format(returns="", body=body)
    assert _lines(source) == [_load_line(source)]


def test_a_method_is_not_followed():
    source = '''
    import torch


    class Described:
        def describe(self) -> str:
            return "x"

        def save(self):
            torch.save(self.describe(), "described.pt")

        def changed(self):
            return torch.load("described.pt") != self.describe()
    '''
    assert _lines(source) == [13]  # a subclass may override `describe`


# -- a project helper that saves through a buffer -------------------------------------------------------------
FS = '''import io

import fsspec
import torch


def torch_save(data, path):
    buffer = io.BytesIO()
    torch.save(data, buffer)
    with fsspec.open(path, "wb") as f:
        f.write(buffer.getvalue())


def describe(obj) -> str:
    return str(obj)
'''
USE = '''import torch

from helpers import fs


def check(obj, folder):
    if torch.load(folder + "/settings.pt") != fs.describe(obj):
        print("changed")


def write(obj, folder):
    fs.torch_save(fs.describe(obj), folder + "/settings.pt")
'''


@pytest.fixture()
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    yield root
    project_module._INDEX = None


def test_a_project_helper_that_saves_through_a_buffer_with_the_cache_on(project):
    write(project / "helpers" / "__init__.py", "")
    write(project / "helpers" / "fs.py", FS)
    # `folder` is a parameter of each function: not one binding. The same literal folder is.
    write(project / "use.py", USE.replace('folder + "/settings.pt"', '"settings.pt"'))
    cached, fresh = cached_and_fresh(project, "use.py", "--select", "DL002")
    assert fresh == cached == []
    # the helper's result is a tensor now: the cached pass must not be served
    write(project / "helpers" / "fs.py", FS.replace("-> str:\n    return str(obj)", "-> torch.Tensor:\n    return obj"))
    cached, fresh = cached_and_fresh(project, "use.py", "--select", "DL002")
    assert fresh == cached == [("use.py", "DL002")]


@pytest.mark.parametrize("change", [
    ("        f.write(buffer.getvalue())\n", "        f.write(buffer.getvalue())\n        f.write(b'more')\n"),
    ("    torch.save(data, buffer)\n", "    torch.save(data, buffer)\n    buffer.write(b'more')\n"),
    ("    buffer = io.BytesIO()\n", "    buffer = io.BytesIO(initial)\n"),
    ("    torch.save(data, buffer)\n", "    torch.save(data.cuda(), buffer)\n"),
])
def test_a_buffer_that_receives_anything_else_is_an_unknown_writer(project, change):
    write(project / "helpers" / "__init__.py", "")
    write(project / "helpers" / "fs.py", FS.replace(*change))
    write(project / "use.py", USE.replace('folder + "/settings.pt"', '"settings.pt"'))
    project_module._INDEX = None
    assert run("use.py", "--select", "DL002", "--no-cache", "--output-format", "json", cwd=project).exit_code == 1
