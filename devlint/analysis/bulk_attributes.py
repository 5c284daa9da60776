"""Does a class write its instances' attributes in bulk, through `self.__dict__` or `vars(self)`?

    def __init__(self, weights, device=torch.device("cpu"), fp16=False):
        ...
        self.__dict__.update(locals())   # every local, `device` included, becomes an attribute

Such a class may have any attribute, as one with `__getattr__` or `setattr(self, name, v)` with a computed
name may (devlint.analysis.module_classes and devlint.analysis.project_files mark those "may bind any
name"). A write is any use of `self.__dict__` / `vars(self)` other than a call of one of the dict's
read-only methods on it (`self.__dict__.copy()`, `.items()`, `.keys()`, `.values()`, `.get(k)`): an
alias (`d = self.__dict__`) or a subscript store may write, so they count, which only makes a finding
less likely. Both readers are here: the LibCST one for classes of the checked file, the `ast` one for
the project index's summaries of other files.
"""

from __future__ import annotations

import ast

import libcst as cst

_READ_ONLY = frozenset({"copy", "items", "keys", "values", "get", "__contains__", "__len__", "__iter__"})


def writes_in_bulk_cst(nodes_inside, parent_of) -> bool:
    """LibCST: does the class (its nodes `nodes_inside(type)`) write `self.__dict__` / `vars(self)`?
    `parent_of(node)` is the node's parent."""
    for attr in nodes_inside(cst.Attribute):
        if attr.attr.value == "__dict__" and isinstance(attr.value, cst.Name) and attr.value.value == "self":
            if not _read_only_cst(attr, parent_of):
                return True
    for call in nodes_inside(cst.Call):
        if isinstance(call.func, cst.Name) and call.func.value == "vars" and len(call.args) == 1 and isinstance(
                call.args[0].value, cst.Name) and call.args[0].value.value == "self":
            if not _read_only_cst(call, parent_of):
                return True
    return False


def _read_only_cst(node: cst.CSTNode, parent_of) -> bool:
    method = parent_of(node)
    if not (isinstance(method, cst.Attribute) and method.value is node and method.attr.value in _READ_ONLY):
        return False
    call = parent_of(method)
    return isinstance(call, cst.Call) and call.func is method


def writes_in_bulk_ast(cls: ast.ClassDef) -> bool:
    """`ast`: the same question for a class of another file."""
    read_only: set[int] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _READ_ONLY:
            read_only.add(id(node.func.value))
    for node in ast.walk(cls):
        is_dict = (isinstance(node, ast.Attribute) and node.attr == "__dict__" and isinstance(node.value, ast.Name)
                   and node.value.id == "self")
        is_vars = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars"
                   and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == "self")
        if (is_dict or is_vars) and id(node) not in read_only:
            return True
    return False
