"""DL002 and a helper run by a launcher: `spawn(_worker, args=(tmp_path,))`, `Thread(target=_check, args=(...))`.

devlint.analysis.handoffs: a function handed to a launcher with a literal `args=` tuple receives its
elements as its last positional parameters (a spawn puts the process index first), so a parameter that
every direct call and every hand-off fills with a fresh path (or a file saved before) names a file this
run wrote (devlint.analysis.param_paths). Both sides: the shapes, and the close variants that keep the finding.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint

FIXTURE = '''
    import multiprocessing, shutil, tempfile, threading, functools, pytest, torch
    from pathlib import Path
    @pytest.fixture()
    def workdir():
        path = Path(tempfile.mkdtemp())
        yield path
        shutil.rmtree(path)
'''

CLEARED = {
    # a spawn-style launcher: the index first, then the tuple; the worker passes its folder on to a helper
    "spawn": FIXTURE + '''
    def _verify(device, folder):
        fit_and_save(device, folder)
        assert torch.load(folder / "last.pt") is not None
    def _worker(rank, folder):
        _verify(rank, folder / "a")
    def test_single(workdir):
        _verify("cpu", workdir / "b")
    def test_spawned(workdir):
        torch.multiprocessing.spawn(_worker, args=(workdir,), nprocs=2)
    ''',
    # Thread and Process pass the tuple as it is, by `target=`
    "thread": FIXTURE + '''
    def _verify(device, folder):
        fit_and_save(device, folder)
        assert torch.load(folder / "last.pt") is not None
    def test_threads(tmp_path):
        t = threading.Thread(target=_verify, args=("cpu", tmp_path / "t"))
        t.start()
        t.join()
    ''',
    "process": FIXTURE + '''
    def _verify(folder):
        fit_and_save("cpu", folder)
        assert torch.load(folder / "last.pt") is not None
    def test_process(workdir):
        p = multiprocessing.Process(target=_verify, args=(workdir / "p",))
        p.start()
        p.join()
    ''',
    # a launcher of the project's own (here a fixture) taking (fn, args=...)
    "custom_launcher": FIXTURE + '''
    def _verify(device, folder):
        fit_and_save(device, folder)
        assert torch.load(folder / "last.pt") is not None
    def _worker(index, folder):
        _verify(index, folder / "1")
    def test_many(run_workers, workdir):
        run_workers(_worker, args=(workdir,), nprocs=4)
    ''',
    # keywords for the function by name that are empty
    "empty_named_arguments": FIXTURE + '''
    def _worker(index, folder):
        assert torch.load(folder / "last.pt") is not None
    def test_many(run_workers, workdir):
        run_workers(_worker, args=(workdir,), kwargs_dict={}, nprocs=4)
        run_workers(_worker, args=(workdir,), kwargs=None)
    ''',
    # a file saved before the launcher runs the loading function
    "saved_before": '''
    import threading, torch
    def _restore(model, path):
        model.load_state_dict(torch.load(path))
    def main(model):
        torch.save(model.state_dict(), "m.pt")
        threading.Thread(target=_restore, args=(model, "m.pt")).start()
    ''',
}

_SPAWN, _THREAD, _LAUNCHER = CLEARED["spawn"], CLEARED["thread"], CLEARED["custom_launcher"]

FLAGGED = {
    # the tuple passes a folder that is not fresh, or a hand-off passes nothing this module can tell
    "tuple_not_fresh": _SPAWN.replace("args=(workdir,)", 'args=("/data/runs",)'),
    "thread_not_fresh": _THREAD.replace('tmp_path / "t"', "data_dir"),
    "never_saved": CLEARED["saved_before"].replace('torch.save(model.state_dict(), "m.pt")', "pass"),
    # the function also reaches the program another way, without its arguments
    "also_a_callback": _SPAWN.replace("nprocs=2)", "nprocs=2)\n        on_exit.append(_worker)"),
    "also_bound": _LAUNCHER.replace("nprocs=4)", "nprocs=4)\n        job = _worker"),
    # the arity does not say where the tuple lands
    "too_many_parameters": _SPAWN.replace("def _worker(rank, folder)", "def _worker(rank, folder, extra)"),
    "too_few_parameters": _THREAD.replace('args=("cpu", tmp_path / "t")', 'args=("cpu", tmp_path / "t", 1)'),
    "default_parameter": _SPAWN.replace("def _worker(rank, folder)", "def _worker(folder, rank=0)"),
    "star_parameters": _SPAWN.replace("def _worker(rank, folder)", "def _worker(rank, folder, *more)"),
    "index_slot": _SPAWN.replace("def _worker(rank, folder)", "def _worker(folder, rank)").replace(
        "_verify(rank, folder", "_verify(0, folder"),
    # `args=` is not a literal tuple, or other arguments may fill the parameters
    "args_a_name": _SPAWN.replace("args=(workdir,)", "args=ARGS"),
    "args_parenthesized": _SPAWN.replace("args=(workdir,)", "args=(workdir)"),
    "args_a_list": _THREAD.replace('args=("cpu", tmp_path / "t")', 'args=["cpu", tmp_path / "t"]'),
    "args_starred": _SPAWN.replace("args=(workdir,)", "args=(*folders,)"),
    "named_arguments": _THREAD.replace('args=("cpu", tmp_path / "t")', 'args=("cpu", tmp_path / "t"), '
                                       'kwargs={"folder": OTHER}'),
    "named_arguments_dict": _LAUNCHER.replace("nprocs=4)", 'nprocs=4, kwargs_dict={"folder": OTHER})'),
    "partial": _LAUNCHER.replace("run_workers(_worker, args=(workdir,), nprocs=4)",
                                 "run(functools.partial(_worker, args=(workdir,)))"),
    # the function is not where a launcher takes it
    "second_positional": _LAUNCHER.replace("run_workers(_worker,", "run_workers(setup, _worker,"),
    "other_keyword": _LAUNCHER.replace("run_workers(_worker,", "run_workers(on_error=_worker,"),
}


def _flagged(source: str) -> int:
    return len(lint(textwrap.dedent(source), select="DL002"))


@pytest.mark.parametrize("name", sorted(CLEARED))
def test_a_helper_a_launcher_gives_a_fresh_file_is_not_flagged(name):
    assert _flagged(CLEARED[name]) == 0


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_a_close_variant_is_still_flagged(name):
    assert FLAGGED[name] not in CLEARED.values()  # (the variant changed its source)
    assert _flagged(FLAGGED[name]) >= 1
