from __future__ import annotations

import libcst as cst

from devlint.model import Applicability
from devlint.rule import Invalid, Rule
from devlint.analysis.vocabulary import MODULE, MODULE_WRAPPERS, PARAMETER_ATTRIBUTES, TENSOR
from devlint.syntax import descendants, dotted_name, last_component, string_value

MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "long", "int", "bool", "type", "detach"})
DEVICE_ONLY_MOVES = frozenset({"to", "cuda", "cpu"})
_DEVICE_STRINGS = ("cuda", "cpu", "mps", "meta", "xpu", "hpu", "npu", "xla")


class DiscardedTensorMove(Rule):
    """
    ## What it does
    Flags an expression statement that calls `.to(...)`, `.cuda(...)`, `.cpu()`, `.half()`,
    `.float()`, `.double()`, `.bfloat16()`, `.long()`, `.int()`, `.bool()`, `.type(...)` or
    `.detach()` on a receiver known to be a **tensor** (also the outermost call of a chain, such as
    `x.to(device).float()`, and a list comprehension used as a statement,
    `[t.to(device) for t in ts]`).

    The receiver's kind comes from its provenance in the file (see
    `devlint/analysis/kinds.py`): tensor factories and ops, tensor methods, `.weight`/`.bias`/`.data`/
    `.grad`, `torch.Tensor` annotations, `.parameters()` loops, `register_buffer`, ...
    and from the other files of the project (the project index, `devlint/analysis/project.py`, read with the
    standard `ast` even when the file is checked alone, as pre-commit does): a function imported from
    the project whose every return is a tensor (`batch = make_batch()`, with `from .data import
    make_batch`, `from pkg.data import make_batch as mb`, `import pkg.data as d`, `from . import
    data`) gives tensors; a project class that subclasses `nn.Module` directly or through other
    project classes, in any file, gives modules (not flagged). A name the file re-binds, a function
    that may return something else, and functions that call each other in a cycle stay unknown.

    ## Why is this bad?
    Tensor methods return a new tensor and leave the original untouched, so `t.to(device)` as a
    statement does nothing. Worse, it is silent where the code was written: `t.to("cpu")` returns `t`
    itself when `t` is already there, and the bug only bites on another machine.

    ## Example
    ```python
    x = torch.zeros(3)
    x.to(device)
    ```

    ## Use instead
    ```python
    x = torch.zeros(3)
    x = x.to(device)
    ```

    ## Fix safety
    Re-binding (`x = x.to(device)`) makes later code see the moved tensor, and code written against the
    original may rely on the tensor staying where it was: a test that moves its input to the GPU
    "by mistake" while the model under test stays on the CPU passes on a GPU machine, and fails after
    the fix. So the fix is **safe** only where the original cannot have worked on a GPU machine: the
    move is a device move (`.to(device)`, `.cuda()`, `.cpu()`) and the moved name is next read, in the
    straight-line code that follows in the same block (entering `with` blocks), where the unmoved
    tensor fails and the moved one is what was meant:

    - given to a module known to be on the target device, `model(x)`, where `model` was moved there
      by the same device expression earlier on the way to the call in the same function
      (`model = Net().to(device)`, or `model.to(device)` / `model.cuda()` on a module), and is neither
      a `DataParallel`-style wrapper nor a class of the file whose `forward` moves its inputs (both
      take CPU inputs);
    - combined by arithmetic (`x * w`, `x += w`) or a torch op (`torch.cat([x, w])`, `torch.matmul(x, w)`)
      with a tensor known to be there (`w = torch.ones(2, device=device)`, `w = y.to(device)`), unless
      `x` may be a 0-dim tensor (`torch.tensor(0.5)`, or of unknown shape), which mixes with CUDA
      tensors;
    - after `.cpu()`, turned `.numpy()` (which fails for a CUDA tensor; the move is a no-op otherwise).

    "Known to be on the target device" is a small local analysis (`_on_device`,
    `_module_on_device`), a stand-in for the placement analysis. Everything else is **unsafe**: a
    next read in a branch or loop, no read at all, a read that works with the tensor where it was
    (`print(x)`, `model(x)` with a CPU model), a dtype cast (`.half()`, `.to(torch.float16)`, a `.to()`
    whose argument is not recognisably a device) or `.detach()` (they change numerics or autograd
    downstream), and a statement comprehension over a list name (`ts = [t.to(device) for t in ts]`).
    No mechanical fix (**display-only**) where re-assignment does not do what the author meant: a
    `for` loop variable (the container is unchanged), a parameter attribute of a module
    (`self.weight = self.weight.to(...)` raises TypeError), `.data`/`.grad`, subscripts, results of
    calls, and a name the scope does not bind itself (a module-level tensor moved inside a function,
    an outer function's tensor in a closure: the assignment would make it local, and the move before
    it an UnboundLocalError), unless it is declared `global`/`nonlocal` there.

    ## Not flagged
    - Modules, which move in place and return themselves: `model.to(device)` for `model = nn.Linear(2, 2)`,
      instances of classes of the file that subclass `nn.Module`, `self.to(device)` in such a class,
      `nn.DataParallel(model).cuda()`, items of `model.modules()`.
    - Receivers of unknown kind: a parameter without annotation, as in `def f(batch): batch.to(device)`;
      results of calling a model or a project function (`out = model(x)` then `out.cpu()`); objects
      whose `.to` works in place (`pipe.to("cuda")`, `data.to(device)` for graph batches).
    - Results that are used: `x = x.to(device)`, `return x.cuda()`, `y = x.float()`.

    ## References
    - [Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    - [Module.to](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
    """

    code = "DL003"
    name = "discarded-tensor-move"
    message = "the result of `.{method}()` is discarded: tensors are not moved in place; assign it"

    VALID = (
        "import torch.nn as nn\nmodel = nn.Linear(2, 2)\nmodel.to(device)\n",
        "import torch.nn as nn\nclass Net(nn.Module):\n    def go(self, device):\n        self.to(device)\n"
        "net = Net()\nnet.to(device)\n",
        "import torch.nn as nn\nnn.DataParallel(model).cuda()\n",
        "for m in model.modules():\n    m.to(device)\n",
        "def f(batch):\n    batch.to(device)\n",
        "out = model(x)\nout.cpu()\n",
        "pipe.to(\"cuda\")\n",
        "data.to(device)\n",
        "import torch\nx = torch.zeros(3)\nx = x.to(device)\n",
        "import torch\ndef f():\n    x = torch.zeros(3)\n    return x.cuda()\n",
        "import torch\nx = torch.zeros(3)\ny = x.float()\n",
        "import torch\nx = torch.zeros(3)\nx = model(x)\nx.to(device)\n",
    )
    INVALID = (
        Invalid(  # the original cannot have worked on a GPU: the model is there, the input is not
            "import torch, torch.nn as nn\ndef run(device):\n    model = nn.Linear(3, 1).to(device)\n"
            "    x = torch.zeros(3)\n    x.to(device)\n    return model(x)\n",
            fixed="import torch, torch.nn as nn\ndef run(device):\n    model = nn.Linear(3, 1).to(device)\n"
            "    x = torch.zeros(3)\n    x = x.to(device)\n    return model(x)\n",
        ),
        Invalid(
            "import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nmodel.cuda()\nx = torch.zeros(3)\nx.cuda()\n"
            "with torch.no_grad():\n    y = model(x)\n",
            fixed="import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nmodel.cuda()\nx = torch.zeros(3)\n"
            "x = x.cuda()\nwith torch.no_grad():\n    y = model(x)\n",
        ),
        Invalid(
            "import torch\ndef add(device):\n    w = torch.ones(3, device=device)\n    x = torch.zeros(3)\n"
            "    x.to(device)\n    return x + w\n",
            fixed="import torch\ndef add(device):\n    w = torch.ones(3, device=device)\n    x = torch.zeros(3)\n"
            "    x = x.to(device)\n    return x + w\n",
        ),
        Invalid(
            "import torch\ndef f(t: torch.Tensor):\n    t.cpu()\n    return t.numpy()\n",
            fixed="import torch\ndef f(t: torch.Tensor):\n    t = t.cpu()\n    return t.numpy()\n",
        ),
        Invalid(  # the model stays on the CPU: on a GPU machine the original works, so only --unsafe-fixes
            "import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nx = torch.zeros(3)\nx.cuda()\n"
            "assert torch.equal(model(x), model(torch.zeros(3)))\n",
            fixed="import torch, torch.nn as nn\nmodel = nn.Linear(3, 1)\nx = torch.zeros(3)\nx.cuda()\n"
            "assert torch.equal(model(x), model(torch.zeros(3)))\n",
        ),
        Invalid(
            "import torch\nx = torch.zeros(3)\nx.to(device)\n",
            fixed="import torch\nx = torch.zeros(3)\nx = x.to(device)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef f(t: torch.Tensor, device):\n    t.cpu()\n",
            fixed="import torch\ndef f(t: torch.Tensor, device):\n    t = t.cpu()\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nx = torch.rand(3)\nx.half()\n",
            fixed="import torch\nx = torch.rand(3)\nx = x.half()\n",
            unsafe=True,
        ),
        Invalid("import torch\nx = torch.rand(3)\nx.detach()\n", fixed="import torch\nx = torch.rand(3)\nx.detach()\n"),
        Invalid(
            "import torch\nts = [torch.zeros(1), torch.ones(1)]\n[t.to(device) for t in ts]\n",
            fixed="import torch\nts = [torch.zeros(1), torch.ones(1)]\nts = [t.to(device) for t in ts]\n",
            unsafe=True,
        ),
        Invalid("for p in model.parameters():\n    p.to(device)\n", fixed="for p in model.parameters():\n    p.to(device)\n"),
        Invalid("import torch.nn as nn\nclass M(nn.Module):\n    def f(self, device):\n        self.conv.weight.to(device)\n"),
        Invalid(
            "import torch.nn as nn, torch\nclass M(nn.Module):\n    def __init__(self):\n"
            "        self.register_buffer('mask', torch.ones(3))\n    def f(self, device):\n        self.mask.to(device)\n",
            fixed="import torch.nn as nn, torch\nclass M(nn.Module):\n    def __init__(self):\n"
            "        self.register_buffer('mask', torch.ones(3))\n    def f(self, device):\n"
            "        self.mask = self.mask.to(device)\n",
            unsafe=True,
        ),
        Invalid("import torch\ntorch.rand(3).cuda()\n"),
        Invalid("import torch\nx = torch.cat([a, b])\nx.to(device).float()\n",
                fixed="import torch\nx = torch.cat([a, b])\nx = x.to(device).float()\n", unsafe=True),
    )

    @staticmethod
    def could_match(summary) -> bool:
        return bool(summary.statement_calls & MOVES)

    def visit_Expr(self, node: cst.Expr) -> None:
        value = node.value
        call = value.elt if isinstance(value, cst.ListComp) else value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in MOVES):
            return
        receiver = call.func.value
        if self.ctx.is_imported_module(receiver) or self.ctx.possible_kinds.of(receiver) is not TENSOR:
            return  # settled without scope analysis, as most `model.to(device)` statements are
        if self.ctx.kinds.of(receiver) is not TENSOR:
            return
        message = self.message.format(method=call.func.attr.value)
        fix = self._comprehension_fix(node, value, call) if isinstance(value, cst.ListComp) else self._fix(node, call)
        self.report(value, message, fix)

    # -- fixes -----------------------------------------------------------------------------------------
    def _fix(self, statement: cst.Expr, call: cst.Call):
        root, methods = self._chain(call)
        title = "Assign the result back"
        target = self._rebindable(root)
        if target is None:
            return self.display_only(f"{title}: re-binding `{self.ctx.code(root).strip()}` would not do what was meant")
        applicability = Applicability.SAFE if self._could_not_have_worked(statement, call, target) else Applicability.UNSAFE
        return self.fix(f"{title}: `{target} = {target}.{methods[-1]}(...)`", applicability,
                        self.insert_before(statement, f"{target} = "))

    def _comprehension_fix(self, statement: cst.Expr, comp: cst.ListComp, call: cst.Call):
        title = "Assign the moved list back"
        loop = comp.for_in
        root, _ = self._chain(call)
        if (loop.inner_for_in is not None or loop.ifs or not isinstance(loop.iter, cst.Name)
                or not isinstance(loop.target, cst.Name) or not isinstance(root, cst.Name)
                or root.value != loop.target.value or not self._bound_to_list(loop.iter)
                or not self._local(loop.iter)):
            return self.display_only(title)
        # the list's later users may rely on its tensors staying where they were (see "Fix safety")
        return self.fix(f"{title}: `{loop.iter.value} = [...]`", Applicability.UNSAFE,
                        self.insert_before(statement, f"{loop.iter.value} = "))

    @staticmethod
    def _chain(call: cst.Call) -> tuple[cst.BaseExpression, list[str]]:
        methods = []
        node: cst.BaseExpression = call
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
            methods.append(node.func.attr.value)
            node = node.func.value
        return node, list(reversed(methods))

    def _device_only(self, call: cst.Call) -> bool:
        node: cst.BaseExpression = call
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES:
            method = node.func.attr.value
            if method not in DEVICE_ONLY_MOVES or (method == "to" and not self._is_device_argument(node)):
                return False
            node = node.func.value
        return True

    @staticmethod
    def _is_device_argument(call: cst.Call) -> bool:
        if any(a.keyword is not None and a.keyword.value in ("dtype", "copy") for a in call.args):
            return False
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) != 1 or positional[0].star:
            return any(a.keyword is not None and a.keyword.value == "device" for a in call.args) and not positional
        value = positional[0].value
        text = string_value(value)
        if text is not None:
            return text.split(":")[0] in _DEVICE_STRINGS
        if isinstance(value, cst.Call):
            return (dotted_name(value.func) or "").endswith("device")
        component = (last_component(value) or "").lower()
        return "device" in component or component in ("dev", "gpu", "rank", "local_rank")

    def _rebindable(self, root: cst.BaseExpression) -> str | None:
        if isinstance(root, cst.Name):
            return None if self._is_loop_variable(root) or not self._local(root) else root.value
        if isinstance(root, cst.Attribute):
            attribute = root.attr.value
            if attribute in PARAMETER_ATTRIBUTES or attribute in ("data", "grad"):
                return None
            if self.ctx.kinds.self_attribute_is_parameter(root):
                return None
            if dotted_name(root) is None:
                return None
            return self.ctx.code(root).strip()
        return None

    def _local(self, name: cst.Name) -> bool:
        """May `name = ...` be written where `name` is read? Only where the scope itself binds the name
        (or declares it global/nonlocal): elsewhere the assignment would make a free variable (a
        module-level tensor read in a function, an outer function's local in a closure) local to the
        whole scope, and the read before it an UnboundLocalError."""
        scope = self.ctx.scope(name)
        if scope is None:
            return False
        if scope is scope.globals:
            return True
        if any(a.scope is scope for a in self.ctx.bindings(name)):
            return True
        owner = self.ctx.enclosing(name, (cst.FunctionDef, cst.ClassDef))
        return any(
            item.name.value == name.value and self.ctx.enclosing(statement, (cst.FunctionDef, cst.ClassDef)) is owner
            for kind in (cst.Global, cst.Nonlocal) for statement in self.ctx.nodes(kind) for item in statement.names
        )

    def _is_loop_variable(self, name: cst.Name) -> bool:
        for assignment in self.ctx.bindings(name):
            node = assignment.node
            for ancestor in self.ctx.ancestors(node):
                if isinstance(ancestor, (cst.For, cst.CompFor)):
                    if self._within(node, ancestor.target):
                        return True
                    break
                if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                    break
        return False

    def _within(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return node is container or any(a is container for a in self.ctx.ancestors(node))

    def _bound_to_list(self, name: cst.Name) -> bool:
        assignments = self.ctx.bindings(name)
        if not assignments:
            return False
        for assignment in assignments:
            target = assignment.node
            parent = self.ctx.parent(self.ctx.parent(target)) if isinstance(target, cst.Name) else None
            if not (isinstance(parent, cst.Assign) and (
                isinstance(parent.value, (cst.List, cst.ListComp))
                or (isinstance(parent.value, cst.Call) and dotted_name(parent.value.func) == "list")
            )):
                return False
        return True

    # -- when re-binding cannot change what worked on a GPU ---------------------------------------------
    def _could_not_have_worked(self, statement: cst.Expr, call: cst.Call, target: str) -> bool:
        """Is `target` next used, in straight-line code, where the original (left where it was) fails on
        a GPU machine and the moved value is what the author meant? Only then is the re-binding safe:
        anywhere else later code may rely on the tensor staying where it was (a test comparing it with
        a CPU model's output)."""
        if not self._device_only(call):
            return False
        move = _signature(call)
        if move is None:
            return False
        use = self._next_use(statement, target)
        if use is None:
            return False
        if move[0] == "cpu":
            parent = self.ctx.parent(use)  # `x.cpu()` then `x.numpy()`: fails for a CUDA x, a no-op otherwise
            return (isinstance(parent, cst.Attribute) and parent.attr.value == "numpy"
                    and isinstance(self.ctx.parent(parent), cst.Call))
        return self._combined_with_moved(use, move)

    def _next_use(self, statement: cst.Expr, target: str) -> cst.CSTNode | None:
        """The first read of `target` after the move, in the statements that always run next in the same
        block (descending into `with` blocks); None when the next mention rebinds it, sits in a branch,
        loop or nested definition, or the block ends first."""
        line = self.ctx.parent(statement)
        if not isinstance(line, cst.SimpleStatementLine):
            return None
        rest = list(line.body)
        index = next(i for i, small in enumerate(rest) if small is statement)
        found = self._first_read_in_smalls(rest[index + 1:], target)
        if found is not None:
            return found or None
        block = self.ctx.parent(line)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        body = list(block.body)
        position = next(i for i, item in enumerate(body) if item is line)
        found = self._first_read_in_statements(body[position + 1:], target)
        return found or None

    def _first_read_in_statements(self, statements, target: str):
        """The read node; False when the search must stop without one; None when `target` is not mentioned."""
        for item in statements:
            if isinstance(item, cst.SimpleStatementLine):
                found = self._first_read_in_smalls(item.body, target)
            elif isinstance(item, cst.With):
                found = self._first_read(item.items, target)
                if found is None:
                    found = self._first_read_in_statements(item.body.body, target) if isinstance(
                        item.body, cst.IndentedBlock) else False
            else:
                found = False if self._mentions(item, target) else None
            if found is not None:
                return found
        return None

    def _first_read_in_smalls(self, smalls, target: str):
        for small in smalls:
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                found = self._first_read([small.value] if small.value is not None else [], target)
                if found is not None:
                    return found
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                if any(self._mentions(t, target) for t in targets):
                    return False  # re-bound (or stored into) before any read
            elif isinstance(small, cst.AugAssign) and self._is_target(small.target, target):
                return small.target  # `x += y` reads x first
            elif isinstance(small, cst.Del) and self._mentions(small, target):
                return False
            else:
                found = self._first_read([small], target)
                if found is not None:
                    return found
        return None

    def _first_read(self, nodes, target: str):
        """The first node (in source order) that is `target` among `nodes`, None when there is none;
        False when the first mention is inside a lambda or comprehension (read later, or not at all)."""
        best = None
        for root in nodes:
            for node in descendants(root):
                if self._is_target(node, target):
                    if best is None or self.ctx.span(node)[0] < self.ctx.span(best)[0]:
                        best = node
        if best is not None and self.ctx.enclosing(best, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
                                                         cst.GeneratorExp)) is not None:
            return False
        return best

    def _mentions(self, node: cst.CSTNode, target: str) -> bool:
        return any(self._is_target(child, target) for child in descendants(node))

    def _is_target(self, node: cst.CSTNode, target: str) -> bool:
        if "." in target:
            return isinstance(node, cst.Attribute) and dotted_name(node) == target
        if not (isinstance(node, cst.Name) and node.value == target):
            return False
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False  # `obj.x`
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return False  # `f(x=...)`
        return not isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName))

    def _combined_with_moved(self, use: cst.CSTNode, move: tuple[str, str]) -> bool:
        """Does the original fail at `use`: is the unmoved tensor given to a module, or combined by
        arithmetic or a torch op with a tensor, *known to be on the target device*?"""
        parent = self.ctx.parent(use)
        if isinstance(parent, cst.AugAssign) and parent.target is use:
            return _ARITHMETIC_OPS.get(type(parent.operator)) is not None and self._on_device(
                parent.value, move, use) and not self._maybe_scalar(use)
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, tuple(_ARITHMETIC)):
            other = parent.right if parent.left is use else parent.left
            return self._on_device(other, move, use) and not self._maybe_scalar(use)
        if isinstance(parent, cst.Arg) and parent.value is use:
            call = self.ctx.parent(parent)
            if not isinstance(call, cst.Call):
                return False
            if isinstance(call.func, (cst.Name, cst.Attribute)) and self._module_on_device(call.func, move, use):
                return True
            return self._torch_op_with_moved(call, use, move)
        if isinstance(parent, cst.Element):
            sequence = self.ctx.parent(parent)
            arg = self.ctx.parent(sequence) if isinstance(sequence, (cst.List, cst.Tuple)) else None
            call = self.ctx.parent(arg) if isinstance(arg, cst.Arg) else None
            if isinstance(call, cst.Call) and (self.ctx.qualified_names(call.func) & _SEQUENCE_OPS):
                others = [e.value for e in sequence.elements if e is not parent]
                return any(self._on_device(o, move, use) for o in others) and not self._maybe_scalar(use)
        return False

    def _torch_op_with_moved(self, call: cst.Call, use: cst.CSTNode, move) -> bool:
        if not self.ctx.qualified_names(call.func) & _BINARY_OPS:
            return False
        others = [a.value for a in call.args if a.value is not use and a.keyword is None]
        return any(self._on_device(o, move, use) for o in others) and not self._maybe_scalar(use)

    # -- "known to be on the target device": a local stand-in for the placement analysis -------------
    def _on_device(self, expr: cst.BaseExpression, move: tuple[str, str], at: cst.CSTNode) -> bool:
        """Is the tensor `expr` (an inline move or factory, or a name / `self.x` whose latest binding in
        the straight-line code before `at` is one) known to be on the device of `move`?"""
        if isinstance(expr, cst.Call):
            return self._value_on_device(expr, move)
        dotted = dotted_name(expr)
        if dotted is None:
            return False
        binding = self._latest(dotted, at, module=False)
        return binding is not None and binding[0] == "bound" and self._value_on_device(binding[1], move)

    def _module_on_device(self, func: cst.BaseExpression, move: tuple[str, str], at: cst.CSTNode) -> bool:
        """Is the callee a module moved to the device of `move` (`model.to(device)` on a module, or
        `model = Net().to(device)`) in the straight-line code before `at`, and not a wrapper that moves
        its inputs itself (`DataParallel`), nor a class of the file whose `forward` moves them?"""
        dotted = dotted_name(func)
        if dotted is None or self._moves_its_inputs(func):
            return False
        binding = self._latest(dotted, at, module=True)
        if binding is None:
            return False
        how, value = binding
        if how == "moved":
            # moved in place and then called: a module (a tensor is not callable), unless its kind says tensor
            return _chain_signature(value) == move and self.ctx.kinds.of(func) is not TENSOR
        return _chain_signature(value) == move and not self._value_moves_inputs(value)

    def _moves_its_inputs(self, node: cst.CSTNode) -> bool:
        """A wrapper that scatters its inputs (`DataParallel`, `DistributedDataParallel`), or a class of
        the file whose `forward` moves its arguments: CPU inputs work there."""
        if self._value_moves_inputs(node):
            return True
        if isinstance(node, cst.Name):  # what the scope binds the name to
            values = []
            for assignment in self.ctx.bindings(node):
                statement = self.ctx.parent(self.ctx.parent(assignment.node))
                if isinstance(statement, cst.Assign):
                    values.append(statement.value)
        elif isinstance(node, cst.Attribute):  # `self.model`: what the file assigns to it
            target = dotted_name(node)
            values = [a.value for a in self.ctx.nodes(cst.Assign)
                      if any(dotted_name(t.target) == target for t in a.targets)]
        else:
            values = []
        return any(self._value_moves_inputs(value) for value in values)

    def _value_moves_inputs(self, value: cst.CSTNode) -> bool:
        names = set()
        for child in descendants(value):
            if isinstance(child, (cst.Name, cst.Attribute)):
                names |= self.ctx.qualified_names(child)
                names.add(dotted_name(child) or "")
        return bool(names & MODULE_WRAPPERS) or any("DataParallel" in n or n.endswith("DDP") for n in names) or any(
            self._forward_moves_inputs(name) for name in names)

    def _forward_moves_inputs(self, class_name: str) -> bool:
        for cls in self.ctx.nodes(cst.ClassDef):
            if cls.name.value != class_name:
                continue
            for item in cls.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == "forward":
                    params = {p.name.value for p in item.params.params}
                    for node in descendants(item):
                        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                                and node.func.attr.value in DEVICE_ONLY_MOVES
                                and isinstance(node.func.value, cst.Name) and node.func.value.value in params):
                            return True
        return False

    def _value_on_device(self, value: cst.BaseExpression, move: tuple[str, str]) -> bool:
        if _chain_signature(value) == move:
            return True
        if isinstance(value, cst.Call) and any(n.startswith("torch.") for n in self.ctx.qualified_names(value.func)):
            for arg in value.args:
                if arg.keyword is not None and arg.keyword.value == "device":
                    return device_signature(arg.value) == move
        return False

    def _maybe_scalar(self, use: cst.CSTNode) -> bool:
        """A 0-dim CPU tensor (`torch.tensor(0.5)`) mixes with CUDA tensors: the original may have worked."""
        binding = self._latest(dotted_name(use) or "", use, module=False)
        if binding is None or binding[0] != "bound":
            return True
        value = binding[1]
        return not isinstance(value, cst.Call) or (
            bool(self.ctx.qualified_names(value.func) & {"torch.tensor", "torch.scalar_tensor", "torch.as_tensor"})
            and bool(value.args) and isinstance(value.args[0].value, (cst.Integer, cst.Float, cst.UnaryOperation, cst.Name))
        )

    def _latest(self, dotted: str, at: cst.CSTNode, module: bool):
        """("bound", value) or ("moved", call) for the latest statement before `at`, in the straight-line
        code of its function that leads to it, that binds `dotted` (or, with `module`, moves it in place);
        None when there is none or a branch, loop or nested definition in between touches it."""
        for statement in self._preceding(at):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in reversed(statement.body):
                    if isinstance(small, (cst.Assign, cst.AnnAssign)):
                        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                        if any(dotted_name(t) == dotted for t in targets):
                            return ("bound", small.value) if small.value is not None and len(targets) == 1 else None
                        if any(self._mentions(t, dotted) for t in targets):
                            return None
                    elif module and isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                        root, methods = self._chain(small.value)
                        if dotted_name(root) == dotted and set(methods) & DEVICE_ONLY_MOVES:
                            return "moved", small.value
            elif self._assigns_or_moves(statement, dotted):
                return None
        return None

    def _assigns_or_moves(self, statement: cst.CSTNode, dotted: str) -> bool:
        for node in descendants(statement):
            if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
                if self._mentions(node.target, dotted):
                    return True
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node.name.value == dotted:
                return True
            if isinstance(node, (cst.For, cst.CompFor, cst.WithItem)) and self._mentions(
                    node.target if not isinstance(node, cst.WithItem) else (node.asname or node), dotted):
                return True
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
                    node.func.attr.value in DEVICE_ONLY_MOVES and dotted_name(node.func.value) == dotted):
                return True
        return False

    def _preceding(self, node: cst.CSTNode):
        """The statements that run before `node`'s statement on the way to it, nearest first: earlier
        siblings in its block, then those of each enclosing statement, up to its function or class."""
        current = node
        while True:
            parent = self.ctx.parent(current)
            while parent is not None and not isinstance(parent, (cst.IndentedBlock, cst.Module)):
                if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                    return
                current, parent = parent, self.ctx.parent(parent)
            if parent is None:
                return
            body = list(parent.body)
            index = next(i for i, item in enumerate(body) if item is current)
            yield from reversed(body[:index])
            if isinstance(parent, cst.Module):
                return
            current = self.ctx.parent(parent)
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                return


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.MatrixMultiply, cst.Modulo,
               cst.Power)
