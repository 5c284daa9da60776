"""The facts of one file every analysis reads: its tree, parent links and nodes by type, LibCST's scopes
and positions (resolved on first use), the names its imports and other statements bind, torch's alias,
the fix options analyses consult (the device name), and a memo where analyses keep what they built.

Below devlint.analysis: nothing here knows an analysis or a rule. devlint.context.FileContext, above the
analyses, is the object that hands them to a rule."""

from __future__ import annotations

import dataclasses
import re
from functools import cached_property

import libcst as cst
from libcst._nodes.internal import CodegenState  # not re-exported; needed to render at an indentation
from libcst.metadata import Assignment, MetadataWrapper, Scope, ScopeProvider

from devlint.device_options import FixOptions  # free of LibCST and of the rule table: the settings use it
from devlint.identifiers import identifier, needs_normalizing, normalized
from devlint.model import Position
from devlint.positions import LazyPositions
from devlint.syntax import dotted_name, module_torch_alias, walk


# -- analyses that rest on each other ------------------------------------------------------------------------
# A value's place rests on the origin of the file it was loaded from, which rests on the place of what was
# saved there; a conftest.py's fixture is judged by the same analyses as the test that receives it. Such
# analyses reach each other through this table, which the answering module fills when it is imported
# (devlint.context imports them all), so that their imports go one way: the recursion is in the data only.
_ANSWERS: dict[str, object] = {}


def answers(question: str, answerer) -> None:
    """`answerer` answers `question` for the analyses below the module that registers it."""
    _ANSWERS[question] = answerer


def answer(question: str):
    """The function registered for `question` (see `answers`)."""
    try:
        return _ANSWERS[question]
    except KeyError:
        raise LookupError(f"no analysis answers {question!r}: import devlint.context first") from None


class _Everything(frozenset):
    def __contains__(self, item) -> bool:
        return True


_EVERYTHING = _Everything()


