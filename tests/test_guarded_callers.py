"""A function every call of which is guarded runs only with CUDA (devlint.analysis.guarded_callers).

Held-out evaluation (issue 23): research code refuses to run without a GPU once, at the top of each entry
point, then calls its own helpers (`train`, `validate_network`), whose `.cuda()` were flagged although
the same lines written inline after the refusal are not. Both sides: a helper that some unguarded code,
another file, or a callback may call keeps its findings.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint
from tests.test_cache_staleness import cached_and_fresh


def flagged(source: str, select: str = "DL001") -> list[int]:
    return [f.start.line for f in lint(textwrap.dedent(source), select=select)]


REFUSAL = '''
    import sys, torch

    def require_gpu():
        if not torch.cuda.is_available():
            sys.exit("needs a GPU")
'''

NOT_FLAGGED = {
    "called after a refusal": REFUSAL + '''
    def step(x):
        return x.cuda()

    def main(x):
        require_gpu()
        return step(x)
    ''',
    "called under an availability test": '''
    import torch

    def step(x):
        return x.cuda()

    def main(x):
        if torch.cuda.is_available():
            return step(x)
        return x
    ''',
    "a chain of guarded callers": REFUSAL + '''
    def inner(x):
        return x.cuda()

    def outer(x):
        return inner(x) + 1

    def main(x):
        require_gpu()
        return outer(x)
    ''',
    "a method of the same name on another object": REFUSAL + '''
    def train(model, x):
        model.train()
        return model(x.cuda())

    def main(model, x):
        require_gpu()
        return train(model, x)
    ''',
    "a no_grad helper": REFUSAL + '''
    @torch.no_grad()
    def validate(model, x):
        return model(x.cuda())

    def main(model, x):
        require_gpu()
        return validate(model, x)
    ''',
    "a def that re-defines an imported name": REFUSAL.replace("import sys, torch", "import sys, torch\n    from other import step") + '''
    @torch.no_grad()
    def step(x):
        return x.cuda()

    if __name__ == "__main__":
        require_gpu()
        step(torch.ones(1))
    ''',
}

STILL_FLAGGED = {
    "called before the def that re-defines an imported name": REFUSAL.replace(
        "import sys, torch", "import sys, torch\n    from other import step") + '''
    def main(x):
        require_gpu()
        return step(x)

    def step(x):
        return x.cuda()
    ''',
    "the name imported again below the def": REFUSAL + '''
    def step(x):
        return x.cuda()

    from other import step

    def main(x):
        require_gpu()
        return step(x)
    ''',
    "one call is not guarded": REFUSAL + '''
    def step(x):
        return x.cuda()

    def main(x):
        require_gpu()
        return step(x)

    def other(x):
        return step(x)
    ''',
    "the call comes before the refusal": REFUSAL + '''
    def step(x):
        return x.cuda()

    def main(x):
        y = step(x)
        require_gpu()
        return y
    ''',
    "handed on as a callback": REFUSAL + '''
    def step(x):
        return x.cuda()

    def main(xs):
        require_gpu()
        return [step(x) for x in xs] + list(map(step, xs))
    ''',
    # a launcher may keep the function and run it later, elsewhere: a hand-off with its arguments
    # (devlint.analysis.handoffs, for DL002's paths) is still a callback here
    "handed to a launcher with its arguments": REFUSAL + '''
    def worker(rank, x):
        return x.cuda()

    def main(x):
        require_gpu()
        torch.multiprocessing.spawn(worker, args=(x,), nprocs=2)
    ''',
    "never called": '''
    import torch

    def step(x):
        return x.cuda()
    ''',
    "a decorator that may register it": REFUSAL + '''
    @register
    def step(x):
        return x.cuda()

    def main(x):
        require_gpu()
        return step(x)
    ''',
    "a method": REFUSAL + '''
    class Runner:
        def step(self, x):
            return x.cuda()

    def main(x):
        require_gpu()
        return Runner().step(x)
    ''',
    "only a recursive call": REFUSAL + '''
    def step(x, n):
        return x.cuda() if n == 0 else step(x, n - 1)
    ''',
    "a test pytest calls": REFUSAL + '''
    def test_step():
        assert torch.ones(1).cuda().sum() == 1

    def main():
        require_gpu()
        test_step()
    ''',
}


@pytest.mark.parametrize("name", sorted(NOT_FLAGGED))
def test_a_function_only_called_with_cuda_is_not_flagged(name):
    assert flagged(NOT_FLAGGED[name]) == []


@pytest.mark.parametrize("name", sorted(STILL_FLAGGED))
def test_a_function_that_may_run_without_cuda_keeps_the_finding(name):
    assert flagged(STILL_FLAGGED[name]) != []


HELPERS = '''import sys
import torch


def require_gpu():
    if not torch.cuda.is_available():
        sys.exit("needs a GPU")


def step(x):
    return x.cuda()


def main(x):
    require_gpu()
    return step(x)
'''


def test_a_caller_in_another_file_keeps_the_finding_and_the_cache_sees_it_come(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "helpers.py").write_text(HELPERS)
    args = ("helpers.py", "--select", "DL001")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == []
    # another file now calls the helper without any guard: the cached pass must not be served
    (project / "tool.py").write_text("import torch\nfrom helpers import step\nstep(torch.ones(1))\n")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("helpers.py", "DL001")]


def test_a_same_named_function_of_another_file_is_another_callee_until_it_re_exports(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "helpers.py").write_text(HELPERS)
    # another module defines its own `step`, called unguarded there and by a third file that imports it
    (project / "other.py").write_text("def step(x):\n    return x\n\nstep(1)\n")
    (project / "tool.py").write_text("from other import step\nstep(2)\n")
    args = ("helpers.py", "--select", "DL001")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == []
    # now other.py hands on helpers' own `step`: tool.py calls it without a guard
    (project / "other.py").write_text("from helpers import step\n")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("helpers.py", "DL001")]


@pytest.mark.parametrize("caller", [
    "import helpers\nhelpers.step(1)\n",  # through the module
    "from other import *\nstep(1)\n",  # a star import may bind anything
    "step = lambda x: x\nstep(1)\n",  # a binding that is no `def`
    "from . import step\nstep(1)\n",  # a package's name: may be anything
    "from other import step\nglobals()['step'] = print\nstep(1)\n",  # bound where devlint cannot see
])
def test_a_call_that_may_reach_the_function_keeps_the_finding(tmp_path, caller):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "helpers.py").write_text(HELPERS)
    (project / "other.py").write_text("def step(x):\n    return x\n")
    (project / "tool.py").write_text(caller)
    assert cached_and_fresh(project, "helpers.py", "--select", "DL001")[1] == [("helpers.py", "DL001")]


GUARDED_CALLER = '''import sys
import torch
from helpers import step

if not torch.cuda.is_available():
    sys.exit("needs a GPU")
step(torch.ones(1))
'''


def test_a_caller_in_another_file_guarded_there_passes_and_the_cache_sees_the_guard_go(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "helpers.py").write_text(HELPERS)
    (project / "tool.py").write_text(GUARDED_CALLER)
    args = ("helpers.py", "--select", "DL001")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == []
    (project / "tool.py").write_text(GUARDED_CALLER.replace('if not torch.cuda.is_available():\n    sys.exit("needs a GPU")\n', ""))
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("helpers.py", "DL001")]


@pytest.mark.parametrize("callers", [
    # the other file's call is guarded by its callers, one of them in a third file: not followed (cost)
    {"tool.py": GUARDED_CALLER.replace("\n\nif not", "\n\ndef run(x):\n    return step(x)\n\nif not").replace(
        "step(torch.ones(1))", "run(torch.ones(1))"),
     "cli.py": GUARDED_CALLER.replace("from helpers import step", "from tool import run").replace("step(", "run(")},
    # more files than are read
    {f"tool{i}.py": GUARDED_CALLER for i in range(5)},
])
def test_callers_elsewhere_that_devlint_does_not_follow_keep_the_finding(tmp_path, callers):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "helpers.py").write_text(HELPERS)
    for name, text in callers.items():
        (project / name).write_text(text)
    assert cached_and_fresh(project, "helpers.py", "--select", "DL001")[1] == [("helpers.py", "DL001")]


def test_the_cache_sees_a_change_in_what_guards_the_other_file(tmp_path):
    # tool.py's call is guarded by a refusal helper of a third file: what that answer read counts too
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "helpers.py").write_text(HELPERS)
    refusal = 'import sys\nimport torch\n\n\ndef need_gpu():\n    if not torch.cuda.is_available():\n        sys.exit(1)\n'
    (project / "gpu.py").write_text(refusal)
    (project / "tool.py").write_text("import torch\nimport gpu\nfrom helpers import step\n\ngpu.need_gpu()\nstep(torch.ones(1))\n")
    args = ("helpers.py", "--select", "DL001")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == []
    (project / "gpu.py").write_text(refusal.replace("sys.exit(1)", "print('no GPU')"))
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("helpers.py", "DL001")]
