"""Is a flag a run-time question, or a constant devlint can prove?

A guard (devlint.rules._guards) must ask something the run answers: `torch.cuda.is_available()`,
`device_count()`, a device's `.type`, a command-line option (`args.cuda` of argparse, a click option,
`sys.argv`), an environment variable, a configuration object (`cfg.use_gpu`), a parameter that some
call sets or that has no literal default. devlint cannot see most of those sources, and code under a
real run-time guard must not be flagged, so a flag is a guard unless this module *proves* its value.

`truth(condition)` is the truth a condition has on every run, or None (the usual answer). It is proved
only for

- a literal: `True`, `False`, `None`, a number, a string;
- a plain name whose every binding that may reach it (devlint.analysis.reaching) is
  `name = <literal>` with one value: `USE_CUDA = True`. Not when anything else binds it (an import, a
  parameter, a loop, `try: from apex import FusedNorm except ImportError: FusedNorm = None`, an
  argparse result), when the file uses `globals()`, `vars()`, `exec` or `eval`, when a star import
  follows its first binding, or, for a module-level name, when a file of the project assigns an
  attribute of that name (`config.USE_CUDA = args.cuda`, `setattr(config, "USE_CUDA", v)`);
- a parameter with a literal default (`def one_hot(idx, size, cuda=True)`) that no call in the project
  passes (devlint.analysis.project_calls; a file checked without a path is its own project): not when a call
  passes it by position or keyword or unpacks `*args`/`**kwargs`, when the function is used other than
  by calling it (`map(f, xs)`, `partial(f, cuda=False)`, `getattr`), when a lookup by a computed name
  that may find it is kept rather than called (`fn = getattr(models, name)`; one called on the spot,
  `getattr(ops, op)(x)`, is a call like any other and passes what it passes), when it has a decorator other
  than `staticmethod`/`classmethod`/`torch.no_grad` and the like (click and pytest inject arguments),
  or when it is a method that frameworks call (`forward`, `train(mode=True)`, dunders, `on_*` hooks,
  `*_step`);
- a comparison of proved values (`FusedNorm is None`, `N_GPU > 0`).

The guards read a proved condition as vacuous logic: an always-true flag guards nothing
(`if USE_CUDA: x.cuda()` is flagged as if unguarded) and makes its `else` unreachable; an always-false
one makes its branch unreachable, dead code in which nothing is flagged. A skip marker with a proved
condition (`@pytest.mark.skipif(True, reason="flaky")`) is no exception: the skip is meant to be lifted
and says nothing about CUDA, so the test's code is checked as if it ran.
"""

from __future__ import annotations

import operator
from functools import cached_property

import libcst as cst

from devlint.analysis.reaching import reaching_sites
from devlint.syntax import calls_in, dotted_name

_UNKNOWN = object()
_CONSTANT_NAMES = {"True": True, "False": False, "None": None}
_HARMLESS_DECORATORS = {"staticmethod", "classmethod", "no_grad", "inference_mode", "enable_grad",
                        "abstractmethod"}
_DYNAMIC_CALLS = {"globals", "vars", "exec", "eval", "locals"}
# Methods that torch, Lightning and the standard library call themselves, with arguments the project
# never writes (`model.eval()` calls `self.train(False)` inside torch).
_FRAMEWORK_METHODS = {
    "forward", "train", "eval", "cuda", "cpu", "to", "half", "float", "double", "bfloat16", "type",
    "apply", "state_dict", "load_state_dict", "requires_grad_", "zero_grad", "share_memory",
    "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
    "modules", "named_modules", "extra_repr", "step", "backward", "setup", "teardown", "prepare_data",
    "configure_optimizers", "run", "main", "build", "call",
}
_COMPARE = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge,
    cst.Is: operator.is_, cst.IsNot: operator.is_not,
}


def flags_of(facts) -> "Flags":
    """The file's proved constants (which conditions ask nothing at run time), built once per file."""
    return facts.memoised(Flags, Flags)


