"""Random runnable programs for the runtime adversarial run (benchmarks/adversarial_runtime.py).

Each program is a small project (a dict of file name to text, `main.py` the one to run) that prints what
it computes: values, dtypes, shapes and `.device.type`, so that a fix that changes where or what a program
computes changes its output. The shapes are those of issue 29 (S1-S8: derived devices, definitions that
bind) and the plain shape of every default rule with a fix, with random names, nesting, guards and
unrelated code around them.
"""

from __future__ import annotations

import random
import textwrap

RUN_DEVICE = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
# Prints a value so that its numbers, dtype, shape and device all show.
SHOW = '''
def show(tag, value):
    if isinstance(value, torch.Tensor):
        flat = [round(float(v), 4) for v in value.detach().cpu().flatten().tolist()]
        print(tag, flat, value.dtype, tuple(value.shape), value.device.type)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            show(f"{tag}[{i}]", item)
    else:
        print(tag, type(value).__name__, repr(value))
'''
WORDS = ["x", "batch", "inputs", "feat", "h", "data", "tensor", "t", "sample", "img", "emb", "out", "z", "w",
         "acc", "grad", "mask", "state", "buf", "logits", "target", "ref", "val", "q", "k", "v"]
FUNCS = ["run", "step", "compute", "forward_pass", "evaluate", "prepare", "work", "go", "process", "apply_it"]
CLASSES = ["Net", "Model", "Block", "Runner", "Head", "Encoder", "Layer", "Worker", "Trainer"]


