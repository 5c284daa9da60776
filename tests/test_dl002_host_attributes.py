"""DL002: what an instance's attribute holds, and values that flow through containers (issue 23,
devlint.analysis.host_attributes and devlint.analysis.host_flows). A graph of string pairs kept in an
attribute that only its class fills, from a method annotated to return strings, is saved and loaded back:
not flagged. Any value of unknown place put there, or the instance handed to other code, keeps it flagged."""

from __future__ import annotations

import textwrap

import pytest

from devlint.analysis import project as project_module
from tests.helpers import lint
from tests.test_cache_staleness import cached_and_fresh
from tests.test_cli import run, write

GRAPH = '''
from typing import List, Tuple

import torch


class Graph:
    def __init__(self, name):
        self.name = name
        self.pairs = {}

    def add(self, key, text):
        self.pairs[key] = self._parse(text)

    def _parse(self, text) -> List[Tuple[str, str]]:
        return [tuple(line.split(",")) for line in text.splitlines()]
'''
USE = '''
def build(texts):
    graph = Graph("g")
    for i, text in enumerate(texts):
        graph.add(i, text)
    torch.save(graph.pairs, "pairs.pt")


def restore():
    return torch.load("pairs.pt")
'''


def _lines(source: str) -> list[int]:
    return [f.start.line for f in lint(textwrap.dedent(source), select="DL002")]


def _load_line(source: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if "torch.load(" in line)


def test_an_attribute_filled_only_with_strings_by_its_class_is_cpu_data():
    assert _lines(GRAPH + USE) == []


@pytest.mark.parametrize("change", [
    # the class puts other values there
    ("-> List[Tuple[str, str]]:", "-> torch.Tensor:"),
    ("-> List[Tuple[str, str]]:", ":"),
    ("        self.pairs = {}\n", "        self.pairs = {}\n        self.pairs['w'] = torch.ones(2).cuda()\n"),
    ("        self.pairs = {}\n", "        self.pairs = {}\n        self.pairs.update(weights)\n"),
    ("        self.pairs = {}\n", "        self.pairs = weights\n"),
    # the attribute may be bound by a computed name, or the class has a base whose methods may
    ("        self.name = name\n", "        setattr(self, name, 1)\n"),
    ("class Graph:", "class Graph(Base):"),
    # a method hands the instance to other code, which may set the attribute
    ("        self.pairs = {}\n", "        self.pairs = {}\n        register(self)\n"),
])
def test_a_class_that_may_put_anything_else_there_keeps_it_flagged(change):
    source = GRAPH.replace(*change) + USE
    assert source != GRAPH + USE
    assert _lines(source) == [_load_line(source)]


@pytest.mark.parametrize("change", [
    # the checked code puts other values there, or through another name
    ("    torch.save(", "    graph.pairs['x'] = torch.ones(2).cuda()\n    torch.save("),
    ("    torch.save(", "    graph.pairs = model.state_dict()\n    torch.save("),
    ("    torch.save(", "    other.pairs = model.state_dict()\n    torch.save("),
    ("    torch.save(", "    pairs = graph.pairs\n    pairs['x'] = model.weight\n    torch.save("),
    # the instance goes to other code, or is bound twice
    ("    torch.save(", "    fill(graph)\n    torch.save("),
    ("    torch.save(", "    graph = make()\n    torch.save("),
])
def test_the_checked_code_that_may_put_anything_else_there_keeps_it_flagged(change):
    source = GRAPH + USE.replace(*change)
    assert _lines(source) == [_load_line(source)]


def test_the_loaded_file_put_back_in_the_attribute_keeps_the_verdict():
    # a file of the program's own scheme, read back into the attribute, then saved again under it
    source = GRAPH + '''
import glob
import os


def build(opts, texts):
    graph = Graph("g")
    found = glob.glob(os.path.join(opts.out, "*--pairs.pt"))
    if found:
        graph.pairs = torch.load(found[0])
    for i, text in enumerate(texts):
        graph.add(i, text)
        torch.save(graph.pairs, os.path.join(opts.out, f"{i}--pairs.pt"))
'''
    assert _lines(source) == []
    moved = source.replace("        graph.add(i, text)\n", "        graph.add(i, text)\n        graph.pairs[i] = model(text)\n")
    assert _lines(moved) == [_load_line(moved)]


@pytest.mark.parametrize("value, flagged", [
    ("list(dict.fromkeys(words))", False),
    ("list(itertools.chain.from_iterable(groups.values()))", False),
    ("[w for ws in groups.values() for w in ws]", False),
    ("{k: v for k, v in groups.items()}", False),
    ("list(dict.fromkeys(tensors))", True),
    ("[t for ts in {'a': tensors}.values() for t in ts]", True),
    ("[w for w in encoder(words)]", True),
])
def test_values_flow_through_containers(value, flagged):
    source = textwrap.dedent(f'''
        import itertools
        import torch
        words = ["a", "b", "a"]
        groups = {{"x": ["a"], "y": ["b"]}}
        tensors = [torch.ones(2).cuda()]
        torch.save({value}, "w.pt")

        def show():
            print(torch.load("w.pt"))
    ''')
    assert _lines(source) == ([_load_line(source)] if flagged else [])


# -- a class of another file of the project ----------------------------------------------------------------
@pytest.fixture()
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    yield root
    project_module._INDEX = None


@pytest.mark.parametrize("graph, flagged", [
    (GRAPH, False),
    (GRAPH.replace("-> List[Tuple[str, str]]:", "-> torch.Tensor:"), True),
])
def test_a_class_of_the_project(project, graph, flagged):
    write(project / "kg" / "__init__.py", "from .graph import Graph\n")
    write(project / "kg" / "graph.py", graph)
    write(project / "use.py", "import torch\n\nfrom kg import Graph\n" + USE)
    project_module._INDEX = None
    result = run("use.py", "--select", "DL002", "--no-cache", cwd=project)
    assert result.exit_code == (1 if flagged else 0), result.output


def test_the_class_file_changing_checks_the_user_again_with_the_cache_on(project):
    write(project / "kg" / "__init__.py", "from .graph import Graph\n")
    write(project / "kg" / "graph.py", GRAPH)
    write(project / "use.py", "import torch\n\nfrom kg import Graph\n" + USE)
    cached, fresh = cached_and_fresh(project, "use.py", "--select", "DL002")
    assert cached == fresh == []
    write(project / "kg" / "graph.py", GRAPH.replace("-> List[Tuple[str, str]]:", "-> torch.Tensor:"))
    cached, fresh = cached_and_fresh(project, "use.py", "--select", "DL002")
    assert cached == fresh == [("use.py", "DL002")]
