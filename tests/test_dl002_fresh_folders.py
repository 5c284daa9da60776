"""DL002 and files inside a folder created empty during this run (devlint.analysis.fresh_folders).

Whatever wrote a file into pytest's `tmp_path`, a `tempfile.mkdtemp()` or a `TemporaryDirectory()` ran
during this run on this machine, so every device its tensors name exists here. The shapes of
/work/eval/REPORT.md's largest remaining DL002 cluster (ignite's `dirname` fixture, mmpretrain's
`dump_prototype`, pyg's backend helpers): both sides of each.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.helpers import lint

CLEARED = {
    # ignite's test_engine_state_dict: saved in an event handler (no round trip), into the fixture's folder
    "tmp_path_fixture": '''
        import torch
        def test_state(tmp_path, engine):
            fp = tmp_path / "engine.pt"
            engine.run(fp)
            assert torch.load(fp)
    ''',
    "tmpdir_join_and_str": '''
        import os, torch
        def test_state(tmpdir, model):
            path = os.path.join(str(tmpdir), "sub", f"model_{3}.pt")
            model.dump(path)
            assert torch.load(path)
    ''',
    # pyg's test_rag_backend_utils: a helper of the project writes into a TemporaryDirectory
    "temporary_directory_as": '''
        import os, tempfile, torch
        def test_backend(data):
            with tempfile.TemporaryDirectory() as temp_dir:
                save_path = os.path.join(temp_dir, "test_graph.pt")
                create_backend(data, path=save_path)
                assert torch.load(save_path, weights_only=False)
    ''',
    # mmpretrain's test_retrievers: `tmpdir = tempfile.TemporaryDirectory()` ... `tmpdir.name`
    "temporary_directory_name": '''
        import os, tempfile, torch
        def test_dump(model):
            tmpdir = tempfile.TemporaryDirectory()
            save_path = os.path.join(tmpdir.name, 'proto.pth')
            model.dump_prototype(save_path)
            assert torch.load(save_path) is not None
    ''',
    # ignite's engine tests: the one entry a checkpoint handler left in the folder
    "listdir_entry": '''
        import os, tempfile, torch
        def test_resume(engine):
            with tempfile.TemporaryDirectory() as tmpdir:
                engine.run(tmpdir)
                checkpoint = torch.load(os.path.join(tmpdir, os.listdir(tmpdir)[0]))
    ''',
    # ignite's `dirname` fixture (its conftest.py, here in the same file), and a session-wide factory folder
    "fixture_of_mkdtemp": '''
        import os, shutil, tempfile, pytest, torch
        from pathlib import Path
        @pytest.fixture()
        def dirname():
            path = Path(tempfile.mkdtemp())
            yield path
            shutil.rmtree(path)
        def test_load(dirname, engine):
            engine.run(dirname)
            saved_model = dirname / "model.pt"
            assert torch.load(saved_model)
            os.remove(saved_model)
            saved_model.unlink()
    ''',
    "session_factory_fixture": '''
        import pytest, torch
        @pytest.fixture(scope="session")
        def cache(tmp_path_factory):
            return tmp_path_factory.mktemp("cache")
        def test_load(cache, engine):
            engine.run(cache)
            assert torch.load(f"{cache}/m.pt")
    ''',
    # a child process this test started wrote it (a training script run on this machine)
    "child_process": '''
        import subprocess, sys, torch
        def test_train(tmpdir):
            subprocess.run([sys.executable, "train.py", "--out", str(tmpdir)], check=True)
            assert torch.load(tmpdir.join("final.pt"))
    ''',
}

FLAGGED = {
    # a folder of unknown origin, a fixed folder, the shared temporary folder, a parameter
    "unknown_fixture": CLEARED["tmp_path_fixture"].replace("tmp_path", "data_dir"),
    "fixed_path": CLEARED["tmpdir_join_and_str"].replace("str(tmpdir)", '"/data"'),
    "gettempdir": CLEARED["temporary_directory_name"].replace("tmpdir.name", "tempfile.gettempdir()"),
    "not_a_test": CLEARED["tmp_path_fixture"].replace("def test_state", "def state"),
    # a part that may leave the folder: absolute, `..`, of unknown value
    "climbs_out": CLEARED["tmp_path_fixture"].replace('"engine.pt"', '"../engine.pt"'),
    "absolute_part": CLEARED["temporary_directory_as"].replace('"test_graph.pt"', '"/ckpt/test_graph.pt"'),
    "unknown_part": CLEARED["temporary_directory_as"].replace('"test_graph.pt"', "name"),
    "unknown_f_string_part": CLEARED["session_factory_fixture"].replace("/m.pt", "/{name}"),
    # `+` without a separator names a sibling of the folder, not a file inside it
    "sibling": CLEARED["temporary_directory_as"].replace('os.path.join(temp_dir, "test_graph.pt")',
                                                         'temp_dir + "x.pt"'),
    # brought in from outside: a copy, a download, an unpacking, bytes written
    "copied_in": CLEARED["tmp_path_fixture"].replace("engine.run(fp)", "shutil.copy(SRC, fp)"),
    "downloaded_in": CLEARED["temporary_directory_as"].replace(
        "create_backend(data, path=save_path)", "urllib.request.urlretrieve(URL, save_path)"),
    "extracted_in": CLEARED["listdir_entry"].replace("engine.run(tmpdir)", "archive.extractall(tmpdir)"),
    "bytes_written": CLEARED["fixture_of_mkdtemp"].replace(
        "engine.run(dirname)", 'open(dirname / "model.pt", "wb").write(blob)'),
    "fixture_copies": CLEARED["fixture_of_mkdtemp"].replace("yield path", "shutil.copy(SRC, path); yield path"),
    "shell_copy": CLEARED["child_process"].replace('sys.executable, "train.py", "--out"', '"cp", SRC'),
    "hub_download": CLEARED["tmp_path_fixture"].replace(
        "engine.run(fp)", "torch.hub.load_state_dict_from_url(URL, model_dir=tmp_path)"),
    # a string's `.join` puts the folder between the parts: not a path below it
    "string_join": CLEARED["temporary_directory_name"].replace("os.path.join(tmpdir.name, 'proto.pth')",
                                                              "tempfile.mkdtemp().join('ab')"),
    # a project fixture of the name, or a parametrization, is not pytest's fresh folder
    "overridden_tmp_path": "import pytest\n@pytest.fixture\ndef tmp_path():\n    return DATA\n" + textwrap.dedent(
        CLEARED["tmp_path_fixture"]),
    "parametrized": CLEARED["tmp_path_fixture"].replace(
        "def test_state", "@pytest.mark.parametrize('tmp_path', [DATA])\n        def test_state"),
}


def _flagged(source: str) -> int:
    return len(lint(textwrap.dedent(source), select="DL002"))


@pytest.mark.parametrize("name", sorted(CLEARED))
def test_a_load_inside_a_fresh_folder_is_not_flagged(name):
    assert _flagged(CLEARED[name]) == 0


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_a_load_not_provably_inside_a_fresh_folder_is_flagged(name):
    assert _flagged(FLAGGED[name]) == 1


# -- a conftest.py fixture, with the cache on (issue 29: never a stale pass) -------------------------------------
CONFTEST = '''import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture()
def dirname():
    path = {folder}
    yield path
    shutil.rmtree(path)
'''
TEST = '''import torch


def test_restore(dirname, engine):
    engine.run(dirname)
    assert torch.load(dirname / "model.pt")
'''


def test_a_conftest_fixture_of_a_fresh_folder_with_the_cache_on(tmp_path):
    from tests.test_cache_staleness import cached_and_fresh
    from tests.test_cli import write

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write(project / "tests" / "conftest.py", CONFTEST.format(folder="Path(tempfile.mkdtemp())"))
    write(project / "tests" / "unit" / "test_restore.py", TEST)
    args = ("tests/unit/test_restore.py", "--select", "DL002")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == []  # ignite's `dirname`: a folder made by mkdtemp
    write(project / "tests" / "conftest.py", CONFTEST.format(folder='Path("/data/checkpoints")'))
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("tests/unit/test_restore.py", "DL002")]
    # a nearer conftest.py that appears and overrides the fixture with a folder of unknown origin
    write(project / "tests" / "conftest.py", CONFTEST.format(folder="Path(tempfile.mkdtemp())"))
    cached_and_fresh(project, *args)
    write(project / "tests" / "unit" / "conftest.py", "import pytest\n\n@pytest.fixture\ndef dirname(shared):\n"
          "    return shared\n")
    cached, fresh = cached_and_fresh(project, *args)
    assert fresh == cached == [("tests/unit/test_restore.py", "DL002")]
