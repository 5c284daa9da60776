"""Guards written the way maintainers write them (issue 15, item 3).

Each case is a small program: `flagged` lists the lines DL001 (`.cuda()`) or DL002 (`torch.load`)
report; a guarded line is absent. The shapes are written for these tests, not taken from projects.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from devlint.context import FileContext
from tests.helpers import REAL_FILES, codes


def flagged(source: str, select: str = "DL001,DL002") -> list[int]:
    source = textwrap.dedent(source)
    return sorted(line for code in select.split(",") for line, _ in codes(source, code))


def marked(source: str) -> list[int]:
    """Lines of the source that end in `# X`: the ones expected to be flagged."""
    return [n for n, line in enumerate(textwrap.dedent(source).splitlines(), 1) if line.rstrip().endswith("# X")]


def check(source: str) -> None:
    assert flagged(source) == marked(source)


# -- 1. skip markers by alias, requirement decorators, unittest setUp ------------------------------
ALIASES = {
    "pytest_alias": """
        import pytest, torch
        gpu_needed = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")

        @gpu_needed
        def test_half():
            w = torch.ones(4).cuda()
    """,
    "alias_from_count": """
        import pytest, torch
        two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2")

        @two_gpus
        def test_pair():
            a = torch.ones(1).cuda()
    """,
    "unittest_alias": """
        import unittest, torch
        cuda_missing = unittest.skipIf(not torch.cuda.is_available(), "needs CUDA")
        cuda_present = unittest.skipUnless(torch.cuda.is_available(), "needs CUDA")

        class T(unittest.TestCase):
            @cuda_missing
            def test_a(self):
                torch.zeros(2).cuda()

            @cuda_present
            def test_b(self):
                torch.zeros(2).cuda()
    """,
    "alias_with_other_condition": """
        import sys, pytest, torch
        skip_if_no_gpu = pytest.mark.skipif(sys.platform == "win32", reason="posix only")

        @skip_if_no_gpu
        def test_posix():
            torch.zeros(2).cuda()  # X
    """,
    "imported_names": """
        import torch
        from tests.helpers import skip_if_no_cuda, requires_gpu, gpu_only, needs_cuda, skipUnlessCUDA
        from tests.helpers import skip_if_cuda, cpu_or_gpu, withCUDA, no_gpu

        @skip_if_no_cuda
        def test_1():
            torch.zeros(1).cuda()

        @requires_gpu
        def test_2():
            torch.zeros(1).cuda()

        @gpu_only
        def test_3():
            torch.zeros(1).cuda()

        @needs_cuda()
        def test_4():
            torch.zeros(1).cuda()

        @skipUnlessCUDA
        def test_5():
            torch.zeros(1).cuda()

        @skip_if_cuda
        def test_6():
            torch.zeros(1).cuda()  # X

        @cpu_or_gpu
        def test_7():
            torch.zeros(1).cuda()  # X

        @withCUDA
        def test_8(device):
            torch.zeros(1).cuda()  # X

        @no_gpu
        def test_9():
            torch.zeros(1).cuda()  # X
    """,
    "decorator_function_in_file": """
        import pytest, torch

        def gpu_case(fn):
            return pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")(fn)

        def cuda_flaky(fn):
            return pytest.mark.skipif(True, reason="flaky")(fn)

        @gpu_case
        def test_a():
            torch.zeros(1).cuda()

        @cuda_flaky
        def test_b():
            torch.zeros(1).cuda()  # X
    """,
    "requirement_keywords": """
        import torch
        from tests.helpers import RunIf, requires

        @RunIf(min_cuda_gpus=1)
        def test_a():
            torch.zeros(1).cuda()

        @RunIf(min_cuda_gpus=2, standalone=True)
        def test_b():
            torch.zeros(1).cuda()

        @requires(cuda=True)
        def test_c():
            torch.zeros(1).cuda()

        @RunIf(min_gpus=1)
        def test_d():
            torch.zeros(1).cuda()

        @RunIf(skip_windows=True)
        def test_e():
            torch.zeros(1).cuda()  # X

        @RunIf(min_cuda_gpus=0)
        def test_f():
            torch.zeros(1).cuda()  # X

        @RunIf(cuda=False)
        def test_g():
            torch.zeros(1).cuda()  # X
    """,
    "marks": """
        import pytest, torch

        @pytest.mark.gpu
        def test_a():
            torch.zeros(1).cuda()

        @pytest.mark.cuda
        def test_b():
            torch.zeros(1).cuda()

        @pytest.mark.slow
        def test_c():
            torch.zeros(1).cuda()  # X
    """,
    "param_marks_alias": """
        import pytest, torch
        on_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")

        @pytest.mark.parametrize("x", [
            pytest.param(torch.ones(1).cuda(), marks=on_cuda),
            pytest.param(torch.ones(1).cuda(), marks=[pytest.mark.slow]),  # X
        ])
        def test_p(x):
            pass
    """,
    "setup_skip": """
        import unittest, torch

        class HalfTest(unittest.TestCase):
            def setUp(self):
                torch.zeros(1).cuda()  # X
                if not torch.cuda.is_available():
                    self.skipTest("CUDA needed")
                self.w = torch.zeros(1).cuda()

            def test_w(self):
                return torch.ones(1).cuda() + self.w

        class Derived(HalfTest):
            def test_v(self):
                return torch.ones(1).cuda()

        class ClassLevel(unittest.TestCase):
            @classmethod
            def setUpClass(cls):
                if torch.cuda.device_count() == 0:
                    raise unittest.SkipTest("no GPU")

            def test_u(self):
                return torch.ones(1).cuda()

        class OtherSkip(unittest.TestCase):
            def setUp(self):
                if not HAVE_SCIPY:
                    self.skipTest("scipy needed")

            def test_t(self):
                return torch.ones(1).cuda()  # X

        class EarlyReturn(unittest.TestCase):
            def setUp(self):
                if not torch.cuda.is_available():
                    return

            def test_s(self):
                return torch.ones(1).cuda()  # X
    """,
    "pytest_setup_method": """
        import pytest, torch

        class TestKernels:
            def setup_method(self):
                if not torch.cuda.is_available():
                    pytest.skip("CUDA only")

            def test_k(self):
                torch.ones(3).cuda()
    """,
}


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_skip_markers(name):
    check(ALIASES[name])


# -- 2. GPU-index checks ----------------------------------------------------------------------
INDEX = """
    import torch

    def run(model, device, device_id, gpu_id, idx, rank, num_devices, args, x):
        if device >= 0:
            model.cuda()
        if device_id != -1:
            model.cuda()
        if gpu_id > -1:
            model.cuda()
        if 0 <= args.output_device:
            model.cuda()
        if x.get_device() >= 0:
            state = torch.load("a.pt")
        if args.device == -1:
            model.cpu()
        else:
            model.cuda()
        if device < 0:
            pass
        else:
            model.cuda()
        if idx >= 0:
            model.cuda()  # X
        if rank >= 0:
            model.cuda()  # X
        if num_devices > 0:
            model.cuda()  # X
        if device is not None:
            model.cuda()  # X
        if device:
            model.cuda()  # X
        if device >= -3:
            model.cuda()  # X
        if device < 3:
            model.cuda()  # X
