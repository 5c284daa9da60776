"""Per-file analysis context handed to every rule: resolved metadata plus shared look-ups."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import libcst as cst
from libcst._nodes.internal import CodegenState  # not re-exported; needed to render at an indentation
from libcst.metadata import (
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    Scope,
    ScopeProvider,
)

from devlint.model import Position
from devlint.syntax import dotted_name, module_torch_alias

PROVIDERS = (PositionProvider, ParentNodeProvider, ScopeProvider, QualifiedNameProvider)


@dataclass(frozen=True)
class FixOptions:
    """What the fixer writes; shared by every rule that needs a device."""

    device_name: str = "device"
    device_expression: str = "cuda"  # 'cuda', 'accelerator', or a Python expression
    map_location: str = "auto"  # 'auto', 'device' or 'cpu'


class FileContext:
    def __init__(self, wrapper: MetadataWrapper, options: FixOptions | None = None) -> None:
        self.module = wrapper.module
        resolved = wrapper.resolve_many(PROVIDERS)
        self.positions = resolved[PositionProvider]
        self.parents = resolved[ParentNodeProvider]
        self.scopes = resolved[ScopeProvider]
        self.qnames = resolved[QualifiedNameProvider]
        self.options = options or FixOptions()

    # -- positions ---------------------------------------------------------------------------
    def span(self, node: cst.CSTNode) -> tuple[Position, Position]:
        code_range = self.positions[node]
        return (
            Position(code_range.start.line, code_range.start.column),
            Position(code_range.end.line, code_range.end.column),
        )

    def code(self, node: cst.CSTNode, anchor: cst.CSTNode | None = None) -> str:
        """Source for a node (a new one replacing `anchor`), indented like the statement it sits in.

        `Module.code_for_node` renders at column 0, which would drop the indentation of
        continuation lines inside an indented block.
        """
        if anchor is not None and getattr(node, "lpar", None):
            node = node.with_changes(lpar=[], rpar=[])  # positions (so replaced ranges) exclude parentheses
        state = CodegenState(default_indent=self.module.default_indent, default_newline=self.module.default_newline)
        state.indent_tokens = [self._indentation(anchor or node)]
        node._codegen(state)
        return "".join(state.tokens)

    def _indentation(self, node: cst.CSTNode) -> str:
        statement = node if isinstance(node, cst.BaseStatement) else self.enclosing(node, cst.BaseStatement)
        if statement is None or statement not in self.positions:
            return ""
        line = self._lines[self.positions[statement].start.line - 1]
        return line[: len(line) - len(line.lstrip(" \t"))]

    @cached_property
    def _lines(self) -> list[str]:
        return re.split(r"\r\n|\r|\n", self.module.code)

    # -- tree navigation -----------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode):
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def enclosing(self, node: cst.CSTNode, kinds) -> cst.CSTNode | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, kinds):
                return ancestor
        return None

    def scope(self, node: cst.CSTNode) -> Scope | None:
        return self.scopes.get(node)

    # -- names ---------------------------------------------------------------------------------
    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Qualified names through imports; an unbound dotted name (star import) stands for itself."""
        value = self.qnames.get(node, ())
        if callable(value):  # LibCST resolves qualified names lazily
            value = value()
        names = {q.name for q in value}
        if names:
            return names
        dotted = dotted_name(node)
        if dotted is None:
            return set()
        scope = self.scopes.get(node)
        root = dotted.split(".", 1)[0]
        if scope is not None and root not in scope:
            return {dotted}
        return set()

    def is_imported_module(self, node: cst.CSTNode) -> bool:
        """True when `node` is a name bound only by import statements (so `node.f()` is a function call)."""
        if not isinstance(node, cst.Name):
            return False
        scope = self.scopes.get(node)
        if scope is None or node.value not in scope:
            return False
        assignments = list(scope[node.value])
        return bool(assignments) and all(
            isinstance(a.node, (cst.Import, cst.ImportFrom)) for a in assignments
        )

    @cached_property
    def torch_alias(self) -> str | None:
        """The module-level name torch is imported as (`torch`, `th`), or None."""
        return module_torch_alias(self.module)

    # -- shared analyses, built on first use --------------------------------------------------
    @cached_property
    def guards(self):
        from devlint.rules._guards import CudaGuards

        return CudaGuards(self)

    @cached_property
    def kinds(self):
        from devlint.rules._kinds import KindInference

        return KindInference(self)
