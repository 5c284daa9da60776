"""Fuzzing the core: generated programs never crash devlint, fixes keep them parseable, converge, and touch
only the fixed ranges (plus the inserted `device`/`import torch` lines).

Bounded for the normal suite; a longer run: DEVLINT_FUZZ_EXAMPLES=5000 pytest tests/test_fuzz.py
"""

from __future__ import annotations

import difflib
import os
import re

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.config import Config
from devlint.complexity import run_with_big_stack
from devlint.complexity import deep_recursion as _deep_recursion
from devlint.engine import check_source, fixable, lint_text
from devlint.rescue import rescue
from devlint.source import decode

hypothesmith = pytest.importorskip("hypothesmith")

EXAMPLES = int(os.environ.get("DEVLINT_FUZZ_EXAMPLES", "100"))
# DL100 is left out: a fix can make a `noqa` unused (it then removes it, on a line no fix touched).
CONFIG = Config(select=("ALL",), ignore=("DL100",), fix=True, unsafe_fixes=True)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

NAMES = st.sampled_from(["x", "t", "model", "batch", "device", "self.w", "data", "th", "torch"])
SNIPPETS = [
    "{n} = torch.zeros(3).cuda()",
    "{n} = {n}.cuda({k})",
    "{n}.cuda(non_blocking=True)",
    "{n} = torch.load(path)",
    "{n}.load_state_dict(torch.load(path))",
    "{n} = th.load(path, map_location=None)",
    "{n} = torch.randn(2)\n{n}.to(device)",
    "{n} = torch.cat([a, b])\n{n}.to(device).float()",
    "[t.to(device) for t in {n}]",
    "if torch.cuda.is_available():\n    {n} = {n}.cuda()",
    "{n} = {n}.cuda() if use_cuda else {n}",
    "if ({n} := torch.ones(1)) is not None:\n    {n}.cuda()",
    "s = f\"{{{n}.cuda()}}\"",
    "match {n}:\n    case [a]:\n        a.cuda()\n    case _:\n        pass",
    "{n}.cuda()  # noqa: DL001",
    "device = 'cuda'\n{n}.cuda()",
    "{n} = torch.zeros(3, device='cuda')",
    "{n} = {n}.to('cuda:1', non_blocking=True)",
    "{n} = torch.load(path, map_location=lambda storage, loc: storage.cuda())",
    "{n} = torch.device('cuda')",
    "{n} = torch.cuda.FloatTensor(2, {n}.size(0))",
    "{n} = torch.cuda.LongTensor([1, 2])",
    "{n} = {n}.type(torch.cuda.HalfTensor)",
    "torch.set_default_tensor_type('torch.cuda.FloatTensor')",
    "with torch.cuda.amp.autocast(False):\n    {n} = {n} + 1",
    "scaler = torch.cuda.amp.GradScaler(init_scale=2.0)",
    "@torch.cuda.amp.custom_fwd\ndef fwd(ctx, {n}):\n    return {n}",
    "{n} = nn.DataParallel({n}, device_ids=[0, 1])",
    "import os\nos.environ['CUDA_VISIBLE_DEVICE'] = '0'",
    "torch.cuda.synchronize()\n{n} = torch.cuda.current_device()",
    # derived devices (issue 29 S1-S3): `y.device`, `self.device` and a reused `device`, proven or not
    "y = {n}.cuda()\nz = torch.ones(2).cuda() + y",
    "y = {n}.cuda()\ny.data = y.data.cpu()\nz = torch.cat([torch.ones(2).cuda(), y])",
    "y = model({n}.cuda())\nz = y * torch.ones(1).cuda()",
    "device = torch.device('cpu')\n{n} = {n}.cuda()",
    "device = torch.device('cuda:1')\n{n} = torch.zeros(2, device='cuda')",
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n{n} = {n}.cuda()",
    "class L{k_}(nn.Linear):\n    def __init__(self, n, device):\n        super().__init__(n, n)\n"
    "        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "    def reset_parameters(self):\n        self.mask = torch.ones(2).cuda()",
    "def make():\n    class R(nn.Module):\n        def __init__(self):\n            super().__init__()\n"
    "            self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "        def forward(self, {n}):\n            return {n}.cuda() + torch.ones(1, device='cuda')\n    return R",
    # DL017: PyTorch 0.3 code that does not parse until --fix renames the argument
    "{n} = {n}.cuda(async=True)",
    "{n} = Variable({n}.to(device, async=True))  # noqa: DL004",
    "{n}.copy_(src,\n    async=False)",
    # DL011, DL013, DL016, DL018
    "{n} = torch.ones(2).to(device)\nprint({n}.numpy())",
    "model = nn.Linear(2, 2).cuda()\n{n} = model(x)[0].argmax(1).numpy()",
    "for {n} in [torch.zeros(1), torch.ones(1)]:\n    {n} = {n}.to(device).float()",
    "for k, {n} in {{'a': torch.zeros(1)}}.items():\n    {n} = {n}.cuda()",
    "{n} = torch.zeros(2, device={n}.get_device())",
    "{n} = torch.ones(1)\n{n} = torch.zeros(2, device={n}.get_device())",
    "dev = {n}.get_device()\n{n} = {n}.cuda(dev, True) + torch.ones(1, device=dev)",
    "{n} = torch.device('cuda', {n}.get_device())",
    "{n} = torch.arange(3, dtype=torch.long).to(device, non_blocking=True)",
    "{n} = torch.zeros(\n    2,\n).to({n}.device, torch.half)",
    "if torch.cuda.is_available():\n    {n} = torch.randn(2).cuda({k})",
]


