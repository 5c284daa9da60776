"""Adversarial fuzzing (issue 13): generated and device-pattern programs, mutated the way hostile or
merely unusual files are (form feeds, lone CRs, CRLF, a BOM, a coding cookie, deep chains, `global`,
`del` and star imports around `device`), never crash devlint, never produce a file that does not
compile, never change a byte outside the fixes, and keep encoding, BOM and line endings.

Bounded for the normal suite; `python benchmarks/adversarial.py --minutes 30` runs it for long, each
batch in a child process so that even a native crash is counted rather than ending the run.
"""

from __future__ import annotations

import codecs
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.engine import check_source
from devlint.source import decode
from tests.test_fuzz import CONFIG, _check, device_programs

hypothesmith = pytest.importorskip("hypothesmith")

EXAMPLES = int(os.environ.get("DEVLINT_FUZZ_EXAMPLES", "30"))
# Chains past LibCST's limits are the point of the long run; the suite keeps them short to stay fast.
LONGEST_CHAIN = int(os.environ.get("DEVLINT_FUZZ_CHAIN", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)

# Code around `device` that once made a safe fix break the program or the file.
BINDING_SNIPPETS = [
    "if args.cpu:\n    device = torch.device('cpu')\nx = torch.zeros(2).cuda()",
    "device = torch.device('cpu')\ndel device\ny = torch.ones(1).cuda()",
    "from torch import *\nd = device('cuda')\nz = zeros(2).cuda()",
    "global device\nw = torch.zeros(1).cuda()",
    "t = torch.zeros(3)\ndef f():\n    t.to('cpu')\n    return t",
    "def outer():\n    t = torch.zeros(3)\n    def inner():\n        t.to('cpu')\n    return inner",
    "for device in range(2):\n    pass\nv = torch.zeros(1).cuda()",
    "try:\n    device = torch.device('cuda')\nexcept Exception:\n    pass\nu = torch.zeros(1).cuda()",
    # derived devices (issue 29 S1-S3)
    "device = torch.device('cpu')\nr = torch.zeros(1).cuda()",
    "def step(x, device):\n    return x.cuda()",
    "y = torch.ones(1).cuda()\ny.data = y.data.cpu()\nq = torch.ones(2).cuda() * y",
    "class Lin(torch.nn.Linear):\n    def __init__(self):\n        super().__init__(2, 2)\n"
    "        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "    def reset_parameters(self):\n        self.m = torch.ones(2).cuda()",
]


@st.composite
def deep_chains(draw) -> str:
    """Long but valid chains: each once crashed LibCST's parser or devlint's recursion."""
    n = draw(st.integers(1, LONGEST_CHAIN))
    kind = draw(st.sampled_from(["or", "plus", "call", "subscript", "strings", "cuda", "compare"]))
    if kind == "or":
        return "x = " + " or ".join(["a"] * n) + "\n"
    if kind == "plus":
        return "x = " + " + ".join(["a"] * n) + "\n"
    if kind == "call":
        return "x = a" + ".abs()" * n + "\n"
    if kind == "subscript":
        return "x = a" + "[0]" * n + "\n"
    if kind == "strings":
        return "x = (" + " ".join(['"s"'] * n) + ")\n"
    if kind == "compare":
        return "x = " + " < ".join(["a"] * n) + "\n"
    return "import torch\nx = torch.zeros(1)" + ".cuda()" * min(n, 80) + "\n"


def _mutate(draw, text: str) -> bytes:
    lines = text.split("\n")
    if draw(st.booleans()):  # form feeds where Python allows them: at the start of lines
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, max(0, len(lines) - 1)))
            lines[i] = "\f" + lines[i]
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = newline.join(lines)
    if draw(st.booleans()):
        text = text.rstrip("\r\n") + draw(st.sampled_from(["", newline * 3, newline + "   ", "  "]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "latin-1"]))
    if encoding == "latin-1":
        text = f"# -*- coding: latin-1 -*-{newline}# caf\xe9{newline}" + text
        return text.encode("latin-1", "replace")
    data = text.encode("utf-8")
    return codecs.BOM_UTF8 + data if encoding == "utf-8-sig" else data


@st.composite
def adversarial_files(draw) -> bytes:
    parts = [draw(device_programs())]
    for _ in range(draw(st.integers(0, 3))):
        parts.append(draw(st.one_of(st.sampled_from(BINDING_SNIPPETS), deep_chains(), hypothesmith.from_grammar())))
    draw(st.randoms()).shuffle(parts)
    return _mutate(draw, "import torch\n" + "\n".join(p if p.endswith("\n") else p + "\n" for p in parts))


def _compiles(data: bytes) -> bool:
    try:
        compile(data, "f.py", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def check_file_bytes(data: bytes) -> None:
    """The property: no crash, compiling output, only the fixes changed, encoding and endings kept."""
    result = check_source("adversarial.py", data, CONFIG)
    if result.error is not None:
        assert not result.error.internal, result.error.message
        # Valid Python is checked, or skipped with a notice naming a limit: never an error (exit 2).
        assert not _compiles(data), result.error.message
        return
    if result.fixed_source is None:
        return
    encoding = decode(data).encoding
    fixed = result.fixed_source.encode(encoding)
    if _compiles(data):
        assert _compiles(fixed), "the fixed file does not compile"
    assert fixed.startswith(codecs.BOM_UTF8) == data.startswith(codecs.BOM_UTF8)
    styles = {m for m in re.findall(rb"\r\n|\r|\n", data)}
    if len(styles) == 1:
        assert set(re.findall(rb"\r\n|\r|\n", fixed)) <= styles, "line endings changed"
    # Bytes outside the fixes: the same check as the fuzzing of generated programs, on the text.
    _check(decode(data).text, data)


@FUZZ
@given(adversarial_files())
def test_adversarial_files(data):
    check_file_bytes(data)


@pytest.mark.parametrize("snippet", BINDING_SNIPPETS)
def test_binding_snippets_keep_compiling(snippet):
    check_file_bytes(("import torch\n" + snippet + "\n").encode())