_ARITHMETIC_OPS = {cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
                   cst.MatrixMultiplyAssign: "@"}
_BINARY_OPS = frozenset(f"torch.{name}" for name in (
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "matmul", "mm", "bmm", "mv", "dot",
    "maximum", "minimum", "where", "addmm", "baddbmm"))
_SEQUENCE_OPS = frozenset({"torch.cat", "torch.stack", "torch.concat", "torch.concatenate", "torch.hstack",
                           "torch.vstack"})


def _signature(call: cst.CSTNode) -> tuple[str, str] | None:
    """Where a device move sends its receiver: ("to", device text), ("cuda", index text) or ("cpu", "")."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
        return None
    method = call.func.attr.value
    if method == "cpu":
        return "cpu", ""
    if method == "cuda":
        positional = [a for a in call.args if a.keyword is None or a.keyword.value == "device"]
        return "cuda", (_text(positional[0].value) if positional else "")
    if method == "to":
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value == "device":
                return None if arg.star else device_signature(arg.value)
    return None


def device_signature(value: cst.BaseExpression) -> tuple[str, str]:
    """A device expression as a signature: the literal CUDA devices as `.cuda()` writes them (`"cuda"` and
    `.cuda()` are the current CUDA device, `"cuda:1"` is `.cuda(1)`), anything else by its text."""
    literal = string_value(value)
    if literal is None and isinstance(value, cst.Call) and (dotted_name(value.func) or "").endswith("device") \
            and len(value.args) == 1:
        literal = string_value(value.args[0].value)
    if literal is not None:
        kind, _, index = literal.partition(":")
        if kind == "cuda":
            return "cuda", index
        if kind == "cpu":
            return "cpu", ""
    return "to", _text(value)


def _text(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()


def _chain_signature(value: cst.CSTNode) -> tuple[str, str] | None:
    """The signature of the last device move of a chain (`Net().to(device).eval()`), None without one."""
    node = value
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value in DEVICE_ONLY_MOVES:
            return _signature(node)
        if node.func.attr.value not in MOVES and node.func.attr.value not in ("eval", "train", "requires_grad_"):
            return None
        node = node.func.value
    return None