class Names:
    """Fresh random identifiers for one program (never `device`, `torch`, `nn` or `show`)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def _fresh(self, pool: list[str]) -> str:
        while True:
            name = self.rng.choice(pool)
            if self.rng.random() < 0.4:
                name += self.rng.choice(["_", ""]) + str(self.rng.randrange(100))
            if name not in self.used:
                self.used.add(name)
                return name

    def var(self) -> str:
        return self._fresh(WORDS)

    def func(self) -> str:
        return self._fresh(FUNCS)

    def cls(self) -> str:
        return self._fresh(CLASSES)


def indent(text: str, level: int = 1) -> str:
    return textwrap.indent(text, "    " * level)


# -- statement bodies of the plain rule shapes: each prints its results with show() -----------------------
def body_dl001(rng: random.Random, n: Names) -> str:
    a, b, m = n.var(), n.var(), n.var()
    shapes = [
        f"{a} = torch.arange(6.0).reshape(2, 3).cuda()\nshow('{a}', {a})",
        f"{a} = torch.ones(3)\n{a} = {a}.cuda(non_blocking=True)\nshow('{a}', {a} * 2)",
        f"{m} = nn.Linear(3, 2).cuda()\n{b} = {m}(torch.ones(1, 3).cuda())\nshow('{b}', {b})",
        f"show('{a}', torch.ones(2).cuda() + torch.arange(2.0).cuda() * 3)",
        f"{a} = [t.cuda() for t in (torch.ones(2), torch.zeros(2, dtype=torch.int64))]\nshow('{a}', {a})",
        f"{a} = {{'w': torch.full((2,), 1.5).cuda(), 'n': 3}}\nshow('{a}', {a}['w'] * {a}['n'])",
        f"{m} = lambda t: t.cuda()\nshow('{a}', {m}(torch.eye(2)))",
        f"{a} = torch.arange(4).cuda(0)\nshow('{a}', {a})",
        f"{a} = torch.ones(2, dtype=torch.float16).cuda().float()\nshow('{a}', {a})",
        f"{a} = torch.ones(2)\nif {a}.sum() > 0:\n    {a} = {a}.cuda()\nshow('{a}', {a})",
        f"{m} = nn.Sequential(nn.Linear(2, 2), nn.ReLU())\n{m}.cuda()\nshow('{a}', next({m}.parameters()).device.type)",
        f"{a} = torch.tensor([1, 2, 3]).cuda().sum().item()\nshow('{a}', {a})",
        f"{a}, {b} = torch.ones(2).cuda(), torch.zeros(1).cuda()\nshow('{a}', torch.cat([{a}, {b}]))",
    ]
    return rng.choice(shapes)


def body_dl004(rng: random.Random, n: Names) -> str:
    a, b = n.var(), n.var()
    shapes = [
        f"{a} = torch.ones(2, device='cuda')\nshow('{a}', {a})",
        f"{a} = torch.arange(3.0).to('cuda')\nshow('{a}', {a} + 1)",
        f"{b} = torch.device('cuda')\n{a} = torch.zeros(2, 2, device={b})\nshow('{a}', {a})",
        f"{a} = torch.ones(2).to('cuda:0')\nshow('{a}', {a})",
        f"{a} = torch.ones(2).to(device='cuda', dtype=torch.float64)\nshow('{a}', {a})",
    ]
    return rng.choice(shapes)


def body_dl005(rng: random.Random, n: Names) -> str:
    a = n.var()
    shapes = [
        f"{a} = torch.cuda.FloatTensor([1.0, 2.0])\nshow('{a}', {a})",
        f"{a} = torch.cuda.LongTensor([3, 4])\nshow('{a}', {a} * 2)",
        f"{a} = torch.ones(2).type(torch.cuda.FloatTensor)\nshow('{a}', {a})",
    ]
    return rng.choice(shapes)


def body_dl006(rng: random.Random, n: Names) -> str:
    a, m = n.var(), n.var()
    shapes = [
        (f"{m} = nn.Linear(2, 2).cuda()\nwith torch.cuda.amp.autocast():\n    {a} = {m}(torch.ones(1, 2).cuda())\n"
        f"show('{a}', {a})"),
        f"with torch.autocast('cuda', enabled=False):\n    {a} = torch.ones(2).cuda() * 2\nshow('{a}', {a})",
    ]
    return rng.choice(shapes)


def body_dl007(rng: random.Random, n: Names) -> str:
    a, m = n.var(), n.var()
    shapes = [
        f"{m} = nn.DataParallel(nn.Linear(2, 1).cuda(), device_ids=[0])\nshow('{a}', {m}(torch.ones(1, 2).cuda()))",
        f"torch.cuda.set_device(0)\n{a} = torch.ones(2).cuda()\nshow('{a}', {a})",
        f"with torch.cuda.device(0):\n    {a} = torch.ones(2).cuda()\nshow('{a}', {a})",
    ]
    return rng.choice(shapes)


def body_dl003(rng: random.Random, n: Names) -> str:
    a, b, items = n.var(), n.var(), n.var()
    shapes = [
        f"{a} = torch.ones(2)\n{a}.cuda()\nshow('{a}', {a})",
        f"{a} = torch.ones(2)\n{a}.to('cuda')\nshow('{a}', {a} + 1)",
        f"{items} = [torch.ones(2), torch.zeros(2)]\nfor {b} in {items}:\n    {b}.cuda()\nshow('{items}', {items})",
        f"{a} = nn.Linear(2, 2)\n{a}.cuda()\nshow('{a}', next({a}.parameters()).device.type)",
        f"{a} = torch.arange(3.0)\n{a}.cpu()\nshow('{a}', {a})",
    ]
    return rng.choice(shapes)


def body_dl011(rng: random.Random, n: Names) -> str:
    a, b = n.var(), n.var()
    shapes = [
        f"{a} = torch.ones(3)\n{b} = {a}.numpy()\nshow('{b}', {b}.tolist())",
        f"{a} = torch.arange(3.0).cuda()\n{b} = {a}.cpu().numpy()\nshow('{b}', {b}.tolist())",
        f"{a} = torch.arange(4.0) * 2\nshow('{b}', {a}.detach().numpy().sum().item())",
    ]
    return rng.choice(shapes)


def body_dl012(rng: random.Random, n: Names) -> str:
    a, m = n.var(), n.var()
    shapes = [
        f"{m} = nn.Linear(2, 2).cuda()\n{a} = torch.ones(1, 2).to({m}.weight.device)\nshow('{a}', {m}({a}))",
        (f"{m} = nn.Linear(2, 2)\n{m}.device = torch.device('cpu')\n{a} = torch.ones(1, 2).to({m}.device)\n"
        f"show('{a}', {a})"),
    ]
    return rng.choice(shapes)


def body_dl013(rng: random.Random, n: Names) -> str:
    a, b, items = n.var(), n.var(), n.var()
    shapes = [
        f"{items} = [torch.ones(2), torch.arange(2.0)]\nfor {b} in {items}:\n    {b} = {b}.cuda()\nshow('{items}', {items})",
        (f"{a} = torch.zeros(2).cuda()\nfor {b} in [torch.ones(2), torch.ones(2) * 3]:\n    {b} = {b}.cuda()\n"
        f"    {a} = {a} + {b}\nshow('{a}', {a})"),
    ]
    return rng.choice(shapes)


def body_dl016(rng: random.Random, n: Names) -> str:
    a, b = n.var(), n.var()
    shapes = [
        f"{a} = torch.ones(2).cuda()\n{b} = torch.zeros(2, device={a}.get_device())\nshow('{b}', {a} + {b})",
        f"{a} = torch.ones(2).cuda()\n{b} = torch.zeros(2).to({a}.get_device())\nshow('{b}', {b})",
    ]
    return rng.choice(shapes)


def body_dl018(rng: random.Random, n: Names) -> str:
    a = n.var()
    shapes = [
        f"{a} = torch.zeros(3).cuda()\nshow('{a}', {a})",
        f"{a} = torch.ones(2, 2, dtype=torch.int32).cuda()\nshow('{a}', {a})",
        f"{a} = torch.randn(3).cuda()\nshow('{a}', {a})",
        f"{a} = torch.arange(5).cuda()\nshow('{a}', {a})",
        f"{a} = torch.full((2,), 7.0).to('cuda')\nshow('{a}', {a})",
        f"{a} = torch.rand(2, 2).cuda()\nshow('{a}', {a})",
    ]
    return rng.choice(shapes)


def body_names(rng: random.Random, n: Names) -> str:
    """`.cuda()` and "cuda" where a `device` or a "cuda" that is not the run's device is near: the names a
    fix writes must not be captured, and strings that are not devices must not change."""
    a, b, c = n.var(), n.var(), n.cls()
    shapes = [
        f"{a} = [torch.ones(1).cuda() * device for device in range(2)]\nshow('{a}', {a})",
        f"device = 'cpu'\n{a} = torch.ones(2).cuda()\nshow('{a}', {a})\nshow('d', device)",
        f"{a} = torch.ones(2).cuda()\ndevice = 'cpu'\nshow('{a}', {a} + torch.ones(2, device={a}.device))",
        f"for device in ['cpu']:\n    {a} = torch.ones(2).cuda()\nshow('{a}', {a})",
        f"try:\n    raise ValueError('v')\nexcept ValueError as device:\n    {a} = torch.ones(2).cuda()\nshow('{a}', {a})",
        f"{a} = torch.ones(2).cuda() if (device := 'cpu') else None\nshow('{a}', {a})",
        f"class {c}:\n    device = 'cpu'\n    {a} = torch.ones(2).cuda()\n\n\nshow('{a}', {c}.{a})",
        f"class {c}:\n    def cuda(self):\n        return 'moved'\n\n\nshow('{a}', {c}().cuda())",
        (f"class {c}:\n    def cuda(self, device=None):\n        return 3\n\n    def to(self, *a, **k):\n"
         f"        return 4\n\n\nshow('{a}', {c}().cuda())"),
        f"{a} = torch.ones(2).cuda()\nshow('{b}', {a}.device.type == 'cuda')\nshow('{a}', str({a}.device))",
        f"{b} = 'cuda'\nshow('{b}', {b}.upper())\nshow('{a}', {{'cuda': 1}}['cuda'])",
        f"{a} = torch.ones(2).cuda()\nshow('{b}', {a}.device == torch.device('cuda', 0))",
        f"{a} = torch.ones(2).cuda()\nshow('{b}', {a}.is_cuda)\nshow('{a}', {a}.device.index)",
        f"{a} = torch.ones(2, requires_grad=True).cuda()\n{a}.sum().backward()\nshow('{b}', {a}.is_leaf)",
        f"{a} = torch.ones(2).cuda(device=0, non_blocking=True)\nshow('{a}', {a})",
        f"def {b}(t=torch.ones(1).cuda()):\n    return t * 2\n\n\nshow('{a}', {b}())",
        f"{b} = lambda device='cpu': torch.ones(1).cuda()\nshow('{a}', {b}())",
        f"{a} = torch.ones(2).cuda()\ndel {a}\n{a} = torch.zeros(1).cuda()\nshow('{a}', {a})",
        f"import torch as th\n{a} = th.ones(2).cuda()\nshow('{a}', {a})",
        f"{a} = torch.ones(2).cuda()\nglobals()['device'] = 'cpu'\nshow('{a}', {a})",
    ]
    return rng.choice(shapes)


BODIES = [body_dl001, body_dl001, body_dl001, body_names, body_names, body_names, body_dl003, body_dl004, body_dl005, body_dl006, body_dl007,
          body_dl011, body_dl012, body_dl013, body_dl016, body_dl018]


def place(rng: random.Random, n: Names, body: str) -> str:
    """`body` at module level, in a function, a method, a nested function, a main guard or a loop."""
    where = rng.choice(["module", "function", "method", "nested", "guard", "loop", "function-guard"])
    if where == "module":
        return body + "\n"
    if where == "guard":
        return "if __name__ == '__main__':\n" + indent(body) + "\n"
    if where == "loop":
        return f"for {n.var()} in range(1):\n" + indent(body) + "\n"
    f = n.func()
    if where in ("function", "function-guard"):
        call = f"{f}()\n" if where == "function" else f"if __name__ == '__main__':\n    {f}()\n"
        return f"def {f}():\n" + indent(body) + "\n\n\n" + call
    if where == "nested":
        g = n.func()
        return f"def {f}():\n    def {g}():\n" + indent(body, 2) + f"\n    {g}()\n\n\n{f}()\n"
    c = n.cls()
    return f"class {c}:\n    def {f}(self):\n" + indent(body, 2) + f"\n\n\n{c}().{f}()\n"


def filler(rng: random.Random, n: Names) -> str:
    """Unrelated code around the shapes."""
    parts = []
    for _ in range(rng.randrange(3)):
        kind = rng.randrange(4)
        if kind == 0:
            parts.append(f"def {n.func()}(a, b=2):\n    return a * b\n")
        elif kind == 1:
            parts.append(f"{n.var().upper()} = {rng.randrange(100)}\n")
        elif kind == 2:
            parts.append(f"# {rng.choice(['TODO', 'note', 'see the README'])}\n")
        else:
            parts.append(f"class {n.cls()}Config:\n    lr = 0.{rng.randrange(1, 9)}\n")
    return "\n".join(parts)


def header(rng: random.Random) -> str:
    extra = rng.sample(["import os\n", "import math\n", "import sys\n", '"""A module."""\n'], rng.randrange(3))
    doc = [e for e in extra if e.startswith('"""')]
    imports = [e for e in extra if not e.startswith('"""')]
    return "".join(doc) + "".join(imports) + "import torch\nimport torch.nn as nn\n" + SHOW + "\n"


def plain(rng: random.Random, n: Names) -> dict[str, str]:
    """One to three rule shapes, each placed somewhere, in one file."""
    parts = [place(rng, n, rng.choice(BODIES)(rng, n)) for _ in range(rng.randrange(1, 4))]
    parts.insert(rng.randrange(len(parts) + 1), filler(rng, n))
    return {"main.py": header(rng) + "\n\n".join(parts)}
