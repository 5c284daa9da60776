"""`nn.Module` subclasses whose whole base chain devlint can see, and what the chain binds.

DL009, DL010 and DL012 reason about what `nn.Module` does for a class (`model.to(device)` moves its
parameters and buffers, nothing else; a module has no `device` attribute). That holds only where every
class of the chain is known: torch.nn classes, classes of this file, and project classes in other files
(devlint.analysis.project, `ProjectView.class_chain`). A base devlint cannot see into (Hugging Face
`PreTrainedModel`, `LightningModule`, an mmcv `BaseModule`) may define `device`, override `_apply` or
move attributes itself: such a class answers None, and the rules leave it alone.

`module_classes(ctx)` returns the file's one `ModuleClasses` (built on first use, kept in the file's memo, devlint.facts):

`chain(cls) -> Chain | None`
    for a class of this file: None unless it subclasses `nn.Module` and every base is known.
`instance_chain(expr) -> Chain | None`
    for an expression that is certainly an instance of such a class (`Net()`, `nn.Linear(2, 2)`, a name
    whose every binding in its scope is one, `Net().to(device).eval()`, `self.encoder` whose every
    assignment is one); None otherwise (a parameter, a function's result, `self`).
`Chain.members`
    every name some class of the chain binds (class body, methods, `self.x = ...`, literal
    `register_buffer`/`add_module`/`setattr` names), "*" when one may bind any name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from devlint.analysis.bulk_attributes import writes_in_bulk_cst

from devlint.facts import FileFacts, target_names
from devlint.analysis.vocabulary import MODULE, MODULE_METHODS, is_module_base, torch_call_kind
from devlint.syntax import string_value

# torch.nn classes that do define what a plain module lacks (`self.device` in DDP's __init__).
_TORCH_MEMBERS = {
    "torch.nn.parallel.DistributedDataParallel": frozenset({"device"}),
    "torch.nn.parallel.distributed.DistributedDataParallel": frozenset({"device"}),
}
ANY = "*"


@dataclass(frozen=True)
class Chain:
    members: frozenset
    local: cst.ClassDef | None = None  # the class of this file, when it is one

    def binds(self, name: str) -> bool:
        return name in self.members or ANY in self.members


def module_classes(ctx: FileFacts) -> "ModuleClasses":
    """The file's module classes, built once per file."""
    return ctx.memoised(ModuleClasses, ModuleClasses)


