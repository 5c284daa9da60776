"""What one file of the project says, read with the standard-library `ast` (no LibCST): its classes
(bases, whether they define `cuda()`, the names they bind), its top-level functions (the terms of their
returns), its module-level names (an import, a value, once-bound or not) and its star imports. The
project index (devlint.analysis.project) reads each file it needs once through `summarise_file`."""

from __future__ import annotations

from dataclasses import dataclass, field

from devlint.analysis.bulk_attributes import writes_in_bulk_ast
from devlint.analysis.class_moves import class_moves
from devlint.depends import digest


# -- what one file says, read with `ast` ---------------------------------------------------------------
@dataclass(frozen=True)
class ClassFacts:
    bases: tuple  # dotted text of each positional base (`nn.Module`, `base.Net`), None when not dotted
    defines_cuda: bool
    # names the class binds (body, methods, `self.x = ...`, literal `register_buffer` names); "*" when it
    # may bind any (a `__getattr__`, `setattr(self, name, ...)`, a keyword base such as a metaclass)
    members: frozenset = frozenset()
    moves: bool = True  # a method moves, places or loads something (devlint.analysis.class_moves)


@dataclass(frozen=True)
class FunctionFacts:
    returns: tuple | None  # the terms of its returns (see _term); None: unknown (generator, decorator, ...)
    decorators: tuple = ()  # dotted text of each decorator


@dataclass
class FileFacts:
    path: str
    digest: str
    module: str | None  # dotted module name from the package chain (`pkg.models`), None outside packages
    # top-level name -> ("class", ClassFacts) | ("function", FunctionFacts) | ("import", qualified)
    #                 | ("value", term) | ("other",)
    names: dict = field(default_factory=dict)
    star_imports: tuple = ()  # qualified modules of `from X import *`


def summarise_file(path: str, data: bytes, module: str | None) -> FileFacts | None:
    """The file's facts; None when it does not parse. In a run with workers, the facts one worker
    found are loaded by the others (devlint.worker_share): the index of each worker reads the same
    project modules (nn/modules/module.py for every torch module), at about the same time."""
    from devlint import worker_share

    if worker_share.FOLDER is None:
        return _summarise_file(path, data, module)
    key = digest(f"{path}\0{module}\0".encode("utf-8", "surrogatepass") + data)
    return worker_share.obtain("facts", key, lambda: _summarise_file(path, data, module))


def _summarise_file(path: str, data: bytes, module: str | None) -> FileFacts | None:
    import ast

    from devlint.prefilter import parsed_or_none  # (here, as `ast`: kept off the warm run's imports)

    tree = parsed_or_none(data)
    if tree is None:
        return None
    facts = FileFacts(path, digest(data), module)
    stars: list[str] = []

    def bind(name: str, fact: tuple) -> None:
        facts.names[name] = ("other",) if name in facts.names else fact

    def statements(body):
        for node in body:
            yield node
            if isinstance(node, (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)) \
                    or type(node).__name__ == "TryStar":
                for part in ("body", "orelse", "finalbody"):
                    yield from statements(getattr(node, part, ()))
                for handler in getattr(node, "handlers", ()):
                    yield from statements(handler.body)
            elif type(node).__name__ == "Match":
                for case in node.cases:
                    yield from statements(case.body)

    for node in statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    bind(alias.asname, ("import", alias.name))
                else:
                    root = alias.name.split(".")[0]
                    bind(root, ("import", root))
        elif isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    stars.append(source)
                    continue
                qualified = f"{source}{alias.name}" if source.endswith(".") else f"{source}.{alias.name}"
                bind(alias.asname or alias.name, ("import", qualified))
        elif isinstance(node, ast.ClassDef):
            bases = tuple(_dotted(b) for b in node.bases)
            bind(node.name, ("class", ClassFacts(bases, _defines_cuda(node), class_members(node), class_moves(node))))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bind(node.name, ("function", _function_facts(node)))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _target_names(target):
                    simple = len(targets) == 1 and isinstance(target, ast.Name) and node.value is not None
                    bind(name, ("value", _term(node.value, {}, 0)) if simple else ("other",))
        else:
            for child in ast.walk(node) if isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.With,
                                                            ast.AsyncWith, ast.Delete)) else ():
                if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                    bind(child.id, ("other",))
    # walrus and other exotic module-level bindings: anything stored that is not yet known
    for node in statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for child in ast.walk(node):
            if isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
                facts.names[child.target.id] = ("other",)
    facts.star_imports = tuple(stars)
    return facts


