"""A call of a function that never returns without CUDA guards the code after it (devlint.analysis.cuda_required).

Held-out evaluation (issue 23, helper E): every entry point of a research code base first called a set-up
helper that exits with "Does not support training without GPU." when CUDA is missing (and otherwise ends
in `torch.cuda.set_device`), yet the `.cuda()` calls after it were flagged, although the inline form of the
same refusal is a documented guard. Both sides are tested: a helper that does not refuse, or may return
without CUDA, keeps the findings.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.helpers import lint
from tests.test_cache_staleness import cached_and_fresh


def flagged(source: str, select: str = "DL001") -> list[int]:
    return [f.start.line for f in lint(textwrap.dedent(source), select=select)]


LAUNCHER = '''
    import os, sys, torch

    def init_mode(args):
        if "RANK" in os.environ:
            args.gpu = int(os.environ["LOCAL_RANK"])
        elif torch.cuda.is_available():
            args.gpu = 0
        else:
            print("Does not support training without GPU.")
            sys.exit(1)
        torch.cuda.set_device(args.gpu)
'''

NOT_FLAGGED = {
    "refuses then set_device on every other path": LAUNCHER + '''
    def main(args):
        init_mode(args)
        return torch.nn.Linear(2, 2).cuda()
    ''',
    "raises when CUDA is missing": '''
    import torch

    def need_gpu():
        if not torch.cuda.is_available():
            raise RuntimeError("this script needs a GPU")

    need_gpu()
    x = torch.ones(2).cuda()
    ''',
    "refuses in the else of an availability test": '''
    import sys, torch

    def setup():
        if torch.cuda.is_available():
            print("GPU found")
        else:
            sys.exit("no GPU")

    setup()
    x = torch.ones(2).cuda()
    ''',
    "its result assigned": '''
    import sys, torch

    def parse():
        if not torch.cuda.is_available():
            sys.exit(1)
        return 3

    n = parse()
    x = torch.ones(n).cuda()
    ''',
}

STILL_FLAGGED = {
    "a helper that only calls set_device does not declare the program GPU-only": '''
    import torch

    def setup(rank):
        torch.cuda.set_device(rank)

    def main():
        setup(0)
        return torch.ones(2).cuda()
    ''',
    "a path that returns without CUDA": '''
    import os, sys, torch

    def setup():
        if "RANK" in os.environ:
            return
        if not torch.cuda.is_available():
            sys.exit(1)

    setup()
    x = torch.ones(2).cuda()
    ''',
    "a path that falls through without CUDA": '''
    import os, sys, torch

    def setup():
        if "RANK" in os.environ:
            print("distributed")
        elif not torch.cuda.is_available():
            sys.exit(1)

    setup()
    x = torch.ones(2).cuda()
    ''',
    "a refusal by return is no refusal": '''
    import torch

    def setup():
        if not torch.cuda.is_available():
            return False
        return True

    setup()
    x = torch.ones(2).cuda()
    ''',
    "a refusal swallowed by its try": '''
    import sys, torch

    def setup():
        try:
            if not torch.cuda.is_available():
                sys.exit(1)
        except SystemExit:
            pass

    setup()
    x = torch.ones(2).cuda()
    ''',
    "set_device(-1) does nothing": '''
    import os, sys, torch

    def setup():
        if "RANK" in os.environ:
            torch.cuda.set_device(-1)
        elif not torch.cuda.is_available():
            sys.exit(1)

    setup()
    x = torch.ones(2).cuda()
    ''',
    "a decorated helper may run otherwise": '''
    import sys, functools, torch

    @functools.lru_cache
    def setup():
        if not torch.cuda.is_available():
            sys.exit(1)

    setup()
    x = torch.ones(2).cuda()
    ''',
    "code before the call": '''
    import sys, torch

    def setup():
        if not torch.cuda.is_available():
            sys.exit(1)

    x = torch.ones(2).cuda()
    setup()
    ''',
    "a call that is not a statement of its own": '''
    import sys, torch

    def setup():
        if not torch.cuda.is_available():
            sys.exit(1)
        return True

    ok = [setup()]
    x = torch.ones(2).cuda()
    ''',
}


@pytest.mark.parametrize("name", NOT_FLAGGED)
def test_code_after_a_helper_that_never_returns_without_cuda_is_not_flagged(name):
    assert flagged(NOT_FLAGGED[name]) == []


@pytest.mark.parametrize("name", STILL_FLAGGED)
def test_a_helper_that_may_return_without_cuda_keeps_the_finding(name):
    source = textwrap.dedent(STILL_FLAGGED[name])
    assert flagged(source) == [i for i, line in enumerate(source.splitlines(), 1) if ".cuda()" in line]


def test_the_other_rules_share_the_guard():
    source = NOT_FLAGGED["refuses then set_device on every other path"] + '''
    def loop(args, model):
        init_mode(args)
        scaler = torch.cuda.amp.GradScaler()
        return torch.zeros(2, device="cuda"), scaler
    '''
    assert flagged(source, "DL004") == flagged(source, "DL006") == []


# -- a helper of another file, with the cache on ---------------------------------------------------------
HELPER = '''import sys
import torch


def require_gpu():
    if not torch.cuda.is_available():
        {refusal}
'''
SCRIPT = '''import torch
from helpers import require_gpu


def main():
    require_gpu()
    return torch.nn.Linear(2, 2).cuda()
'''


def test_a_helper_of_another_file_with_the_cache_on(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write = lambda path, text: path.write_text(text)  # noqa: E731
    write(project / "helpers.py", HELPER.format(refusal='sys.exit("needs a GPU")'))
    write(project / "train.py", SCRIPT)
    args = ("train.py", "--select", "DL001")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == []
    # the helper now returns instead of exiting: the cached pass must not be served
    write(project / "helpers.py", HELPER.format(refusal="return"))
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("train.py", "DL001")]
