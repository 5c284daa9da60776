"""The base every rule derives from: metadata, examples, reporting and edit helpers."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from devlint.candidates import could_match
from devlint.context import FileContext
from devlint.prefilter import Summary
from devlint.model import Applicability, Edit, Finding, Fix, Position


@dataclass(frozen=True)
class Invalid:
    """An example the rule must flag; `fixed` is the text after `--fix` (with `unsafe` fixes if set)."""

    code: str
    fixed: str | None = None
    unsafe: bool = False
    count: int = 1


class Rule:
    """A rule checks nodes of the types it names in `visit_<NodeType>` methods.

    The engine walks each file once and hands every rule the nodes it asked for (the dispatch table
    is built once per process). The class docstring is the rule's documentation (Markdown, fixed
    headings); VALID and INVALID are both examples in those docs and tests.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    default_enabled: ClassVar[bool] = True
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.findings: list[Finding] = []

    @classmethod
    def could_match(cls, summary: Summary) -> bool:
        """From the cheap pre-pass (see prefilter.py): False only if this rule cannot flag the file.
        The condition is the rule's row in devlint.candidates, which imports no LibCST (a file no rule
        could flag is cleared without it); a rule without one takes every file."""
        return could_match(cls.code, summary)

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """The first paragraph under '## What it does', for tables."""
        doc = cls.documentation()
        body = doc.split("## What it does", 1)[-1].strip().split("\n\n", 1)[0]
        return " ".join(body.split())

    def report(self, node: cst.CSTNode, message: str | None = None, fix: Fix | None = None,
               start_node: cst.CSTNode | None = None) -> None:
        if self.ctx.flags.unreachable(node):
            return  # dead code: a branch a proved constant never takes (devlint.analysis.flags)
        start, _ = self.ctx.span(start_node or node)
        _, end = self.ctx.span(node)
        statement = self.ctx.enclosing(node, cst.SimpleStatementLine)
        last = self.ctx.span(statement)[1].line if statement is not None else end.line
        lines = tuple(sorted({end.line, last} - {start.line}))
        if fix is not None and fix.applicability is not Applicability.DISPLAY_ONLY:
            from devlint.analysis.fix_review import review

            fix = review(self.ctx, node, fix)  # TorchScript, a device name rebound later (issue 29)
        self.findings.append(Finding(self.code, self.name, message or self.message, start, end, fix, lines))

    # -- edit helpers ----------------------------------------------------------------------------
    def replace(self, node: cst.CSTNode, content: str) -> Edit:
        start, end = self.ctx.span(node)
        return Edit(start, end, content)

    def replace_between(self, first: cst.CSTNode, last: cst.CSTNode, content: str) -> Edit:
        return Edit(self.ctx.span(first)[0], self.ctx.span(last)[1], content)

    def insert_before(self, node: cst.CSTNode, content: str) -> Edit:
        start, _ = self.ctx.span(node)
        return Edit(start, start, content)

    @staticmethod
    def fix(title: str, applicability: Applicability, *edits: Edit, needs_device: bool = False) -> Fix:
        return Fix(title, applicability, tuple(edits), needs_device)

    @staticmethod
    def display_only(title: str) -> Fix:
        return Fix(title, Applicability.DISPLAY_ONLY)


def position(line: int, column: int) -> Position:
    return Position(line, column)
