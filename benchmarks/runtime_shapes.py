"""Whole-file shapes for the runtime adversarial run: issue 29's S1-S8 (derived devices, definitions that
bind) and the rules whose shape is a class or a file (DL002 with a checkpoint the program writes itself,
DL009, DL010), each with random names. Each returns a project: file name -> text, `main.py` is run.
"""

from __future__ import annotations

import random

from runtime_programs import RUN_DEVICE, Names, filler, header, indent


def s1(rng: random.Random, n: Names) -> dict[str, str]:
    """`self.device` set after `super().__init__()`, read by a method the base init calls."""
    c, a = n.cls(), n.var()
    setter = rng.choice([RUN_DEVICE, "torch.device('cuda')", "torch.device('cpu')"])
    if rng.random() < 0.5:
        cls = (f"class {c}(nn.Linear):\n    def __init__(self, k):\n        super().__init__(k, k)\n"
               f"        self.device = {setter}\n\n    def reset_parameters(self):\n        super().reset_parameters()\n"
               f"        self.{a} = torch.ones(self.out_features).cuda()\n")
        use = f"show('{a}', {c}(3).{a})"
    else:
        m = n.func()
        cls = (f"class {c}(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.{m}()\n"
               f"        self.device = {setter}\n\n    def {m}(self):\n        self.{a} = torch.ones(2).cuda()\n")
        use = f"show('{a}', {c}().{a})"
    if rng.random() < 0.4:
        f = n.func()
        return {"main.py": header(rng) + f"\ndef {f}():\n" + indent(cls) + f"\n    return {c}\n\n\n{c} = {f}()\n{use}\n"}
    return {"main.py": header(rng) + "\n" + cls + "\n\n" + use + "\n"}


def s2(rng: random.Random, n: Names) -> dict[str, str]:
    """`self.device` or `device` that is not the GPU `.cuda()` used."""
    c, f, a = n.cls(), n.func(), n.var()
    method = f"    def {f}(self, t):\n        return t.cuda() * 2\n"
    kind = rng.choice(["parameter", "other-gpu", "subclass", "cpu-name", "cpu-parameter", "run-device"])
    if kind == "parameter":
        arg = rng.choice(["torch.device('cpu')", "'cpu'", RUN_DEVICE])
        text = (f"class {c}:\n    def __init__(self, device):\n        self.device = device\n\n{method}\n\n"
                f"show('{a}', {c}({arg}).{f}(torch.ones(2)))\n")
    elif kind == "other-gpu":
        text = (f"class {c}:\n    def __init__(self):\n        self.device = torch.device('cuda:1')\n\n{method}\n\n"
                f"show('{a}', {c}().{f}(torch.ones(2)))\n")
    elif kind == "subclass":
        base = (f"import torch\n\n\nclass {c}:\n    def __init__(self):\n        self.device = {RUN_DEVICE}\n\n{method}")
        sub = n.cls()
        text = (f"from base_{c.lower()} import {c}\n\n\nclass {sub}({c}):\n    def __init__(self):\n"
                f"        super().__init__()\n        self.device = torch.device('cpu')\n\n\n"
                f"show('{a}', {sub}().{f}(torch.ones(2)))\n")
        return {f"base_{c.lower()}.py": base, "main.py": header(rng) + text}
    elif kind == "cpu-name":
        text = (f"device = torch.device('cpu')\n\n\ndef {f}(t):\n    return t.cuda() * 2\n\n\n"
                f"show('{a}', {f}(torch.ones(2)))\n")
    elif kind == "cpu-parameter":
        text = f"def {f}(t, device):\n    return t.cuda() * 2\n\n\nshow('{a}', {f}(torch.ones(2), torch.device('cpu')))\n"
    else:
        text = (f"device = {RUN_DEVICE}\n\n\ndef {f}(t):\n    return t.cuda() * 2\n\n\n"
                f"show('{a}', {f}(torch.ones(2)))\n")
    return {"main.py": header(rng) + filler(rng, n) + "\n" + text}


