"""DL002 follows a loaded file back to what wrote it (issue 23): a file written from CPU data loads anywhere.

Three origins, each both ways (CPU data: not flagged; device data: flagged; unknown: flagged as before):
a pytest fixture that returns a path it saved to (this file or a conftest.py above the test), a
function of the project that writes its path parameter with `torch.save`, and a `torch.save` of an
instance of a class that moves nothing. Fixtures are also a source of kinds for DL003. Editing the
conftest.py or the writing helper is a cache miss (issue 29: never a stale pass).

The folders are `data_dir`, a fixture of unknown origin: pytest's `tmp_path` is a folder made empty for
each test, which clears a load by itself (devlint.analysis.fresh_folders, tests/test_dl002_fresh_folders.py).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devlint.analysis import project as project_module
from tests.helpers import lint
from tests.test_cache_staleness import cached_and_fresh
from tests.test_cli import write


def _findings(source: str, select: str = "DL002") -> list[tuple[str, int]]:
    return [(f.code, f.start.line) for f in lint(textwrap.dedent(source), select=select)]


# -- (a) a fixture of the same file -------------------------------------------------------------------------
FIXTURE = '''
    import pytest
    import torch


    @pytest.fixture
    def weights(data_dir):
        model = torch.nn.Linear(2, 2){move}
        path = data_dir / "weights.pt"
        torch.save(model.state_dict(), path)
        return path


    def test_restores(weights):
        model = torch.nn.Linear(2, 2)
        model.load_state_dict(torch.load(weights))
'''


def test_fixture_path_saved_from_a_cpu_model_is_not_flagged():
    assert _findings(FIXTURE.format(move="")) == []


@pytest.mark.parametrize("move", [".cuda()", ".to(device)", ".to(args.device)"])
def test_fixture_path_saved_from_device_data_is_flagged(move):
    assert _findings(FIXTURE.format(move=move)) == [("DL002", 16)]


@pytest.mark.parametrize("change", [
    ("    torch.save(model.state_dict(), path)\n", ""),  # returns a path nothing in it wrote
    ("    return path\n", "    return data_dir\n"),  # another path than the one it saved to
    ("def test_restores(weights):", "@pytest.mark.parametrize('weights', ['other.pt'])\ndef test_restores(weights):"),
    ("def test_restores(weights):", "def helper(weights):"),  # not a test: the parameter is no fixture
    ("    torch.save(model.state_dict(), path)\n",
     "    torch.save(model.state_dict(), path)\n    trainer.save_checkpoint(path)\n"),  # another writer
])
def test_fixture_path_of_unknown_origin_is_flagged(change):
    source = textwrap.dedent(FIXTURE.format(move="")).replace(*change)
    assert len(_findings(source)) == 1


def test_yield_fixture_and_a_class_fixture_are_followed():
    source = '''
        import pytest
        import torch


        class TestRestore:
            @pytest.fixture
            def ckpt(self, data_dir):
                path = str(data_dir / "c.pt")
                torch.save({"w": torch.zeros(2), "step": 3}, path)
                yield path

            def test_restore(self, ckpt):
                state = torch.load(ckpt)
                assert state["step"] == 3
    '''
    assert _findings(source) == []
    assert _findings(source.replace("torch.zeros(2)", "torch.zeros(2, device='cuda')")) == [("DL002", 14)]


# -- the same function: a path bound once in its scope, or built the same way --------------------------------
def test_save_and_load_through_the_same_binding_in_one_test():
    source = '''
        import os.path as osp
        import torch


        def test_save(data_dir):
            model = torch.nn.Linear(8, 32)
            path = osp.join(data_dir, "model.pt")
            torch.save(model, path)
            model = torch.load(path, weights_only=False)


        def test_load_only(data_dir):
            path = osp.join(data_dir, "model.pt")
            model = torch.load(path, weights_only=False)


        def test_expression(data_dir):
            torch.save(torch.ones(2), data_dir / "t.pt")
            assert torch.load(data_dir / "t.pt").sum() == 2
    '''
    assert _findings(source) == [("DL002", 15)]  # a path of another test: its own binding of `data_dir`


# -- (b) a function that writes the file ----------------------------------------------------------------------
WRITER = '''
    import torch


    def save_vocab(words, path):
        torch.save(words, path)


    words = {words}
    save_vocab(words, "vocab.pt")
    vocab = torch.load("vocab.pt")
'''


@pytest.mark.parametrize("words", ['["a", "b"]', 'sorted({"a": 1})', '{"a": 0, "b": 1}',
                                   '[Image.open(p) for p in paths]', '[line.strip() for line in open(f)]'])
def test_a_helper_that_saves_data_without_tensors_is_followed(words):
    source = WRITER.format(words=words)
    if "Image" in words:
        source = source.replace("import torch\n", "import torch\n    from PIL import Image\n")
    assert _findings(source) == []


@pytest.mark.parametrize("words", ["[torch.ones(2).cuda()]", "build(texts)", "model.state_dict()"])
def test_a_helper_that_saves_device_or_unknown_data_is_flagged(words):
    assert _findings(WRITER.format(words=words)) == [("DL002", 11)]


def test_a_list_filled_with_values_of_unknown_place_is_not_cpu_data():
    source = WRITER.format(words="[]").replace('save_vocab(words, "vocab.pt")',
                                                'words.append(encoder(x))\n    save_vocab(words, "vocab.pt")')
    assert _findings(source) == [("DL002", 12)]
    for value in ('"c"', "line.rstrip()", "str(n)"):
        assert _findings(source.replace("encoder(x)", value)) == []


def test_a_helper_that_saves_its_own_cpu_data():
    source = '''
        import torch


        def write_table(path):
            torch.save(torch.arange(10), path)


        def write_gpu_table(path):
            torch.save(torch.arange(10).cuda(), path)


        write_table("t.pt")
        write_gpu_table("g.pt")
        t = torch.load("t.pt")
        g = torch.load("g.pt")
    '''
    assert _findings(source) == [("DL002", 16)]


# -- (c) an instance of a class that moves nothing -------------------------------------------------------------
INSTANCE = '''
    import torch


    class Normalizer:
        def __init__(self, n):
            self.mean = torch.zeros(n)
            self.std = torch.ones(n){extra}


    norm = Normalizer(3)
    if save:  # (not a round trip: the file may come from an earlier run)
        torch.save(norm, "norm.pt")
    norm = torch.load("norm.pt", weights_only=False)
'''


def test_an_instance_of_a_class_that_moves_nothing_is_cpu_data():
    assert _findings(INSTANCE.format(extra="")) == []


@pytest.mark.parametrize("extra", ["\n\n        def cuda(self):\n            self.mean = self.mean.cuda()",
                                   "\n            self.std = self.std.to(device)",
                                   "\n            self.bias = torch.zeros(n, device=device)"])
def test_an_instance_of_a_class_that_moves_is_flagged(extra):
    assert len(_findings(INSTANCE.format(extra=extra))) == 1


def test_an_instance_built_from_unknown_values_is_flagged():
    source = INSTANCE.format(extra="").replace("Normalizer(3)", "Normalizer(features)")
    assert _findings(source) == [("DL002", 14)]


# -- fixtures as a source of kinds (DL003) ----------------------------------------------------------------------
KIND = '''
    import pytest
    import torch


    @pytest.fixture
    def batch():
        return {value}


    def test_moves(batch, device):
        batch.to(device)
        assert batch.sum() == 0
'''


def test_a_fixture_that_returns_a_tensor_makes_its_parameter_a_tensor():
    assert _findings(KIND.format(value="torch.zeros(3)"), select="DL003") == [("DL003", 12)]


@pytest.mark.parametrize("value", ["make_graph()", "torch.nn.Linear(3, 3)"])
def test_a_fixture_of_unknown_kind_or_a_module_is_not_flagged(value):
    assert _findings(KIND.format(value=value), select="DL003") == []


def test_a_parametrized_name_is_not_the_fixture():
    source = textwrap.dedent(KIND.format(value="torch.zeros(3)")).replace(
        "def test_moves", "@pytest.mark.parametrize('batch', [graph])\ndef test_moves")
    assert _findings(source, select="DL003") == []


# -- across files: conftest.py and a helper module, with the cache on -------------------------------------------
CONFTEST = '''import pytest
import torch


@pytest.fixture
def checkpoint(data_dir):
    model = torch.nn.Linear(2, 2){move}
    path = data_dir / "model.pt"
    torch.save(model.state_dict(), path)
    return path


@pytest.fixture
def inputs():
    return torch.zeros(2)
'''
TEST = '''import torch


def test_restore(checkpoint, inputs, device):
    model = torch.nn.Linear(2, 2)
    model.load_state_dict(torch.load(checkpoint))
    inputs.to(device)
    assert model(inputs).shape == (2,)
'''


@pytest.fixture()
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def test_conftest_fixtures_with_the_cache_on(project):
    write(project / "tests" / "conftest.py", CONFTEST.format(move=""))
    write(project / "tests" / "unit" / "test_restore.py", TEST)
    args = ("tests/unit/test_restore.py", "--select", "DL002,DL003")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("tests/unit/test_restore.py", "DL003")]  # the load is of CPU data
    # the fixture now saves device data: the cached pass must not be served
    write(project / "tests" / "conftest.py", CONFTEST.format(move=".cuda()"))
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("tests/unit/test_restore.py", "DL002"), ("tests/unit/test_restore.py", "DL003")]
    # a nearer conftest.py that appears overrides the fixture (returns an unknown tensor-free value)
    write(project / "tests" / "conftest.py", CONFTEST.format(move=""))
    cached_and_fresh(project, *args)
    write(project / "tests" / "unit" / "conftest.py", "import pytest\n\n@pytest.fixture\ndef inputs():\n"
          "    return make()\n\n@pytest.fixture\ndef checkpoint():\n    return 'elsewhere.pt'\n")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("tests/unit/test_restore.py", "DL002")]


HELPER = '''import torch


def save_tokens(tokens, path):
    torch.save(tokens, path)
'''
USER = '''import torch
from helpers import save_tokens

tokens = ["a", "b", "c"]
save_tokens(tokens, "tokens.pt")
print(torch.load("tokens.pt"))
'''


def test_a_project_helper_that_writes_the_file_with_the_cache_on(project):
    write(project / "helpers.py", HELPER)
    write(project / "use.py", USER)
    cached, fresh = cached_and_fresh(project, "use.py", "--select", "DL002")
    assert fresh == cached == []
    write(project / "helpers.py", HELPER.replace("torch.save(tokens, path)", "torch.save(tokens, path)\n"
                                                 "    torch.save(torch.ones(1).cuda(), path)"))
    cached, fresh = cached_and_fresh(project, "use.py", "--select", "DL002")
    assert fresh == cached == [("use.py", "DL002")]
    project_module._INDEX = None


def test_a_project_class_that_moves_nothing_with_the_cache_on(project):
    write(project / "stats.py", "import torch\n\nclass Stats:\n    def __init__(self, n):\n"
          "        self.mean = torch.zeros(n)\n")
    write(project / "use.py", "import torch\nfrom stats import Stats\n\ns = Stats(3)\nif save:\n    torch.save(s, 's.pt')\n"
          "s = torch.load('s.pt', weights_only=False)\n")
    cached, fresh = cached_and_fresh(project, "use.py", "--select", "DL002")
    assert fresh == cached == []
    write(project / "stats.py", "import torch\n\nclass Stats:\n    def __init__(self, n):\n"
          "        self.mean = torch.zeros(n).cuda()\n")
    cached, fresh = cached_and_fresh(project, "use.py", "--select", "DL002")
    assert fresh == cached == [("use.py", "DL002")]
    project_module._INDEX = None


def test_a_path_written_by_its_own_method_is_of_unknown_origin():
    source = textwrap.dedent(FIXTURE.format(move="")).replace(
        "    return path\n", "    path.write_bytes(b'')\n    return path\n")
    assert _findings(source) == [("DL002", 17)]


def test_a_test_class_with_a_base_may_get_the_fixture_from_it():
    source = textwrap.dedent(KIND.format(value="torch.zeros(3)")).replace(
        "def test_moves(batch, device):\n    batch.to(device)\n    assert",
        "class TestGraphs(Base):\n    def test_moves(self, batch, device):\n        batch.to(device)\n        assert")
    assert _findings(source, select="DL003") == []
    assert _findings(source.replace("(Base)", ""), select="DL003") == [("DL003", 13)]


CHAIN = '''
    import pytest
    import torch


    @pytest.fixture{scope}
    def model():
        return torch.nn.Linear(2, 2){move}


    @pytest.fixture
    def ckpt(model, data_dir):
        path = data_dir / "m.pt"
        torch.save(model.state_dict(), path)
        return path


    def test_round_trip(model, data_dir):
        torch.save(model.state_dict(), data_dir / "x.pt")
        model.load_state_dict(torch.load(data_dir / "x.pt"))


    def test_ckpt(ckpt, model):
        model.load_state_dict(torch.load(ckpt))
'''


@pytest.mark.parametrize("scope, move, expected", [
    ("", "", []),
    # (test_round_trip reads back what it saved itself, wherever the model is: never flagged)
    ("", ".cuda()", [("DL002", 24)]),
    # built once for the module: another test may have moved it to the GPU before this one saves it
    ("(scope='module')", "", [("DL002", 24)]),
])
def test_a_fixture_is_a_source_of_placement(scope, move, expected):
    assert _findings(CHAIN.format(scope=scope, move=move)) == expected


def test_a_project_module_class_named_through_its_full_dotted_base(project):
    """`class Generator(torch.nn.Module)` after `import torch`: the index follows `torch.nn.Module` through the
    external `torch` (it stopped after `torch`), so the instance is a module (a receiver that copies) and,
    moving nothing, CPU data."""
    write(project / "hifigan.py", "import torch\n\nclass Generator(torch.nn.Module):\n    def __init__(self):\n"
          "        super().__init__()\n        self.conv = torch.nn.Conv1d(2, 2, 1)\n")
    write(project / "use.py", "import torch\nfrom hifigan import Generator as Model\n\n"
          "def restore(path):\n    model = Model()\n    model.load_state_dict(torch.load(path))\n    return model\n\n"
          "net = Model()\ntorch.save(net, 'net.pt')\nnet = torch.load('net.pt', weights_only=False)\n")
    project_module._INDEX = None
    view_findings = lint_file(project / "use.py")
    assert view_findings == [("DL002", 6, "safe")]
    project_module._INDEX = None


def lint_file(path: Path) -> list[tuple[str, int, str]]:
    from devlint.config import Config
    from devlint.engine import check_source

    result = check_source(str(path), path.read_bytes(), Config(select=("DL002",)))
    return [(f.code, f.start.line, f.fix.applicability.value) for f in result.findings]
