"""An attribute of an instance whose every value holds no tensor off the CPU (for origins' `host_value`).

`kg = Graph(...)` then `torch.save(kg.triples, path)`: what `kg.triples` holds is what the code put there.
It is CPU data when

- `kg` is bound once, to `Cls(...)` of a class of the file or of the project (devlint.analysis.project)
  with no base but `object` (its methods are its own), and every use of `kg` reads an attribute of it
  (`kg.add(...)`, `kg.triples`), and so does every use of the instance in the methods of the class (`self.x`):
  the instance goes to no other code;
- in the file of the class and in the checked file, every value put in an attribute of that name, of any
  object, is CPU data (origins' `host_value`): `obj.triples = v`, `obj.triples += v`, an item
  `obj.triples[k] = v`, a mutating method `obj.triples.append(v)` (also on an item); a value returned by
  a method of the class whose return annotation names only types that hold no tensor
  (`-> List[Tuple[str, str]]`, devlint.analysis.host_returns) counts as CPU data (the class has no base,
  so the method is its own), and so does the object read into a name that is filled next (`xs = obj.triples`,
  then `xs.append(t)`: origins' `_filled_elsewhere`); a loop or `with` target of that name, or an attribute bound by a computed
  name anywhere in those files (`setattr(obj, name, v)` unless `name` is a literal or a loop variable over literal
  strings that are not it, `obj.__dict__`), makes it unknown.

A container passed to a function that may fill it is not followed, as in `host_value`.
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts, answers
from devlint.parsing import parse_module
from devlint.syntax import descendants

MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "__setitem__"})
_BY_DIGEST: dict = {}


def attribute_host(ctx: FileFacts, expr: cst.Attribute, judge) -> bool:
    """Is `obj.X` CPU data by the rules above? `judge(ctx, value)`: origins' `host_value`."""
    if not isinstance(expr.value, cst.Name) or expr.value.value in ctx.imported_names:
        return False
    assignments = ctx.bindings(expr.value)
    if len(assignments) != 1 or not isinstance(assignments[0].node, cst.Name):
        return False
    value = ctx.assigned_value(assignments[0].node)
    if not isinstance(value, cst.Call) or not _kept(ctx, assignments[0]):
        return False
    found = _class_of(ctx, value.func)
    if found is None:
        return False
    class_ctx, cls = found
    name = expr.attr.value
    memo = ctx.__dict__.setdefault("_devlint_host_attributes", {})
    key = (id(cls), name)
    if key not in memo:
        from devlint.analysis.listed_files import settle

        # (a value that reads the attribute again keeps what it held: assumed CPU data while judged)
        settle(ctx, memo, key, lambda: _values_host(class_ctx, name, judge, cls) and (
            class_ctx is ctx or _values_host(ctx, name, judge, None)))
    return memo[key]


def _kept(ctx: FileFacts, assignment) -> bool:
    """Is every use of the name a read of one of its attributes (`kg.add(...)`, `kg.triples`)?"""
    for access in getattr(assignment, "references", ()):
        parent = ctx.parent(access.node)
        if not (isinstance(parent, cst.Attribute) and parent.value is access.node) or parent.attr.value in (
                "__dict__", "__class__"):
            return False
    return True


def _class_of(ctx: FileFacts, func: cst.CSTNode):
    """(the facts of the file that defines the class, its ClassDef) for a class without bases."""
    if isinstance(func, cst.Name) and func.value not in ctx.imported_names:
        assignments = ctx.bindings(func)
        if len(assignments) == 1 and isinstance(assignments[0].node, cst.ClassDef):
            cls = assignments[0].node
            return (ctx, cls) if _plain(cls) and _keeps_itself(ctx, cls) else None
        return None
    view = ctx.project
    name = ctx.project_name(func)
    if view is None or name is None:
        return None
    found = view.class_of(name)
    if found is None or found.name is None:
        return None
    class_ctx = _facts(view, found.path)
    if class_ctx is None:
        return None
    classes = [s for s in class_ctx.module.body if isinstance(s, cst.ClassDef) and s.name.value == found.name]
    return (class_ctx, classes[0]) if len(classes) == 1 and _plain(classes[0]) and _keeps_itself(
        class_ctx, classes[0]) else None


def _plain(cls: cst.ClassDef) -> bool:
    return not cls.keywords and all(isinstance(b.value, cst.Name) and b.value.value == "object" for b in cls.bases)


