from __future__ import annotations

from devlint.candidates import AMP_NAMES

import libcst as cst

from devlint.model import Applicability, Edit, Position
from devlint.rule import Invalid, Rule
from devlint.analysis.device import device_type_reference, torch_name
from devlint.analysis.device_reasons import torch_failure
from devlint.rules._hardcoded import qualified
from devlint.analysis.versions import VersionGates
from devlint.suppressions import parse as parse_suppressions
from devlint.syntax import descendants, dotted_name, is_none, last_component, string_value

_AUTOCAST = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
_SCALER = frozenset({"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"})
_CUSTOM = frozenset({
    "torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd",
    "torch.cuda.amp.autocast_mode.custom_fwd", "torch.cuda.amp.autocast_mode.custom_bwd",
})
_ALL = _AUTOCAST | _SCALER | _CUSTOM
_LAST_NAMES = AMP_NAMES  # (one list with the pre-pass, devlint.candidates)
_AMP_MODULES = frozenset({"torch.cuda.amp", "torch.cuda.amp.autocast_mode", "torch.cuda.amp.grad_scaler"})
_AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")  # torch.cuda.amp.autocast's positional order


class CudaOnlyAmp(Rule):
    """
    ## What it does
    Flags the CUDA-only mixed-precision API: `torch.cuda.amp.autocast(...)`,
    `torch.cuda.amp.GradScaler(...)` and `torch.cuda.amp.custom_fwd(cast_inputs=...)`, through any
    import (`from torch.cuda.amp import autocast`).

    On by default: 21 findings on the test corpus (fairseq 3, NeMo 17, nanoGPT 1), every one a call of
    the deprecated CUDA-only namespace. A name that several imports bind is flagged only when all of
    them are `torch.cuda.amp`'s (mmcv's tests import `autocast` from `torch_musa` on MUSA machines).

    ## Why is this bad?
    `torch.cuda.amp` only does mixed precision on CUDA. Without CUDA, PyTorch warns and *disables* it
    (`CUDA is not available ... Disabling autocast`, `GradScaler is enabled, but CUDA is not
    available. Disabling.`), so the same script silently trains in another precision on a CPU or an
    Apple-silicon Mac. The whole namespace is deprecated since PyTorch 2.4 in favour of the
    device-generic `torch.amp`, which takes the device type as an argument.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    scaler = torch.amp.GradScaler(device.type)
    with torch.amp.autocast(device.type, dtype=torch.bfloat16):
        loss = model(x)
    ```

    ## Fix safety
    `torch.cuda.amp.autocast(...)` becomes `torch.amp.autocast(device.type, ...)` (positional
    `enabled`, `dtype`, `cache_enabled` are passed by keyword, since `torch.amp.autocast` orders its
    parameters differently), `torch.cuda.amp.GradScaler(...)` becomes
    `torch.amp.GradScaler(device.type, ...)`. On a CUDA machine `device.type` is `"cuda"` (the inserted definition
    picks CUDA when it is there) and the behaviour is the same, but the fix is **unsafe**: elsewhere
    the fixed code runs mixed precision on the device at hand (CPU autocast computes in bfloat16,
    the scaler is enabled) where the original silently ran in full precision, and `torch.amp`'s
    `GradScaler` and `custom_fwd(device_type=...)` need PyTorch 2.4 or later. When `device` is a
    parameter or another binding that may be a string (no annotation, `device = "cuda" if ... else
    "cpu"`, `args.device`), the fix writes `torch.device(device).type`; where it is known to be a
    `torch.device` (the definition devlint inserts, a name bound from `torch.device(...)` or from a
    tensor's `.device`, a parameter annotated `torch.device`, `self.device` set from `torch.device(...)`
    in `__init__`) it writes `device.type`.
    `custom_fwd(cast_inputs=...)` gets `device_type="cuda"`, which is exactly what the deprecated decorator
    did on every machine (it only acts under CUDA autocast) and needs no device: a decorator runs at
    import, where no device definition may go. It is **unsafe** only for needing PyTorch 2.4. (A program
    made device-generic runs CPU autocast without CUDA, where a CUDA decorator casts nothing: the
    reason it stays flagged.)
    With `*args`, or where `device` names something that is not a device or torch is not imported,
    the fix is **display-only**, and its title names the cause.

    A name imported from `torch.cuda.amp` (`from torch.cuda.amp import autocast, GradScaler`,
    `from torch.cuda import amp`, `import torch.cuda.amp as amp`) whose every use is a flagged call
    or decorator with a mechanical fix would be left unused (pyflakes F401) by those fixes: the fix of
    each of its uses then rewrites *all* its uses and removes the name from the import (the whole
    import line when it was the only name), in one edit, so no pass leaves a use without its import
    or an import without a use. Only names the fixes make unused are removed: an import with any other
    reference (an annotation, a base class, `autocast = ...`, a use silenced by `# noqa: DL006`, a use
    under a CUDA or version guard, a use whose fix is display-only), a name listed in `__all__`, or
    one that was already unused keeps its import.

    ## Not flagged
    - The device-generic API: `torch.amp.autocast("cuda")`, `torch.autocast(device_type="cuda")`,
      `torch.amp.GradScaler("cuda")`.
    - References that are not calls: `class GradScaler(torch.cuda.amp.GradScaler):`,
      `scaler: torch.cuda.amp.GradScaler = None`, `autocast = torch.cuda.amp.autocast`.
    - `@torch.cuda.amp.custom_fwd`, `@custom_bwd`, `custom_fwd(cast_inputs=None)`: without `cast_inputs`
      the decorators are torch.amp's own with the device type "cuda", plus a FutureWarning (torch 2.4 to 2.13), acting only under CUDA autocast on every machine: nothing is
      disabled or computed in another precision without CUDA, so the failure this rule reports cannot happen.
    - Code under a CUDA condition (same guards as DL001), e.g.
      `if torch.cuda.is_available(): scaler = torch.cuda.amp.GradScaler()`.
    - Fallbacks for an old PyTorch, where `torch.amp`'s API does not exist (the version tests of
      devlint/analysis/versions.py): code in the old-version branch of a version test
      (`if torch.__version__ < "2.4":`, `version.parse(torch.__version__) < version.parse("2.3")`,
      `TORCH_VERSION < (2, 4)`, `is_torch_version("<", "2.4")`, `compare_version("torch", operator.lt, ...)`,
      the `else` of `if _TORCH_GREATER_EQUAL_2_4:` or of
      `torch.amp.GradScaler("cuda") if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()`,
      `if TORCH_LT_2_4:`, `if not hasattr(torch, "amp"):`, `else` of `if hasattr(torch.amp, "GradScaler"):`,
      after `if _TORCH_GREATER_EQUAL_2_4: return ...`); the `except` of a `try` that tries `torch.amp`
      first; the body of a `try` that catches `ImportError`/`AttributeError` (a compatibility shim);
      a name bound both from `torch.amp` and `torch.cuda.amp`
      (`try: from torch.amp import autocast` / `except ImportError: from torch.cuda.amp import autocast`)
      or also by an assignment (`try: autocast = torch.cuda.amp.autocast` /
      `except (ImportError, AttributeError): autocast = None`).

    ## References
    - [Automatic mixed precision (torch.amp)](https://pytorch.org/docs/stable/amp.html)
    """

    code = "DL006"
    name = "cuda-only-amp"
    message = "`torch.cuda.amp` is CUDA-only and deprecated: use `torch.amp` with the device type"

    VALID = (
        'import torch\nwith torch.amp.autocast("cuda"):\n    y = model(x)\n',
        'import torch\nwith torch.autocast(device_type="cuda"):\n    y = model(x)\n',
        'import torch\nscaler = torch.amp.GradScaler("cuda")\n',
        "import torch\nclass GradScaler(torch.cuda.amp.GradScaler):\n    pass\n",
        "import torch\nscaler: torch.cuda.amp.GradScaler = None\n",
        "import torch\nautocast = torch.cuda.amp.autocast\n",
        # without cast_inputs: torch.amp's decorators with device_type="cuda", on every machine
        "import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n    @torch.cuda.amp.custom_fwd\n"
        "    def forward(ctx, x):\n        return x\n",
        "from torch.cuda.amp import custom_bwd, custom_fwd\n@custom_fwd(cast_inputs=None)\ndef f(ctx, x):\n"
        "    return x\n@custom_bwd\ndef b(ctx, g):\n    return g\n",
        "import torch\nif torch.cuda.is_available(): scaler = torch.cuda.amp.GradScaler()\n",
        'import torch\nif torch.__version__ < "2.4":\n    scaler = torch.cuda.amp.GradScaler()\n',
        "import torch\nfrom packaging import version\n"
        'if version.parse(torch.__version__) < version.parse("2.3"):\n    scaler = torch.cuda.amp.GradScaler()\n',
        'import torch\nTORCH_VERSION = tuple(int(v) for v in torch.__version__.split(".")[:2])\n'
        "if TORCH_VERSION < (2, 4):\n    scaler = torch.cuda.amp.GradScaler()\n",
        'import torch\nif is_torch_version("<", "2.4"):\n    scaler = torch.cuda.amp.GradScaler()\n',
        "import operator, torch\n"
        'if compare_version("torch", operator.lt, "2.4.0"):\n    scaler = torch.cuda.amp.GradScaler()\n',
        "import torch\nfrom compat import _TORCH_GREATER_EQUAL_2_4\n"
        'scaler = torch.amp.GradScaler("cuda") if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()\n',
        "import torch\nif _TORCH_GREATER_EQUAL_2_4:\n    scaler = torch.amp.GradScaler('cuda')\n"
        "else:\n    scaler = torch.cuda.amp.GradScaler()\n",
        "import torch\nif TORCH_LT_2_4:\n    scaler = torch.cuda.amp.GradScaler()\n",
        'import torch\nif not hasattr(torch, "amp"):\n    scaler = torch.cuda.amp.GradScaler()\n',
        'import torch\nif hasattr(torch.amp, "GradScaler"):\n    scaler = torch.amp.GradScaler("cuda")\n'
        "else:\n    scaler = torch.cuda.amp.GradScaler()\n",
        "import torch\ndef make_scaler():\n    if _TORCH_GREATER_EQUAL_2_4:\n"
        '        return torch.amp.GradScaler("cuda")\n    return torch.cuda.amp.GradScaler()\n',
        'import torch\ntry:\n    scaler = torch.amp.GradScaler(device="cuda")\n'
        "except (AttributeError, TypeError):\n    scaler = torch.cuda.amp.GradScaler()\n",
        "import torch\ntry:\n    scaler = torch.cuda.amp.GradScaler()\nexcept AttributeError:\n    scaler = None\n",
        "try:\n    from torch.amp import autocast\nexcept ImportError:\n    from torch.cuda.amp import autocast\n"
        "with autocast():\n    pass\n",
        "import torch\ntry:\n    autocast = torch.cuda.amp.autocast\nexcept (ImportError, AttributeError):\n"
        "    autocast = None\nwith autocast():\n    pass\n",
    )
    INVALID = (
        Invalid(  # a parameter annotated `torch.device` is one: `device.type`, not `torch.device(device).type`
            "import torch\ndef make(device: torch.device):\n    return torch.cuda.amp.GradScaler()\n",
            fixed="import torch\ndef make(device: torch.device):\n    return torch.amp.GradScaler(device.type)\n",
            unsafe=True,
        ),
        Invalid(  # an unannotated parameter may be the string "cuda"
            "import torch\ndef make(device):\n    return torch.cuda.amp.GradScaler()\n",
            fixed="import torch\ndef make(device):\n    return torch.amp.GradScaler(torch.device(device).type)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "scaler = torch.amp.GradScaler(device.type)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nwith torch.cuda.amp.autocast(dtype=torch.bfloat16):\n    y = model(x)\n",
            fixed='import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "with torch.amp.autocast(device.type, dtype=torch.bfloat16):\n    y = model(x)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndef step(device):\n    with torch.cuda.amp.autocast(False):\n        pass\n",
            fixed="import torch\ndef step(device):\n"
            "    with torch.amp.autocast(torch.device(device).type, enabled=False):\n        pass\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nfrom torch.cuda.amp import GradScaler, autocast\n"
            "scaler = GradScaler(init_scale=2.0**10)\nwith autocast():\n    pass\n",
            fixed="import torch\n"
            '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "scaler = torch.amp.GradScaler(device.type, init_scale=2.0**10)\n"
            "with torch.amp.autocast(device.type):\n    pass\n",
            count=2,
            unsafe=True,
        ),
        Invalid(  # only the names the fixes leave unused leave the import: `GradScaler` is an annotation too
            "import torch\nfrom torch.cuda.amp import GradScaler, autocast, custom_fwd\n"
            "def step(device, scaler: GradScaler):\n    with autocast():\n        pass\n"
            "    with autocast(True):\n        pass\n",
            fixed="import torch\nfrom torch.cuda.amp import GradScaler, custom_fwd\n"
            "def step(device, scaler: GradScaler):\n    with torch.amp.autocast(torch.device(device).type):\n"
            "        pass\n    with torch.amp.autocast(torch.device(device).type, enabled=True):\n        pass\n",
            count=2,
            unsafe=True,
        ),
        Invalid(  # a use silenced by `# noqa` keeps its import
            "import torch\nfrom torch.cuda import amp\ndef f(device):\n    s = amp.GradScaler()\n"
            "    t = amp.GradScaler()  # noqa: DL006\n",
            fixed="import torch\nfrom torch.cuda import amp\ndef f(device):\n"
            "    s = torch.amp.GradScaler(torch.device(device).type)\n    t = amp.GradScaler()  # noqa: DL006\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\n\nclass F(torch.autograd.Function):\n"
            "    @staticmethod\n    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n"
            "    def forward(ctx, x):\n        return x\n\n"
            "    @staticmethod\n    @torch.cuda.amp.custom_bwd\n    def backward(ctx, g):\n        return g\n",
            fixed="import torch\n\n"
            "class F(torch.autograd.Function):\n"
            '    @staticmethod\n    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)\n'
            "    def forward(ctx, x):\n        return x\n\n"
            "    @staticmethod\n    @torch.cuda.amp.custom_bwd\n"
            "    def backward(ctx, g):\n        return g\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\ndevice = torch.device(args.device)\nscaler = torch.cuda.amp.GradScaler(**amp_kwargs)\n",
            fixed="import torch\ndevice = torch.device(args.device)\n"
            "scaler = torch.amp.GradScaler(device.type, **amp_kwargs)\n",
            unsafe=True,
        ),
        Invalid(  # unsafe: without --unsafe-fixes nothing changes
            "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
            fixed="import torch\nscaler = torch.cuda.amp.GradScaler()\n",
        ),
        Invalid("from torch.cuda import amp\ndef f(device):\n    return amp.GradScaler()\n"),
        Invalid("import torch\nwith torch.cuda.amp.autocast(*flags):\n    pass\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        finding = self._finding(node)
        if finding is not None:
            message, fix = finding
            self.report(node, message, self._with_import_removal(node, fix))

    # -- one use --------------------------------------------------------------------------------------
    def _finding(self, node: cst.Call | cst.Decorator) -> tuple[str, object] | None:
        """(message, fix) for a flagged call or bare decorator, or None; memoised (an import removal
        asks it for every use of a name)."""
        memo = self.__dict__.setdefault("_findings", {})
        if node not in memo:
            memo[node] = self._call_finding(node) if isinstance(node, cst.Call) else self._decorator_finding(node)
        return memo[node]

    def _skipped(self, node: cst.CSTNode) -> bool:
        return self.ctx.guards.is_guarded(node) or self._versions.old_torch_only(node)

    @property
    def _versions(self) -> VersionGates:
        gates = self.__dict__.get("_gates")
        if gates is None:
            gates = self.__dict__["_gates"] = VersionGates(self.ctx)
        return gates

    def _call_finding(self, node: cst.Call):
        func = node.func
        last = last_component(func) or ""
        if last not in _LAST_NAMES and not isinstance(func, cst.Name):
            return None
        found = qualified(self.ctx, func, _ALL)
        if found is None or self._skipped(node) or (found in _CUSTOM and _same_everywhere(node)):
            return None
        return self._message(found), self._fix(node, found)

    def _decorator_finding(self, node: cst.Decorator):
        """A bare `@custom_fwd` / `@custom_bwd` has no `cast_inputs`: the same on every machine
        (`_same_everywhere`), never flagged; it matters only for removing the import of its name."""
        return None

    def _custom_reference(self, written: cst.CSTNode) -> tuple[str, str, bool] | str:
        """`torch.cuda.amp.custom_fwd(...)` is `torch.amp.custom_fwd(..., device_type="cuda")` exactly, on
        every machine: no device (and no definition, which a decorator would run at import) is needed."""
        torch = torch_name(self.ctx, False, written)
        return torch_failure(self.ctx) if torch is None else (torch, '"cuda"', False)

    @staticmethod
    def _message(found: str) -> str:
        short = found.rsplit(".", 1)[-1]
        return f"`torch.cuda.amp.{short}` is CUDA-only and deprecated: use `torch.amp.{short}` with the device type"

    def _fix(self, call: cst.Call, found: str):
        short = found.rsplit(".", 1)[-1]
        title = f"Use `torch.amp.{short}` with `device.type`"
        if any(arg.star == "*" for arg in call.args) or (found in _CUSTOM and any(arg.star for arg in call.args)):
            return self.display_only(title)
        if found in _AUTOCAST and len([a for a in call.args if a.keyword is None]) > len(_AUTOCAST_POSITIONS):
            return self.display_only(title)
        if found in _CUSTOM:
            title = f"Use `torch.amp.{short}` with `device_type=\"cuda\"`"
            reference = self._custom_reference(call.func)
        else:
            reference = device_type_reference(self.ctx, call, call.func)
        if isinstance(reference, str):
            return self.display_only(f"{title} ({reference})")
        torch, device_type, needs_definition = reference
        new_func = f"{torch}.amp.{short}"
        if found in _CUSTOM:
            edits = self._custom_edits(call, f"device_type={device_type}")
        else:
            edits = self._leading_edits(call, device_type, rename=found in _AUTOCAST)
        if edits is None:
            edits = [self.replace(call, f"{new_func}({device_type if found not in _CUSTOM else 'device_type=' + device_type})")]
        else:
            edits.insert(0, self.replace(call.func, new_func))
        return self.fix(title, Applicability.UNSAFE, *edits, needs_device=needs_definition)

    def _leading_edits(self, call: cst.Call, device_type: str, rename: bool) -> list[Edit] | None:
        """`device_type` becomes the first argument; autocast's positional arguments get keywords."""
        if not call.args:
            return None
        edits = []
        position = 0
        for index, arg in enumerate(call.args):
            prefix = f"{device_type}, " if index == 0 else ""
            if rename and arg.keyword is None and not arg.star:
                prefix += f"{_AUTOCAST_POSITIONS[position]}="
                position += 1
            if prefix:
                edits.append(self.insert_before(arg, prefix))
        return edits

    def _custom_edits(self, call: cst.Call, keyword: str) -> list[Edit] | None:
        if not call.args:
            return None
        first_keyword = next((arg for arg in call.args if arg.keyword is not None), None)
        if first_keyword is not None:
            return [self.insert_before(first_keyword, f"{keyword}, ")]
        end = self.ctx.span(call.args[-1].value)[1]
        return [Edit(end, end, f", {keyword}")]

    # -- the import the fixes make unused ---------------------------------------------------------------
    def _with_import_removal(self, node: cst.Call | cst.Decorator, fix):
        """The fix of one use, widened to every use of the imported name plus the import's removal
        when the fixes leave the import unused (see "Fix safety"); the fix itself otherwise."""
        if fix.applicability is Applicability.DISPLAY_ONLY:
            return fix
        func = node.decorator if isinstance(node, cst.Decorator) else node.func
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return fix
        plan = self._removal_plans().get(root)
        if plan is None:
            return fix
        name, uses, edit = plan
        edits = [e for use in uses for e in self._finding(use)[1].edits] + [edit]
        needs_device = any(self._finding(use)[1].needs_device for use in uses)
        return self.fix(f"{fix.title}, at every use of `{name}`, and remove its now unused import",
                        Applicability.UNSAFE, *edits, needs_device=needs_device)

    def _removal_plans(self) -> dict:
        """Name node of a use -> (name, the uses, the import edit), for each name imported from
        `torch.cuda.amp` whose every reference is a flagged use with a mechanical fix."""
        plans = self.__dict__.get("_plans")
        if plans is not None:
            return plans
        plans = self.__dict__["_plans"] = {}
        exported = self._exported_names()
        for statement in self.ctx.nodes(cst.ImportFrom) + self.ctx.nodes(cst.Import):
            if isinstance(statement.names, cst.ImportStar):
                continue
            for index, alias in enumerate(statement.names):
                bound = self._amp_binding(statement, alias)
                if bound is None or bound in exported:
                    continue
                uses = self._fixed_uses(statement, bound)
                if not uses:
                    continue
                edit = self._removal_edit(statement, index)
                if edit is None:
                    continue
                for use, root in uses:
                    plans[root] = (bound, [u for u, _ in uses], edit)
        return plans

    @staticmethod
    def _amp_binding(statement: cst.Import | cst.ImportFrom, alias: cst.ImportAlias) -> str | None:
        """The name `alias` binds when it binds `torch.cuda.amp` or something of it, else None."""
        name = dotted_name(alias.name) or ""
        if isinstance(statement, cst.Import):
            if alias.asname is None:
                return None  # `import torch.cuda.amp` binds `torch`, which stays
            full = name
        else:
            if statement.relative or statement.module is None:
                return None
            full = f"{dotted_name(statement.module)}.{name}"
        if not (full in _ALL or full in _AMP_MODULES):
            return None
        return dotted_name(alias.asname.name) if alias.asname is not None else name

    def _exported_names(self) -> set[str]:
        """Names listed in `__all__` (a re-export keeps its import)."""
        exported: set[str] = set()
        for node in self.ctx.nodes(cst.Assign) + self.ctx.nodes(cst.AugAssign) + self.ctx.nodes(cst.AnnAssign):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(dotted_name(t) == "__all__" for t in targets) and node.value is not None:
                exported.update(v for v in (string_value(n) for n in descendants(node.value)) if v)
        return exported

    def _fixed_uses(self, statement: cst.CSTNode, bound: str) -> list[tuple[cst.CSTNode, cst.Name]]:
        """[(flagged call or decorator, the name node)] for every reference of the import; [] unless every
        reference is a use this rule flags with a mechanical fix, not silenced by `# noqa`."""
        scope = self.ctx.scope(statement)
        if scope is None or bound not in scope:
            return []
        assignments = [a for a in scope.assignments[bound]]
        if len(assignments) != 1 or getattr(assignments[0], "node", None) is not statement:
            return []
        uses = []
        for access in assignments[0].references:
            name = access.node
            if not isinstance(name, cst.Name) or name.value != bound:
                return []
            use = self._use_of(name)
            if use is None:
                return []
            finding = self._finding(use)
            if finding is None or finding[1].applicability is Applicability.DISPLAY_ONLY or self._silenced(use):
                return []
            uses.append((use, name))
        return uses

    def _use_of(self, name: cst.Name) -> cst.Call | cst.Decorator | None:
        """The call (`autocast()`, `amp.GradScaler()`) or bare decorator (`@custom_bwd`) whose callee is
        `name` or starts with it; None for any other reference (an annotation, a base class, ...)."""
        node: cst.CSTNode = name
        parent = self.ctx.parent(node)
        while isinstance(parent, cst.Attribute) and parent.value is node:
            node, parent = parent, self.ctx.parent(parent)
        if isinstance(parent, cst.Call) and parent.func is node:
            return parent
        if isinstance(parent, cst.Decorator) and parent.decorator is node:
            return parent
        return None

    def _silenced(self, use: cst.CSTNode) -> bool:
        suppressions = self.__dict__.get("_suppressions")
        if suppressions is None:
            suppressions = self.__dict__["_suppressions"] = parse_suppressions(self.ctx.module.code)
        node = use.decorator if isinstance(use, cst.Decorator) else use
        start, end = self.ctx.span(node)
        statement = self.ctx.enclosing(node, cst.SimpleStatementLine)
        lines = {start.line, end.line}
        if statement is not None:
            lines.add(self.ctx.span(statement)[1].line)
        for line in lines:
            directive = suppressions.lines.get(line)
            if directive is not None and (directive.codes is None or self.code in directive.codes):
                return True
        return False

    def _removal_edit(self, statement: cst.Import | cst.ImportFrom, index: int) -> Edit | None:
        """Remove the `index`-th name of an import; the whole line when it is the only one."""
        names = statement.names
        line = self.ctx.parent(statement)
        if len(names) == 1:
            block = self.ctx.parent(line)
            if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(
                block, (cst.Module, cst.IndentedBlock)
            ):
                return None
            if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
                return self.replace(statement, "pass")  # a block cannot be empty
            start, end = self.ctx.span(line)
            stop = Position(end.line + 1, 0)
            body = list(block.body)
            position = next(i for i, item in enumerate(body) if item is line)
            if isinstance(block, cst.IndentedBlock) and position == 0 and len(body) > 1:
                # the first statement of a block: the blank lines after it would open the block
                following = body[1]
                if following.leading_lines and all(e.comment is None for e in following.leading_lines):
                    stop = Position(self.ctx.span(following)[0].line, 0)
            return Edit(Position(start.line, 0), stop, "")
        alias = names[index]
        if index + 1 < len(names):
            return Edit(self.ctx.span(alias.name)[0], self.ctx.span(names[index + 1].name)[0], "")
        previous = names[index - 1]
        return Edit(self.ctx.span(previous.asname or previous.name)[1], self.ctx.span(alias.asname or alias.name)[1], "")


def _same_everywhere(call: cst.Call) -> bool:
    """`custom_fwd(fwd)`, `custom_fwd()`, `custom_bwd(bwd)` without `cast_inputs`: torch.cuda.amp's is
    `torch.amp.custom_fwd(device_type="cuda")` plus a FutureWarning (torch 2.4 to 2.13), and acts only under
    CUDA autocast, on every machine: nothing is disabled or computed in another precision without CUDA.
    With `cast_inputs` it stays flagged: a program made device-generic (`torch.amp.autocast(device.type)`)
    runs CPU autocast, where a CUDA decorator casts nothing."""
    return not any(arg.star or arg.keyword is not None and arg.keyword.value == "cast_inputs" and not is_none(arg.value)
                   for arg in call.args)