def s3(rng: random.Random, n: Names) -> dict[str, str]:
    """`y.device` of something that may not be a tensor on the device."""
    f, y, a = n.func(), n.var(), n.var()
    kind = rng.choice(["float", "container", "moved", "tensor"])
    if kind == "float":
        c = n.cls()
        text = (f"class {c}(nn.Module):\n    def forward(self, t):\n        return float(t.sum())\n\n\n"
                f"def {f}(t: torch.Tensor):\n    m = {c}().cuda()\n    {y} = m(t.cuda())\n"
                f"    return torch.ones(2).cuda() + {y}\n")
    elif kind == "container":
        c = n.cls()
        text = (f"DEV = {RUN_DEVICE}\n\n\nclass {c}:\n    def __init__(self, t):\n        self.t = t\n\n"
                f"    def cuda(self):\n        return {c}(self.t.to(DEV))\n\n    def __radd__(self, other):\n"
                f"        return other + self.t\n\n\ndef {f}(b):\n    {y} = b.cuda()\n    return torch.ones(2).cuda() + {y}\n")
        return {"main.py": header(rng) + text + f"\n\nshow('{a}', {f}({c}(torch.ones(2))))\n"}
    elif kind == "moved":
        text = (f"def {f}(t: torch.Tensor):\n    {y} = t.sum().cuda()\n    {y}.data = {y}.data.cpu()\n"
                f"    return torch.ones(2).cuda() * {y}\n")
    else:
        text = (f"def {f}(t: torch.Tensor):\n    {y} = t.cuda()\n    z = torch.ones(3).cuda() + {y}\n"
                f"    return torch.cat([torch.zeros(2).cuda(), z])\n")
    return {"main.py": header(rng) + text + f"\n\nshow('{a}', {f}(torch.arange(3.0)))\n"}


def s4(rng: random.Random, n: Names) -> dict[str, str]:
    """A function that binds `torch` locally or as a parameter."""
    f, a = n.func(), n.var()
    kind = rng.choice(["import-later", "parameter", "enclosing"])
    if kind == "import-later":
        text = f"def {f}(t):\n    {a} = t.cuda() + 1\n    import torch.distributed\n    return {a}\n\n\nshow('{a}', {f}(torch.ones(2)))\n"
    elif kind == "parameter":
        text = f"def {f}(t, torch=None):\n    return t.cuda() * 3\n\n\nshow('{a}', {f}(torch.ones(2)))\n"
    else:
        g = n.func()
        text = (f"def {f}(torch):\n    def {g}(t):\n        return t.cuda() + 2\n    return {g}\n\n\n"
                f"show('{a}', {f}(torch)(torch.ones(2)))\n")
    if rng.random() < 0.5:
        text = text.replace("\nshow(", "\nif __name__ == '__main__':\n    show(", 1)
    return {"main.py": header(rng) + text}


def s5(rng: random.Random, n: Names) -> dict[str, str]:
    """A TorchScript function."""
    f, a = n.func(), n.var()
    return {"main.py": header(rng) + f"@torch.jit.script\ndef {f}(t):\n    return t.cuda() * 2\n\n\n"
                                     f"show('{a}', {f}(torch.ones(2)))\n"}


def s6(rng: random.Random, n: Names) -> dict[str, str]:
    """A model module with a `__main__` self-test, imported by a script that may hide CUDA."""
    mod, c, f, a = f"model_{n.var()}", n.cls(), n.func(), n.var()
    model = (f"import torch\n\n\nclass {c}(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             f"        self.fc = torch.nn.Linear(2, 2)\n\n    def forward(self, t):\n        return self.fc(t)\n\n\n"
             f"def {f}():\n    return torch.ones(1, 2).cuda()\n\n\nif __name__ == '__main__':\n"
             f"    print({c}().cuda()({f}()).shape)\n")
    hide = rng.random() < 0.5
    train = (f"import os\n\nimport {mod}\n" + header(rng) +
             ("os.environ['CUDA_VISIBLE_DEVICES'] = ''\n" if hide else "") +
             f"{a} = {mod}.{f}()\nshow('{a}', {a})\n")
    return {f"{mod}.py": model, "main.py": train}


def s7(rng: random.Random, n: Names) -> dict[str, str]:
    """Later re-bindings of `device`."""
    f, a = n.func(), n.var()
    first = rng.choice(["device = torch.device('cuda')\n", f"device = {RUN_DEVICE}\n", ""])
    kind = rng.choice(["argv", "global", "globals-update", "globals-item"])
    use = f"def {f}(t):\n    return t.cuda() * 2\n\n\n"
    if kind == "argv":
        text = first + "if '--cpu' in sys.argv:\n    device = torch.device('cpu')\n\n\n" + use + f"show('{a}', {f}(torch.ones(2)))\n"
    elif kind == "global":
        g = n.func()
        text = (first + use + f"def {g}(cpu):\n    global device\n    if cpu:\n        device = torch.device('cpu')\n\n\n"
                f"{g}({rng.choice(['True', 'False'])})\nshow('{a}', {f}(torch.ones(2)))\n")
    elif kind == "globals-update":
        text = (first + use + "globals().update({'device': torch.device('cpu')})\n"
                f"show('{a}', {f}(torch.ones(2)))\n")
    else:
        text = first + use + f"globals()['device'] = torch.device('cpu')\nshow('{a}', {f}(torch.ones(2)))\n"
    return {"main.py": "import sys\n" + header(rng) + text}


def s8(rng: random.Random, n: Names) -> dict[str, str]:
    """NFKC-normalised names: a fullwidth `device`, a fullwidth `cuda`."""
    f, a = n.func(), n.var()
    dev = "\uff44\uff45\uff56\uff49\uff43\uff45"
    value = rng.choice(["'cpu'", "'cuda'", "torch.device('cpu')", RUN_DEVICE])
    call = rng.choice(["cuda", "\uff43\uff55\uff44\uff41"])
    return {"main.py": header(rng) + f"{dev} = {value}\n\n\ndef {f}(t):\n    return t.{call}() * 2\n\n\n"
                                     f"show('{a}', {f}(torch.ones(2)))\nshow('dev', str(device))\n"}


def dl002(rng: random.Random, n: Names) -> dict[str, str]:
    """Loads of a checkpoint the program wrote itself (on the device it ran on)."""
    p, ck, m = n.var(), n.var(), n.var()
    save = rng.choice([
        f"torch.save({{'w': torch.arange(3.0).cuda(), 'n': 2}}, {p})\n{ck} = torch.load({p})\nshow('{ck}', {ck}['w'] * {ck}['n'])\n",
        f"torch.save(torch.ones(2), {p})\n{ck} = torch.load({p}, weights_only=True)\nshow('{ck}', {ck})\n",
        (f"{m} = nn.Linear(2, 2).cuda()\ntorch.save({m}.state_dict(), {p})\n{m}.load_state_dict(torch.load({p}))\n"
        f"show('{ck}', {m}.weight.device.type)\n"),
        f"torch.save([torch.ones(1).cuda(), torch.zeros(1)], {p})\nshow('{ck}', torch.load({p}))\n",
    ])
    body = f"torch.manual_seed(0)\n{p} = 'ckpt_{n.var()}.pt'\n" + save
    f = n.func()
    if rng.random() < 0.5:
        return {"main.py": header(rng) + f"def {f}():\n" + indent(body) + f"\n\n\n{f}()\n"}
    return {"main.py": header(rng) + body}


def module_rules(rng: random.Random, n: Names) -> dict[str, str]:
    """DL009 (a tensor attribute that is not a buffer) and DL010 (a factory in forward)."""
    c, a = n.cls(), n.var()
    attr = n.var()
    if rng.random() < 0.5:
        init = f"        self.{attr} = torch.ones(2) * 2\n"
        use = f"self.fc(t) * self.{attr}"
    else:
        init = ""
        use = rng.choice(["self.fc(t) + torch.zeros(2)", "self.fc(t) * torch.ones(t.shape[0], 2)",
                          "torch.cat([self.fc(t), torch.arange(2.0).unsqueeze(0)])"])
    cls = (f"class {c}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           f"        torch.manual_seed(1)\n        self.fc = nn.Linear(2, 2)\n{init}\n    def forward(self, t):\n"
           f"        return {use}\n")
    move = rng.choice(["", ".cuda()", f".to({RUN_DEVICE})"])
    inp = "torch.ones(1, 2)" if not move else f"torch.ones(1, 2){move}"
    tail = f"m = {c}(){move}\nshow('{a}', m({inp}))\nshow('keys', sorted(m.state_dict()))\n"
    return {"main.py": header(rng) + filler(rng, n) + "\n" + cls + "\n\n" + tail}


SHAPES = [s1, s2, s3, s4, s5, s6, s7, s8, dl002, module_rules]
