"""Apply chosen fixes to a source text and define `device` where a fix needs it (at module level, or
in the function that runs the fix: see devlint.analysis.device_definition)."""

from __future__ import annotations

import bisect
import re
import sys

import libcst as cst

from devlint.context import FileContext, FixOptions
from devlint.device_options import device_expression
from devlint.identifiers import identifier, normalized
from devlint.model import Edit, Finding, Position
from devlint.parsing import parse_module
from devlint.rendering import Rendering, line_offsets, position_at
from devlint.analysis.device_definition import (
    MODULE_LEVEL,
    definition_name,
    definition_placement,
    has_star_import,
    statement_start,
)
from devlint.analysis.top_level import insertion_index
from devlint.syntax import dotted_name, module_torch_alias

_NEWLINE = re.compile(r"\r\n|\r|\n")
_INDENT = re.compile(r"[ \t]+")


def apply_fixes(text: str, findings: list[Finding], options: FixOptions, apply=None, define=None,
                project=None) -> tuple[str, list[Finding]]:
    """Apply the fixes, defining the device where those that need one run (see devlint.analysis.device_definition).

    A definition goes at module level after the imports, or into the function that runs the fix
    site, right before the statement of its body that holds the site. Per function one definition
    per pass, before the earliest such statement; the fixes of later statements wait for the next
    pass, which finds the definition bound and reuses it. A pass that defines the device at module
    level defines none in functions: the next pass reuses the module's where it reaches.
    (`apply` and `define` stand for `apply_edits` and `define_device`: the engine passes its own
    names, which tests may replace. `project`: the file's view of the project index, which the
    placement asks whether other files import this one, as the rules did.)
    """
    apply = apply or apply_edits
    define = define or define_device
    if not any(f.fix.needs_device for f in findings):
        return apply(text, findings)
    ctx = FileContext(parse_module(text), options, project)
    module, options = ctx.module, ctx.options  # names as Python reads them (devlint.identifiers)
    name = definition_name(options.device_name, has_star_import(module))
    if name is None:
        raise UnplaceableDefinition("no name for the device definition")
    placements: dict[int, object] = {}
    needing = [f for f in findings if f.fix.needs_device]
    nodes = _nodes_at(ctx, [e.start for f in needing for e in _placed_edits(f, name)])  # one walk for all
    for finding in needing:
        placements[id(finding)] = _fix_placement(ctx, finding, name, nodes)
    # A module-level definition comes first: the next pass may find that it reaches the other sites.
    module_level = any(p is MODULE_LEVEL for p in placements.values())
    earliest: dict[int, tuple[int, object]] = {}  # per function: the first statement holding a site
    for finding in findings:
        placement = placements.get(id(finding))
        if placement is not None and placement is not MODULE_LEVEL and not module_level:
            index = _position(placement.function.body.body, placement.statement)
            if id(placement.function) not in earliest or index < earliest[id(placement.function)][0]:
                earliest[id(placement.function)] = (index, placement)
    chosen = []
    for finding in findings:
        if not finding.fix.needs_device:
            chosen.append(finding)
            continue
        placement = placements[id(finding)]
        if placement is MODULE_LEVEL or (
            placement is not None and not module_level
            and earliest[id(placement.function)][1].statement is placement.statement
        ):
            chosen.append(finding)
    torch_name = module_torch_alias(module) or "torch"
    expression = device_expression(options.device_expression, torch_name)
    insertions = {key: _local_definition(ctx, text, placement, f"{name} = {expression}")
                  for key, (_, placement) in earliest.items()}
    while True:
        first = [insertions[key] for key in insertions]
        updated, applied = apply(text, chosen, first=first) if first else apply(text, chosen)
        used = {id(placements[id(f)].function) for f in applied
                if f.fix.needs_device and placements[id(f)] is not MODULE_LEVEL}
        unused = [key for key in insertions if key not in used]
        if not unused:
            break
        for key in unused:  # its fixes clashed with others: no definition without a use
            del insertions[key]
    if any(f.fix.needs_device and placements[id(f)] is MODULE_LEVEL for f in applied):
        updated = define(updated, options)
    elif insertions:
        updated = _import_torch(updated)
        try:
            parse_module(updated)
        except cst.ParserSyntaxError:
            raise UnplaceableDefinition("the local definition does not parse") from None
    return updated, applied


