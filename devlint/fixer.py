"""Apply chosen fixes to a source text and define `device` where a fix needs it."""

from __future__ import annotations

import re

import libcst as cst

from devlint.context import FixOptions
from devlint.model import Edit, Finding, Position
from devlint.rules._device import device_expression, insertion_index
from devlint.syntax import module_torch_alias

_NEWLINE = re.compile(r"\r\n|\r|\n")


def line_offsets(text: str) -> list[int]:
    """Offset of the first character of each line (index 0 is line 1), with LibCST's idea of lines."""
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


def offset(offsets: list[int], position: Position) -> int:
    return offsets[position.line - 1] + position.column


def apply_edits(text: str, findings: list[Finding]) -> tuple[str, list[Finding]]:
    """Apply the edits of non-overlapping fixes (first come, first served); return text and the applied."""
    offsets = line_offsets(text)
    chosen: list[tuple[int, int, Edit]] = []
    applied: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.start, f.code)):
        assert finding.fix is not None
        spans = [(offset(offsets, e.start), offset(offsets, e.end), e) for e in finding.fix.edits]
        if any(_overlaps(s, e, cs, ce) for s, e, _ in spans for cs, ce, _ in chosen):
            continue  # the next pass picks it up
        chosen.extend(spans)
        applied.append(finding)
    pieces = []
    cursor = 0
    for start, end, edit in sorted(chosen, key=lambda item: (item[0], item[1])):
        pieces.append(text[cursor:start])
        pieces.append(edit.content)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), applied


def _overlaps(start: int, end: int, other_start: int, other_end: int) -> bool:
    if start == end or other_start == other_end:  # an insertion only clashes strictly inside a range
        return other_start < start < other_end or start < other_start < end
    return start < other_end and other_start < end


def define_device(text: str, options: FixOptions) -> str:
    """Insert `device = ...` after the imports (and `import torch` when nothing binds torch)."""
    module = original = cst.parse_module(text)
    torch_name = module_torch_alias(module)
    expression = device_expression(options.device_expression, torch_name or "torch")
    statement = cst.parse_statement(f"{options.device_name} = {expression}\n", config=module.config_for_parsing)
    body = list(module.body)
    body.insert(insertion_index(module), statement)
    module = module.with_changes(body=body)
    if torch_name is None:
        # Imported here: libcst.codemod costs a quarter second at start-up, and few runs need it.
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor

        context = CodemodContext()
        AddImportsVisitor.add_needed_import(context, "torch")
        module = AddImportsVisitor(context).transform_module(module)
    return _splice_insertion(text, original.code, module.code)


def _splice_insertion(text: str, roundtrip: str, updated: str) -> str:
    """Apply only what the transform inserted to the original text.

    LibCST does not reproduce every file byte for byte (a last line of blanks without a newline
    loses a line), so the rest of the file is taken from the original, not from the regenerated code.
    """
    prefix = 0
    limit = min(len(roundtrip), len(updated))
    while prefix < limit and roundtrip[prefix] == updated[prefix]:
        prefix += 1
    inserted = len(updated) - len(roundtrip)
    if inserted <= 0 or updated[prefix + inserted:] != roundtrip[prefix:] or text[:prefix] != roundtrip[:prefix]:
        return updated  # not a pure insertion in a faithfully reproduced part: take the whole result
    return text[:prefix] + updated[prefix:prefix + inserted] + text[prefix:]
