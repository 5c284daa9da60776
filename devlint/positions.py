"""LibCST's `PositionProvider` ranges, computed one top-level statement at a time.

Resolving `PositionProvider` renders the whole module while recording a range for every node: on
a large file that costs as much as the parse (4 s on torch's 7,800-line `_triton_ops_meta.py`),
though a rule needs the positions of a few nodes in the statements it flags. Here the module is
rendered once without recording, to learn where each top-level statement starts, and a statement's
ranges are recorded (with LibCST's own codegen state, so they are the same ranges) when one of its
nodes is first asked for.
"""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst
from libcst._nodes.internal import CodegenState  # not re-exported; the same state LibCST renders with
from libcst._position import CodeRange
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

_NEWLINE = re.compile(r"\r\n?|\n")  # as LibCST counts lines


class LazyPositions:
    """A read-only mapping node -> CodeRange, equal to `MetadataWrapper.resolve(PositionProvider)`."""

    def __init__(self, module: cst.Module, parents: dict[cst.CSTNode, cst.CSTNode]) -> None:
        self._module = module
        self._parents = parents
        self._computed: dict[cst.CSTNode, CodeRange] = {}  # written by LibCST's codegen state
        self._whole = False

    @cached_property
    def _starts(self) -> dict[cst.CSTNode, int]:
        """The line each top-level statement's rendering starts on (always at column 0)."""
        module = self._module
        state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
        for line in module.header:
            line._codegen(state)
        starts = {}
        line_number = 1 + _newlines(state.tokens)
        for statement in module.body:
            starts[statement] = line_number
            state.tokens.clear()
            statement._codegen(state)
            line_number += _newlines(state.tokens)
        return starts

    def _top_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The child of the module that holds `node` (None for the module itself)."""
        child, parent = node, self._parents.get(node)
        while parent is not None:
            if parent is self._module:
                return child
            child, parent = parent, self._parents.get(parent)
        return None

    def _compute(self, node: cst.CSTNode) -> None:
        if node in self._computed or self._whole:
            return
        statement = self._top_statement(node)
        if statement is None or not isinstance(statement, cst.BaseStatement):
            self._compute_whole()  # the module itself, its header or footer
            return
        if statement in self._computed:
            return  # rendered already: a statement's own range is recorded with its nodes'
        module = self._module
        state = PositionProvidingCodegenState(
            default_indent=module.default_indent, default_newline=module.default_newline, provider=self
        )
        state.line = self._starts[statement]
        statement._codegen(state)

    def _compute_whole(self) -> None:
        ranges = MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider)
        self._computed.update(ranges)
        self._whole = True

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        self._compute(node)
        return self._computed[node]

    def __contains__(self, node: object) -> bool:
        if isinstance(node, cst.CSTNode):
            self._compute(node)
        return node in self._computed

    def get(self, node: cst.CSTNode, default: CodeRange | None = None) -> CodeRange | None:
        return self[node] if node in self else default


def _newlines(tokens: list[str]) -> int:
    # token by token, as LibCST's codegen state counts (a "\r" ending one token and a "\n" starting
    # the next are two line breaks there)
    return sum(len(_NEWLINE.findall(token)) for token in tokens)