def _position(sequence, item) -> int:
    return next((i for i, each in enumerate(sequence) if each is item), -1)


def _fix_placement(ctx: FileContext, finding: Finding, name: str, nodes: dict | None = None):
    """Where the definition must go for every edit of the fix that writes the device name to see it.

    A fix may edit several statements (DL006 rewrites every use of an imported name at once): the
    definition goes before the earliest of them in their function; edits in different functions, or
    some at module level and some in a function, get none (the fix waits, and is not applied).
    (`nodes`: the node at each edit's start, from `_nodes_at`; found here when not given.)"""
    edits = _placed_edits(finding, name)
    if nodes is None:
        nodes = _nodes_at(ctx, [e.start for e in edits])
    found = []
    for edit in edits:
        node = nodes.get(edit.start)
        placement = definition_placement(ctx, node) if node is not None else None
        if placement is None:
            return None
        found.append(placement)
    if not found:
        return None
    if all(p is MODULE_LEVEL for p in found):
        return MODULE_LEVEL
    if any(p is MODULE_LEVEL for p in found) or len({id(p.function) for p in found}) != 1:
        return None
    return min(found, key=lambda p: _position(p.function.body.body, p.statement))


def _placed_edits(finding: Finding, name: str) -> list[Edit]:
    """The edits of a fix whose place decides where its definition goes: those that write the name."""
    writes = re.compile(rf"\b{re.escape(name)}\b")
    return [e for e in finding.fix.edits if writes.search(e.content)] or list(finding.fix.edits[:1])


def _nodes_at(ctx: FileContext, positions) -> dict[Position, cst.CSTNode]:
    """For each position, the deepest node that starts there or contains it (positions in no node are left out).

    One walk of each top-level statement that holds a position, however many positions it holds: a
    statement with 20,000 fixes was walked 20,000 times. A node's positions are found by bisection in
    the sorted positions; the walk's order and its ties are those of a walk per position.
    (Ranges do not nest with decorators: a block's range starts at its first statement's `def`,
    after that statement's decorators; so every node of the top-level statement is looked at.)
    """
    points = sorted({(p.line, p.column) for p in positions})
    if not points:
        return {}

    def inside(node: cst.CSTNode) -> range:
        """The indices in `points` of the positions `node` starts at or contains."""
        code_range = ctx.positions.get(node)
        if code_range is None:
            return range(0)
        start = (code_range.start.line, code_range.start.column)
        end = (code_range.end.line, code_range.end.column)
        low = bisect.bisect_left(points, start)
        if start == end:
            return range(low, low + 1) if low < len(points) and points[low] == start else range(0)
        return range(low, bisect.bisect_left(points, end))

    statements: dict[int, int] = {}  # position index -> index of the first statement holding it
    for number, statement in enumerate(ctx.module.body):
        for node in (statement, *getattr(statement, "decorators", ())):
            for index in inside(node):
                statements.setdefault(index, number)
        if len(statements) == len(points):
            break
    owned: dict[int, set[int]] = {}  # statement index -> the position indices it holds
    for index, number in statements.items():
        owned.setdefault(number, set()).add(index)
    found: dict[int, tuple[cst.CSTNode, int]] = {}
    for number, mine in sorted(owned.items()):
        statement = ctx.module.body[number]
        stack = [(statement, 0)]
        while stack:
            node, level = stack.pop()
            if node is statement or node in ctx.parents:  # (whitespace nodes are not in the analysis' tree)
                for index in inside(node):
                    if index in mine and level > found.get(index, (None, -1))[1]:
                        found[index] = (node, level)
            stack.extend((child, level + 1) for child in node.children)
    return {Position(*points[index]): node for index, (node, _) in found.items()}