"""


def test_gpu_index_checks():
    check(INDEX)


# -- 3. CUDA type checks ------------------------------------------------------------------------
TYPES = """
    import torch

    def f(out, spect, x, y, z):
        if isinstance(out.data, torch.cuda.FloatTensor):
            out.cuda()
        if isinstance(out, (torch.cuda.HalfTensor, torch.cuda.FloatTensor)):
            out.cuda()
        if isinstance(out, (torch.cuda.FloatTensor, torch.FloatTensor)):
            out.cuda()  # X
        if spect.type() == "torch.cuda.HalfTensor":
            spect.cuda()
        if "cuda" in x.type():
            x.cuda()
        if x.type().startswith("torch.cuda"):
            x.cuda()
        if y.is_cuda:
            z.cuda()
        if z.device.type == "cuda":
            y.cuda()
        if type(z) is torch.cuda.LongTensor:
            y.cuda()
        if spect.type() == "torch.FloatTensor":
            spect.cuda()  # X
        if isinstance(out, torch.Tensor):
            out.cuda()  # X
"""


def test_cuda_type_checks():
    check(TYPES)


# -- 4. tests of a compiled CUDA-only extension --------------------------------------------------
EXTENSIONS = {
    "import_ext": ("""
        import torch
        import fused_norm_cuda

        def test_norm():
            x = torch.randn(4).cuda()
    """, []),
    "from_package": ("""
        import pytest, torch
        from mypkg.ops import roi_pool_cuda_ext

        def helper():
            return torch.load("w.pt")
    """, []),
    "amp_C": ("""
        import torch, amp_C

        def test_scale():
            torch.ones(2).cuda()
    """, []),
    "jit_load_cu": ("""
        import torch
        from torch.utils.cpp_extension import load
        ext = load(name="warp", sources=["warp.cpp", "warp_kernel.cu"])

        def test_warp():
            torch.ones(2).cuda()
    """, []),
    "jit_load_cpp_only": ("""
        import torch
        from torch.utils.cpp_extension import load
        ext = load(name="warp", sources=["warp.cpp"])

        def test_warp():
            torch.ones(2).cuda()
    """, [7]),
    "guarded_import": ("""
        import torch
        try:
            import fused_norm_cuda
        except ImportError:
            fused_norm_cuda = None

        def test_norm():
            torch.ones(2).cuda()
    """, [9]),
    "not_a_test_file": ("""
        import torch
        import fused_norm_cuda

        def norm(x):
            return x.cuda()
    """, [6]),
    "helper_modules": ("""
        import torch
        from tests.common_cuda import TEST_MULTIGPU
        from tests.helpers import needs_cuda, requires_cuda, move_to_cuda, to_cuda, run_on_cuda
        import cuda_utils
        from torch import cuda
        import numba.cuda

        def test_x():
            torch.ones(2).cuda()
    """, [10]),
}


@pytest.mark.parametrize("name", sorted(EXTENSIONS))
def test_cuda_extension_tests(name):
    source, lines = EXTENSIONS[name]
    assert flagged(source) == lines


# -- 5a. a value computed with `.cuda()` is no CUDA switch ----------------------------------------
SWITCHES = """
    import torch

    def score(lab, sample, utils):
        marker = torch.zeros(1).cuda().fill_(3)  # X
        if marker is not None:
            lab.cuda()  # X
        moved = utils.move_to_cuda(sample)
        if moved:
            lab.cuda()  # X
        ok = torch.cuda.is_available()
        if ok:
            lab.cuda()
        many = utils.get_num_gpus() > 1
        if many:
            lab.cuda()

    class Averager:
        def __init__(self):
            self.stream = None

        def start(self, params):
            if any(p.is_cuda for p in params):
                self.stream = torch.cuda.Stream()

        def step(self):
            if self.stream is not None:
                return torch.load("gpu_state.pt")
            else:
                return torch.load("state.pt")  # X

    def scaled(x, amp):
        scaler = None
        if amp:
            scaler = torch.cuda.amp.GradScaler()
        if scaler is not None:
            return torch.load(x)  # X

    def first_free(utils, x):
        found = utils.list_visible_cuda_devices()
        if not found:
            raise ValueError("no GPU")
        return x.cuda()
