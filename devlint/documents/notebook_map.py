"""From a notebook's joined module back to its cells: findings (and the edits they show) with lines
counted in their cell, and the fixed module split into the new source of each cell."""

from __future__ import annotations

import difflib
import re
from dataclasses import replace

from devlint.documents.notebook_cells import LINE, Cell, Joined, line_content, line_ending
from devlint.documents.notebook_write import Unwritable
from devlint.model import Edit, Finding, Position

# -- mapping back --------------------------------------------------------------------------------------
def _locate(position: Position, where: list[tuple[int, int, int] | None]) -> tuple[int, Position] | None:
    """(cell index, position in the cell as written); the start of the line after a cell's last is
    still in it. Columns count the indent IPython removed."""
    if 1 <= position.line <= len(where) and where[position.line - 1] is not None:
        cell, line, shift = where[position.line - 1]
        return cell, Position(line, position.column + shift)
    if position.column == 0 and 2 <= position.line <= len(where) + 1 and where[position.line - 2] is not None:
        cell, line, _ = where[position.line - 2]
        return cell, Position(line + 1, 0)
    return None


def to_cell(finding: Finding, where: list[tuple[int, int, int] | None]) -> Finding:
    """The finding with lines counted in its cell (and `cell` set, 1-based among all cells)."""
    start = _locate(finding.start, where)
    if start is None:
        return finding
    cell, start_position = start
    end = _locate(finding.end, where)
    end_position = end[1] if end is not None and end[0] == cell else start_position
    fix = finding.fix
    if fix is not None and fix.edits:
        edits = []
        for edit in fix.edits:
            edit_start, edit_end = _locate(edit.start, where), _locate(edit.end, where)
            if edit_start is None or edit_end is None or edit_start[0] != cell or edit_end[0] != cell:
                edits = []  # cannot be shown within the cell; the fix itself is applied on the joined text
                break
            edits.append(Edit(edit_start[1], edit_end[1], edit.content))
        fix = replace(fix, edits=tuple(edits))
    suppress = tuple(p[1].line for line in finding.suppress_lines
                     if (p := _locate(Position(line, 0), where)) is not None and p[0] == cell)
    return replace(finding, start=start_position, end=end_position, fix=fix, suppress_lines=suppress, cell=cell + 1)



# -- splitting the fixed text back into cells ------------------------------------------------------
def split_cells(joined: Joined, fixed: str) -> tuple[dict[int, str], list[tuple[int, int, int] | None]]:
    """The new source of every checked cell, and where each line of `fixed` is."""
    for suffix in joined.suffixes.values():  # the marks of displayed expressions go first
        if fixed.count(suffix) != 1:
            raise Unwritable("a fix touched the last expression of a cell")
        fixed = fixed.replace(suffix, "")
    marker = re.compile(rf"# {re.escape(joined.tag)} cell (\d+)$")
    placeholder = re.compile(rf"# {re.escape(joined.tag)} (\d+)$")
    cells = {cell.index: cell for cell in joined.cells}
    pieces: dict[int, list[str]] = {cell.index: [] for cell in joined.cells}
    spots: list[list[int] | None] = []  # per line of `fixed`: [cell index, 0-based line in its pieces]
    order: list[int] = []
    current = None
    before: list[int] = []  # lines the fixer put above the first marker go to the top of the first cell
    restored: set[int] = set()

    def add(cell: int, line: str, spot: list[int]) -> None:
        spot[:] = [cell, len(pieces[cell])]
        pieces[cell].append(line)

    for line in LINE.findall(fixed):
        content = line_content(line)
        found = marker.fullmatch(content)
        if found:
            current = int(found.group(1))
            if current not in pieces or current in order:
                raise Unwritable("the cell boundaries were lost")
            order.append(current)
            spots.append(None)
            if len(order) == 1 and cells[current].magic is None:
                for index in before:
                    add(current, spots[index].pop(), spots[index])
                before = []
            continue
        masked = placeholder.search(content)
        if masked:
            serial = int(masked.group(1))
            if serial not in joined.originals or joined.originals[serial][0] != content or serial in restored:
                raise Unwritable("a fix touched a masked IPython line")
            restored.add(serial)
            line = joined.originals[serial][1] + line_ending(line)
        if current is None:
            before.append(len(spots))
            spots.append([line])  # the text, until it finds its cell
            continue
        spot: list[int] = []
        add(current, line, spot)
        spots.append(spot)
        if before and masked and cells[current].magic == serial:
            for index in before:  # below a cell magic, which must stay the cell's first line
                add(current, spots[index].pop(), spots[index])
            before = []
    if before or order != [cell.index for cell in joined.cells]:
        raise Unwritable("the cell boundaries were lost")
    if restored != set(joined.originals):
        raise Unwritable("a masked IPython line was lost")
    sources: dict[int, str] = {}
    shifts: dict[int, list[int]] = {}
    for cell in joined.cells:
        text = "".join(pieces[cell.index])
        if cell.stub:
            if pieces[cell.index] != [cell.placeholders[0] + joined.newline]:
                raise Unwritable("a fix touched a cell that does not parse")
            shifts[cell.index] = [0]
            continue
        if cell.text and not line_ending(cell.text) and text.endswith(joined.newline):
            text = text[:-len(joined.newline)]  # the newline the join added after the cell's last line
        shifts[cell.index] = [0] * len(pieces[cell.index])
        if cell.prefix:
            text, shifts[cell.index] = _indent_again(cell, text, len(pieces[cell.index]))
        sources[cell.index] = text
    where = [None if spot is None else (spot[0], spot[1] + 1, shifts[spot[0]][spot[1]]) for spot in spots]
    return sources, where


def _indent_again(cell: Cell, text: str, count: int) -> tuple[str, list[int]]:
    """Put back the indent IPython removes: lines the fix left alone as written, new and changed
    lines with the cell's indent. Also how many columns each line gained."""
    new = LINE.findall(text)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, cell.lines, new, autojunk=False)
    for operation, i1, i2, j1, j2 in matcher.get_opcodes():
        if operation == "equal":
            out.extend(cell.written[i1:i2])
        else:
            out.extend(cell.prefix + line if line.strip() else line for line in new[j1:j2])
    if [line[len(cell.prefix):] if line.startswith(cell.prefix) else line for line in out] != new:
        raise Unwritable("the indent IPython removes cannot be put back")
    shifts = [len(cell.prefix) if line.startswith(cell.prefix) else 0 for line in out]
    return "".join(out), shifts + [0] * (count - len(shifts))


