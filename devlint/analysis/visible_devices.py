"""Where the file sets `CUDA_VISIBLE_DEVICES` (`os.environ[...] = ...`, `os.environ.setdefault`/`update`,
`os.putenv`, `monkeypatch.setenv`), which of its functions set it (directly or through calls by name)
and which may run before a setting: a definition of the device queries CUDA, which freezes the visible
devices, so it must not run before one. Also the per-file facts for placing a definition (`_facts`)."""
from __future__ import annotations

import libcst as cst

from devlint.analysis.flow import _inside
from devlint.analysis.top_level import _subtree
from devlint.facts import FileFacts
from devlint.syntax import string_value


def _is_variable(ctx: FileFacts, name: cst.Name) -> bool:
    parent = ctx.parent(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    return not (isinstance(parent, cst.ImportAlias) and parent.asname is not None)  # `import a.device as b`


# -- where CUDA_VISIBLE_DEVICES is set --------------------------------------------------------------
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


class _Facts:
    """Per-file facts for placing a definition, computed once."""

    def __init__(self, ctx: FileFacts) -> None:
        self.ctx = ctx
        self.settings = _visible_devices_settings(ctx)
        self._setters: set[str] | None = None
        self._called_before: set[str] | None = None
        self._calls: dict[int, list[cst.Call]] | None = None

    def mentions(self, name: str) -> list[cst.Name]:
        """The names `name` that are variables (not attributes, keywords)."""
        cache = self.__dict__.setdefault("_mentions", {})
        if name not in cache:
            cache[name] = [n for n in self.ctx.nodes(cst.Name) if n.value == name and _is_variable(self.ctx, n)]
        return cache[name]

    @property
    def setters(self) -> set[str]:
        """Names of the file's functions that set the variable, directly or through calls by name."""
        if self._setters is None:
            ctx = self.ctx
            functions = ctx.nodes(cst.FunctionDef)
            setters = {f.name.value for f in functions if any(_inside(ctx, s, f) for s in self.settings)}
            grew = True
            while grew:
                grew = False
                for function in functions:
                    if function.name.value not in setters and any(
                        _called_name(call) in setters for call in self._calls_in(function)
                    ):
                        setters.add(function.name.value)
                        grew = True
            self._setters = setters
        return self._setters

    def _calls_in(self, function: cst.FunctionDef) -> list[cst.Call]:
        if self._calls is None:
            self._calls = {}
            for call in self.ctx.nodes(cst.Call):
                for ancestor in self.ctx.ancestors(call):
                    if isinstance(ancestor, cst.FunctionDef):
                        self._calls.setdefault(id(ancestor), []).append(call)
        return self._calls.get(id(function), [])

    def events_in(self, function: cst.FunctionDef) -> list[cst.CSTNode]:
        """Settings in `function` and calls from it to functions that set the variable."""
        events = [s for s in self.settings if _inside(self.ctx, s, function)]
        setters = self.setters
        calls = self._calls_in(function) if isinstance(function, cst.FunctionDef) else _subtree(function, cst.Call)
        events += [c for c in calls if _called_name(c) in setters]
        return events

    @property
    def called_before_setting(self) -> set[str]:
        """Names of functions that may run before a setting: called earlier in a body that sets it
        (or earlier in a setter's body than its call to another setter), and what they call."""
        if self._called_before is None:
            ctx = self.ctx
            names: set[str] = set()
            setters = self.setters
            events = list(self.settings) + [c for c in ctx.nodes(cst.Call) if _called_name(c) in setters]
            for event in events:
                child = event
                for ancestor in ctx.ancestors(event):
                    if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                        for sibling in ancestor.body:
                            if sibling is child:
                                break
                            names.update(_called_name(c) for c in _subtree(sibling, cst.Call))
                    if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                        break
                    child = ancestor
            by_name: dict[str, list[cst.FunctionDef]] = {}
            for function in ctx.nodes(cst.FunctionDef):
                by_name.setdefault(function.name.value, []).append(function)
            queue = [n for n in names if n in by_name]
            while queue:
                for function in by_name[queue.pop()]:
                    for call in self._calls_in(function):
                        callee = _called_name(call)
                        if callee in by_name and callee not in names:
                            names.add(callee)
                            queue.append(callee)
            names.discard(None)
            self._called_before = names
        return self._called_before


def _facts(ctx: FileFacts) -> _Facts:
    facts = ctx.memo.get("device_placement_facts")
    if facts is None:
        facts = ctx.memo["device_placement_facts"] = _Facts(ctx)
    return facts


def _called_name(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def sets_visible_devices(ctx: FileFacts) -> bool:
    """Does the file (maybe) set `CUDA_VISIBLE_DEVICES`? Then a CUDA query devlint writes may run first."""
    return bool(_visible_devices_settings(ctx))


def _visible_devices_settings(ctx: FileFacts) -> list[cst.CSTNode]:
    """Every node that may set `CUDA_VISIBLE_DEVICES` in the process's environment."""
    found: list[cst.CSTNode] = []
    for target in ctx.nodes(cst.AssignTarget):
        subscript = target.target
        if isinstance(subscript, cst.Subscript) and _is_environ(ctx, subscript.value) and len(subscript.slice) == 1:
            index = subscript.slice[0].slice
            key = string_value(index.value) if isinstance(index, cst.Index) else None
            if key is None or key == CUDA_VISIBLE_DEVICES:
                found.append(target)
    for call in ctx.nodes(cst.Call):
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _SETTERS:
            continue
        first = call.args[0].value if call.args else None
        if _is_environ(ctx, func.value):
            method = func.attr.value
            if method in ("setdefault", "__setitem__") and string_value(first) in (None, CUDA_VISIBLE_DEVICES):
                found.append(call)
            elif method == "update" and _may_set_key(call):
                found.append(call)
        elif func.attr.value == "setenv" or ctx.qualified_names(func) == {"os.putenv"}:
            if first is not None and string_value(first) in (None, CUDA_VISIBLE_DEVICES):
                found.append(call)  # `os.putenv`, pytest's `monkeypatch.setenv`
    for call in ctx.nodes(cst.Call):
        first = call.args[0].value if call.args else None
        if (isinstance(call.func, cst.Name) and first is not None and ctx.qualified_names(call.func) == {"os.putenv"}
                and string_value(first) in (None, CUDA_VISIBLE_DEVICES)):
            found.append(call)  # `from os import putenv`
    return found


_SETTERS = frozenset({"setdefault", "__setitem__", "update", "putenv", "setenv"})


def _is_environ(ctx: FileFacts, node: cst.BaseExpression) -> bool:
    return "os.environ" in ctx.qualified_names(node)


def _may_set_key(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == CUDA_VISIBLE_DEVICES:
                return True
            continue
        if not isinstance(arg.value, cst.Dict):
            return True  # `os.environ.update(env)`: any key
        for element in arg.value.elements:
            if not isinstance(element, cst.DictElement) or string_value(element.key) in (None, CUDA_VISIBLE_DEVICES):
                return True
    return False
