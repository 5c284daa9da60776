"""Is this code only reached on an old PyTorch, one that lacks the API a fix would write?

Projects that support several PyTorch versions keep the old API in a *fallback*: a branch that only
runs where the new API does not exist. Rewriting the fallback to the new API (DL006's `torch.amp`,
PyTorch 2.4+) breaks exactly the versions it is there for, so such code is left alone.

A *version condition* is an expression whose truth says "this PyTorch is old" or "this PyTorch is new":

* a comparison with the torch version: `torch.__version__ < "2.4"`,
  `version.parse(torch.__version__) < version.parse("2.3")`, `LooseVersion(torch.__version__) >= ...`,
  `TORCH_VERSION < (2, 4)`, `torch_version >= (2, 4)`, also with the version on the right; `<`/`<=`
  mean old when true, `>`/`>=` mean new when true (whatever the number: precision first);
  `torch.__version__.startswith("1.")` means old when true;
* a version helper call: `is_torch_version("<", "2.4")`, `compare_version("torch", operator.ge, "2.4.0")`,
  `torch_version_ge(2, 4)`, `is_torch_greater_or_equal("2.4")` (a call whose name says "version" or
  compares, about torch, with the comparison in an operator string, an `operator.xx` or its name);
* a flag named for a torch version: `_TORCH_GREATER_EQUAL_2_4`, `TORCH_GE_2_4`, `_TORCH_2_4_PLUS`
  (true means new), `TORCH_LT_2_4`, `TORCH_VERSION_LESS_THAN_2_4` (true means old);
* a feature test of the new API: `hasattr(torch, "amp")`, `hasattr(torch.amp, "GradScaler")`,
  `hasattr(torch, "autocast")` (true means new);
* a name the file assigns from any of these (`OLD_TORCH = torch.__version__ < "2.4"`).

`not` inverts a condition, `and`/`or` combine them. Code is *old-torch only* when it sits in the
branch of an `if`/conditional expression/`elif` chain where the test means old torch (the true branch
of an "old" test, the `else` of a "new" test), after an `if <new>: ... return` in the same block, in
the `except` handler of a `try` whose body uses the new API (`torch.amp`, `torch.autocast`,
`torch.GradScaler`) and that catches `ImportError`, `ModuleNotFoundError`, `AttributeError`,
`TypeError`, `NameError` or everything, or in the body of a `try` that catches `ImportError`,
`ModuleNotFoundError` or `AttributeError` (a compatibility shim: the old API may be missing).
"""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from devlint.facts import FileFacts
from devlint.analysis.conditions import NOTHING, Implications, assigned_values, flip
from devlint.syntax import descendants, dotted_name, last_component, string_value

OLD = (True, False)  # (truth means old torch, falsity means old torch)
NEW = (False, True)

_SHIM_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})
_FALLBACK_ERRORS = _SHIM_ERRORS | {"TypeError", "NameError", "Exception", "BaseException"}
_NEW_API = frozenset({"torch.amp", "torch.autocast", "torch.GradScaler", "torch.amp.autocast",
                      "torch.amp.GradScaler", "torch.amp.custom_fwd", "torch.amp.custom_bwd"})
_NEW_API_OWNERS = frozenset({"torch", "torch.amp"})
_NEW_API_ATTRIBUTES = frozenset({"amp", "autocast", "GradScaler", "custom_fwd", "custom_bwd", "get_autocast_dtype"})

_LESS_WORDS = ("less", "lt", "le", "lte", "older", "before", "below", "pre", "lower", "max", "under", "old", "legacy")
_MORE_WORDS = ("greater", "ge", "geq", "gte", "gt", "newer", "atleast", "least", "min", "after", "plus", "above",
               "later", "available", "new", "or_newer", "or_later", "higher", "since")
_OPERATORS = {"<": OLD, "<=": OLD, "lt": OLD, "le": OLD, ">": NEW, ">=": NEW, "gt": NEW, "ge": NEW}
_VERSION_DIGITS = re.compile(r"(?:^|_)v?\d+(?:_\d+)+(?:_|$)")
_WORD = re.compile(r"[a-z]+|\d+")


def _words(identifier: str) -> list[str]:
    return _WORD.findall(identifier.lower())


