"""The kinds of containers' items and what annotations say (part of devlint.analysis.kinds): items of
list/tuple/set literals and comprehensions, splitters, `state_dict()`, a `torch.load` result given to
`load_state_dict`, names annotated `list[Tensor]` or `dict[str, Tensor]`; an annotation's kind (also
through `Optional`, `X | None` and strings)."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.analysis.vocabulary import (
    _NO_FACTS,
    _NOTHING,
    MAPPING_ANNOTATIONS,
    MODULE,
    SEQUENCE_ANNOTATIONS,
    TENSOR,
    TENSOR_ANNOTATIONS,
    TORCH_SPLITTERS,
    UNKNOWN,
    Kind,
)
from devlint.syntax import is_none, string_value


class ContainerKinds:
    """Mixed into KindInference, whose steps (`of`, `_step`, `_unpacked`, ...) these methods use."""

    # -- containers ----------------------------------------------------------------------------------
    def _container(self, expr: cst.BaseExpression) -> tuple[Kind, Kind]:
        """(the kind of the items iterating `expr` gives, the kind of `expr[key]`) for a container: a
        literal, a comprehension, `list(...)`/`sorted(...)`, a splitter, a module's `state_dict()`, a
        name annotated as one (`list[Tensor]`, `dict[str, Tensor]`) or bound to one."""
        return self._step(("container", expr), lambda: self._container_kind(expr), on_cycle=_NOTHING)

    def _container_kind(self, expr: cst.BaseExpression) -> tuple[Kind, Kind]:
        if isinstance(expr, cst.Name):
            return self._name_container(expr)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            elements = expr.elements
            if not elements or any(isinstance(e, cst.StarredElement) for e in elements):
                return _NOTHING
            kind = self._combine({self.of(e.value) for e in elements})
            return (kind, kind)
        if isinstance(expr, cst.Dict):
            elements = expr.elements
            if not elements or not all(isinstance(e, cst.DictElement) for e in elements):
                return _NOTHING
            return (UNKNOWN, self._combine({self.of(e.value) for e in elements}))
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            kind = self.of(expr.elt)
            return (kind, kind)
        if isinstance(expr, cst.DictComp):
            return (UNKNOWN, self.of(expr.value))
        if isinstance(expr, cst.Call):
            names = self.ctx.qualified_names(expr.func)
            if names & {"list", "tuple", "sorted", "reversed", "set", "frozenset"} and len(expr.args) >= 1 and (
                    expr.args[0].keyword is None and not expr.args[0].star):
                kind = self._loop_item(expr.args[0].value, [])
                return (kind, kind)
            if any(n.startswith("torch.") and n.rsplit(".", 1)[-1] in TORCH_SPLITTERS for n in names):
                return (TENSOR, TENSOR)
            if isinstance(expr.func, cst.Attribute) and not self.ctx.is_imported_module(expr.func.value):
                method = expr.func.attr.value
                if method in TORCH_SPLITTERS and self.of(expr.func.value) is TENSOR:
                    return (TENSOR, TENSOR)
                if method in ("parameters", "buffers") and not expr.args:
                    return (TENSOR, UNKNOWN)
                if method == "state_dict" and not expr.args and (
                        self.approximate or self.of(expr.func.value) is MODULE):
                    return (UNKNOWN, TENSOR)  # (an optimizer's state_dict() holds no tensors at the top)
                if method == "copy" and not expr.args:
                    return self._container(expr.func.value)
        return _NOTHING

    def _name_container(self, name: cst.Name) -> tuple[Kind, Kind]:
        if self.approximate:
            sites = self.ctx.binding_sites.get(name.value, ())
        else:
            binding = self._last_binding(name)
            sites = [binding] if binding is not None else []
        facts = [self._binding_container(site) for site in sites]
        if not facts:
            return _NOTHING
        return (self._combine({f[0] for f in facts}), self._combine({f[1] for f in facts}))

    def _binding_container(self, site: cst.CSTNode) -> tuple[Kind, Kind]:
        if isinstance(site, cst.Param):
            return self._annotation_facts(site.annotation)[1:]
        parent = self.ctx.parent(site)
        if isinstance(parent, cst.AnnAssign):
            facts = self._annotation_facts(parent.annotation)[1:]
            if facts == _NOTHING and parent.value is not None:
                return self._container(parent.value)
            return facts
        if isinstance(parent, cst.AssignTarget):
            assign = self.ctx.parent(parent)
            if isinstance(assign, cst.Assign):
                if self._is_loaded_state_dict(site, assign.value):
                    return (UNKNOWN, TENSOR)
                return self._container(assign.value)
        return _NOTHING

    def _is_loaded_state_dict(self, site: cst.Name, value: cst.BaseExpression) -> bool:
        """`sd = torch.load(...)` whose binding is given to a module's `load_state_dict(sd)`."""
        if not (isinstance(value, cst.Call) and "torch.load" in self.ctx.qualified_names(value.func)):
            return False
        for call, argument in self._state_dict_loads.get(site.value, ()):
            if self.approximate:
                return True
            if self._last_binding(argument) is site and self.of(call.func.value) is MODULE:
                return True
        return False

    @cached_property
    def _state_dict_loads(self) -> dict[str, list[tuple[cst.Call, cst.Name]]]:
        """`m.load_state_dict(name, ...)` calls, by the name given."""
        found: dict[str, list[tuple[cst.Call, cst.Name]]] = {}
        for call in self.ctx.nodes(cst.Call):
            func = call.func
            if (isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict" and call.args
                    and isinstance(call.args[0].value, cst.Name) and call.args[0].keyword is None):
                found.setdefault(call.args[0].value.value, []).append((call, call.args[0].value))
        return found

    # -- annotations ---------------------------------------------------------------------------------
    def _annotation_facts(self, annotation: cst.CSTNode | None) -> tuple[Kind, Kind, Kind]:
        """(the kind of a value so annotated, of its items by iteration, of its items by subscription):
        `Tensor`, `Optional[Tensor]`, `Tensor | None`, `list[Tensor]`, `Tuple[Tensor, ...]`,
        `dict[str, Tensor]`, `"torch.Tensor"`, through any import alias. The same in both modes."""
        if annotation is None:
            return _NO_FACTS
        if isinstance(annotation, cst.Annotation):
            annotation = annotation.annotation
        text = string_value(annotation)
        if text is not None:
            parsed = self._parsed_annotations.get(text)
            if parsed is None:
                try:
                    parsed = cst.parse_expression(text.strip())
                except Exception:  # (any text can be in a string)
                    parsed = cst.Name("None")
                self._parsed_annotations[text] = parsed
            annotation = parsed
        members = self._union_members(annotation)
        if members is not None:
            facts = {self._annotation_facts(m) for m in members if not is_none(m)}
            return facts.pop() if len(facts) == 1 else _NO_FACTS
        if isinstance(annotation, cst.Subscript):
            base = self.ctx.qualified_names(annotation.value)
            if not all(isinstance(e.slice, cst.Index) for e in annotation.slice):
                return _NO_FACTS
            arguments = [e.slice.value for e in annotation.slice]
            if base & SEQUENCE_ANNOTATIONS:
                items = {self._annotation_facts(a)[0] for a in arguments if not isinstance(a, cst.Ellipsis)}
                kind = items.pop() if len(items) == 1 else UNKNOWN
                return (UNKNOWN, kind, kind)
            if base & MAPPING_ANNOTATIONS and len(arguments) == 2:
                return (UNKNOWN, UNKNOWN, self._annotation_facts(arguments[1])[0])
            return _NO_FACTS
        names = self.ctx.qualified_names(annotation)
        if names & TENSOR_ANNOTATIONS:
            return (TENSOR, UNKNOWN, TENSOR)
        if any(n == "torch.nn.Module" or n == "torch.nn.modules.module.Module" for n in names) or (
                isinstance(annotation, cst.Name) and annotation.value in self._module_classes) or (
                self._project_module_class(annotation)):
            return (MODULE, UNKNOWN, UNKNOWN)
        return _NO_FACTS

    def _union_members(self, annotation: cst.CSTNode) -> list[cst.CSTNode] | None:
        """The members of `Optional[X]`, `Union[X, Y]`, `X | Y`; None for anything else."""
        if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
            return (self._union_members(annotation.left) or [annotation.left]) + (
                self._union_members(annotation.right) or [annotation.right])
        if isinstance(annotation, cst.Subscript) and all(isinstance(e.slice, cst.Index) for e in annotation.slice):
            base = self.ctx.qualified_names(annotation.value)
            if base & {"typing.Optional", "typing.Union"}:
                return [e.slice.value for e in annotation.slice]
        return None

    @cached_property
    def _parsed_annotations(self) -> dict[str, cst.BaseExpression]:
        return {}

