"""The kinds a file's classes give (part of devlint.analysis.kinds): `self.x` whose every binding in
the class is a tensor or a module, `register_buffer`/`register_parameter` names, the classes of the file
that subclass `nn.Module`, and names imported from other files of the project (devlint.analysis.project):
their calls' and values' kinds, project module classes, classes that override `cuda()`."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.analysis.vocabulary import (
    MODULE_METHODS,
    TENSOR,
    TENSOR_ATTRIBUTES,
    UNKNOWN,
    Kind,
    is_module_base,
)
from devlint.syntax import is_none, string_value


class ClassKinds:
    """Mixed into KindInference, whose steps (`of`, `_step`, `_combine`, ...) these methods use."""

    # -- the project (devlint.analysis.project): names imported from other files of the project -----------------
    def _project_names(self, expr: cst.CSTNode) -> set[str]:
        """What a dotted name bound only by imports (not shadowed where used) refers to, if the file
        is checked with a project view."""
        if self.ctx.project is None:
            return set()
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value not in self.ctx.imported_names:
            return set()
        return self.ctx.qualified_names(expr)

    def _project_call(self, func: cst.CSTNode) -> Kind:
        """`Net()`, `m.Net()`, `make_batch()` of a class or function imported from the project."""
        return self._project_kind(func, "call_kind")

    def _project_value(self, name: cst.Name) -> Kind:
        """A module-level value imported from the project (`from .data import BATCH`)."""
        return self._project_kind(name, "value_kind")

    def _project_kind(self, expr: cst.CSTNode, question: str) -> Kind:
        """The kind every import-qualified name of `expr` gets from the index, or UNKNOWN."""
        names = self._project_names(expr)
        if not names:
            return UNKNOWN
        ask = getattr(self.ctx.project, question)
        kinds = {ask(name) for name in names}
        kind = kinds.pop() if len(kinds) == 1 else None
        return Kind(kind) if kind is not None else UNKNOWN

    def _project_module_class(self, expr: cst.CSTNode) -> bool:
        """Is `expr` (a base, an annotation) a project class that subclasses `nn.Module`?"""
        for name in self._project_names(expr):
            cls = self.ctx.project.class_of(name)
            if cls is None or not self.ctx.project.is_module_class(cls):
                return False
        return bool(self._project_names(expr))

    def overrides_cuda(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        """Is `expr` an instance of a project class that defines (or inherits from a project class) a
        `cuda()` other than `return super().cuda(...)`: `Net()`, `m.Net()`, a class of this file
        whose bases are such, `Net().float()`, a name last bound to one of those."""
        view = self.ctx.project
        if view is None or depth > 8:
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            names = self._project_names(func)
            if names:
                return any((cls := view.class_of(n)) is not None and view.overrides_cuda(cls) for n in names)
            if isinstance(func, cst.Name) and func.value not in self.ctx.imported_names:
                return any(self.overrides_cuda(cst.Call(base.value), depth + 1)
                           for node in self.ctx.nodes(cst.ClassDef) if node.name.value == func.value
                           for base in node.bases if base.keyword is None)
            if isinstance(func, cst.Attribute) and func.attr.value in MODULE_METHODS:
                return self.overrides_cuda(func.value, depth + 1)
            return False
        if isinstance(expr, cst.Name) and not self.approximate:
            binding = self._last_binding(expr)
            parent = self.ctx.parent(binding) if isinstance(binding, cst.Name) else None
            assign = self.ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else None
            if isinstance(assign, cst.Assign):
                return self.overrides_cuda(assign.value, depth + 1)
        return False

    # -- attributes ----------------------------------------------------------------------------------
    def _attribute(self, attr: cst.Attribute) -> Kind:
        if attr.attr.value in TENSOR_ATTRIBUTES:
            if attr.attr.value in ("T", "mT", "H", "real", "imag"):
                return TENSOR if self.of(attr.value) is TENSOR else UNKNOWN
            return TENSOR  # (whatever the receiver is: `.weight` of a module, `.data` of a tensor)
        if isinstance(attr.value, cst.Name) and attr.value.value == "self":
            return self._self_attribute(attr)
        return UNKNOWN

    def _self_attribute(self, attr: cst.Attribute) -> Kind:
        cls = self.ctx.enclosing(attr, cst.ClassDef)
        if cls is None:
            return UNKNOWN
        return self._combine(set(self._self_attribute_kinds(cls).get(attr.attr.value, ())))

    def self_attribute_is_parameter(self, attr: cst.Attribute) -> bool:
        """`self.w` assigned an `nn.Parameter` (re-binding it to a plain tensor raises TypeError)."""
        cls = self.ctx.enclosing(attr, cst.ClassDef)
        return cls is not None and attr.attr.value in self._parameter_attributes(cls)

    def _self_attribute_kinds(self, cls: cst.ClassDef) -> dict[str, list[Kind]]:
        # (`self.x` read while the class's attributes are being inferred: no kinds, so UNKNOWN)
        return self._step(("self", cls), lambda: self._infer_self_attribute_kinds(cls), on_cycle={})

    def _infer_self_attribute_kinds(self, cls: cst.ClassDef) -> dict[str, list[Kind]]:
        kinds = {name: [self.of(value) for value in values if not is_none(value)]
                 for name, values in self._self_assignments.get(cls, {}).items()}
        for name, sources in self._self_other_bindings.get(cls, {}).items():
            for source in sources:
                if isinstance(source, tuple) and isinstance(source[0], cst.Annotation):
                    kind = self._annotation_facts(source[0])[0]
                    if kind is not UNKNOWN or not source[1]:  # (`self.x: Any = value`: the value says)
                        kinds.setdefault(name, []).append(kind)
                elif source is None:
                    kinds.setdefault(name, []).append(UNKNOWN)
                else:
                    value, path = source
                    kinds.setdefault(name, []).append(self._unpacked(value, list(path)))
        for name in self._registered.get(cls, {}):
            kinds.setdefault(name, []).append(TENSOR)
        return kinds

    def _parameter_attributes(self, cls: cst.ClassDef) -> set[str]:
        parameters = {name for name, values in self._self_assignments.get(cls, {}).items()
                      if any(n.endswith(("nn.Parameter", "nn.parameter.Parameter"))
                             for value in values for n in self._call_names(value))}
        return parameters | {n for n, how in self._registered.get(cls, {}).items() if how == "register_parameter"}

    @cached_property
    def _self_assignments(self) -> dict[cst.ClassDef, dict[str, list[cst.BaseExpression]]]:
        """`self.x = value` (or `self.x: T = value`) in the methods of each class, and `x = value` in
        the class body, by class and attribute."""
        found: dict[cst.ClassDef, dict[str, list[cst.BaseExpression]]] = {}
        for kind in (cst.Assign, cst.AnnAssign):
            for node in self.ctx.nodes(kind):
                if node.value is None:
                    continue
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for t in targets:
                    owner = self._class_attribute(node, t)
                    if owner is not None:
                        found.setdefault(owner[0], {}).setdefault(owner[1], []).append(node.value)
        return found

    def _class_attribute(self, statement: cst.CSTNode, target: cst.CSTNode) -> tuple[cst.ClassDef, str] | None:
        """(class, attribute) that `target` binds: `self.x` in a method, or `x` in the class body."""
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            cls = self.ctx.enclosing(statement, cst.ClassDef)
            name = target.attr.value
        elif isinstance(target, cst.Name):
            cls = self._class_body_of(statement)
            name = target.value
        else:
            return None
        return None if cls is None else (cls, name)

    def _class_body_of(self, statement: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose body holds this small statement directly."""
        line = self.ctx.parent(statement)
        block = self.ctx.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
        cls = self.ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
        return cls if isinstance(cls, cst.ClassDef) else None

    @cached_property
    def _self_other_bindings(self) -> dict[cst.ClassDef, dict[str, list]]:
        """Other bindings of `self.x`, by class and attribute: an `Annotation` (`self.x: T` or `x: T` in
        the class body), `(value, path)` for an unpacking (`self.a, self.b = ...`), None for one of
        unknown value (a loop target, `with ... as self.x`)."""
        found: dict[cst.ClassDef, dict[str, list]] = {}
        for node in self.ctx.nodes(cst.AnnAssign):
            owner = self._class_attribute(node, node.target)
            if owner is not None:
                annotated = (node.annotation, node.value is not None)
                found.setdefault(owner[0], {}).setdefault(owner[1], []).append(annotated)
        for kind in (cst.AssignTarget, cst.For, cst.CompFor, cst.AsName):
            for node in self.ctx.nodes(kind):
                target = node.name if isinstance(node, cst.AsName) else node.target
                for attr, path in _attribute_targets(target):
                    if not (isinstance(attr.value, cst.Name) and attr.value.value == "self"):
                        continue
                    if isinstance(node, cst.AssignTarget) and not path:
                        continue  # (a plain `self.x = value`: in _self_assignments)
                    cls = self.ctx.enclosing(node, cst.ClassDef)
                    if cls is None:
                        continue
                    assign = self.ctx.parent(node)
                    source = (assign.value, path) if isinstance(node, cst.AssignTarget) else None
                    found.setdefault(cls, {}).setdefault(attr.attr.value, []).append(source)
        return found

    @cached_property
    def _registered(self) -> dict[cst.ClassDef, dict[str, str]]:
        """Names given to `self.register_buffer(...)` / `self.register_parameter(...)`, by class."""
        found: dict[cst.ClassDef, dict[str, str]] = {}
        for call in self.ctx.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("register_buffer",
                                                                               "register_parameter") and call.args:
                key = string_value(call.args[0].value)
                cls = self.ctx.enclosing(call, cst.ClassDef)
                if key and cls is not None:
                    found.setdefault(cls, {})[key] = call.func.attr.value
        return found

    def _call_names(self, expr: cst.CSTNode) -> set[str]:
        return self.ctx.qualified_names(expr.func) if isinstance(expr, cst.Call) else set()

    # -- classes ---------------------------------------------------------------------------------------
    @cached_property
    def _module_classes(self) -> set[str]:
        """Names of classes in this file that subclass `nn.Module` (directly or through each other)."""
        classes = {node.name.value: [base.value for base in node.bases] for node in self.ctx.nodes(cst.ClassDef)}
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, bases in classes.items():
                if name in found:
                    continue
                for base in bases:
                    qualified = self.ctx.qualified_names(base)
                    local = isinstance(base, cst.Name) and base.value in found
                    if local or any(is_module_base(q) for q in qualified) or self._project_module_class(base):
                        found.add(name)
                        changed = True
                        break
        return found

    def _in_module_class(self, node: cst.CSTNode) -> bool:
        function = self.ctx.enclosing(node, cst.FunctionDef)
        if function is None:
            return False
        cls = self.ctx.parent(self.ctx.parent(function))
        return isinstance(cls, cst.ClassDef) and cls.name.value in self._module_classes


def _attribute_targets(target: cst.CSTNode, path: tuple[int, ...] = ()):
    """(attribute, path) for each `a.b` an assignment target binds: `self.x`, `self.a, (self.b, c)`."""
    if isinstance(target, cst.Attribute):
        yield target, path
    elif isinstance(target, (cst.Tuple, cst.List)):
        for index, element in enumerate(target.elements):
            if not isinstance(element, cst.StarredElement):
                yield from _attribute_targets(element.value, path + (index,))