@st.composite
def device_programs(draw) -> str:
    lines = [draw(st.sampled_from(["import torch", "import torch as th", "import torch.nn as nn", ""]))]
    for _ in range(draw(st.integers(1, 6))):
        snippet = draw(st.sampled_from(SNIPPETS)).format(n=draw(NAMES), k=draw(st.sampled_from(["", "0", "device=1"])),
                                                         k_=len(lines))
        wrapper = draw(st.sampled_from(["", "def", "class", "decorated", "nested"]))
        body = "\n".join("    " + line for line in snippet.splitlines())
        if wrapper == "def":
            snippet = f"def f{len(lines)}(a, b, path):\n{body}"
        elif wrapper == "class":
            snippet = f"class C{len(lines)}(nn.Module):\n    def forward(self, a, b, path):\n" + "\n".join(
                "    " + line for line in body.splitlines())
        elif wrapper == "decorated":
            snippet = f"@decorator\ndef g{len(lines)}(a, b, path):\n{body}"
        elif wrapper == "nested":
            snippet = f"def outer{len(lines)}():\n    def inner(a, b, path):\n" + "\n".join(
                "    " + line for line in body.splitlines()) + "\n    return inner"
        lines.append(snippet)
    return "\n".join(lines) + "\n"


# A module-level definition the fixer inserts, as the first line of its own block
DEFINITION = re.compile(r"(_?device) = \w+\.(device|accelerator)\b")


def _check(source: str, data: bytes | None = None) -> None:
    """`data`: the file's bytes where they are not `source` in UTF-8 (another declared encoding)."""
    result = check_source("fuzz.py", source.encode() if data is None else data, CONFIG)
    if result.error is not None:
        assert not result.error.internal, result.error.message  # syntax errors are fine, devlint bugs are not
        return
    fixed = result.fixed_source
    if fixed is None:
        return
    cst.parse_module(fixed)
    try:
        compile(source, "original", "exec")
    except SyntaxError:
        pass
    else:
        compile(fixed, "fixed", "exec")
    again = check_source("fuzz.py", fixed.encode("utf-8" if data is None else decode(data).encoding), CONFIG)
    assert again.fixed_source is None, "a second --fix changed the file"
    # The change stays inside the fixed findings' lines, plus inserted definition lines.
    touched: set[int] = set()
    findings = _lint(source)
    assert findings, "a file was fixed without a finding"  # (one that does not parse: none of DL017's)
    # Fixes that are display-only in the first pass may become fixable in the next one: DL004 gives
    # `device = "cuda"` a CPU fallback (`device` then holds a device), and an inserted device definition
    # imports torch (which a fix writing `torch.` needs).
    rebinds_device = any(f.code == "DL004" and fixable(f, CONFIG) for f in findings)
    imports_torch = any(fixable(f, CONFIG) and f.fix.needs_device for f in findings)
    # DL001 turns `.cuda(dev)` into `.to(...)`: DL016 can then give `dev = t.get_device()` its fix
    rewrites_cuda = any(f.code == "DL001" and fixable(f, CONFIG) for f in findings)

    def unblocked(finding) -> bool:
        title = finding.fix.title if finding.fix is not None else ""
        # an inserted definition binds `device` too: a read of an unbound global `device` is then bound
        reasons_about_device = re.search(
            r"\((`_?device`|the module-level `_?device`|this function also uses the outer `_?device`)", title)
        # a function that binds `torch` gets no definition of its own (issue 29 S4), but reuses a module-level one
        return bool((rebinds_device or imports_torch) and reasons_about_device) or (
            imports_torch and ("torch is not imported" in title or "torch is imported only inside a function" in title
                               or re.search(r"`\w+` is bound in this function or one around it", title))
        ) or (finding.code == "DL016" and "is also given to `.cuda()`" in title and rewrites_cuda)

    for finding in findings:
        if fixable(finding, CONFIG) or unblocked(finding):
            touched.update(range(finding.start.line, finding.end.line + 1))
            touched.update(finding.suppress_lines)
    # Lines as Python counts them: str.splitlines also breaks at form feeds and other separators.
    before, after = _lines(source), _lines(fixed)
    # the blank line inserted above a module-level definition: left out, or difflib may pair it with
    # another blank line of the original and report the lines between as changed
    after = [line for i, line in enumerate(after) if not (
        line == "" and i + 1 < len(after) and DEFINITION.match(after[i + 1])
        and after[i + 1] not in before)]
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    chained: set[int] | None = None  # computed only where needed: it lints the file once more
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            changed = set(range(a1 + 1, a2 + 1))
            if not changed <= touched and chained is None:
                chained = _reading_the_defined_device(source, fixed)
            assert changed <= touched | (chained or set()), (tag, before[a1:a2])
        if tag == "insert":
            for line in after[b1:b2]:
                assert re.fullmatch(r"(import torch|[ \t\f]*_?device = .*|)", line), line


