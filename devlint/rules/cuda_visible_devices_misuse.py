from __future__ import annotations

from functools import cached_property

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.rules._hardcoded import qualified
from devlint.syntax import string_value

KEY = "CUDA_VISIBLE_DEVICES"
_ENVIRON = frozenset({"os.environ"})
_ENVIRON_METHODS = frozenset({"get", "setdefault", "pop", "update", "__getitem__", "__setitem__", "__contains__"})
_OS_FUNCTIONS = frozenset({"os.getenv", "os.putenv", "os.unsetenv"})
_SETENV_METHODS = frozenset({"setenv", "delenv"})  # pytest's monkeypatch
# torch.cuda calls that initialise CUDA, after which CUDA_VISIBLE_DEVICES is read no more.
_INITIALISING = frozenset(f"torch.cuda.{name}" for name in (
    "is_available", "device_count", "init", "set_device", "current_device", "get_device_name",
    "get_device_properties", "get_device_capability", "synchronize", "mem_get_info", "current_stream",
    "default_stream", "Stream", "Event", "is_bf16_supported",
))


class CudaVisibleDevicesMisuse(Rule):
    """
    ## What it does
    Flags two ways of setting the visible GPUs that have no effect: a misspelled key such as
    `CUDA_VISIBLE_DEVICE` (or `cuda_visible_devices`) in `os.environ[...]`, `os.environ.get`,
    `setdefault`, `pop`, `update`, `in os.environ`, `os.getenv`, `os.putenv` and
    `monkeypatch.setenv`; and `os.environ["CUDA_VISIBLE_DEVICES"] = ...` (or `setdefault`, `update`,
    `os.putenv`) run **after** CUDA was already used earlier on the same straight-line path, at module
    level or from the start of the same function: a `.cuda()` call or a `torch.cuda` call that
    initialises CUDA (`is_available`, `device_count`, `set_device`, `current_device`, ...) in an
    earlier statement, in the header of an earlier `if`/`while`/`for`/`with`
    (`if not torch.cuda.is_available(): return`), or in the condition of an `if` that encloses the
    assignment.

    On by default: both patterns are certain bugs, and only exact patterns are matched (the test
    corpus has none: its GPUs are chosen from the shell).

    ## Why is this bad?
    The CUDA runtime reads `CUDA_VISIBLE_DEVICES` once, when it initialises. A misspelled name is
    read by nothing, so the job quietly runs on every GPU (usually GPU 0, already busy). Set after
    `torch.cuda.device_count()` or `torch.cuda.is_available()`, the correct name is too late: the
    devices were already enumerated, and the assignment changes nothing.

    ## Example
    ```python
    os.environ["CUDA_VISIBLE_DEVICE"] = "1"

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus
    ```

    ## Use instead
    ```python
    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus  # before anything touches CUDA
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ```
    or, better, set it in the shell: `CUDA_VISIBLE_DEVICES=1 python train.py`.

    ## Fix safety
    Correcting a misspelled key in the string literal (its quotes and prefix kept), or the keyword of
    `os.environ.update(CUDA_VISIBLE_DEVICE=...)`, is **safe**: the misspelled variable is read by no
    library, and the intent is unambiguous (the selection then takes effect, which is the point). A
    late assignment is **display-only**: moving it above the first CUDA call may move imports and
    code with side effects, so it is left to the author.

    ## Not flagged
    - The right key set before CUDA is touched: `os.environ["CUDA_VISIBLE_DEVICES"] = "0"` then
      `torch.cuda.device_count()`.
    - An assignment in a function with no CUDA call before it in that function
      (`def main(): os.environ["CUDA_VISIBLE_DEVICES"] = "1"`), even after a module-level
      `torch.cuda.device_count()`: whether CUDA ran first depends on the callers.
    - Calls that do not initialise CUDA before it: `import torch`, `torch.cuda.manual_seed(0)`,
      `torch.cuda.empty_cache()`, a `.cuda()` inside a function defined earlier.
    - Calls that may not run before it: inside the body of an earlier `if`, `for` or `try`
      (`if args.cuda: model.cuda()`), in an `elif` condition, in a lambda.
    - Reading the variable: `os.environ.get("CUDA_VISIBLE_DEVICES")`.
    - The key in other strings: `print("set CUDA_VISIBLE_DEVICE")`, `{"CUDA_VISIBLE_DEVICE": "0"}`.

    ## References
    - [pytorch/pytorch#23544: `CUDA_VISIBLE_DEVICES` ignored after `torch.cuda.is_available()`](https://github.com/pytorch/pytorch/issues/23544)
    - [CUDA environment variables](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars)
    """

    code = "DL008"
    name = "cuda-visible-devices-misuse"
    message = "`CUDA_VISIBLE_DEVICES` is misspelled: the GPU selection has no effect"

    VALID = (
        'import os, torch\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nn = torch.cuda.device_count()\n',
        'import os, torch\nn = torch.cuda.device_count()\ndef main(): os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
        'import os\nimport torch\ntorch.cuda.manual_seed(0)\ntorch.cuda.empty_cache()\n'
        'def load(m):\n    return m.cuda()\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
        'import os, torch\nn = torch.cuda.device_count()\ngpus = os.environ.get("CUDA_VISIBLE_DEVICES")\n',
        'print("set CUDA_VISIBLE_DEVICE")\nenv = {"CUDA_VISIBLE_DEVICE": "0"}\n',
        'import os, torch\ndef main(args):\n    if args.cuda:\n        model.cuda()\n    for m in ms:\n'
        '        m.cuda()\n    try:\n        torch.cuda.init()\n    except RuntimeError:\n        pass\n'
        '    if args.a:\n        pass\n    elif torch.cuda.is_available():\n        pass\n'
        '    f = lambda: torch.cuda.device_count()\n    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus\n',
    )
    INVALID = (
        Invalid(
            'import os\nos.environ["CUDA_VISIBLE_DEVICE"] = "1"\n',
            fixed='import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
        ),
        Invalid(
            "from os import environ\ngpus = environ.get('cuda_visible_devices', '0')\n",
            fixed="from os import environ\ngpus = environ.get('CUDA_VISIBLE_DEVICES', '0')\n",
        ),
        Invalid(
            'import os\nos.environ.setdefault("CUDA_VISIBLE_DEVICE", "0")\nos.putenv(r"CUDA_VISIBLE_DEVICE", "0")\n',
            fixed='import os\nos.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")\nos.putenv(r"CUDA_VISIBLE_DEVICES", "0")\n',
            count=2,
        ),
        Invalid(
            'import os\nos.environ.update({"CUDA_VISIBLE_DEVICE": "0"})\nos.environ.update(CUDA_VISIBLE_DEVICE="1")\n',
            fixed='import os\nos.environ.update({"CUDA_VISIBLE_DEVICES": "0"})\nos.environ.update(CUDA_VISIBLE_DEVICES="1")\n',
            count=2,
        ),
        Invalid(
            'import os\nif "CUDA_VISIBLE_DEVICE" in os.environ:\n    pass\n',
            fixed='import os\nif "CUDA_VISIBLE_DEVICES" in os.environ:\n    pass\n',
        ),
        Invalid(
            "def test(monkeypatch):\n    monkeypatch.setenv('CUDA_VISIBLE_DEVICE', '')\n",
            fixed="def test(monkeypatch):\n    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '')\n",
        ),
        Invalid(
            'import os, torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            'os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
        ),
        Invalid(
            'import os, torch\nmodel = Net().cuda()\nif __name__ == "__main__":\n'
            '    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus\n',
        ),
        Invalid(
            'import os, torch\nif torch.cuda.device_count() > 1:\n    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0,1")\n',
        ),
        Invalid(
            'import os, torch\ndef main(args):\n    use_cuda = torch.cuda.is_available()\n'
            '    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus\n',
        ),
        Invalid(
            'import os, torch\ndef main(args):\n    if not torch.cuda.is_available():\n        return\n'
            '    with open(args.log) as log:\n        os.environ.update({"CUDA_VISIBLE_DEVICES": args.gpus})\n',
        ),
        Invalid(
            'import os\ndef setup(model, gpus):\n    model = model.cuda()\n    if gpus:\n'
            '        os.environ["CUDA_VISIBLE_DEVICES"] = gpus\n',
        ),
    )

    # -- a misspelled key ------------------------------------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value is None or not _misspelled(value) or not self._names_a_variable(node):
            return
        quote = node.quote
        prefix = node.value[: node.value.index(quote[0])]
        self.report(node, self._misspelled_message(value),
                    self.fix(f"Spell it `{KEY}`", Applicability.SAFE, self.replace(node, f"{prefix}{quote}{KEY}{quote}")))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is None or not _misspelled(node.keyword.value):
            return
        call = self.ctx.parent(node)
        if isinstance(call, cst.Call) and self._environ_method(call.func) == "update":
            self.report(node.keyword, self._misspelled_message(node.keyword.value),
                        self.fix(f"Spell it `{KEY}`", Applicability.SAFE, self.replace(node.keyword, KEY)))

    @staticmethod
    def _misspelled_message(value: str) -> str:
        return f"`{value}` is not `{KEY}`: the variable is read by nothing, and the GPU selection has no effect"

    def _names_a_variable(self, node: cst.SimpleString) -> bool:
        """The string is the key of `os.environ[...]`, `os.environ.get(...)`, `os.getenv(...)`, ..."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Index):  # os.environ["..."]
            subscript = self.ctx.parent(self.ctx.parent(parent))
            return isinstance(subscript, cst.Subscript) and bool(qualified(self.ctx, subscript.value, _ENVIRON))
        if isinstance(parent, cst.Comparison):  # "..." in os.environ
            target = parent.comparisons[0]
            return (parent.left is node and isinstance(target.operator, (cst.In, cst.NotIn))
                    and bool(qualified(self.ctx, target.comparator, _ENVIRON)))
        if isinstance(parent, cst.DictElement) and parent.key is node:  # os.environ.update({"...": ...})
            dictionary = self.ctx.parent(parent)
            arg = self.ctx.parent(dictionary)
            call = self.ctx.parent(arg) if isinstance(arg, cst.Arg) else None
            return isinstance(call, cst.Call) and self._environ_method(call.func) == "update"
        if isinstance(parent, cst.Arg) and parent.keyword is None:
            call = self.ctx.parent(parent)
            if not (isinstance(call, cst.Call) and call.args[0] is parent):
                return False
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _SETENV_METHODS:
                return True
            return self._environ_method(func) is not None or bool(qualified(self.ctx, func, _OS_FUNCTIONS))
        return False

    def _environ_method(self, func: cst.BaseExpression) -> str | None:
        if isinstance(func, cst.Attribute) and func.attr.value in _ENVIRON_METHODS:
            if qualified(self.ctx, func.value, _ENVIRON):
                return func.attr.value
        return None

    # -- set too late --------------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        for statement, setting in self._module_level_settings():
            use = self._earlier_cuda_use(statement)
            if use is not None:
                line = self.ctx.span(use)[0].line
                self.report(setting, f"`{KEY}` is set after CUDA was initialised (line {line}): it has no "
                            "effect any more; set it before the first CUDA call, or in the shell",
                            self.display_only(f"Set `{KEY}` before the first CUDA call (line {line})"))

    def _module_level_settings(self):
        """(statement, the node that sets the variable) for settings at module level or in a function
        (not directly in a class body)."""
        for line in self.ctx.nodes(cst.SimpleStatementLine):
            owner = self.ctx.enclosing(line, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
            if owner is not None and not isinstance(owner, cst.FunctionDef):
                continue
            for small in line.body:
                setting = self._sets_key(small)
                if setting is not None:
                    yield line, setting

    def _sets_key(self, small: cst.BaseSmallStatement) -> cst.CSTNode | None:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                subscript = target.target
                if (isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1
                        and isinstance(subscript.slice[0].slice, cst.Index)
                        and string_value(subscript.slice[0].slice.value) == KEY
                        and qualified(self.ctx, subscript.value, _ENVIRON)):
                    return subscript
            return None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            method = self._environ_method(call.func)
            first = call.args[0].value if call.args else None
            if method == "setdefault" or (method is None and qualified(self.ctx, call.func, {"os.putenv"})):
                return call if string_value(first) == KEY else None
            if method == "update":
                if isinstance(first, cst.Dict) and any(
                    isinstance(e, cst.DictElement) and string_value(e.key) == KEY for e in first.elements
                ):
                    return call
                return call if any(a.keyword is not None and a.keyword.value == KEY for a in call.args) else None
        return None

    def _earlier_cuda_use(self, statement: cst.SimpleStatementLine) -> cst.CSTNode | None:
        """A CUDA-initialising call that runs before `statement` on the straight-line path to it, from
        the start of its function (or of the module): an earlier statement of an enclosing block, the
        header of an earlier compound statement (`if torch.cuda.is_available():`), the condition of
        an enclosing `if`/`while`."""
        child: cst.CSTNode = statement
        for parent in self.ctx.ancestors(statement):
            if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                break  # (what ran before the call depends on the callers)
            if isinstance(parent, (cst.IndentedBlock, cst.Module)):
                for sibling in parent.body:
                    if sibling is child:
                        break
                    for part in self._always_run(sibling):
                        use = self._cuda_use_in(part)
                        if use is not None:
                            return use
            elif isinstance(parent, (cst.If, cst.While)) and child is not parent.test:
                use = self._cuda_use_in(parent.test)
                if use is not None:
                    return use
            child = parent
        return None

    @staticmethod
    def _always_run(statement: cst.CSTNode) -> list[cst.CSTNode]:
        """The parts of a statement that run whenever the statement does: a simple statement line, the
        condition of an `if`/`while`, the iterable of a `for`, the items of a `with`."""
        if isinstance(statement, cst.SimpleStatementLine):
            return [statement]
        if isinstance(statement, (cst.If, cst.While)):
            return [statement.test]
        if isinstance(statement, cst.For):
            return [statement.iter]
        if isinstance(statement, cst.With):
            return [item.item for item in statement.items]
        return []

    def _cuda_use_in(self, node: cst.CSTNode) -> cst.CSTNode | None:
        for call in self._cuda_calls:
            if call is node or any(a is node for a in self.ctx.ancestors(call)):
                if not any(isinstance(a, cst.Lambda) for a in self.ctx.ancestors(call)):
                    return call
        return None

    @cached_property
    def _cuda_calls(self) -> list[cst.Call]:
        """Every call that initialises CUDA, in source order."""
        found = []
        for call in self.ctx.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and not self.ctx.is_imported_module(func.value):
                found.append(call)
            elif qualified(self.ctx, func, _INITIALISING):
                found.append(call)
        return sorted(found, key=lambda c: self.ctx.span(c)[0])

    def _in_function(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for a in self.ctx.ancestors(node))


def _misspelled(value: str) -> bool:
    return value != KEY and value.strip().upper() in {KEY, "CUDA_VISIBLE_DEVICE"}