def _keeps_itself(ctx: FileFacts, cls: cst.ClassDef) -> bool:
    """Does every method use its instance only to read its attributes (`self.x`, `self.m(...)`), never
    handing it to other code that may set one (`register(self)`)?"""
    for method in getattr(cls.body, "body", ()):
        if not isinstance(method, cst.FunctionDef) or not method.params.params:
            continue
        first = method.params.params[0].name.value
        for node in descendants(method.body):
            if isinstance(node, cst.Name) and node.value == first:
                parent = ctx.parent(node)
                if not (isinstance(parent, cst.Attribute) and parent.value is node) or parent.attr.value in (
                        "__dict__", "__class__"):
                    return False
    return True


def _facts(view, path: str) -> FileFacts | None:
    """LibCST facts of a project file, parsed once per content (its read recorded in the view)."""
    data, observed = view.read(path)
    if data is None:
        return None
    if observed not in _BY_DIGEST:
        try:
            _BY_DIGEST[observed] = FileFacts(parse_module(data))
        except Exception:  # (a file that does not parse: nothing known of it)
            _BY_DIGEST[observed] = None
    return _BY_DIGEST[observed]


def _values_host(ctx: FileFacts, name: str, judge, cls: cst.ClassDef | None) -> bool:
    """Is every value the file puts in an attribute `name` (of any object) CPU data?"""
    from devlint.analysis.path_templates import _attributes_set_by_name
    from devlint.analysis.self_paths import _bound_here

    dynamic = ctx.memoised("_devlint_attributes_set_by_name", _attributes_set_by_name)
    if dynamic is None or name in dynamic:
        return False
    for node in ctx.nodes(cst.Attribute):
        if node.attr.value != name:
            continue
        if _bound_here(ctx, node):
            statement = _statement(ctx, node)
            if isinstance(statement, cst.Del):
                continue
            if not isinstance(statement, (cst.Assign, cst.AnnAssign, cst.AugAssign)) or statement.value is None:
                return False
            if not _host(ctx, statement.value, judge, cls):
                return False
            continue
        for value in _put_into(ctx, node):
            if value is None or not _host(ctx, value, judge, cls):
                return False
        if _aliased_and_filled(ctx, node):
            return False
    return True


def _aliased_and_filled(ctx: FileFacts, node: cst.Attribute) -> bool:
    """`xs = obj.X` then `xs.append(t)`: the object is filled through another name."""
    from devlint.analysis.origins import _filled_elsewhere

    statement = ctx.parent(node)
    if not isinstance(statement, (cst.Assign, cst.AnnAssign)) or statement.value is not node:
        return False
    targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
    for target in targets:
        if not isinstance(target, cst.Name):
            return True
        if _filled_elsewhere(ctx, [a for a in ctx.bindings(target) if a.node is target], 0):
            return True
    return False


def _statement(ctx: FileFacts, node: cst.CSTNode):
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Del, cst.For, cst.CompFor, cst.With,
                               cst.AsName)):
            return parent
    return None


def _put_into(ctx: FileFacts, node: cst.Attribute) -> list:
    """The values put in the object `node` reads (or in one of its items): item assignments and
    arguments of mutating methods; None for one we cannot tell (a loop target, an augmented item)."""
    found: list = []
    current: cst.CSTNode = node
    while True:
        parent = ctx.parent(current)
        if isinstance(parent, cst.Subscript) and parent.value is current:
            target = ctx.parent(parent)
            if isinstance(target, cst.AssignTarget):
                statement = ctx.parent(target)
                found.append(statement.value if isinstance(statement, cst.Assign) else None)
                return found
            if isinstance(target, (cst.AugAssign, cst.AnnAssign)) and target.target is parent:
                found.append(target.value)
                return found
            if isinstance(target, (cst.For, cst.CompFor, cst.With, cst.AsName)):
                return [None]
            current = parent
            continue
        if isinstance(parent, cst.Attribute) and parent.value is current and parent.attr.value in MUTATORS:
            call = ctx.parent(parent)
            if isinstance(call, cst.Call):
                found.extend(a.value if not a.star else None for a in call.args)
        return found


def _host(ctx: FileFacts, value: cst.CSTNode, judge, cls: cst.ClassDef | None) -> bool:
    if cls is not None and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(
            value.func.value, cst.Name) and value.func.value.value == "self" and any(
            a is cls for a in ctx.ancestors(value)):
        from devlint.analysis.host_returns import no_tensor_type

        method = value.func.attr.value
        body = getattr(cls.body, "body", ())
        defined = [f for f in body if isinstance(f, cst.FunctionDef) and f.name.value == method]
        if len(defined) == 1 and defined[0].returns is not None and no_tensor_type(defined[0].returns.annotation):
            return True  # (a method of a class with no base: its own, and its annotation is taken at its word)
    return judge(ctx, value)


answers("instance_attribute_host", attribute_host)