def _lint(source: str) -> list:
    """The findings of the first pass, as check_source gets them; [] for a file that does not parse."""
    with _deep_recursion():  # as check_source runs it: deep but allowed code needs the big stack
        try:
            return run_with_big_stack(lint_text, source, CONFIG)
        except cst.ParserSyntaxError:  # DL017's `async=`: renamed first, then fixed like any file
            renamed, findings = rescue(source, CONFIG, CONFIG.rules())
            return findings and findings + run_with_big_stack(lint_text, renamed, CONFIG)


def _reading_the_defined_device(source: str, fixed: str) -> set[int]:
    """Lines that DL011 and DL018 may fix in a later pass because a module-level definition the fixer
    inserted binds the device name where the file's own bindings of it all held the CPU
    (`if args.cpu: device = torch.device("cpu")` below the fixed lines): a name bound to several places
    reads as the run's device, so `torch.ones(2).to(device)` becomes a move to the device (DL018) and
    `.numpy()` of it needs `.cpu()` (DL011). Found by linting the file with the name also bound to a
    device at module level (a binding anywhere in the module counts alike, and one appended at the end
    moves no line); a function-level definition cannot do this (its function mentions the name nowhere
    else)."""
    before = set(_lines(source))
    names = sorted({m.group(1) for line in _lines(fixed) if line not in before and (m := DEFINITION.match(line))})
    if not names:
        return set()
    newline = found.group() if (found := re.search(r"\r\n|\r|\n", source)) else "\n"
    text = source if source.endswith(("\n", "\r")) else source + newline
    lines: set[int] = set()
    for finding in _lint(text + "".join(f"{name} = 'cuda'{newline}" for name in names)):
        if finding.code in ("DL011", "DL018") and fixable(finding, CONFIG):
            lines.update(range(finding.start.line, finding.end.line + 1))
    return lines


