"""DL004 never changes which device a program uses, and flags only devices that torch is given.

Each case of issue 15 (devices collapsed, `.type` comparisons rewritten, code that pretends to be on a
GPU, `device=` of other packages, `def cuda()` overrides, the message) as a fresh shape.
"""

from __future__ import annotations

import textwrap

import pytest

from devlint.model import Applicability
from tests.helpers import fix, lint, run_python


def dl004(source: str):
    return lint(source, select="DL004")


def applicabilities(source: str) -> list[str]:
    return [f.fix.applicability.value for f in dl004(source)]


# -- 1. distinct devices are never collapsed --------------------------------------------------------
ENUMERATED = [
    # a comprehension variable: one device per GPU (empty without CUDA when counted)
    'import torch\ndef gpus(ids):\n    return [torch.device("cuda", k) for k in ids]\n',
    'import torch\nn = torch.cuda.device_count()\nreplicas = {k: torch.device("cuda", k) for k in range(n)}\n',
    'import torch\ndef spread(parts):\n    return [p.to(f"cuda:{slot}") for slot, p in enumerate(parts)]\n',
    'import torch\ndef streams(x, world):\n    for gpu in range(world):\n        yield x.to(torch.device(type="cuda", index=gpu))\n',
    'import torch\ndef nested(batches, ranks):\n    return [[b.to(f"cuda:{r}") for b in batches] for r in ranks]\n',
    # strings built at run time are not read as devices at all
    'import torch\ndef pick(x, k):\n    return x.to("cuda:%d" % k), x.to("cuda:" + str(k)), x.to("cuda:{}".format(k))\n',
]


@pytest.mark.parametrize("source", ENUMERATED)
def test_a_device_per_gpu_is_not_flagged(source):
    assert dl004(source) == []


COMPUTED = [
    'import torch\ndef to_rank(t, rank):\n    return t.to(f"cuda:{rank}")\n',
    'import torch\ndef to_rank(t, opts):\n    return t.to(torch.device("cuda", opts.local_rank))\n',
    'import torch\ndef to_rank(t, gpus):\n    return t.to(torch.device("cuda", gpus[0]))\n',
    'import torch\ndef load(p, rank):\n    return torch.load(p, map_location=f"cuda:{rank}")\n',
]


@pytest.mark.parametrize("source", COMPUTED)
def test_a_computed_index_is_flagged_but_never_rewritten(source):
    findings = dl004(source)
    assert len(findings) == 1 and findings[0].fix.applicability is Applicability.DISPLAY_ONLY
    assert fix(source, select="DL004", unsafe=True) == source


DISTINCT = [
    'import torch\nseen = {torch.device("cuda:0"): [], torch.device("cuda:1"): []}\n',
    'import torch\ndef pair(a, b):\n    return a.to(torch.device("cuda", 0)), b.to(torch.device("cuda", 1))\n',
    'import torch\nplacement = [torch.device("cuda"), torch.device("cuda:0")]\n',  # two different values
    'import torch\ndef both(x):\n    return [x.to("cuda:0"), x.to("cuda:2")]\n',
]


@pytest.mark.parametrize("source", DISTINCT)
def test_two_different_devices_in_one_statement_are_never_made_equal(source):
    assert set(applicabilities(source)) == {"display-only"}
    assert fix(source, select="DL004", unsafe=True) == source


def test_definitions_of_several_gpus_get_no_fallback_that_would_make_them_equal():
    source = ('import torch\ndef test_cache():\n    first = torch.device("cuda:0")\n'
              '    second = torch.device("cuda:1")\n    assert cache(first) is not cache(second)\n')
    assert applicabilities(source) == ["display-only", "display-only"]
    assert fix(source, select="DL004", unsafe=True) == source


