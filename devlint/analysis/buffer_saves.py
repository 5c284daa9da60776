"""A save through an in-memory buffer, for the saving helpers devlint.analysis.origin_files follows.

Helpers that write through a file system layer (fsspec, cloud storage) often serialise first:

    buffer = io.BytesIO()
    torch.save(data, buffer)
    with fsspec.open(path, "wb") as f:
        f.write(buffer.getvalue())

The file at `path` then holds exactly what `torch.save` wrote, so it is judged like `torch.save(data,
path)`. That holds only when the opened file receives nothing but the buffer's bytes (`f.write(
buffer.getvalue())` / `getbuffer()`, every use of `f`), and the buffer is a name bound once to
`io.BytesIO()` with no argument that nothing but `torch.save(obj, buffer)` writes into (its other uses are
`getvalue()`, `getbuffer()`, `seek(...)`, `tell()`).
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts
from devlint.syntax import find_arg

_SAVERS = frozenset({"torch.save", "torch.serialization.save"})
_BYTES = frozenset({"getvalue", "getbuffer"})
_READS = _BYTES | {"seek", "tell"}


def buffered_objects(ctx: FileFacts, opened: cst.Call) -> list[cst.BaseExpression] | None:
    """The objects saved into the buffer whose bytes are all that the file `opened` (an `open(...)` call
    that is a `with` item bound by `as f`) receives; None for any other shape."""
    item = ctx.parent(opened)
    if not (isinstance(item, cst.WithItem) and item.item is opened and item.asname is not None
            and isinstance(item.asname.name, cst.Name)):
        return None
    handle = item.asname.name
    buffers = []
    for assignment in ctx.bindings(handle):
        if assignment.node is not handle:
            return None  # (the handle's name bound again)
        for access in assignment.references:
            buffer = _written_bytes_of(ctx, access.node)
            if buffer is None:
                return None
            buffers.append(buffer)
    if not buffers:
        return None
    objects = []
    for buffer in buffers:
        saved = _saved_into(ctx, buffer)
        if saved is None:
            return None
        objects.extend(saved)
    return objects


def _written_bytes_of(ctx: FileFacts, handle: cst.Name) -> cst.Name | None:
    """`f.write(buffer.getvalue())`: the buffer name."""
    attribute = ctx.parent(handle)
    call = ctx.parent(attribute)
    if not (isinstance(attribute, cst.Attribute) and attribute.value is handle and attribute.attr.value == "write"
            and isinstance(call, cst.Call) and call.func is attribute and len(call.args) == 1):
        return None
    value = call.args[0].value
    if (isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in _BYTES and isinstance(value.func.value, cst.Name)):
        return value.func.value
    return None


def _saved_into(ctx: FileFacts, buffer: cst.Name) -> list[cst.BaseExpression] | None:
    assignments = ctx.bindings(buffer)
    if len(assignments) != 1:
        return None
    value = ctx.assigned_value(assignments[0].node)
    if not (isinstance(value, cst.Call) and not value.args and "io.BytesIO" in ctx.qualified_names(value.func)):
        return None
    saved = []
    for access in assignments[0].references:
        node = access.node
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _READS:
            continue
        call = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(call, cst.Call) and ctx.qualified_names(call.func) & _SAVERS and find_arg(call, "f", 1) is parent:
            obj = find_arg(call, "obj", 0)
            if obj is None:
                return None
            saved.append(obj.value)
            continue
        return None
    return saved or None