def _lines(text: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", text.removesuffix("\n").removesuffix("\r"))


# The adversarial run's seed 191244821: fixing the `.cuda()` inserts a module-level `device`, whose only
# other binding is a CPU device below; `device` then reads as the run's device on lines 3 and 4.
CHAIN = ("import torch\nx = torch.zeros(3).cuda()\nx = torch.ones(2).to(device)\nprint(x.numpy())\n"
         "def f():\n    device = torch.device('cpu')\n    y = torch.ones(2).to(device)\n    return y.numpy()\n"
         "if args.cpu:\n    device = torch.device('cpu')\n")


def test_dl011_and_dl018_may_fix_reads_of_an_inserted_definition_in_a_later_pass():
    fixed = check_source("chain.py", CHAIN.encode(), CONFIG).fixed_source
    assert "x = torch.ones(2, device=device)\nprint(x.cpu().numpy())\n" in fixed
    assert "    y = torch.ones(2).to(device)\n    return y.numpy()\n" in fixed  # its own CPU `device`
    # only the module's reads: a change on the function's lines would still fail the property
    assert _reading_the_defined_device(CHAIN, fixed) == {3, 4}
    _check(CHAIN)


@FUZZ
@given(device_programs())
def test_device_programs(source):
    _check(source)


@FUZZ
@given(hypothesmith.from_grammar())
def test_generated_programs(source):
    _check(source)


@FUZZ
@given(hypothesmith.from_grammar(), device_programs())
def test_generated_programs_mixed_with_device_patterns(generated, device):
    _check(device + generated)


# -- issue 16: bindings that refer to themselves or to each other ----------------------------------------
CYCLE_NAMES = st.sampled_from(["a", "b", "x", "t"])
CYCLE_STATEMENTS = [
    "{a} = {b}",
    "{a} = {a}",
    "{a}, {b} = {b}, {a}",
    "{a}, {b} = {c}",
    "({a}, {b}), {c} = {c}, ({b}, {a})",
    "[{a}, *{b}] = {c}",
    "{a} += {b}",
    "{a} = {b} + {a}",
    "{a} = [{b}, {a}]",
    "{a} = ({b}, {c})[0]",
    "{a} = torch.zeros(1)",
    "{a} = [torch.ones(1), {b}]",
    "{a} = {b}.float()",
    "{a} = torch.chunk({b}, 2)",
    "{a}, {b} = {c}.split(1)",
    "{a} = copy.deepcopy({b})",
    "{a} = [{c} for {c} in {b}]",
    "{a} = [{a} for {a} in {a}]",
    "{a} = {{{b}: {c} for {b}, {c} in {a}}}",
    "{a} = ({b} := {a})",
    "{a}: torch.Tensor = {b}",
    "self.{a} = self.{b}",
    "self.{a} = {b}",
    "{a}.to(device)",
    "{a}.cuda()",
    "{a}.to({b})",
    "{a}.float().cuda()",
    "self.{a}.to(device)",
    "[{c}.to(device) for {c} in {a}]",
    "[{c}.cuda() for {c}, {b} in enumerate({a})]",
]
CYCLE_BLOCKS = ["for {a} in {b}:", "for {a} in {a}:", "for {a}, {b} in zip({b}, {a}):",
                "for {c}, {a} in enumerate({b}):", "while {a}:", "if {a}:", "def inner({a}):", "with {a} as {b}:"]


@st.composite
def cyclic_bindings(draw) -> str:
    def block(indent: int, depth: int) -> list[str]:
        lines = []
        for _ in range(draw(st.integers(1, 4))):
            names = {key: draw(CYCLE_NAMES) for key in "abc"}
            if depth < 3 and draw(st.booleans()):
                lines.append(" " * indent + draw(st.sampled_from(CYCLE_BLOCKS)).format(**names))
                lines.extend(block(indent + 4, depth + 1))
            else:
                lines.append(" " * indent + draw(st.sampled_from(CYCLE_STATEMENTS)).format(**names))
        return lines

    body = block(8, 0) + [f"        {draw(CYCLE_NAMES)}.{draw(st.sampled_from(['to(device)', 'cuda()']))}"]
    if draw(st.booleans()):
        head = ["class M(nn.Module):", "    def forward(self, a, device):"]
    else:
        head = ["def outer(b):", "    def forward(self, a, device):"]
    tail = [] if draw(st.booleans()) else ["    x = a", "    a = x", "    for t in x:", "        t.cuda()"]
    return "\n".join(["import copy", "import torch", "import torch.nn as nn", *head, *body, *tail]) + "\n"


@FUZZ
@given(cyclic_bindings())
def test_cyclic_bindings(source):
    from devlint.context import FileContext
    from devlint.engine import fix_text
    from devlint.analysis.kinds import TENSOR, KindInference

    compile(source, "generated", "exec")
    lint_config = Config(select=("ALL",))
    try:
        findings = lint_text(source, lint_config)
        fixed = fix_text(source, CONFIG)
    except RecursionError:  # the test runner's own limit: lower than devlint's, so cycles show up here first
        raise AssertionError("kind inference recursed without end") from None
    assert lint_text(source, lint_config) == findings
    assert fix_text(source, CONFIG) == fixed
    compile(fixed[0], "fixed", "exec")
    assert check_source("cycles.py", source.encode(), CONFIG).error is None
    # A rule's findings do not depend on which other rules asked about kinds first.
    alone = lint_text(source, Config(select=("DL003",)))
    assert alone == [f for f in findings if f.code == "DL003"]
    module = cst.parse_module(source)
    ctx = FileContext(module)
    expressions = [node for kind, found in ctx.nodes_by_type.items() if issubclass(kind, cst.BaseExpression)
                   for node in found]
    forwards = [ctx.kinds.of(node) for node in expressions]
    backwards = KindInference(FileContext(module))
    assert [backwards.of(node) for node in reversed(expressions)] == forwards[::-1]
    assert all(ctx.possible_kinds.of(n) is TENSOR for n, kind in zip(expressions, forwards) if kind is TENSOR)