def test_one_gpu_named_twice_in_a_statement_is_still_fixed():
    source = 'import torch\ndef place(x):\n    return x.to("cuda"), torch.ones(2, device="cuda:0")\n'
    assert applicabilities(source) == ["safe", "safe"]
    assert fix(source, select="DL004") == (
        'import torch\ndef place(x):\n    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        '    return x.to(device), torch.ones(2, device=device)\n')
    # a `device` parameter may be the CPU where the literals named the GPU: unsafe (issue 29 S2)
    source = 'import torch\ndef place(x, device):\n    return x.to("cuda"), torch.ones(2, device="cuda:0")\n'
    assert applicabilities(source) == ["unsafe", "unsafe"]


def test_a_literal_other_gpu_stays_unsafe():
    source = 'import torch\ndef second(x, device):\n    return x.to("cuda:1")\n'
    assert applicabilities(source) == ["unsafe"]
    assert fix(source, select="DL004") == source
    assert fix(source, select="DL004", unsafe=True) == (
        'import torch\ndef second(x, device):\n    return x.to(device)\n')


# -- 2. questions about a device ----------------------------------------------------------------
QUESTIONS = [
    'import torch as th\ndef use_cuda(policy):\n    return policy.device.type == th.device("cuda").type\n',
    'import torch\ndef check(t):\n    return t.device.type == "cuda" and str(t.device) == "cuda:0"\n',
    'import torch\ndef check(dev):\n    return dev == torch.device("cuda") or dev != torch.device("cuda", 1)\n',
    'import torch\ndef check(dev):\n    return dev in [torch.device("cuda:0"), torch.device("cuda:1")]\n',
    'import torch\nkind = torch.device("cuda:3").type\nslot = torch.device("cuda", 2).index\n',
    'import torch\ndef check(t):\n    return repr(t.device) == repr(torch.device("cuda"))\n',
    'import torch, unittest\nclass TestPlacement(unittest.TestCase):\n    def test_it(self):\n'
    '        self.assertEqual(out.device, torch.device("cuda", 0))\n'
    '        self.assertNotEqual(out.device, torch.device("cuda:1"))\n',
    'import torch\nfrom unittest import mock\ndef test_moves():\n    m = mock.Mock()\n    run(m)\n'
    '    m.to.assert_called_once_with(torch.device("cuda:0"), non_blocking=True)\n',
    'import operator, torch\nsame = operator.eq(x.device, torch.device("cuda"))\n',
]


@pytest.mark.parametrize("source", QUESTIONS)
def test_a_question_about_a_device_is_not_flagged(source):
    assert dl004(source) == []


def test_a_device_used_inside_a_comparison_is_still_flagged():
    # the comparison reads a tensor that *was moved* to CUDA: the move fails without CUDA
    source = 'import torch\ndef check(t):\n    return t.to("cuda").sum() == 3\n'
    assert len(dl004(source)) == 1


# -- 3. code that pretends to be on a GPU -----------------------------------------------------------
PRETEND = [
    # a stand-in tensor/batch whose `device` property says CUDA
    'import torch\nclass RemoteBatch:\n    @property\n    def device(self):\n        return torch.device("cuda")\n',
    'import torch\nclass Shard:\n    def get_device(self):\n        return torch.device("cuda", 0)\n',
    'import torch\nclass Stub:\n    def compute_device(self):\n        return [torch.device("cuda:0")]\n',
    # mocks and patches
    'import torch\nfrom unittest.mock import patch\n@patch("lib.current", return_value=torch.device("cuda"))\n'
    'def test_a(current):\n    pass\n',
    'import torch\nfrom unittest import mock\ndef test_b():\n'
    '    with mock.patch.object(Engine, "device", new_callable=mock.PropertyMock,\n'
    '                           return_value=torch.device("cuda:0")):\n        pass\n',
    'import torch\nfrom unittest.mock import Mock, NonCallableMagicMock\nm = Mock(device=torch.device("cuda"))\n'
    'n = NonCallableMagicMock(device="cuda:0")\n',
    'import torch\ndef test_c(monkeypatch):\n    monkeypatch.setattr(Engine, "device", property(lambda self: torch.device("cuda")))\n',
    'import torch\ndef test_d(mocker):\n    mocker.patch("lib.pick", side_effect=[torch.device("cuda")])\n',
    # set on another object: a setting, or a double
    'import torch\ndef test_e():\n    agent = make_agent()\n    agent.device = torch.device("cuda")\n'
    '    stub.return_value = torch.device("cuda", 0)\n',
    'import torch\ndef test_f():\n    strategy.parallel_devices = [torch.device("cuda", 0)]\n',
    # named as a double
    'import torch\ndef fake_current_device():\n    return torch.device("cuda")\n',
    'import torch\nclass DummyEngine:\n    def __init__(self):\n        self.root = torch.device("cuda")\n',
    'import torch\ndef _simulate_gpu_run(x):\n    return x.to("cuda")\n',
]


@pytest.mark.parametrize("source", PRETEND)
def test_pretending_to_be_on_a_gpu_is_not_flagged(source):
    assert dl004(source) == []


def test_a_modules_device_property_and_dummy_data_are_still_flagged():
    module = ('import torch\nimport torch.nn as nn\nclass Encoder(nn.Module):\n    @property\n'
              '    def device(self):\n        return torch.device("cuda")\n')
    dummy_data = 'import torch\ndef dummy_input():\n    return torch.randn(1, 3, device="cuda")\n'
    dummy_module = ('import torch\nimport torch.nn as nn\nclass DummyNet(nn.Module):\n    def forward(self, x):\n'
                    '        return x.to("cuda")\n')
    for source in (module, dummy_data, dummy_module):
        assert len(dl004(source)) == 1, source


# -- 4. the message -----------------------------------------------------------------------------
def test_the_message_says_using_the_device_fails():
    (finding,) = dl004('import torch\nx = torch.zeros(2, device=torch.device("cuda:0"))\n')
    assert "using it fails without CUDA" in finding.message
    assert ": it fails" not in finding.message


# -- 5. `device=` of torch, of this file's functions, of nothing else ----------------------------------
NOT_TORCH = [
    'import ctranslate2\ngen = ctranslate2.Translator(path, device="cuda", compute_type="int8")\n',
    'import torch\nfrom transformers import pipeline\nner = pipeline("ner", device="cuda:0")\n',
    'import torch\nimport cupy\nfrom numba import cuda\nbuf = cupy.zeros(3)\nk = cuda.jit(device=True)\n',
    'import torch\nimport jax\nx = jax.device_put(v, device="cuda")\n',
    'import torch\nimport tensorrt_llm\nrunner = tensorrt_llm.Runner(engine, device="cuda")\n',
    'import torch\nfrom types import SimpleNamespace\ncfg = SimpleNamespace(device="cuda", rank=0)\n',
    'import torch\nimport lightning.pytorch as pl\ns = pl.strategies.SingleDeviceStrategy(device="cuda:0")\n',
    'import torch\nfrom .engine import Engine\nengine = Engine(model, device="cuda")\n',
    'import torch\nresult = evaluator.run(loader, device="cuda")\n',
    'import torch\ndef log_device(name, device):\n    print(name, device)\nlog_device("model", device="cuda")\n',
    'import torch\ndef report(x, where):\n    return {"where": where}\nreport(1, torch.device("cuda"))\n',
]


@pytest.mark.parametrize("source", NOT_TORCH)
def test_device_of_something_else_than_torch_is_not_flagged(source):
    assert dl004(source) == []


TORCH = [
    'import torch\nx = torch.full((2,), 1.0, device="cuda")\n',
    'from torch import nn\nlayer = nn.Conv2d(3, 8, 3, device="cuda")\n',
    'import torch as th\ng = th.Generator(device="cuda")\n',
    'import torch\ndef grow(t):\n    return t.new_ones(4, device="cuda")\n',
    'import torch\ndef place(m):\n    return m.to_empty(device="cuda")\n',
    'import torchvision\nbox = torchvision.ops.box_convert(b, "xyxy", "cxcywh").to("cuda")\n',
    # a checkpoint loader of any package hands map_location to torch.load
    'import torch\nmodel = Net.load_from_checkpoint(path, map_location="cuda")\n',
]


@pytest.mark.parametrize("source", TORCH)
def test_device_given_to_torch_is_flagged(source):
    assert len(dl004(source)) == 1


def test_a_function_of_the_file_that_gives_the_device_to_torch():
    helper = ("import torch\ndef alloc(n, device=None):\n    return torch.empty(n, device=device)\n")
    passes_on = ("import torch\ndef inner(t, dev):\n    return t.to(dev)\ndef outer(t, dev):\n    return inner(t, dev)\n")
    stores = ("import torch\nclass Cache:\n    def __init__(self, size, device):\n        self.device = device\n")
    method = ("import torch\nclass Loop:\n    def move(self, x, target):\n        return x.to(target)\n"
              "    def step(self, x):\n        return self.move(x, torch.device('cuda'))\n")
    cases = [
        (helper + 'buf = alloc(3, device="cuda")\n', ["unsafe"]),  # a string becomes a torch.device there
        (helper + 'buf = alloc(3, torch.device("cuda"))\n', ["safe"]),  # a torch.device stays one
        (passes_on + 'y = outer(x, torch.device("cuda"))\n', ["safe"]),
        (stores + 'c = Cache(8, device="cuda")\n', ["unsafe"]),
        (method, ["safe"]),
    ]
    for source, expected in cases:
        assert applicabilities(source) == expected, source


def test_recursive_functions_of_the_file_end():
    source = ("import torch\ndef a(x, d):\n    return b(x, d)\ndef b(x, d):\n    return a(x, d)\n"
              'y = a(1, torch.device("cuda"))\n')
    assert dl004(source) == []


# -- 6. `def cuda(self, ...)` overrides -----------------------------------------------------------------
def test_an_override_of_cuda_is_not_flagged_nor_rewritten_to_its_own_parameter():
    source = ('import torch\nclass Table(torch.nn.Module):\n    def cuda(self, device=None):\n'
              '        self.lookup = self.lookup.to(torch.device("cuda"))\n'
              '        self.index = self.index.to("cuda", non_blocking=True)\n'
              '        return super().cuda(device)\n')
    assert dl004(source) == []
    assert fix(source, select="DL004", unsafe=True) == source


# -- 7. fix safety: the definition comes from device_reference, safe where one GPU is meant -----------
def test_the_fix_reuses_a_device_in_scope():
    source = 'import torch\ndef run(model, device):\n    return model.to(torch.device("cuda"))\n'
    assert fix(source, select="DL004", unsafe=True) == 'import torch\ndef run(model, device):\n    return model.to(device)\n'
    assert fix(source, select="DL004") == source  # (a caller may pass the CPU)


# -- a runtime proof on the virtual GPU (two devices) ---------------------------------------------------
PROGRAM = '''
    import torch

    class Meter:
        def __init__(self):
            self.seen = {}

        def add(self, where):
            self.seen[where] = self.seen.get(where, 0) + 1

    def build_buffer(size, device):
        return torch.zeros(size, device=torch.device(device))

    meter = Meter()
    for where in [torch.device("cuda:0"), torch.device("cuda:1")]:
        meter.add(where)
    per_gpu = [torch.device("cuda", k) for k in range(torch.cuda.device_count())]
    x = torch.ones(3, device="cuda")
    on_gpu = x.device.type == torch.device("cuda").type
    buf = build_buffer(2, torch.device("cuda"))
    print(len(meter.seen), len(per_gpu), on_gpu, (x.sum() + buf.sum()).item(), buf.device == x.device)
'''


@pytest.mark.slow
def test_unsafe_fixes_keep_the_output_on_a_two_gpu_virtual_machine_and_run_without_cuda(tmp_path):
    pytest.importorskip("torch")

    def run(*args, **extra):
        return run_python(tmp_path, *args, **extra)

    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PROGRAM).lstrip())
    before = run("-m", "devlint", "run", "--virtual-gpu", "--devices", "2", "prog.py")
    assert before.returncode == 0, before.stderr
    assert before.stdout.split() == ["2", "2", "True", "3.0", "True"]

    fixed = run("-m", "devlint", "--fix", "--unsafe-fixes", "--no-cache", "--isolated", "--select", "DL004",
                "prog.py")
    text = prog.read_text()
    assert "x = torch.ones(3, device=device)" in text and "build_buffer(2, device)" in text, text
    assert 'torch.device("cuda:0"), torch.device("cuda:1")' in text  # the two GPUs stay apart
    assert 'torch.device("cuda", k) for k' in text and 'torch.device("cuda").type' in text
    assert fixed.returncode == 1  # the two GPUs are still reported (display-only)

    after = run("-m", "devlint", "run", "--virtual-gpu", "--devices", "2", "prog.py")
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout
    hidden = run("prog.py", CUDA_VISIBLE_DEVICES="")
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout.split() == ["2", "0", "False", "3.0", "True"]


def test_handing_a_device_through_many_functions_is_bounded():
    # each function calls the next three times: following every path unbounded would take 3**30 steps
    chain = "".join(f"def f{i}(x, d):\n    f{i + 1}(x, d)\n    f{i + 1}(x, d)\n    return f{i + 1}(x, d)\n"
                    for i in range(30))
    source = "import torch\n" + chain + "def f30(x, d):\n    return x\n" + 'y = f0(1, torch.device("cuda"))\n'
    assert dl004(source) == []
    through_three = ("import torch\ndef a(x, d):\n    return b(x, d)\ndef b(x, d):\n    return c(x, d)\n"
                     "def c(x, d):\n    return x.to(d)\ny = a(1, torch.device('cuda'))\n")
    assert len(dl004(through_three)) == 1