"""


def test_values_are_not_switches():
    check(SWITCHES)


# -- 5b. an import alias is shadowed only where a binding reaches ----------------------------------
ALIAS_SCOPES = """
    import torch as t

    def forward(t, x):
        return t.load(x)

    state = t.load("model.pt")  # X

    def restore(path):
        return t.load(path)  # X

    step = lambda t: t.load("a")

    def local(path):
        t = pickle_like
        return t.load(path)

    def nested(path):
        def inner(t):
            return t
        return t.load(path)  # X

    squares = [t.load(p) for t in paths]
"""


def test_alias_shadowed_by_scope():
    check(ALIAS_SCOPES)


SHADOWED = [
    "import torch as t\nt = None\ndef f():\n    return t.load(p)\n",
    "import torch as t\ndef g():\n    global t\n    t = None\ndef f():\n    return t.load(p)\n",
    "import torch as t\nclass C:\n    t = None\n    def f(self):\n        return t.load(p)\n",
    "import torch as t\nfor t in xs:\n    pass\nt.load(p)\n",
    "import torch as t\ndef t():\n    pass\nt.load(p)\n",
]


@pytest.mark.parametrize("source", SHADOWED)
def test_alias_shadowed_at_module_level(source):
    assert flagged(source, "DL002") == []


def test_shadowing_agrees_with_scope_analysis():
    """Wherever the cheap answer says an imported name is not shadowed, LibCST's scopes resolve
    that name to import statements only."""
    sources = [textwrap.dedent(ALIAS_SCOPES), *SHADOWED] + [p.read_text() for p in REAL_FILES]
    checked = 0
    for source in sources:
        ctx = FileContext(cst.parse_module(source))
        shadowed_somewhere = [name for name in ctx.imported_names if name in ctx._other_bindings]
        if not shadowed_somewhere:
            continue
        for node in ctx.nodes(cst.Name):
            name = node.value
            if name not in shadowed_somewhere or ctx._shadowed(name, node):
                continue
            scope = ctx.scope(node)
            if scope is None or name not in scope:
                continue
            checked += 1
            assert all(isinstance(a.node, (cst.Import, cst.ImportFrom)) for a in scope[name]), (source[:80], name)
    assert checked >= 3


# -- 6. `cuda()` overrides --------------------------------------------------------------------
def test_cuda_override_body_is_guarded():
    source = """
        import torch

        class Table(torch.nn.Module):
            def cuda(self, device=None):
                self.lookup = self.lookup.cuda()
                return super().cuda(device)

            def cpu_copy(self):
                return self.lookup.cuda()  # X

        def cuda(x):
            return torch.load(x)  # X
    """
    check(source)


# -- 7. loops over the GPUs, lambdas in a skipped test's decorators ------------------------------
def test_loops_over_gpu_counts():
    source = """
        import torch

        def report(args, items):
            for i in range(torch.cuda.device_count()):
                torch.zeros(1).cuda(i)
            names = [torch.ones(1).cuda(i) for i in range(args.n_gpu)]
            for i in range(1, torch.cuda.device_count()):
                torch.zeros(1).cuda(i)
            for i in range(len(items)):
                torch.zeros(1).cuda()  # X
            return {i: torch.ones(1).cuda() for i in range(3)}  # X
    """
    check(source)


def test_lambda_in_decorator_of_skipped_test():
    source = """
        import pytest, torch
        from helpers import RunIf

        @RunIf(min_cuda_gpus=1)
        @pytest.mark.parametrize("loader", [lambda s, loc: s.cuda()])
        def test_a(loader):
            pass

        @pytest.mark.parametrize("loader", [lambda s, loc: s.cuda()])  # X
        def test_b(loader):
            pass
    """
    check(source)