def _dotted(node) -> str | None:
    import ast

    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _target_names(target) -> list[str]:
    import ast

    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _defines_cuda(cls) -> bool:
    """Does the class body define `cuda` other than as `return super().cuda(...)`?"""
    import ast

    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "cuda":
            if not _only_calls_super(node):
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any("cuda" in _target_names(t) for t in targets):
                return True
    return False


def class_members(cls) -> frozenset:
    """The names an `ast.ClassDef` binds on its instances (see ClassFacts.members)."""
    import ast

    found: set[str] = set()
    if cls.keywords:
        found.add("*")
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                found.update(_target_names(target))
    if found & {"__getattr__", "__getattribute__", "__setattr__"}:
        found.add("*")
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) \
                and node.value.id == "self":
            found.add(node.attr)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            key = node.args[1] if name == "setattr" and len(node.args) > 1 else node.args[0]
            if name in ("setattr", "register_buffer", "register_parameter", "add_module", "register_module"):
                literal = isinstance(key, ast.Constant) and isinstance(key.value, str)
                found.add(key.value if literal else "*")
    if writes_in_bulk_ast(cls):  # `self.__dict__.update(locals())` may bind any name
        found.add("*")
    return frozenset(found)


def _only_calls_super(function) -> bool:
    import ast

    meaningful = [s for s in function.body if not (isinstance(s, ast.Pass) or isinstance(s, ast.Expr)
                                                  and isinstance(s.value, ast.Constant)
                                                  and isinstance(s.value.value, str))]
    if len(meaningful) != 1 or not isinstance(meaningful[0], ast.Return):
        return False
    value = meaningful[0].value
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "cuda"
            and isinstance(value.func.value, ast.Call) and isinstance(value.func.value.func, ast.Name)
            and value.func.value.func.id == "super")


def _function_facts(function) -> FunctionFacts:
    import ast

    decorators = tuple(_dotted(d.func if isinstance(d, ast.Call) else d) for d in function.decorator_list)
    if isinstance(function, ast.AsyncFunctionDef):
        return FunctionFacts(None, decorators)
    returns: list = []
    assigned: dict[str, list] = {}
    other_locals: set[str] = {a.arg for a in function.args.args + function.args.posonlyargs
                              + function.args.kwonlyargs}
    other_locals.update(a.arg for a in (function.args.vararg, function.args.kwarg) if a is not None)
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if not isinstance(node, ast.Lambda):
                other_locals.add(node.name)
            continue  # (their returns and yields are their own)
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return FunctionFacts(None, decorators)
        if isinstance(node, ast.Return):
            returns.append(node.value)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
            stack.append(node.value)
            continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            assigned.setdefault(node.target.id, []).append(node.value)
            stack.append(node.value)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            other_locals.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other_locals.update(node.names)
        elif isinstance(node, ast.alias):
            other_locals.add((node.asname or node.name).split(".")[0])
        stack.extend(ast.iter_child_nodes(node))
    local = {name: values for name, values in assigned.items() if name not in other_locals}
    for name in assigned:
        if name in other_locals:
            local[name] = None  # (also bound by a loop, `with`, an import...: unknown)
    terms = []
    for value in returns:
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            continue
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == function.name):
            continue  # (a direct recursive call returns what the other returns do)
        terms.append(_term(value, {**{p: None for p in other_locals}, **local}, 0, function.name))
    return FunctionFacts(tuple(terms) if terms else None, decorators)


def _term(expr, local: dict, depth: int, own: str | None = None):
    """A symbolic value: ("call", dotted) of a name resolved in the file, ("method", term, name),
    ("name", dotted) of a module-level name, ("any", terms) for a local name's assignments, or None."""
    import ast

    if depth > 8 or expr is None:
        return None
    if isinstance(expr, ast.Call):
        func = expr.func
        dotted = _dotted(func)
        if dotted is not None and dotted.split(".")[0] not in local:
            return ("call", dotted)
        if isinstance(func, ast.Attribute):
            inner = _term(func.value, local, depth + 1, own)
            return None if inner is None else ("method", inner, func.attr)
        return None
    if isinstance(expr, ast.Name):
        if expr.id in local:
            values = local[expr.id]
            if values is None:
                return None
            terms = tuple(_term(v, {**local, expr.id: None}, depth + 1, own) for v in values)
            return None if not terms or None in terms else ("any", terms)
        return ("name", expr.id)
    return None