def _local_definition(ctx: FileContext, text: str, placement, definition: str) -> Edit:
    """An insertion of `definition` on its own line right before `placement.statement`, indented like it.

    It goes after the form feeds that start the statement's line (they stay first on the line,
    where they were), indented with what follows them.
    """
    start = ctx.positions[statement_start(placement.statement)].start
    rendered = _NEWLINE.split(ctx.module.code)[start.line - 1]
    line = _NEWLINE.split(text)[start.line - 1]
    rendered_head = rendered[: rendered.rfind("\f", 0, start.column) + 1]
    indentation = line[: len(line) - len(line.lstrip(" \t\f"))]
    indentation = indentation[indentation.rfind("\f") + 1:]
    if not _INDENT.fullmatch(indentation) or not rendered[: start.column].strip(" \t\f") == "":
        raise UnplaceableDefinition("the statement holding the fix is not where its line starts")
    ending = _NEWLINE.search(text, line_offsets(text)[start.line - 1])
    newline = ending.group() if ending is not None else ctx.module.default_newline
    at = Position(start.line, len(rendered_head))
    return Edit(at, at, f"{indentation}{definition}{newline}")


def apply_edits(text: str, findings: list[Finding], first: list[Edit] = ()) -> tuple[str, list[Finding]]:
    """Apply the edits of non-overlapping fixes (first come, first served); return text and the applied.

    The `first` edits (insertions of definitions) are always applied; a fix that clashes with one
    waits for the next pass.
    """
    rendering = _rendering(text)
    chosen: list[tuple[int, int, Edit]] = []
    for edit in first:
        span = rendering.span(edit.start, edit.end)
        if span is None:
            raise UnplaceableDefinition("the statement holding the fix is on a line LibCST does not render as written")
        chosen.append((*span, edit))
    taken = _Taken()
    for start, end, _ in chosen:
        taken.add(start, end)
    applied: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.start, f.code)):
        assert finding.fix is not None
        spans = [(rendering.span(e.start, e.end), e) for e in finding.fix.edits]
        if any(span is None for span, _ in spans):
            continue  # LibCST's rendering is not the text there (the engine made such fixes display-only)
        spans = [(*span, e) for span, e in spans]
        if any(taken.overlaps(s, e) for s, e, _ in spans):
            continue  # the next pass picks it up
        chosen.extend(spans)
        for start, end, _ in spans:
            taken.add(start, end)
        applied.append(finding)
    pieces = []
    cursor = 0
    firsts = {id(e) for e in first}
    for start, end, edit in sorted(chosen, key=lambda item: (item[0], item[1], id(item[2]) not in firsts)):
        pieces.append(text[cursor:start])
        pieces.append(edit.content)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), applied


def _rendering(text: str) -> Rendering:
    """The map from LibCST's positions to offsets in `text` (devlint.rendering).

    Without a form feed in the text, the rendering differs from it only on lines the engine keeps
    no fix on (`except (E) :`, a lost last line of blanks), so the text's own offsets are the map
    and the text need not be parsed again."""
    if "\f" not in text:
        return Rendering(text, text)
    return Rendering(text, parse_module(text).code)


