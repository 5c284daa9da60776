"""Where does a file that `torch.load` reads come from? (DL002, and the placement of what it loads.)

A file whose every known writer wrote CPU data loads anywhere without `map_location`. The writers
found, for the path expression of the load:

- `torch.save(obj, same path)` in this file (the same literal, the same binding of a name, or the same
  expression over those: `tmp_path / "m.pt"`, `os.path.join(d, "m.pt")`, `str(p)`; an attribute of the
  instance never re-bound after construction, `os.path.join(self.root, "m.pt")`, and a name bound more than
  once where the binding a read sees is certain: devlint.analysis.self_paths);
- a function that writes its path parameter with `torch.save` (of this file, or a top-level function
  imported from the project, devlint.analysis.origin_files), called with the same path: `save_vocab(vocab,
  path)`; what it saves is its own CPU value, or an argument of the call, judged here;
- a pytest fixture the loading test receives the path from (devlint.analysis.fixtures), which returns a
  path it saved CPU data to.

"CPU data" is a value the placement fact says lives on the CPU, or holds no tensor at all (strings,
numbers, PIL images, containers of those, the result of a function whose definition says so:
devlint.analysis.host_returns), and that is not filled later with values of unknown place
(`names.append(t)`). Any other writer of the path (a call named like one: `save_checkpoint(path)`,
`trainer.fit(...)`, `open(path, "wb")`) leaves the origin unknown, and so does a path we cannot
identify (a parameter of a function that is not a test, `self.path` re-bound after construction).

`written_on_cpu(ctx, path)`: True only when writers were found and all of them wrote CPU data.
`instance_place(ctx, call)`: the placement of `Cls(...)` for a class (of this file or the project) that
never moves anything to a device: CPU when its arguments are, so a `torch.save` of it is CPU data.
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.places import CPU
from devlint.facts import FileFacts, answer
from devlint.analysis import host_flows as _host_flows, host_returns as _host_returns, self_paths as _self_paths
from devlint.syntax import descendants, dotted_name, find_arg, string_value

SAVERS = frozenset({"torch.save", "torch.serialization.save", "torch.jit.save"})
LOADERS = frozenset({"torch.load", "torch.serialization.load", "torch.jit.load", "torch.jit._serialization.load"})
# Calls that keep a path's identity: `str(p)`, `Path(p)`, `os.fspath(p)`.
SAME_PATH = frozenset({"str", "os.fspath", "pathlib.Path", "Path", "pathlib.PurePath"})
JOINS = frozenset({"os.path.join", "posixpath.join", "ntpath.join"})
# A call with the path as an argument whose name says it may write there.
WRITER_WORDS = ("save", "write", "dump", "export", "store", "copy", "move", "rename", "download", "fit", "train",
                "checkpoint", "serial", "pickle", "persist", "replace", "symlink", "link")
MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "__setitem__"})
# Methods only strings (and bytes) have: their result holds no tensor.
STRING_METHODS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold", "title", "capitalize",
                            "decode", "encode", "format", "zfill", "removeprefix", "removesuffix"})
MAX_DEPTH = 12


# -- the identity of a path expression ------------------------------------------------------------------
def path_key(ctx: FileFacts, expr: cst.CSTNode, depth: int = 0):
    """What identifies the file a path expression names, or None: a literal's text, one binding of a name
    (a parameter too: a test's fixture path; of a name bound several times, the one that certainly ran
    last before the use, devlint.analysis.flow.last_binding), or an expression built from those by `/`, `+`,
    `os.path.join`, f-strings and `str()`/`Path()`."""
    if depth > MAX_DEPTH:
        return None
    text = string_value(expr)
    if text is not None:
        return ("literal", text)
    if isinstance(expr, cst.Name):
        if expr.value in ctx.imported_names:
            return None
        assignments = ctx.bindings(expr)
        if len(assignments) > 1:  # re-bound: the binding this read certainly sees (devlint.analysis.self_paths)
            assignments = [b for b in [_self_paths.rebound_binding(ctx, expr)] if b is not None]
        if len(assignments) != 1:
            return None
        node = assignments[0].node
        value = ctx.assigned_value(node)
        if value is not None:
            inner = path_key(ctx, value, depth + 1)
            if inner is not None and (inner[0] == "literal" or _self_paths.has_attribute(inner)):
                return inner
        elif not isinstance(node, cst.Param):
            return None  # (a loop target, an unpacking, an import: not one value)
        return ("binding", node)
    if isinstance(expr, cst.Attribute):
        return _self_paths.attribute_key(ctx, expr, path_key)  # `self.root`: see devlint.analysis.self_paths
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Divide, cst.Add)):
        left, right = path_key(ctx, expr.left, depth + 1), path_key(ctx, expr.right, depth + 1)
        return None if left is None or right is None else ("join", left, right)
    if isinstance(expr, cst.Call) and not any(a.star for a in expr.args):
        names = ctx.qualified_names(expr.func) | {dotted_name(expr.func) or ""}
        args = [a for a in expr.args if a.keyword is None]
        if names & SAME_PATH and len(expr.args) == 1 and args:
            return path_key(ctx, args[0].value, depth + 1)
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "as_posix" and not expr.args:
            return path_key(ctx, expr.func.value, depth + 1)  # `p.as_posix()`: the same file as `p`
        if names & JOINS or (isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "joinpath"):
            parts = [expr.func.value] if isinstance(expr.func, cst.Attribute) and not names & JOINS else []
            keys = [path_key(ctx, p, depth + 1) for p in parts + [a.value for a in args]]
            if len(args) != len(expr.args) or None in keys:
                return None
            key = keys[0]
            for other in keys[1:]:
                key = ("join", key, other)
            return key
        return None
    if isinstance(expr, cst.FormattedString):
        parts = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value)
            elif part.format_spec is None and part.conversion is None:
                inner = path_key(ctx, part.expression, depth + 1)
                if inner is None:
                    return None
                parts.append(inner)
            else:
                return None
        return ("format", tuple(parts))
    return None


# -- what was written there --------------------------------------------------------------------------------
def written_on_cpu(ctx: FileFacts, path: cst.CSTNode) -> bool:
    """Was the file at `path` written, by every writer found, from CPU data (and by at least one)?"""
    key = path_key(ctx, path)
    if key is None:
        return False
    writers = [(call, _verdict(ctx, call, arg)) for call, arg in _calls_with(ctx, key)]
    verdicts = [v for _, v in writers if v is not None]
    if verdicts and _self_paths.has_attribute(key) and not _self_paths.same_class_writer(
            ctx, path, [c for c, v in writers if v is not None]):
        return False  # (the instance's attribute ties the path to its class's own writers)
    if verdicts:
        return all(verdicts)
    if isinstance(path, cst.Name) and key[0] == "binding" and isinstance(key[1], cst.Param):
        return _fixture_path_on_cpu(ctx, key[1])
    return False


def _calls_with(ctx: FileFacts, key) -> list[tuple[cst.Call, cst.Arg]]:
    index = ctx.__dict__.setdefault("_devlint_path_uses", {})
    if not index:
        index[None] = []
        for call in ctx.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and any(w in func.attr.value.lower() for w in WRITER_WORDS + ("touch",)):
                found = path_key(ctx, func.value)  # `path.write_bytes(data)`: a writer of that path
                if found is not None:
                    index.setdefault(_hashable(found), []).append((call, None))
            for arg in call.args:
                if isinstance(arg.value, (cst.SimpleString, cst.Name, cst.BinaryOperation, cst.Call,
                                          cst.FormattedString, cst.Attribute)):
                    found = path_key(ctx, arg.value)
                    if found is not None:
                        index.setdefault(_hashable(found), []).append((call, arg))
    return index.get(_hashable(key), [])


def _hashable(key):
    if isinstance(key, tuple):
        return tuple(_hashable(k) for k in key)
    if isinstance(key, cst.CSTNode):
        return ("node", id(key))
    return key


def _verdict(ctx: FileFacts, call: cst.Call, arg: cst.Arg) -> bool | None:
    """True: this call wrote CPU data at the path; False: it wrote (or may have written) other data;
    None: it does not write (a load, `os.path.exists(p)`, `print(p)`)."""
    if arg is None:
        return False  # (the path's own writing method)
    names = ctx.qualified_names(call.func)
    if names & LOADERS:
        return None
    if names & SAVERS:
        if find_arg(call, "f", 1) is not arg:
            return False  # (the path saved as data?)
        obj = find_arg(call, "obj", 0)
        return obj is not None and host_value(ctx, obj.value)
    writer = _writer_verdict(ctx, call, arg)
    if writer is not None:
        return writer
    if _only_reads(ctx, call, arg):
        return None  # `load_checkpoint(path)` of a function of the file that only loads it
    last = (dotted_name(call.func) or "").rsplit(".", 1)[-1].lower()
    if last == "open":
        mode = find_arg(call, "mode", 1)
        text = string_value(mode.value) if mode is not None else "r"
        return None if text is not None and not set(text) & set("wax+") else False
    if any(word in last for word in WRITER_WORDS):
        return False
    return None


def _writer_verdict(ctx: FileFacts, call: cst.Call, arg: cst.Arg) -> bool | None:
    """A function of this file or the project that saves to its path parameter with `torch.save`."""
    saves = answer("writer_saves")(ctx, call)  # (devlint.analysis.origin_files)
    if saves is None:
        return None
    verdicts = []
    for path_param, obj in saves:
        given = _argument(call, path_param)
        if given is not arg:
            continue
        if obj[0] == "cpu":
            verdicts.append(True)
        elif obj[0] == "param":
            value = _argument(call, obj[1])
            verdicts.append(value is not None and host_value(ctx, value.value))
        else:
            verdicts.append(False)
    return all(verdicts) if verdicts else None


def _only_reads(ctx: FileFacts, call: cst.Call, arg: cst.Arg) -> bool:
    from devlint.analysis.path_readers import only_reads

    return only_reads(ctx, call, arg)


def _argument(call: cst.Call, param: tuple) -> cst.Arg | None:
    """The argument given for the parameter (index, name) of the called function."""
    index, name = param
    return find_arg(call, name, index)


def _fixture_path_on_cpu(ctx: FileFacts, param: cst.Param) -> bool:
    from devlint.analysis.fixtures import fixture_of

    fixture = fixture_of(ctx, param)
    if fixture is None:
        return False
    if fixture.definition is None:
        return bool(getattr(fixture.facts, "cpu_file", False))
    return fixture_writes_cpu(ctx, fixture.definition)


def fixture_writes_cpu(ctx: FileFacts, function: cst.FunctionDef) -> bool:
    """Does the fixture return (or yield) only paths it saved CPU data to?"""
    from devlint.analysis.fixtures import returned_values

    values = returned_values(function)
    if not values:
        return False
    for value in values:
        key = path_key(ctx, value)
        uses = [(c, a) for c, a in _calls_with(ctx, key) if _inside(ctx, c, function)] if key is not None else []
        verdicts = [v for v in (_verdict(ctx, c, a) for c, a in uses) if v is not None]
        if not verdicts or not all(verdicts):
            return False
    return True


def _inside(ctx: FileFacts, node: cst.CSTNode, root: cst.CSTNode) -> bool:
    return any(a is root for a in ctx.ancestors(node))


# -- values without a tensor off the CPU -------------------------------------------------------------------
def host_value(ctx: FileFacts, expr: cst.CSTNode, depth: int = 0) -> bool:
    """Does `expr` hold only CPU tensors or none at all (strings, numbers, PIL images, containers of those)?"""
    placement = answer("placement")  # (devlint.analysis.placement, which asks this module)

    if depth > MAX_DEPTH:
        return False
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return all(host_value(ctx, e.value, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return all(isinstance(e, cst.DictElement) and host_value(ctx, e.value, depth + 1) for e in expr.elements)
    if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return _comprehension_host(ctx, expr, expr.elt, depth)
    if isinstance(expr, cst.DictComp):
        return _comprehension_host(ctx, expr, expr.value, depth)
    if isinstance(expr, cst.Call):
        names = ctx.qualified_names(expr.func)
        if any(n.startswith("PIL.") for n in names):
            return True  # an image
        if names & LOADERS and answer("listed_file_loaded")(ctx, expr):
            return True  # a file that only CPU data of its naming scheme went into (devlint.analysis.listed_files)
        if names & {"list", "tuple", "sorted", "set", "dict", "frozenset"} and len(expr.args) == 1:
            return host_value(ctx, expr.args[0].value, depth + 1)
        if _host_flows.call_flows_host(ctx, expr, host_value, depth):
            return True  # `dict.fromkeys(words)`, `d.values()` (devlint.analysis.host_flows)
        if names & {"str", "repr", "int", "float", "bool", "len"} or (
                isinstance(expr.func, cst.Attribute) and expr.func.attr.value in STRING_METHODS):
            return True
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "join" and string_value(
                expr.func.value) is not None:
            return True  # `" ".join(words)`
        # (devlint.analysis.origin_files reads the project file that defines the function)
        if _host_returns.call_returns_host(ctx, expr, host_value, answer("host_functions")):
            return True  # `def describe(obj) -> str`
    if isinstance(expr, cst.Name):
        assignments = ctx.bindings(expr)
        if assignments and not _filled_elsewhere(ctx, assignments, depth):
            values = [ctx.assigned_value(a.node) for a in assignments]
            # `xs = list(dict.fromkeys(xs))` reads the name it binds: assumed host while judged, which holds
            # by induction since every binding, the first one too, must be.
            judging = ctx.__dict__.setdefault("_devlint_host_names", set())
            key = frozenset(id(a.node) for a in assignments)
            if key in judging:
                return True
            judging.add(key)
            try:
                if all(v is not None for v in values) and all(host_value(ctx, v, depth + 1) for v in values):
                    return True
            finally:
                judging.discard(key)
        elif assignments:
            return False
    if isinstance(expr, cst.Attribute) and answer("instance_attribute_host")(ctx, expr, host_value):
        return True  # `kg.triples` of an instance whose every value put there is (devlint.analysis.host_attributes)
    return placement(ctx).of(expr) is CPU and not (isinstance(expr, cst.Name) and _filled_elsewhere(
        ctx, ctx.bindings(expr), depth))


def _comprehension_host(ctx: FileFacts, comp, element: cst.CSTNode, depth: int) -> bool:
    """`[Image.open(p) for p in paths]`: the element alone decides when it reads no loop variable."""
    if isinstance(element, (cst.Call, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return host_value(ctx, element, depth + 1)
    return _host_flows.comprehension_flows_host(ctx, comp, element, host_value, depth)  # `[t for t in words]`


def _filled_elsewhere(ctx: FileFacts, assignments, depth: int) -> bool:
    """Is the object put in the name filled later with values not known to be host values
    (`xs.append(t)`, `d[k] = t`, `d.update(other)`)?"""
    for assignment in assignments:
        for access in getattr(assignment, "references", ()):
            node = access.node
            parent = ctx.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in MUTATORS:
                call = ctx.parent(parent)
                if not isinstance(call, cst.Call) or not all(
                        host_value(ctx, a.value, depth + 1) for a in call.args if a.keyword is None):
                    return True
            if isinstance(parent, cst.Subscript) and parent.value is node:
                target = ctx.parent(parent)
                if isinstance(target, cst.AssignTarget):
                    statement = ctx.parent(target)
                    if not isinstance(statement, cst.Assign) or not host_value(ctx, statement.value, depth + 1):
                        return True
                elif isinstance(target, cst.AugAssign):
                    return True
    return False


# -- instances of classes that move nothing ------------------------------------------------------------------
def instance_place(ctx: FileFacts, call: cst.Call):
    """CPU for `Cls(args)` of a class (of this file or the project) that moves nothing to a device in any
    of its methods nor its project bases, given CPU arguments; None when that cannot be told."""
    placement = answer("placement")  # (devlint.analysis.placement, which asks this module)

    if any(a.star for a in call.args) or find_arg(call, "device", None) is not None:
        return None
    if not _class_moves_nothing(ctx, call.func):
        return None
    if all(host_value(ctx, a.value) or placement(ctx).of(a.value) is CPU for a in call.args):
        return CPU
    return None


def _class_moves_nothing(ctx: FileFacts, func: cst.CSTNode) -> bool:
    if isinstance(func, cst.Name):
        assignments = ctx.bindings(func)
        if len(assignments) == 1 and isinstance(assignments[0].node, cst.ClassDef):
            return _local_class_moves_nothing(ctx, assignments[0].node, 0)
    if ctx.project is None:
        return False
    name = ctx.project_name(func)
    return name is not None and ctx.project.class_moves_nothing(name) is True


def _local_class_moves_nothing(ctx: FileFacts, cls: cst.ClassDef, depth: int) -> bool:
    from devlint.analysis.class_moves import MOVING_METHODS, allowed_base

    if depth > MAX_DEPTH or cls.keywords:
        return False
    for node in descendants(cls):
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVING_METHODS:
                return False
            if find_arg(node, "device", None) is not None or find_arg(node, "map_location", None) is not None:
                return False
            if ctx.qualified_names(node.func) & LOADERS:
                return False  # (what it loads may be anywhere)
    for base in cls.bases:
        names = ctx.qualified_names(base.value)
        if isinstance(base.value, cst.Name):
            assignments = ctx.bindings(base.value)
            if len(assignments) == 1 and isinstance(assignments[0].node, cst.ClassDef):
                if not _local_class_moves_nothing(ctx, assignments[0].node, depth + 1):
                    return False
                continue
        if not names or not all(allowed_base(n) for n in names):
            return False
    return True