def _flag_polarity(identifier: str) -> tuple[bool, bool]:
    """`_TORCH_GREATER_EQUAL_2_4` -> NEW, `TORCH_LT_2_4` -> OLD; NOTHING for names not about a torch version."""
    lower = identifier.lower()
    if "torch" not in lower or not _VERSION_DIGITS.search(lower.replace("torch", "_")):
        return NOTHING
    words = _words(lower)
    if any(w in _LESS_WORDS for w in words):
        return OLD
    return NEW  # `_TORCH_GREATER_EQUAL_2_4`, `TORCH_2_4_PLUS`, `_TORCH_2_4`: "at least this version"


class VersionGates(Implications):
    """Answers `old_torch_only(node)` for one file; `implies(condition)` is (truth means old torch,
    falsity means old torch)."""

    def __init__(self, ctx: FileFacts) -> None:
        super().__init__(ctx)
        self._memo: dict[str, tuple[bool, bool]] = {}
        self._version_memo: dict[str, bool] = {}

    @cached_property
    def _assigned(self) -> dict[str, list[cst.BaseExpression]]:
        return assigned_values(self.ctx)

    # -- what an expression says --------------------------------------------------------------------
    def is_version(self, expr: cst.BaseExpression) -> bool:
        """Does `expr` stand for the torch version (`torch.__version__`, `version.parse(torch.__version__)`,
        `TORCH_VERSION`, a name assigned from one of these)?"""
        if self._depth > 8:
            return False
        self._depth += 1
        try:
            return self._is_version(expr)
        finally:
            self._depth -= 1

    def _is_version(self, expr: cst.BaseExpression) -> bool:
        for node in descendants(expr):
            name = dotted_name(node)
            if name is None:
                continue
            if name.endswith("__version__") and "torch" in self._qualified(node):
                return True
            lower = name.lower()
            component = (last_component(node) or "").lower()
            if "torch" in component and "version" in component:
                return True
            if "." not in name and isinstance(node, cst.Name) and name in self._assigned and lower not in self._version_memo:
                self._version_memo[lower] = False
                self._version_memo[lower] = any(self.is_version(v) for v in self._assigned[name])
            if self._version_memo.get(lower):
                return True
        return False

    def _qualified(self, node: cst.CSTNode) -> str:
        names = self.ctx.qualified_names(node)
        return " ".join(names) if names else (dotted_name(node) or "")

    def _atom(self, expr: cst.BaseExpression) -> tuple[bool, bool]:
        if isinstance(expr, cst.Call):
            return self._call(expr)
        name = dotted_name(expr)
        if name is None:
            return NOTHING
        if name not in self._memo:
            self._memo[name] = NOTHING
            polarity = _flag_polarity(last_component(expr) or name)
            if polarity == NOTHING:
                for value in self._assigned.get(name, ()):
                    polarity = self.implies(value)
                    if polarity != NOTHING:
                        break
            self._memo[name] = polarity
        return self._memo[name]

    def _comparison(self, expr: cst.Comparison) -> tuple[bool, bool]:
        if len(expr.comparisons) != 1:
            return NOTHING
        target = expr.comparisons[0]
        op, left, right = target.operator, expr.left, target.comparator
        polarity = {cst.LessThan: OLD, cst.LessThanEqual: OLD, cst.GreaterThan: NEW,
                    cst.GreaterThanEqual: NEW}.get(type(op))
        if polarity is None:
            if isinstance(op, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
                # `_TORCH_GE_2_4 is False`, `hasattr(torch, "amp") == True`
                constant = right if isinstance(right, cst.Name) and right.value in ("True", "False") else None
                if constant is None:
                    return NOTHING
                inner = self.implies(left)
                same = (constant.value == "True") == isinstance(op, (cst.Equal, cst.Is))
                return inner if same else flip(inner)
            return NOTHING
        if self.is_version(left) and not self.is_version(right):
            return polarity
        if self.is_version(right) and not self.is_version(left):
            return flip(polarity)
        return NOTHING

    def _call(self, call: cst.Call) -> tuple[bool, bool]:
        name = dotted_name(call.func) or ""
        short = name.rsplit(".", 1)[-1]
        if short == "hasattr" and len(call.args) >= 2:
            owner = self.ctx.qualified_names(call.args[0].value) or {dotted_name(call.args[0].value) or ""}
            attribute = string_value(call.args[1].value)
            if owner & _NEW_API_OWNERS and attribute in _NEW_API_ATTRIBUTES:
                return NEW
            return NOTHING
        if short == "startswith" and isinstance(call.func, cst.Attribute) and self.is_version(call.func.value):
            return OLD
        if short in ("bool", "all", "any") and call.args:
            return self.implies(call.args[0].value)
        lower = short.lower()
        words = _words(short)
        compares = any(w in _LESS_WORDS or w in _MORE_WORDS for w in words)
        if "version" not in lower and not ("torch" in lower and compares):
            return NOTHING
        about_torch = "torch" in lower or any(
            (string_value(a.value) or "").lower() in ("torch", "pytorch") or self.is_version(a.value) for a in call.args
        )
        if not about_torch:
            return NOTHING
        for arg in call.args:
            text = string_value(arg.value)
            if text is not None and text.strip() in _OPERATORS:
                return _OPERATORS[text.strip()]
            component = dotted_name(arg.value) or ""
            if component.startswith("operator.") and component.split(".", 1)[1] in _OPERATORS:
                return _OPERATORS[component.split(".", 1)[1]]
        if any(w in _LESS_WORDS for w in words):
            return OLD
        if any(w in _MORE_WORDS for w in words):
            return NEW
        return NOTHING

    # -- placement ----------------------------------------------------------------------------------
    def old_torch_only(self, node: cst.CSTNode) -> bool:
        return self._holds_at(node, self._old_child)

    def _old_child(self, parent: cst.CSTNode, child: cst.CSTNode) -> bool:
        if isinstance(parent, (cst.If, cst.IfExp)):
            if child is parent.body:
                return self.implies(parent.test)[0]
            if child is parent.orelse:
                return self.implies(parent.test)[1]
            return False
        if isinstance(parent, cst.Else):
            return False
        if isinstance(parent, cst.BooleanOperation) and child is parent.right:
            polarity = self.implies(parent.left)
            return polarity[0] if isinstance(parent.operator, cst.And) else polarity[1]
        if isinstance(parent, cst.Try):
            if child is parent.body:
                return any(self._catches(h, _SHIM_ERRORS, bare=False) for h in parent.handlers)
            return False
        if isinstance(parent, cst.ExceptHandler):
            if child is not parent.body:
                return False
            attempt = self.ctx.parent(parent)
            return (isinstance(attempt, cst.Try) and self._catches(parent, _FALLBACK_ERRORS, bare=True)
                    and self._uses_new_api(attempt.body))
        if isinstance(parent, (cst.IndentedBlock, cst.Module)):
            return self._after_new_exit(parent.body, child)
        return False

    @staticmethod
    def _catches(handler: cst.ExceptHandler, errors: frozenset, bare: bool) -> bool:
        if handler.type is None:
            return bare
        kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
        names = {(last_component(k.value if isinstance(k, cst.Element) else k) or "") for k in kinds}
        return bool(names & errors)

    def _uses_new_api(self, block: cst.CSTNode) -> bool:
        for node in descendants(block):
            if isinstance(node, cst.ImportFrom) and node.module is not None:
                module = dotted_name(node.module) or ""
                if module == "torch.amp" or module.startswith("torch.amp."):
                    return True
                if module == "torch" and not isinstance(node.names, cst.ImportStar) and any(
                    dotted_name(a.name) in _NEW_API_ATTRIBUTES for a in node.names
                ):
                    return True
            if isinstance(node, (cst.Attribute, cst.Name)) and self.ctx.qualified_names(node) & _NEW_API:
                return True
        return False

    def _after_new_exit(self, body, child: cst.CSTNode) -> bool:
        """`if TORCH_GE_2_4: return torch.amp.GradScaler(...)` then the fallback below it."""
        for statement in body:
            if statement is child:
                return False
            if isinstance(statement, cst.If) and statement.orelse is None and _always_exits(statement.body):
                if self.implies(statement.test) == NEW:
                    return True
        return False


def _always_exits(block: cst.BaseSuite) -> bool:
    statements = list(block.body)
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    return isinstance(last, (cst.Return, cst.Raise))