class ModuleClasses:
    def __init__(self, ctx: FileFacts) -> None:
        self.ctx = ctx
        self._chains: dict[cst.ClassDef, Chain | None] = {}

    @cached_property
    def _local_classes(self) -> dict[str, cst.ClassDef]:
        """Classes of the file by name; a name defined twice (or bound otherwise too) is left out."""
        counts: dict[str, list[cst.ClassDef]] = {}
        for node in self.ctx.nodes(cst.ClassDef):
            counts.setdefault(node.name.value, []).append(node)
        return {name: nodes[0] for name, nodes in counts.items()
                if len(nodes) == 1 and name not in self.ctx.binding_sites and name not in self.ctx.imported_names}

    def subclasses(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """Classes of the file that name `cls` as a base."""
        name = cls.name.value
        return [node for node in self.ctx.nodes(cst.ClassDef)
                if any(isinstance(b.value, cst.Name) and b.value.value == name for b in node.bases)]

    def chain(self, cls: cst.ClassDef) -> Chain | None:
        if cls not in self._chains:
            self._chains[cls] = None  # (a class that is its own base, through others: unknown)
            self._chains[cls] = self._compute(cls)
        return self._chains[cls]

    def _compute(self, cls: cst.ClassDef) -> Chain | None:
        if cls.keywords or not cls.bases:
            return None  # (a metaclass may add anything)
        members = set(self._own_members(cls))
        module = False
        for base in cls.bases:
            if base.star:
                return None
            found = self.base_chain(base.value)
            if found is None:
                return None
            is_module, base_members = found
            module |= is_module
            members |= base_members
        return Chain(frozenset(members), cls) if module else None

    def base_chain(self, expr: cst.BaseExpression) -> tuple[bool, frozenset] | None:
        """(is it an nn.Module class, the names its chain binds) for a base or a called class; None
        when devlint cannot see the whole chain."""
        if isinstance(expr, cst.Name) and expr.value in self._local_classes:
            chain = self.chain(self._local_classes[expr.value])
            return None if chain is None else (True, chain.members)
        names = self.ctx.qualified_names(expr)
        if len(names) != 1:
            return None
        name = names.pop()
        if name in ("object", "builtins.object"):
            return False, frozenset()
        if is_module_base(name):
            return True, _TORCH_MEMBERS.get(name, frozenset())
        return self._project_chain(expr, name)

    def _project_chain(self, expr: cst.BaseExpression, name: str) -> tuple[bool, frozenset] | None:
        view = self.ctx.project
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        if view is None or not isinstance(root, cst.Name) or root.value not in self.ctx.imported_names:
            return None
        ref = view.class_of(name)
        found = view.class_chain(ref) if ref is not None else None
        if found is None:
            return None
        externals, members = found
        if not externals or not all(is_module_base(e) or e in ("object", "builtins.object") for e in externals):
            return None
        if not any(is_module_base(e) for e in externals):
            return None
        for external in externals:
            members = members | _TORCH_MEMBERS.get(external, frozenset())
        return True, frozenset(members)

    def _own_members(self, cls: cst.ClassDef) -> frozenset:
        """What devlint.analysis.project.class_members says of a class of another file, read from LibCST's tree
        (no second parse): names bound in the body, `self.x` stores, literal `setattr` / `register_*`
        names; "*" for a keyword base, `__getattr__`, `__setattr__` or a computed name."""
        found: set[str] = set()
        if cls.keywords:
            found.add(ANY)
        body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
        for item in body:
            if isinstance(item, (cst.FunctionDef, cst.ClassDef)):
                found.add(item.name.value)
            elif isinstance(item, cst.SimpleStatementLine):
                for small in item.body:
                    targets = ([t.target for t in small.targets] if isinstance(small, cst.Assign) else
                               [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else [])
                    found.update(n.value for t in targets for n in target_names(t))
        if found & {"__getattr__", "__getattribute__", "__setattr__"}:
            found.add(ANY)
        for attr in inside(self.ctx, cls, cst.Attribute):
            if isinstance(attr.value, cst.Name) and attr.value.value == "self" and _stored(self.ctx, attr):
                found.add(attr.attr.value)
        for call in inside(self.ctx, cls, cst.Call):
            func = call.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            if name in ("setattr", "register_buffer", "register_parameter", "add_module", "register_module") and call.args:
                key = call.args[1] if name == "setattr" and len(call.args) > 1 else call.args[0]
                literal = string_value(key.value)
                found.add(literal if literal is not None else ANY)
        if writes_in_bulk_cst(lambda kind: inside(self.ctx, cls, kind), self.ctx.parent):  # `self.__dict__.update(...)`
            found.add(ANY)
        return frozenset(found)

    # -- instances -------------------------------------------------------------------------------------
    def instance_chain(self, expr: cst.BaseExpression, depth: int = 0) -> Chain | None:
        if depth > 8:
            return None
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in MODULE_METHODS and func.attr.value != "type":
                return self.instance_chain(func.value, depth + 1)  # `Net().to(device).eval()`
            found = self.base_chain(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if found is None or not found[0]:
                return None
            names = self.ctx.qualified_names(func)
            if any(n.startswith("torch.") for n in names) and not all(torch_call_kind(n) is MODULE for n in names):
                return None  # (`F.relu(x)`: a function of torch.nn, not a class)
            local = self._local_classes.get(func.value) if isinstance(func, cst.Name) else None
            return Chain(found[1], local)
        if isinstance(expr, cst.Name) and expr.value != "self":
            if not any(isinstance(value := self.ctx.assigned_value(site), cst.Call)
                       and self.instance_chain(value, depth + 1) is not None
                       for site in self.ctx.binding_sites.get(expr.value, ())):
                return None  # (settled without the scope analysis: no binding of the name makes a module)
            values = self._bound_values(expr)
            chains = [self.instance_chain(v, depth + 1) for v in values]
            if not chains or any(c is None for c in chains):
                return None
            return Chain(frozenset().union(*(c.members for c in chains)),
                         chains[0].local if len({c.local for c in chains}) == 1 else None)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            values = self.self_attribute_values(expr)
            chains = [self.instance_chain(v, depth + 1) for v in values]
            if not chains or any(c is None for c in chains):
                return None
            return Chain(frozenset().union(*(c.members for c in chains)))
        return None

    def _bound_values(self, name: cst.Name) -> list[cst.BaseExpression]:
        """The values of every binding of `name` in its scope, all plain assignments; [] otherwise."""
        assignments = self.ctx.bindings(name)
        values = []
        for assignment in assignments:
            value = self.ctx.assigned_value(assignment.node)
            if value is None:
                return []
            values.append(value)
        return values

    def self_attribute_values(self, attr: cst.Attribute) -> list[cst.BaseExpression]:
        """The values of every assignment to `self.<name>` in the class; [] when one is not plain."""
        cls = self.ctx.enclosing(attr, cst.ClassDef)
        if cls is None:
            return []
        name = attr.attr.value
        values = []
        for node in inside(self.ctx, cls, cst.Attribute):
            if not (isinstance(node.value, cst.Name) and node.value.value == "self" and node.attr.value == name):
                continue
            parent = self.ctx.parent(node)
            if isinstance(parent, cst.AssignTarget) and parent.target is node:
                statement = self.ctx.parent(parent)
                if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
                    return []
                values.append(statement.value)
            elif isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and parent.target is node:
                return []
            elif isinstance(parent, (cst.Element, cst.StarredElement, cst.For, cst.CompFor, cst.AsName, cst.Del)):
                return []
        return values


def _stored(ctx: FileFacts, node: cst.CSTNode) -> bool:
    """Is `node` a target that a statement binds (`self.x = ...`, `self.a, self.b = ...`, `for self.x in`)?"""
    child, parent = node, ctx.parent(node)
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor)):
        return parent.target is child
    return isinstance(parent, cst.AsName) and parent.name is child


def inside(ctx: FileFacts, root: cst.CSTNode, kind: type) -> list[cst.CSTNode]:
    """The nodes of `kind` inside `root`, a function or class: one pass over the file's nodes of that
    kind per context, not a walk of each subtree per question."""
    index = ctx.memo.setdefault("devlint_inside", {})
    by_owner = index.get(kind)
    if by_owner is None:
        by_owner = index[kind] = {}
        for node in ctx.nodes(kind):
            for ancestor in ctx.ancestors(node):
                if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                    by_owner.setdefault(ancestor, []).append(node)
    return by_owner.get(root, [])


def enclosing_method(ctx: FileFacts, node: cst.CSTNode) -> tuple[cst.FunctionDef, cst.ClassDef] | None:
    """The method (a function defined directly in a class body) around `node`, and its class."""
    function = ctx.enclosing(node, cst.FunctionDef)
    if function is None:
        return None
    block = ctx.parent(function)
    cls = ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
    return (function, cls) if isinstance(cls, cst.ClassDef) else None


def methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """The class's own methods by name (the last definition wins, as in Python)."""
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return {item.name.value: item for item in body if isinstance(item, cst.FunctionDef)}


def reachable_methods(ctx: FileFacts, cls: cst.ClassDef, start: str) -> list[cst.FunctionDef]:
    """`start` and the methods of the class it calls as `self.m(...)`, transitively (kept per context)."""
    cache = ctx.memo.setdefault("devlint_reachable_methods", {})
    if (cls, start) not in cache:
        cache[cls, start] = _reachable(ctx, cls, start)
    return cache[cls, start]


def _reachable(ctx: FileFacts, cls: cst.ClassDef, start: str) -> list[cst.FunctionDef]:
    own = methods(cls)
    if start not in own:
        return []
    seen = [own[start]]
    index = 0
    while index < len(seen):
        function = seen[index]
        index += 1
        for call in inside(ctx, function, cst.Call):
            func = call.func
            if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
                    and func.attr.value in own and own[func.attr.value] not in seen):
                seen.append(own[func.attr.value])
    return seen