class _Taken:
    """The spans already chosen, sorted by start: whether a new span clashes with one of them is a
    bisection and a look at the few that start close enough to reach it, not a scan of them all
    (a statement with 20,000 fixes made that quadratic)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.longest = 0

    def add(self, start: int, end: int) -> None:
        index = bisect.bisect_right(self.starts, start)
        self.starts.insert(index, start)
        self.ends.insert(index, end)
        self.longest = max(self.longest, end - start)

    def overlaps(self, start: int, end: int) -> bool:
        # A clash needs other_start < end and other_end > start (see _overlaps), so
        # other_start > start - longest.
        low = bisect.bisect_right(self.starts, start - self.longest)
        high = bisect.bisect_left(self.starts, end)
        return any(_overlaps(start, end, self.starts[i], self.ends[i]) for i in range(low, high))


def _overlaps(start: int, end: int, other_start: int, other_end: int) -> bool:
    if start == end or other_start == other_end:  # an insertion only clashes strictly inside a range
        return other_start < start < other_end or start < other_start < end
    return start < other_end and other_start < end


def define_device(text: str, options: FixOptions) -> str:
    """Insert `device = ...` after the imports (and `import torch` when nothing binds torch).

    The name is the one the rules wrote (`definition_name`: `_device` after a star import).
    """
    module = original = parse_module(text)
    torch_name = _torch_alias(text, module)
    expression = device_expression(options.device_expression, torch_name or "torch")
    name = definition_name(identifier(options.device_name), has_star_import(module))
    assert name is not None, "a fix needed a device definition that cannot be written"
    # A form feed may start an indentation ("\f    "), which LibCST infers as the default indent
    # but refuses as a parser option; a simple statement at module level needs no indent anyway.
    indent = module.default_indent if _INDENT.fullmatch(module.default_indent) else "    "
    config = cst.PartialParserConfig(encoding=module.encoding, default_indent=indent,
                                     default_newline=module.default_newline)
    try:
        statement = cst.parse_statement(f"{name} = {expression}\n", config=config)
    except cst.ParserSyntaxError as exc:  # the option's fault (see devlint.device_options), not the file's
        raise ValueError(f"the device definition `{name} = {expression}` does not parse: {exc.message}") from None
    # A blank line between the import block and the definition, as ruff's and isort's import check
    # (I001) want; the blank lines that followed the imports now follow the definition.
    statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
    body = list(module.body)
    body.insert(insertion_index(module), statement)
    module = module.with_changes(body=body)
    text = _splice_insertion(text, original.code, module.code)
    return text if torch_name is not None else _add_torch_import(text, module)


def _import_torch(text: str) -> str:
    """`import torch` where nothing binds torch (a local definition needs it too)."""
    module = parse_module(text)
    return text if _torch_alias(text, module) is not None else _add_torch_import(text, module)


def _torch_alias(text: str, module: cst.Module) -> str | None:
    """The module-level name of torch, as Python reads the names (`import ｔｏｒｃｈ` imports torch)."""
    return module_torch_alias(normalized(module) if not text.isascii() else module)


def _add_torch_import(text: str, module: cst.Module) -> str:
    """`import torch` where ruff's and isort's import order (I001) want it, when the block was in order.

    In the section of third-party imports, before the first straight import that sorts after it (or
    after the last); a section of its own when there is none (after `__future__` and the standard
    library, before the file's own modules); right after the docstring when nothing is imported.
    """
    config = cst.PartialParserConfig(encoding=module.encoding, default_newline=module.default_newline)
    statement = cst.parse_statement("import torch\n", config=config)
    body = list(module.body)
    index, before, after, among = _torch_import_place(body)
    statement = statement.with_changes(leading_lines=[cst.EmptyLine()] * before)
    if index < len(body):
        leading = list(body[index].leading_lines)
        # among a section's imports: the blank lines above the import it goes before stay above both
        blanks = _leading_blanks(leading) if among else 0
        statement = statement.with_changes(leading_lines=leading[:blanks] + list(statement.leading_lines))
        body[index] = body[index].with_changes(leading_lines=[cst.EmptyLine()] * after + leading[blanks:])
    body.insert(index, statement)
    return _splice_insertion(text, module.code, module.with_changes(body=body).code)


def _leading_blanks(lines) -> int:
    count = 0
    while count < len(lines) and lines[count].comment is None:
        count += 1
    return count


def _torch_import_place(body: list) -> tuple[int, int, int, bool]:
    """Where `import torch` goes: the index in `body`, the blank lines it adds above and below, and
    whether it goes among the imports of a section before body[index] (the blank lines above that
    statement then come above the new import)."""
    start = 1 if body and _is_docstring_line(body[0]) else 0
    end = start
    while end < len(body) and isinstance(body[end], cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in body[end].body
    ):
        end += 1
    if end == start:  # nothing imported: first, after the docstring, one blank line (two before a def) below
        if start == len(body):
            return start, int(start > 0), 0, False
        wanted = 2 if _is_definition(body[start]) else 1
        return start, int(start > 0), max(0, wanted - _leading_blanks(body[start].leading_lines)), False
    groups: list[list[int]] = []  # sections, as blank lines separate them
    for i in range(start, end):
        if not groups or _leading_blanks(body[i].leading_lines):
            groups.append([])
        groups[-1].append(i)
    kinds = [{_import_kind(body[i]) for i in group} for group in groups]
    others = [g for g, kind in zip(groups, kinds) if "other" in kind]
    # The first section of other modules is the third-party one: a module that is neither the standard
    # library's nor relative is third-party to ruff and isort unless found among the project's sources.
    if others:
        straight = [i for i in others[0] if all(isinstance(s, cst.Import) for s in body[i].body)]
        later = [i for i in straight if _module_key(body[i]) > "torch"]
        if later:
            return later[0], 0, 0, True
        return (straight[-1] + 1, 0, 0, False) if straight else (others[0][0], 0, 0, True)
    # a section of its own, after `__future__` and the standard library
    after = next((g[0] for g, kind in zip(groups, kinds) if kind - {"future", "stdlib"}), end)
    return after, 1, 0, False


def _is_docstring_line(statement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _is_definition(statement) -> bool:
    return isinstance(statement, (cst.FunctionDef, cst.ClassDef))


def _imported_modules(statement) -> list[str | None]:
    names: list[str | None] = []
    for small in statement.body:
        if isinstance(small, cst.Import):
            names.extend(dotted_name(alias.name) for alias in small.names)
        elif isinstance(small, cst.ImportFrom):
            names.append(None if small.relative else dotted_name(small.module))
    return names


def _import_kind(statement) -> str:
    kinds = set()
    for name in _imported_modules(statement):
        top = (name or "").split(".")[0]
        if name is None:
            kinds.add("local")
        elif top == "__future__":
            kinds.add("future")
        elif top in sys.stdlib_module_names:
            kinds.add("stdlib")
        else:
            kinds.add("other")
    return "other" if "other" in kinds or len(kinds) != 1 else kinds.pop()


def _module_key(statement) -> str:
    return (_imported_modules(statement)[0] or "").lower()


def _splice_insertion(text: str, roundtrip: str, updated: str) -> str:
    """Apply only what the transform inserted to the original text.

    LibCST does not reproduce every file byte for byte (a last line of blanks without a newline
    loses a line, form feeds at the start of some lines are dropped), so the rest of the file is
    taken from the original, not from the regenerated code.
    """
    prefix = 0
    limit = min(len(roundtrip), len(updated))
    while prefix < limit and roundtrip[prefix] == updated[prefix]:
        prefix += 1
    inserted = len(updated) - len(roundtrip)
    if inserted <= 0 or updated[prefix + inserted:] != roundtrip[prefix:]:
        raise UnplaceableDefinition("the transform changed more than it inserted")
    # the same insertion, moved back to the start of its line (`de|vice = ...` before `def f`)
    while prefix > 0 and updated[prefix - 1] != "\n" and updated[prefix - 1] == updated[prefix - 1 + inserted]:
        prefix -= 1
    # before the form feeds that start the line, below lines that may differ in content but not in number
    at = Rendering(text, roundtrip).before(position_at(roundtrip, prefix))
    if at is None:
        raise UnplaceableDefinition("the lines before the insertion are not the file's")
    # Regenerating the file instead would change bytes LibCST does not reproduce (`except (E) :`).
    return text[:at] + updated[prefix:prefix + inserted] + text[at:]


class UnplaceableDefinition(Exception):
    """The device definition cannot be spliced into the original text without touching other bytes."""
