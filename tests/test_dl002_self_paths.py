"""DL002: a path over the instance's own attributes, and a name bound more than once (issue 23,
devlint.analysis.self_paths). A class that writes a file under `self.<folder>` from CPU data in one
method and loads it in another (or earlier in the same method) names the same file both times when
nothing re-binds the attribute after construction. Each shape both ways."""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint

CACHE = '''
import os.path as osp
import torch


class Cache:
    def __init__(self, root):
        self.root = root

    @property
    def folder(self):
        return osp.join(self.root, "processed")

    def check(self):
        f = osp.join(self.folder, "settings.pt")
        if osp.exists(f) and torch.load(f) != repr(self.settings):
            print("changed")
        f = osp.join(self.folder, "names.pt")
        if osp.exists(f) and torch.load(f) != list(self.names):
            print("changed")

    def write(self):
        path = osp.join(self.folder, "settings.pt")
        torch.save({saved}, path)
        torch.save(sorted(["a", "b"]), osp.join(self.folder, "names.pt"))
'''


def _lines(source: str) -> list[int]:
    return [f.start.line for f in lint(textwrap.dedent(source), select="DL002")]


def test_a_file_the_class_writes_under_its_own_folder_from_cpu_data_is_not_flagged():
    assert _lines(CACHE.format(saved="repr(self.settings)")) == []


@pytest.mark.parametrize("saved", ["torch.ones(2).cuda()", "self.settings", "torch.ones(2).to(self.device)"])
def test_a_writer_that_saves_device_or_unknown_data_keeps_the_load_flagged(saved):
    assert _lines(CACHE.format(saved=saved)) == [16]


@pytest.mark.parametrize("rebinding", [
    "    def move(self, other):\n        self.root = other\n",  # re-bound after construction
    "    def move(self, other):\n        self.root += other\n",
    "    def move(self, key, value):\n        setattr(self, key, value)\n",  # by a computed name
    "    def move(self, other):\n        self.__dict__['root'] = other\n",
])
def test_an_attribute_rebound_after_construction_has_no_identity(rebinding):
    source = CACHE.format(saved="repr(self.settings)").replace("    @property\n", rebinding + "\n    @property\n")
    # the paths of settings.pt read `root` itself (`folder` is a property, never assigned)
    source = source.replace('osp.join(self.folder, "settings.pt")', 'osp.join(self.root, "settings.pt")')
    assert 19 in _lines(source)  # (a computed name unbinds every attribute: the other load too)


def test_a_path_over_a_stable_attribute_read_directly_matches():
    source = CACHE.format(saved="repr(self.settings)").replace(
        'osp.join(self.folder, "settings.pt")', 'osp.join(self.root, "settings.pt")')
    assert _lines(source) == []


def test_a_writer_in_another_class_alone_does_not_clear_the_load():
    source = textwrap.dedent('''
    import torch


    class Reader:
        def __init__(self, root):
            self.root = root

        def read(self):
            return torch.load(self.root + "/names.pt")


    class Writer:
        def __init__(self, root):
            self.root = root

        def write(self):
            torch.save(["a"], self.root + "/names.pt")
    ''')
    assert _lines(source) == [10]
    # a writer in the reader's class clears it; a device writer in another class of the file keeps it flagged
    mixed = source.replace("class Writer:", "class Writer(Reader):").replace(
        "    def read(self):", "    def write(self):\n        torch.save([\"b\"], self.root + \"/names.pt\")\n\n"
        "    def read(self):")
    assert _lines(mixed) == []
    assert _lines(mixed.replace('torch.save(["a"]', "torch.save(torch.ones(1).cuda()")) == [13]


def test_a_static_method_argument_is_not_the_instance():
    source = '''
    import torch


    class Store:
        @staticmethod
        def read(self):
            return torch.load(self.root + "/names.pt")

        def write(self):
            torch.save(["a"], self.root + "/names.pt")
    '''
    assert _lines(source) == [8]


# -- a name bound more than once ---------------------------------------------------------------------------
REBOUND = '''
import os
import torch


def tokens(folder):
    f = folder + "/a.pt"
    torch.save(["a"], f)
    f = folder + "/b.pt"
    if os.path.exists(f):
        return torch.load(f)
    torch.save({saved}, f)
'''


def test_a_name_rebound_reads_its_last_binding():
    # `f` names b.pt at the load: its writer is the last save (a cache of one function), not the first
    assert _lines(REBOUND.format(saved='["b"]')) == []
    assert _lines(REBOUND.format(saved="torch.ones(1).cuda()")) == [11]
    assert _lines(REBOUND.format(saved='["b"]').replace("    torch.save([\"b\"], f)\n", "")) == [11]


def test_a_read_that_may_see_either_binding_leaves_the_name_without_identity():
    source = REBOUND.format(saved='["b"]').replace(
        "    f = folder + \"/b.pt\"\n", "    if folder:\n        f = folder + \"/b.pt\"\n    save_model(f)\n")
    # `save_model(f)` may write a.pt or b.pt: no read of `f` has an identity, the load stays flagged
    assert _lines(source) == [13]


# -- properties ----------------------------------------------------------------------------------------------
PROPERTY = '''
import torch


class Saver:
    def __init__(self, root):
        self.root = root
        self.step = 0

    @property
    def path(self):
        return f"{{self.root}}/ckpt_{{self.step}}.pt"

    def save_and_check(self, model):
        torch.save(model.state_dict(), self.path)
        {between}
        return torch.load(self.path)
'''


def test_a_property_over_attributes_set_at_construction_names_one_file():
    assert _lines(PROPERTY.format(between="print(model)")) == []  # saved just before: a round trip


def test_a_property_over_state_that_changes_has_no_identity():
    # the save and the load name two different files (one may come from an earlier run)
    assert _lines(PROPERTY.format(between="self.step += 1")) == [17]
    complex_body = PROPERTY.format(between="print(model)").replace(
        "        return f\"{self.root}", "        print(self.root)\n        return f\"{self.root}", 1)
    assert _lines(complex_body) == [18]


def test_an_attribute_neither_assigned_nor_defined_in_the_file_has_no_identity():
    # (a property of a base class elsewhere, of any state)
    source = PROPERTY.format(between="print(model)").replace("        self.root = root\n", "")
    assert _lines(source) == [16]