class Flags:
    """`truth(condition)` for one file (flags_of; rules ask devlint.context.FileContext.flags)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._uses: dict[str, object] = {}
        self._memo: dict = {}
        self._depth = 0

    def truth(self, expr: cst.BaseExpression) -> bool | None:
        value = self._value(expr)
        return None if value is _UNKNOWN else bool(value)

    # -- values ---------------------------------------------------------------------------------
    MAX_DEPTH = 40  # deeper expressions are unknown: generated code, never a flag

    def _value(self, expr: cst.BaseExpression):
        """Memoised per node (the guards and `unreachable` ask about the same subexpressions again)."""
        memo = self._memo
        if expr not in memo:
            if self._depth >= self.MAX_DEPTH:
                return _UNKNOWN
            self._depth += 1
            try:
                memo[expr] = self._compute(expr)
            finally:
                self._depth -= 1
        return memo[expr]

    def _compute(self, expr: cst.BaseExpression):
        if isinstance(expr, cst.Name):
            if expr.value in _CONSTANT_NAMES:
                return _CONSTANT_NAMES[expr.value]
            return self._name_value(expr)
        if isinstance(expr, (cst.Integer, cst.Float)):
            return expr.evaluated_value
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            value = expr.evaluated_value
            return value if isinstance(value, str) else _UNKNOWN
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            inner = self._value(expr.expression)
            return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else _UNKNOWN
        if isinstance(expr, cst.Comparison):
            return self._comparison(expr)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            inner = self._value(expr.expression)
            return _UNKNOWN if inner is _UNKNOWN else not inner
        if isinstance(expr, cst.BooleanOperation):
            left = self._value(expr.left)
            if left is _UNKNOWN:
                return _UNKNOWN
            if bool(left) == isinstance(expr.operator, cst.Or):
                return left  # `False and x`, `True or x`: x is never evaluated
            return self._value(expr.right)
        return _UNKNOWN

    def unreachable(self, node: cst.CSTNode) -> bool:
        """Is `node` in a branch that a proved condition never takes (`if USE_CUDA:` with
        `USE_CUDA = False`, the `else` of `x if FusedNorm is None else FusedNorm(x)` with
        `FusedNorm = None`, `while False:`, `False and f()`)?"""
        child = node
        for parent in self.ctx.ancestors(node):
            if isinstance(parent, (cst.If, cst.IfExp, cst.While)) and child in (parent.body, parent.orelse):
                truth = self.truth(parent.test)
                if truth is not None and (child is parent.body) != truth:
                    return True
            elif isinstance(parent, cst.BooleanOperation) and child is parent.right:
                truth = self.truth(parent.left)
                if truth is not None and truth == isinstance(parent.operator, cst.Or):
                    return True
            child = parent
        return False

    def _comparison(self, expr: cst.Comparison):
        left = self._value(expr.left)
        if left is _UNKNOWN:
            return _UNKNOWN
        for target in expr.comparisons:
            compare = _COMPARE.get(type(target.operator))
            right = self._value(target.comparator)
            if compare is None or right is _UNKNOWN:
                return _UNKNOWN
            if compare in (operator.is_, operator.is_not) and not (left is None or right is None):
                return _UNKNOWN  # `is` between other literals depends on interning
            try:
                if not compare(left, right):
                    return False
            except TypeError:
                return _UNKNOWN
            left = right
        return True

    def _name_value(self, name: cst.Name):
        if not self._may_be_constant(name.value):
            return _UNKNOWN  # (cheap: most names have no literal binding at all)
        nodes = reaching_sites(self.ctx, name)
        if not nodes:
            return _UNKNOWN  # bound otherwise (an import, a `def`), or not here: a builtin, a star import
        if len(nodes) == 1 and isinstance(nodes[0], cst.Param):
            return self._parameter_value(nodes[0])
        values = [_literal(self.ctx.assigned_value(n)) if isinstance(n, cst.Name) else _UNKNOWN for n in nodes]
        first = values[0]
        if first is _UNKNOWN or any(v is _UNKNOWN or type(v) is not type(first) or v != first for v in values):
            return _UNKNOWN
        if self._rebinds_dynamically or self._star_import_after(nodes):
            return _UNKNOWN
        if any(self.ctx.enclosing(n, (cst.FunctionDef, cst.Lambda)) is None for n in nodes) or \
                self._declared_global(name.value):
            uses = self.project_uses(name.value, self.module_stem)
            if uses is None or uses.stored:
                return _UNKNOWN  # another file may assign it: `config.USE_CUDA = args.cuda`
        return first

    def _may_be_constant(self, name: str) -> bool:
        for site in self.ctx.binding_sites.get(name, ()):
            if isinstance(site, cst.Param):
                if site.default is not None and _literal(site.default) is not _UNKNOWN:
                    return True
            elif _literal(self.ctx.assigned_value(site)) is not _UNKNOWN:
                return True
        return False

    def _parameter_value(self, param: cst.Param):
        value = _literal(param.default) if param.default is not None else _UNKNOWN
        parameters = self.ctx.parent(param)
        function = self.ctx.parent(parameters) if parameters is not None else None
        if value is _UNKNOWN or not isinstance(function, cst.FunctionDef) or param.star:
            return _UNKNOWN
        name = function.name.value
        if any(not _harmless(d.decorator) for d in function.decorators):
            return _UNKNOWN
        block = self.ctx.parent(function)
        method = isinstance(self.ctx.parent(block), cst.ClassDef) if block is not None else False
        if method and (name.startswith(("__", "on_")) or name in _FRAMEWORK_METHODS
                       or name.endswith(("_step", "_epoch_end", "_hook"))):
            return _UNKNOWN
        top_level = isinstance(block, cst.Module)
        uses = self.project_uses(name, self.module_stem if top_level else None)
        if uses is None or uses.referenced:
            return _UNKNOWN
        keyword = param.name.value
        positional = list(parameters.posonly_params) + list(parameters.params)
        index = next((i for i, p in enumerate(positional) if p is param), None)
        # a call `obj.m(a)` fills the parameters after `self`: count a method's calls as bound ones,
        # the reading in which fewer arguments reach the flag
        bound = 1 if method and not any(dotted_name(d.decorator) == "staticmethod" for d in function.decorators) \
            else 0
        for call in uses.calls:
            if call.unpacks or keyword in call.keywords:
                return _UNKNOWN
            if index is not None and call.positional > index - bound:
                return _UNKNOWN
        return value

    def project_uses(self, name: str, module: str | None):
        """How the project uses `name` (devlint.analysis.project_calls.uses), asked once per name."""
        key = (name, module)
        if key not in self._uses:
            from devlint.analysis.project_calls import uses

            self._uses[key] = uses(name, self.ctx.source, self.ctx.project, module)
        return self._uses[key]

    @cached_property
    def module_stem(self) -> str:
        """The name other files import this one by (`models` for models.py; `pkg` for its __init__)."""
        import os

        path = getattr(self.ctx.project, "path", None) or "<stdin>.py"
        stem = os.path.splitext(os.path.basename(path))[0]
        return os.path.basename(os.path.dirname(path)) if stem == "__init__" else stem

    @cached_property
    def _rebinds_dynamically(self) -> bool:
        """`globals()[name] = v`, `exec(...)`: names bound where devlint cannot see."""
        return any(isinstance(c.func, cst.Name) and c.func.value in _DYNAMIC_CALLS
                   for c in self.ctx.nodes(cst.Call))

    def _star_import_after(self, nodes) -> bool:
        stars = [n for n in self.ctx.nodes(cst.ImportFrom) if isinstance(n.names, cst.ImportStar)]
        if not stars:
            return False
        first = min(self.ctx.positions[n].start.line for n in nodes)
        return any(self.ctx.positions[s].start.line >= first for s in stars)

    def _declared_global(self, name: str) -> bool:
        return any(n.name.value == name for g in self.ctx.nodes(cst.Global) for n in g.names)


def _literal(node: cst.CSTNode | None):
    """The value of a literal constant, else _UNKNOWN."""
    if isinstance(node, cst.Name):
        return _CONSTANT_NAMES.get(node.value, _UNKNOWN)
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else _UNKNOWN
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal(node.expression)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else _UNKNOWN
    return _UNKNOWN


def _harmless(decorator: cst.BaseExpression) -> bool:
    """A decorator that passes no arguments of its own: `@staticmethod`, `@torch.no_grad()`."""
    target = decorator.func if isinstance(decorator, cst.Call) else decorator
    name = dotted_name(target) or ""
    return name.rsplit(".", 1)[-1] in _HARMLESS_DECORATORS and not (
        isinstance(decorator, cst.Call) and any(True for _ in calls_in(decorator) if _ is not decorator))
