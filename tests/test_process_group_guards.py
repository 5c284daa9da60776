"""A process group the project starts only with NCCL exists only with a GPU (devlint.analysis.process_group),
and a helper of the file whose true answers all happen with CUDA is a CUDA condition
(devlint.analysis.helper_conditions).

Held-out evaluation (issue 23): DINO's `SmoothedValue.synchronize_between_processes` (copied into
torchvision's references, DETR, DeiT, MAE...) allocates `device='cuda'` after
`if not is_dist_avail_and_initialized(): return`, in a project whose only `init_process_group` is NCCL.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint
from tests.test_cache_staleness import cached_and_fresh


def flagged(source: str, select: str) -> list[int]:
    return [f.start.line for f in lint(textwrap.dedent(source), select=select)]


def program(init: str = 'dist.init_process_group(backend="nccl")',
            helper: str = "return dist.is_available() and dist.is_initialized()", extra: str = "") -> str:
    return f'''
import torch
import torch.distributed as dist
{extra}

def init_distributed_mode(args):
    {init}

def is_dist_avail_and_initialized():
    {helper}

def synchronize(count):
    if not is_dist_avail_and_initialized():
        return count
    t = torch.tensor([count], device="cuda")
    dist.all_reduce(t)
    return t.cuda().item()
'''


STEPWISE = '''if not dist.is_available():
        return False
    if not dist.is_initialized():
        return False
    return True'''

NOT_FLAGGED = {
    "a helper answering in one expression": program(),
    "a helper answering step by step": program(helper=STEPWISE),
    "the backend given by position": program(init='dist.init_process_group("nccl", init_method="env://")'),
    "the backend as a constant": program(init="dist.init_process_group(backend=dist.Backend.NCCL)"),
    "the backend set right above": program(init='args.dist_backend = "nccl"\n    print("init")\n'
                                           "    dist.init_process_group(backend=args.dist_backend)"),
    "asked directly": '''
import torch
import torch.distributed as dist
dist.init_process_group(backend="nccl")
if dist.is_initialized():
    t = torch.zeros(1, device="cuda").cuda()
''',
}

STILL_FLAGGED = {
    "a gloo group": program(init='dist.init_process_group(backend="gloo")'),
    "the default backend": program(init="dist.init_process_group()"),
    "a backend chosen at run time": program(init="dist.init_process_group(backend=args.backend)"),
    "a backend set above a branch": program(init='args.b = "nccl"\n    if args.cpu:\n        args.b = "gloo"\n'
                                            "    dist.init_process_group(backend=args.b)"),
    "a backend set to gloo right above": program(init='args.b = "gloo"\n    dist.init_process_group(backend=args.b)'),
    "a group for each device type": program(init='dist.init_process_group(backend="cpu:gloo,cuda:nccl")'),
    "arguments unpacked": program(init='dist.init_process_group(**{"backend": "gloo"})'),
    "one NCCL init and one gloo": program(init='dist.init_process_group("nccl")\n    dist.init_process_group("gloo")'),
    "no init in the project": program(init="pass"),
    "the init handed on": program(init='start = dist.init_process_group\n    start(backend="nccl")'),
    "a framework that starts groups": program(extra="import deepspeed"),
    "a helper that answers true without the group": program(helper=STEPWISE.replace("return False\n    if not", "return True\n    if not")),
    "a helper that only asks for the package": program(helper="return dist.is_available()"),
}


@pytest.mark.parametrize("rule", ["DL004", "DL001"])
@pytest.mark.parametrize("name", sorted(NOT_FLAGGED))
def test_code_after_an_nccl_only_group_test_is_not_flagged(name, rule):
    assert flagged(NOT_FLAGGED[name], rule) == []


@pytest.mark.parametrize("name", sorted(STILL_FLAGGED))
def test_a_group_that_may_exist_without_cuda_guards_nothing(name):
    assert flagged(STILL_FLAGGED[name], "DL004") != []
    assert flagged(STILL_FLAGGED[name], "DL001") != []


@pytest.mark.parametrize("helper, guarded", [
    ("return torch.cuda.is_available()", True),
    ("if not torch.cuda.is_available():\n        return None\n    return True", True),
    ("if not torch.cuda.is_available():\n        return None\n    return 'cuda'", False),
    ("return True", False),
    ("return torch.cuda.is_available() or args.force", False),
])
def test_a_helper_is_a_cuda_condition_by_its_answers(helper, guarded):
    source = f'''
import torch

def ready():
    {helper}

if ready():
    x = torch.ones(1).cuda()
'''
    assert (flagged(source, "DL001") == []) == guarded


def test_the_init_of_another_file_counts_and_the_cache_sees_it_change(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    source = program(init="pass")
    (project / "utils.py").write_text(source)
    (project / "main.py").write_text('import torch.distributed as dist\ndist.init_process_group(backend="nccl")\n')
    args = ("utils.py", "--select", "DL004")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == []
    (project / "launch.py").write_text('import torch.distributed as dist\ndist.init_process_group(backend="gloo")\n')
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("utils.py", "DL004")]


def test_a_helper_that_returns_a_number_is_no_question():
    # 0 without a group, the rank with one: `get_rank() == 0` holds on a CPU run
    source = program(extra='''
def get_rank():
    if not is_dist_avail_and_initialized():
        return 0
    return dist.get_rank()

def save(x):
    if get_rank() == 0:
        x = x.cuda()
    return x
''')
    line = textwrap.dedent(source).splitlines().index("        x = x.cuda()") + 1
    assert line in flagged(source, "DL001")


def world_size_program(helper: str = "if not dist.is_initialized():\n        return 1\n    return dist.get_world_size()",
                       use: str = "world_size = get_world_size()\n    if world_size == 1:\n        return data",
                       init: str = 'dist.init_process_group(backend="nccl")') -> str:
    return f'''
import os
import torch
import torch.distributed as dist

def init_distributed_mode(args):
    {init}

def get_world_size():
    {helper}

def all_gather(data):
    {use}
    return torch.zeros(1, device="cuda")
'''


@pytest.mark.parametrize("use", [
    "world_size = get_world_size()\n    if world_size == 1:\n        return data",
    "if get_world_size() < 2:\n        return data",
    "if not get_world_size() > 1:\n        return data",
])
def test_code_after_a_world_size_of_one_is_left_runs_only_in_the_group(use):
    assert flagged(world_size_program(use=use), "DL004") == []


@pytest.mark.parametrize("change", [
    # the helper may give another number without a group
    {"helper": 'if not dist.is_initialized():\n        return int(os.environ.get("WORLD_SIZE", 1))\n'
               "    return dist.get_world_size()"},
    {"helper": 'if os.environ.get("SINGLE"):\n        return 2\n    if not dist.is_initialized():\n        return 1\n'
               "    return dist.get_world_size()"},
    {"helper": "if not dist.is_initialized():\n        return 1"},
    # the code after runs without a group too
    {"use": "if get_world_size() > 1:\n        return data"},
    {"use": "if get_world_size() == 2:\n        return data"},
    # a gloo group may exist without CUDA
    {"init": 'dist.init_process_group(backend="gloo")'},
])
def test_a_world_size_test_that_may_pass_without_the_group_guards_nothing(change):
    assert flagged(world_size_program(**change), "DL004") != []


def test_a_module_level_world_size_may_be_set_elsewhere():
    source = world_size_program(use="if WORLD_SIZE == 1:\n        return data") + "\nWORLD_SIZE = get_world_size()\n"
    assert flagged(source, "DL004") != []