class FileFacts:
    """One file's tree, its parent links and nodes by type, and LibCST metadata resolved on first use.

    Resolving scopes and positions costs several times the parse, so a file whose candidate nodes
    are all settled without them (a guarded `.cuda()`, a `load` that is not torch's) never pays for it.
    """

    def __init__(self, module: cst.Module, options: FixOptions | None = None, project=None,
                 text: str | None = None) -> None:
        self._text = text  # the text `module` was parsed from, when the caller has it (see `source`)
        self.options = options or FixOptions()
        if not self.options.device_name.isascii():
            self.options = dataclasses.replace(self.options, device_name=identifier(self.options.device_name))
        # What other files of the project define (a devlint.analysis.project.ProjectView), asked only by the
        # analyses (devlint.analysis); None when the file is checked without a path (stdin "-").
        self.project = project
        # What analyses built for this file, by key (see `memoised`): kinds, placement, guards, ...
        self.memo: dict = {}
        self._index(module)
        if needs_normalizing(self.nodes(cst.Name)):
            # Python reads `ｄｅｖｉｃｅ` as `device`: every comparison of names below must too
            # (devlint.identifiers). Positions stay those of the file.
            self._index(normalized(module))

    def memoised(self, key, build):
        """`build(self)`, built once per file under `key`: how analyses reach each other's results
        (devlint.analysis.kinds.kinds_of, ...) without an attribute defined above them."""
        memo = self.memo
        if key in memo:
            return memo[key]
        found = memo[key] = build(self)
        return found

    def _index(self, module: cst.Module) -> None:
        self.module = module
        self._wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.nodes_by_type: dict[type, list[cst.CSTNode]] = {}
        for node, parent in walk(module):
            if parent is not None:
                self.parents[node] = parent
            self.nodes_by_type.setdefault(type(node), []).append(node)

    @cached_property
    def source(self) -> str:
        """The file's text (regenerating it from the tree costs as much as a parse: asked rarely)."""
        return self._text if self._text is not None else self.module.code

    @cached_property
    def positions(self) -> LazyPositions:
        return LazyPositions(self.module, self.parents)

    @cached_property
    def scopes(self):
        return self._wrapper.resolve(ScopeProvider)

    # -- positions ---------------------------------------------------------------------------
    def span(self, node: cst.CSTNode) -> tuple[Position, Position]:
        code_range = self.positions[node]
        return (
            Position(code_range.start.line, code_range.start.column),
            Position(code_range.end.line, code_range.end.column),
        )

    def code(self, node: cst.CSTNode, anchor: cst.CSTNode | None = None) -> str:
        """Source for a node (a new one replacing `anchor`), indented like the statement it sits in.

        `Module.code_for_node` renders at column 0, which would drop the indentation of
        continuation lines inside an indented block.
        """
        if anchor is not None and getattr(node, "lpar", None):
            node = node.with_changes(lpar=[], rpar=[])  # positions (so replaced ranges) exclude parentheses
        state = CodegenState(default_indent=self.module.default_indent, default_newline=self.module.default_newline)
        state.indent_tokens = [self._indentation(anchor or node)]
        node._codegen(state)
        return "".join(state.tokens)

    def _indentation(self, node: cst.CSTNode) -> str:
        statement = node if isinstance(node, cst.BaseStatement) else self.enclosing(node, cst.BaseStatement)
        if statement is None or statement not in self.positions:
            return ""
        line = self._lines[self.positions[statement].start.line - 1]
        return line[: len(line) - len(line.lstrip(" \t\f"))]  # LibCST counts a form feed in the indent

    @cached_property
    def _lines(self) -> list[str]:
        return re.split(r"\r\n|\r|\n", self.module.code)

    # -- tree navigation -----------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode):
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def enclosing(self, node: cst.CSTNode, kinds) -> cst.CSTNode | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, kinds):
                return ancestor
        return None

    def scope(self, node: cst.CSTNode) -> Scope | None:
        return self.scopes.get(node)

    # -- names ---------------------------------------------------------------------------------
    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """What a dotted name refers to through the file's imports (`th.load` -> `torch.load`).

        Own import-alias tracking instead of LibCST's QualifiedNameProvider, which needs the scope
        analysis of the whole file: a name counts as an import only when nothing but import
        statements binds it in the file. A dotted name whose root nothing binds (a star import, a
        builtin) stands for itself.
        """
        dotted = dotted_name(node)
        if dotted is None:
            return set()
        root, _, rest = dotted.partition(".")
        targets = self._imports.get(root)
        if self._shadowed(root, node):
            return set()
        if targets is None:
            return {dotted}
        return {f"{target}.{rest}" if rest else target for target in targets}

    def project_name(self, node: cst.CSTNode) -> str | None:
        """The one name outside torch that a callee refers to (`utils.helper` -> `pkg.utils.helper`), where
        the project index may define it; None for torch's own, none, or several (a name bound twice)."""
        names = {n for n in self.qualified_names(node) if not n.startswith("torch.")}
        return names.pop() if len(names) == 1 else None

    @cached_property
    def _imports(self) -> dict[str, set[str]]:
        """Name -> what import statements anywhere in the file bind it to."""
        found: dict[str, set[str]] = {}
        for node in self.nodes(cst.Import):
            for alias in node.names:
                name = dotted_name(alias.name) or ""
                if alias.asname is not None:
                    found.setdefault(dotted_name(alias.asname.name), set()).add(name)
                else:
                    root = name.split(".")[0]
                    found.setdefault(root, set()).add(root)
        for node in self.nodes(cst.ImportFrom):
            if isinstance(node.names, cst.ImportStar):
                continue
            module = "." * len(node.relative) + (dotted_name(node.module) or "" if node.module else "")
            for alias in node.names:
                name = dotted_name(alias.name)
                bound = dotted_name(alias.asname.name) if alias.asname is not None else name
                found.setdefault(bound, set()).add(f"{module}.{name}" if not module.endswith(".") else f"{module}{name}")
        return found

    @cached_property
    def binding_sites(self) -> dict[str, list[cst.CSTNode]]:
        """Every place the file binds a name other than by import: the target `Name`, or the `Param`."""
        sites: dict[str, list[cst.CSTNode]] = {}
        for kind in (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.AsName,
                     cst.NamedExpr):
            for node in self.nodes(kind):
                if isinstance(node, cst.AsName):
                    if isinstance(self.parent(node), cst.ImportAlias):
                        continue
                    target = node.name
                else:
                    target = node.target
                for name in target_names(target):
                    sites.setdefault(name.value, []).append(name)
        for param in self.nodes(cst.Param):
            sites.setdefault(param.name.value, []).append(param)
        return sites

    @cached_property
    def _other_bindings(self) -> set[str]:
        """Names something other than an import binds: assignments, parameters, definitions, loops."""
        names = set(self.binding_sites)
        for kind in (cst.FunctionDef, cst.ClassDef):
            names.update(node.name.value for node in self.nodes(kind))
        return names

    @cached_property
    def _shadowing_regions(self) -> dict[str, list[cst.CSTNode | None]]:
        """Name -> where its non-import bindings live: None for the module (or a class body's own
        scope seen from outside, or a `global`/`nonlocal` name: everywhere), else the function,
        lambda or comprehension whose scope they belong to.

        A parameter `t` of one function says nothing about `t` elsewhere in the file: with
        `import torch as t`, `t.load(path)` at module level or in another function is torch's.
        """
        declared_outside = {
            name.name.value
            for kind in (cst.Global, cst.Nonlocal)
            for node in self.nodes(kind)
            for name in node.names
        }
        regions: dict[str, list[cst.CSTNode | None]] = {}

        def add(name: str, site: cst.CSTNode, skip_comprehensions: bool = False) -> None:
            region = None if name in declared_outside else self._binding_region(site, skip_comprehensions)
            found = regions.setdefault(name, [])
            if region not in found:
                found.append(region)

        for name, sites in self.binding_sites.items():
            for site in sites:
                parent = self.parent(site)
                add(name, site, skip_comprehensions=isinstance(parent, cst.NamedExpr))
        for kind in (cst.FunctionDef, cst.ClassDef):
            for node in self.nodes(kind):
                add(node.name.value, node)
        return regions

    def _binding_region(self, site: cst.CSTNode, skip_comprehensions: bool) -> cst.CSTNode | None:
        kinds: tuple[type, ...] = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
        if not skip_comprehensions:
            kinds += (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
        if isinstance(site, cst.Param):
            return self.enclosing(site, (cst.FunctionDef, cst.Lambda))
        node = site
        for ancestor in self.ancestors(site):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and node is ancestor.name:
                node = ancestor  # a definition binds its name in the scope around it
                continue
            if isinstance(ancestor, kinds):
                # a class body is no scope for the functions in it: treat it as the whole file
                return None if isinstance(ancestor, cst.ClassDef) else ancestor
            node = ancestor
        return None

    def _shadowed(self, name: str, node: cst.CSTNode) -> bool:
        """Does a non-import binding of `name` (an assignment, parameter, definition, loop) reach `node`?"""
        regions = self._shadowing_regions.get(name)
        if not regions:
            return False
        if None in regions:
            return True
        return any(ancestor in regions for ancestor in self.ancestors(node))

    @property
    def imported_names(self):
        """Names import statements bind anywhere in the file."""
        return self._imports.keys()

    def imports_package(self, package: str) -> bool:
        """Does any import statement in the file import `package` or something from it?"""
        return any(target.split(".")[0] == package for targets in self._imports.values() for target in targets)

    def binds(self, name: str) -> bool:
        """Does anything in the file bind `name` (import, assignment, parameter, definition, loop)?"""
        return name in self._imports or name in self._other_bindings

    def nodes(self, node_type: type) -> list[cst.CSTNode]:
        return self.nodes_by_type.get(node_type, [])

    def names_imported_from(self, package: str) -> set[str]:
        """Names bound by `from package[.x] import ...` anywhere (every name, after a star import)."""
        cache = self.__dict__.setdefault("_imported_from", {})
        if package not in cache:
            names: set[str] = set()
            for node in self.nodes(cst.ImportFrom):
                module = dotted_name(node.module) if node.module is not None else ""
                if isinstance(node.names, cst.ImportStar):
                    return cache.setdefault(package, _EVERYTHING)
                if not node.relative and module and module.split(".")[0] == package:
                    names.update((dotted_name(a.asname.name) if a.asname else dotted_name(a.name)) for a in node.names)
            cache[package] = names
        return cache[package]

    def bindings(self, node: cst.CSTNode, name: str | None = None) -> list[Assignment]:
        """The assignments a name at `node` may refer to (builtins excluded: they have no node)."""
        scope = self.scopes.get(node)
        name = name if name is not None else getattr(node, "value", None)
        if scope is None or not isinstance(name, str) or name not in scope:
            return []
        return [a for a in scope[name] if isinstance(a, Assignment)]

    def is_imported_module(self, node: cst.CSTNode) -> bool:
        """True when `node` is a name bound only by import statements (so `node.f()` is a function call)."""
        return isinstance(node, cst.Name) and node.value in self._imports and not self._shadowed(node.value, node)

    @cached_property
    def torch_alias(self) -> str | None:
        """The module-level name torch is imported as (`torch`, `th`), or None."""
        return module_torch_alias(self.module)

    def assigned_value(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        """The value a plain target is bound to: `value` of `node = value` or `node: T = value`; None for
        any other binding (an unpacking, a loop target, an import, ...)."""
        parent = self.parent(node)
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            statement = self.parent(parent)
            return statement.value if isinstance(statement, cst.Assign) else None
        if isinstance(parent, cst.AnnAssign) and parent.target is node:
            return parent.value
        return None

    def loop_around_both(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """Are both nodes inside one `for`/`while` loop (so that each may run again after the other)?"""
        loops = {id(a) for a in self.ancestors(first) if isinstance(a, (cst.For, cst.While))}
        return any(id(a) in loops for a in self.ancestors(second) if isinstance(a, (cst.For, cst.While)))

    def effective_position(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """Where a binding takes effect: after its whole assignment (`x = f(x)` reads the old x)."""
        for parent in self.ancestors(node):
            if isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List, cst.AssignTarget)):
                continue
            if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                end = self.positions[parent].end
                return (end.line, end.column)
            break
        position = self.positions.get(node)
        return None if position is None else (position.start.line, position.start.column)


def target_names(target: cst.CSTNode) -> list[cst.Name]:
    """The names an assignment (or `del`) target binds: `a`, `a, (b, *c)`; not attributes or subscripts."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []
