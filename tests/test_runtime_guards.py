"""Guards are run-time questions (issue 23): a flag devlint can prove constant guards nothing, and the
branch it never takes is dead code.

Each single-file case marks the lines expected to be flagged with `# X` (DL001 `.cuda()`, DL015
`torch.cuda.*` calls); every shape has a flagged and a not-flagged side. The project cases run the CLI
on a small tree: whether a parameter's literal default is a constant depends on the other files' calls,
and a cached result must follow them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.helpers import codes
from tests.test_cache_staleness import cached_and_fresh
from tests.test_cli import write


def flagged(source: str, select: str = "DL001,DL015") -> list[int]:
    source = textwrap.dedent(source)
    return sorted(line for code in select.split(",") for line, _ in codes(source, code))


def marked(source: str) -> list[int]:
    return [n for n, line in enumerate(textwrap.dedent(source).splitlines(), 1) if line.rstrip().endswith("# X")]


CASES = {
    # -- a name bound only to a literal --------------------------------------------------------------
    "tutorial_true_constant": """
        import torch
        USE_CUDA = True
        x = torch.zeros(3)
        if USE_CUDA:
            x = x.cuda()  # X
        def batch(v):
            if USE_CUDA: v = v.cuda()  # X
            return v
    """,
    "false_constant_is_dead_code": """
        import torch
        USE_CUDA = False
        x = torch.zeros(3)
        if USE_CUDA:
            x = x.cuda()
        if not USE_CUDA:
            pass
        else:
            torch.cuda.synchronize()
        y = x.cuda() if USE_CUDA else x
    """,
    "true_constant_else_is_dead_code": """
        import torch
        GPU = True
        if not GPU:
            torch.cuda.synchronize()
        elif GPU:
            w = torch.ones(1).cuda()  # X
        while not GPU:
            torch.ones(1).cuda()
    """,
    "function_level_constant": """
        import torch
        def train(x):
            use_cuda = True
            if use_cuda:
                x = x.cuda()  # X
            return x
        def other(x, use_cuda):
            if use_cuda:
                x = x.cuda()
            return x
    """,
    "constant_then_run_time_rebinding": """
        import torch
        USE_CUDA = True
        USE_CUDA = USE_CUDA and torch.cuda.is_available()
        if USE_CUDA:
            x = torch.zeros(1).cuda()
    """,
    "rebound_in_main_block": """
        import sys, torch
        use_gpu = True
        if __name__ == "__main__":
            use_gpu = "--gpu" in sys.argv
        def f(x):
            if use_gpu:
                return x.cuda()
            return x
    """,
    "global_rebinding": """
        import torch
        USE_CUDA = True
        def configure(flag):
            global USE_CUDA
            USE_CUDA = flag
        def f(x):
            if USE_CUDA:
                return x.cuda()
    """,
    "same_literal_twice_is_still_constant": """
        import torch
        USE_CUDA = True
        if __name__ == "__main__":
            USE_CUDA = True
        if USE_CUDA:
            x = torch.zeros(1).cuda()  # X
    """,
    "imported_flag": """
        import torch
        from config import USE_CUDA
        if USE_CUDA:
            x = torch.zeros(1).cuda()
    """,
    "star_import_after_binding": """
        import torch
        USE_CUDA = True
        from settings import *
        if USE_CUDA:
            x = torch.zeros(1).cuda()
    """,
    "globals_write": """
        import torch
        USE_CUDA = True
        globals()["USE_CUDA"] = torch.cuda.is_available()
        if USE_CUDA:
            x = torch.zeros(1).cuda()
    """,
    "loop_and_unpacking_bindings": """
        import torch
        for cuda in (True,):
            if cuda:
                x = torch.zeros(1).cuda()
        gpu, n = True, 1
        if gpu:
            y = torch.zeros(1).cuda()
    """,
    "scopes_resolved_without_libcst": """
        import torch
        cuda = True
        def f(x, cuda):
            if cuda:
                x = x.cuda()
            return x
        def g(x):
            if cuda:
                x = x.cuda()  # X
            def inner():
                nonlocal x
                if cuda:
                    return x.cuda()  # X
            return [y.cuda() for y in x if cuda]  # X
        def h(x):
            cuda = x.is_cuda
            return x.cuda() if cuda else x
        def k(x):
            def use_gpu():
                return True
            if use_gpu:
                x = x.cuda()
            match x:
                case [*gpu]:
                    pass
            gpu = True
            if gpu:
                x = x.cuda()
            return x
    """,
    # -- run-time sources stay guards ---------------------------------------------------------------
    "argparse_env_device_type": """
        import argparse, os, torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", action="store_true")
        args = parser.parse_args()
        if args.cuda:
            a = torch.zeros(1).cuda()
        use_cuda = not args.no_cuda and torch.cuda.is_available()
        if use_cuda:
            b = torch.zeros(1).cuda()
        USE_GPU = os.environ.get("USE_GPU", "1") == "1"
        if USE_GPU:
            c = torch.zeros(1).cuda()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if device.type == "cuda":
            torch.cuda.synchronize()
        if cfg.use_gpu:
            d = torch.zeros(1).cuda()
    """,
    "compared_operands_are_no_switches": """
        import torch
        def f(x, w):
            if x.get_device() > -1:
                w = w.cuda()
            return w
    """,
    "constant_string_comparison": """
        import torch
        DEVICE = "cuda"
        if DEVICE == "cuda":
            x = torch.zeros(1).cuda()  # X
        BACKEND = "gloo"
        if BACKEND == "nccl":
            torch.cuda.set_device(0)
    """,
    # -- a parameter with a literal default -----------------------------------------------------------
    "parameter_default_never_passed": """
        import torch
        def one_hot(idx, size, cuda=True):
            v = torch.zeros(1, size)
            v[0][idx] = 1
            if cuda: v = v.cuda()  # X
            return v
        rows = [one_hot(i, 10) for i in range(3)]
        first = one_hot(idx=0, size=10)
    """,
    "parameter_false_default_never_passed_is_dead": """
        import torch
        def one_hot(idx, size, cuda=False):
            v = torch.zeros(1, size)
            if cuda: v = v.cuda()
            return v
        rows = one_hot(1, 10)
    """,
    "parameter_passed_positionally": """
        import torch
        def one_hot(idx, size, cuda=True):
            v = torch.zeros(1, size)
            if cuda: v = v.cuda()
            return v
        a = one_hot(1, 10)
        b = one_hot(1, 10, False)
    """,
    "parameter_passed_by_keyword": """
        import torch
        def one_hot(idx, size, cuda=True):
            v = torch.zeros(1, size)
            if cuda: v = v.cuda()
            return v
        a = one_hot(1, 10, cuda=args.cuda)
    """,
    "parameter_reached_by_unpacking_or_reference": """
        import functools, torch
        def f(x, cuda=True):
            if cuda: x = x.cuda()
            return x
        def g(x, cuda=True):
            if cuda: x = x.cuda()
            return x
        def h(x, cuda=True):
            if cuda: x = x.cuda()
            return x
        f(*params)
        cpu_g = functools.partial(g, cuda=False)
        outs = list(map(h, xs))
    """,
    "parameter_of_a_decorated_function": """
        import click, torch
        @click.command()
        @click.option("--cuda/--no-cuda", default=True)
        def main(cuda=True):
            if cuda:
                x = torch.zeros(1).cuda()
        @torch.no_grad()
        def infer(x, cuda=True):
            if cuda:
                x = x.cuda()  # X
            return x
        main()
        infer(x)
    """,
    "parameter_rebound_or_without_literal_default": """
        import torch
        def f(x, cuda=True):
            cuda = cuda and torch.cuda.is_available()
            if cuda: x = x.cuda()
            return x
        def g(x, cuda):
            if cuda: x = x.cuda()
            return x
        def h(x, cuda=torch.cuda.is_available()):
            if cuda: x = x.cuda()
            return x
        f(x); g(x, True); h(x)
    """,
    "method_parameters": """
        import torch
        class Net(torch.nn.Module):
            def init_hidden(self, bsz, use_cuda=True):
                h = torch.zeros(1, bsz)
                if use_cuda:
                    h = h.cuda()  # X
                return h
            def init_state(self, bsz, use_cuda=True):
                h = torch.zeros(1, bsz)
                if use_cuda:
                    h = h.cuda()
                return h
            def forward(self, x, use_cuda=True):
                if use_cuda:
                    x = x.cuda()
                return x
            def run(self, x):
                return self.init_hidden(4), self.init_state(4, False)
    """,
    # -- a module-level None never re-bound ---------------------------------------------------------------
    "none_constant_dead_branch": """
        import torch
        FusedNorm = None
        def norm(x):
            y = x if FusedNorm is None else FusedNorm(x, torch.cuda.current_device())
            if FusedNorm is not None:
                torch.cuda.synchronize()
            if FusedNorm:
                torch.cuda.synchronize()
            return FusedNorm is None or FusedNorm(torch.cuda.current_device())
    """,
    "none_rebound_by_try_import": """
        import torch
        try:
            from apex.normalization import FusedNorm
        except ImportError:
            FusedNorm = None
        def norm(x):
            y = x if FusedNorm is None else FusedNorm(x, torch.cuda.current_device())  # X
            return y
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_flags(name):
    assert flagged(CASES[name]) == marked(CASES[name])


def test_dead_code_is_not_flagged_by_any_rule():
    source = textwrap.dedent("""
        import torch
        DEBUG_GPU = False
        def step(device):
            x = torch.zeros(3)
            if DEBUG_GPU:
                x.to(device)
                y = torch.zeros(2).cuda()
            x.to(device)
            return x
    """)
    assert codes(source) == [(9, "DL003")]


# -- a project: the calls of a function in other files -----------------------------------------------------
MODELS = ("import torch\n\n"
          "def one_hot(idx, size, cuda=True):\n"
          "    v = torch.zeros(1, size)\n"
          "    v[0][idx] = 1\n"
          "    if cuda: v = v.cuda()\n"
          "    return v\n")
TRAIN = "from models import one_hot\n\nrows = [one_hot(i, 10) for i in range(3)]\n"
EVALUATE = "import models\n\ndef evaluate(args):\n    return models.one_hot(0, 10, cuda=args.cuda)\n"
SETTINGS = "import torch\n\nUSE_CUDA = True\n\ndef batch(x):\n    if USE_CUDA:\n        x = x.cuda()\n    return x\n"


@pytest.fixture()
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    write(root / "models.py", MODELS)
    write(root / "train.py", TRAIN)
    return root


def test_a_default_no_file_passes_is_not_a_guard(project):
    assert cached_and_fresh(project, ".") == ([("models.py", "DL001")],) * 2


def test_a_call_in_another_file_that_passes_the_flag_keeps_the_guard(project):
    write(project / "tools" / "evaluate.py", EVALUATE)
    cached, fresh = cached_and_fresh(project, ".")
    assert cached == fresh == []


@pytest.mark.parametrize("caller", [
    "import models\n\ndef build(name, *args):\n    return getattr(models, name)(*args)\n",
    "from models import one_hot\n\nencoders = {'one_hot': one_hot}\n",
    "from models import one_hot\n\ndef rows(options):\n    return one_hot(0, 10, **options)\n",
])
def test_a_call_devlint_cannot_read_keeps_the_guard(project, caller):
    write(project / "registry.py", caller)
    assert cached_and_fresh(project, ".") == ([], [])


@pytest.mark.parametrize(("caller", "guard"), [
    # a computed lookup called on the spot is one call, with the arguments it passes
    ("def compare(a, b, op):\n    return getattr(version(a), op)(version(b))\n", False),
    ("import models\n\ndef build(name):\n    return getattr(models, name)(0, 10)\n", False),
    ("import models\n\ndef build(name):\n    return getattr(models, name)(0, 10, False)\n", True),
    ("import models\n\ndef build(name, gpu):\n    return getattr(models, name)(0, 10, cuda=gpu)\n", True),
    # kept, the function it finds is called where devlint cannot look
    ("import models\n\ndef build(name):\n    return getattr(models, name)\n", True),
    ("import sys\n\ndef find(mod, op):\n    f = getattr(sys.modules[mod], op)\n    return f(1)\n", True),
])
def test_a_lookup_by_computed_name_called_on_the_spot_passes_what_it_passes(project, caller, guard):
    write(project / "registry.py", caller)
    assert cached_and_fresh(project, ".") == (([], []) if guard else ([("models.py", "DL001")],) * 2)


def test_the_cached_result_follows_the_callers(project):
    """Issue 29's rule: a cached pass or finding never outlives a change of a caller."""
    assert cached_and_fresh(project, "models.py") == ([("models.py", "DL001")],) * 2
    write(project / "train.py", TRAIN.replace("one_hot(i, 10)", "one_hot(i, 10, cuda=False)"))
    assert cached_and_fresh(project, "models.py") == ([], [])
    write(project / "train.py", TRAIN)
    assert cached_and_fresh(project, "models.py") == ([("models.py", "DL001")],) * 2
    write(project / "tools" / "evaluate.py", EVALUATE)  # a new file, in a new folder
    assert cached_and_fresh(project, "models.py") == ([], [])
    (project / "tools" / "evaluate.py").unlink()
    assert cached_and_fresh(project, "models.py") == ([("models.py", "DL001")],) * 2


def test_a_module_constant_another_file_assigns_is_a_guard(project):
    write(project / "settings.py", SETTINGS)
    assert cached_and_fresh(project, "settings.py") == ([("settings.py", "DL001")],) * 2
    write(project / "main.py", "import settings\nsettings.USE_CUDA = False\n")
    assert cached_and_fresh(project, "settings.py") == ([], [])


# -- DL015: the message says what the fix does ------------------------------------------------------------
def test_dl015_message_names_what_its_fix_does():
    from tests.helpers import lint

    source = ("import torch\ntorch.cuda.synchronize()\ntorch.cuda.set_device(0)\nstart = torch.cuda.Event()\n"
              "name = torch.cuda.get_device_name(0)\n")
    findings = lint(source, "DL015")
    assert len(findings) == 4
    for finding in findings:
        title = finding.fix.title
        if title.startswith("Use `torch.accelerator."):
            call = title.split("`")[1]
            assert f"`{call}` (PyTorch >= 2.6), which still needs an accelerator" in finding.message
            assert "still raises without an accelerator" in title
        else:
            assert title.startswith("Guard ") and "torch.cuda.is_available()" in title
            assert finding.message.endswith("guard it with `torch.cuda.is_available()`")
