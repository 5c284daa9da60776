"""DL002 and paths that reach a fresh folder through an object or a helper's parameter.

devlint.analysis.saver_objects: `h = Saver(tmp_path)`, `h(engine, to_save)`, `torch.load(h.last_checkpoint)`
(a checkpoint handler given a folder created empty this run names a file it wrote there).
devlint.analysis.param_paths: `_check(device, folder)` whose every call passes `tmp_path / "1"`.
Both sides of each: the shape, and the close variants that keep the finding.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint

FIXTURE = '''
    import shutil, tempfile, pytest, torch
    from pathlib import Path, PurePosixPath
    PREFIX = "PREFIX"
    @pytest.fixture()
    def dirname():
        path = Path(tempfile.mkdtemp())
        yield path
        shutil.rmtree(path)
'''

CLEARED = {
    # a handler built on the fixture's folder, called, then asked for the file it wrote
    "attribute": FIXTURE + '''
    def test_recovery(dirname):
        h = Saver(dirname, PREFIX, create_dir=False)
        engine = Engine(lambda e, b: None)
        to_save = {"model": Net()}
        h(engine, to_save)
        fname = h.last_checkpoint
        assert torch.load(fname) is not None
        h.reload_objects(to_load={"model": Net()}, global_step=1)
    ''',
    "method": FIXTURE + '''
    def test_recovery(tmp_path, model):
        saver = Saver(tmp_path / "ckpt", keep=2)
        saver.save(model)
        assert torch.load(saver.latest()) is not None
    ''',
    # the same names bound again for a second case: each read sees the binding just before it
    "rebound_per_case": FIXTURE + '''
    def test_cases(dirname, trainer):
        handler = Saver(dirname, PREFIX, n_saved=1)
        handler(trainer, make_objects())
        fname = handler.last_checkpoint
        fname.unlink()
        handler = Saver(dirname, PREFIX, n_saved=1)
        handler(trainer, make_objects())
        fname = handler.last_checkpoint
        assert torch.load(fname) is not None
    ''',
    # handed to a runner that calls it (a callback list), with a parametrized flag
    "handed_to_a_runner": FIXTURE + '''
    @pytest.mark.parametrize("strict", [True, False])
    def test_fit(tmp_path, model, strict):
        checkpoint = Checkpointer(dirpath=tmp_path, filename="{epoch}", strict=strict)
        trainer = Trainer(callbacks=[checkpoint], max_epochs=1, default_root_dir=tmp_path, accelerator="cpu")
        trainer.fit(model)
        assert torch.load(checkpoint.best_model_path) is not None
    ''',
    # a private helper whose every call passes a fresh folder (one through another helper, one by keyword)
    "helper_parameter": FIXTURE + '''
    def _check_saves(device, folder):
        h = Saver(folder, PREFIX)
        h(engine, {"model": Net().to(device)})
        assert torch.load(h.last_checkpoint) is not None
    def _relay(index, dirname):
        _check_saves(index, dirname / "2")
    def test_one(dirname):
        _check_saves("cpu", dirname / "1")
    def test_two(tmp_path):
        _relay(0, tmp_path)
        _relay(1, dirname=tmp_path / "x")
        _check_saves("cpu", folder=str(tmp_path))
    ''',
    "helper_inside_a_test": FIXTURE + '''
    def test_nested(tmp_path):
        def check(folder):
            assert torch.load(folder / "m.pt") is not None
        run(tmp_path)
        check(tmp_path)
    ''',
    # a path name bound again: the binding its read sees
    "path_rebound": FIXTURE + '''
    def test_two_files(tmp_path, engine):
        p = tmp_path / "a.pt"
        engine.run(p)
        p = tmp_path / "b.pt"
        engine.run(p)
        assert torch.load(p) is not None
    ''',
}

_ATTRIBUTE, _METHOD, _RUNNER = CLEARED["attribute"], CLEARED["method"], CLEARED["handed_to_a_runner"]
_HELPER = CLEARED["helper_parameter"]

FLAGGED = {
    # the object built on a fixed folder, on a folder of unknown origin, elsewhere, or bound again
    "fixed_folder": _ATTRIBUTE.replace("Saver(dirname,", 'Saver("/data/ckpts",'),
    "folder_not_fresh": _METHOD.replace('tmp_path / "ckpt"', "data_dir").replace("(tmp_path,", "(data_dir,"),
    "built_elsewhere": _METHOD.replace('saver = Saver(tmp_path / "ckpt", keep=2)', "pass").replace(
        "(tmp_path, model)", "(saver, model)"),
    "built_by_a_function": _METHOD.replace('saver = Saver(tmp_path / "ckpt", keep=2)',
                                                 "saver = make_saver(tmp_path)"),
    "object_rebound": _ATTRIBUTE.replace("fname = h.last_checkpoint", 'h = Saver("/data", PREFIX)\n'
                                         "        fname = h.last_checkpoint"),
    "rebound_in_a_branch": _ATTRIBUTE.replace(
        "fname = h.last_checkpoint",
        "if resume:\n            h = Saver(OTHER, PREFIX)\n        fname = h.last_checkpoint"),
    "path_rebound_in_a_branch": CLEARED["path_rebound"].replace('p = tmp_path / "b.pt"', 'if old:\n'
                                                                '            p = "/data/b.pt"'),
    # another argument that may point it at a file elsewhere, or a download
    "other_place": _ATTRIBUTE.replace("create_dir=False", 'init_from="/models/base.pt"'),
    "place_keyword": _ATTRIBUTE.replace("create_dir=False", "resume_from=previous"),
    "load_keyword": _ATTRIBUTE.replace("create_dir=False", "load_from=previous").replace(
        "h.last_checkpoint", "h.checkpoint"),
    "place_name": _ATTRIBUTE.replace("PREFIX, create_dir=False", "PREFIX, weights_path"),
    "download_keyword": _ATTRIBUTE.replace("create_dir=False", "download=True"),
    "runner_resumes": _RUNNER.replace('accelerator="cpu"', "resume_from_checkpoint=CKPT"),
    "path_object": _METHOD.replace('saver = Saver(tmp_path / "ckpt", keep=2)', 'saver = PurePosixPath(tmp_path)'),
    # a use that may bring a file in or redirect it
    "download_method": _METHOD.replace("saver.save(model)", "saver.download(URL)"),
    "string_to_the_object": _METHOD.replace("saver.save(model)", 'saver.restore("last")'),
    "place_to_the_object": _ATTRIBUTE.replace("h(engine, to_save)", "h(engine, to_save, archive)"),
    "attribute_assigned": _ATTRIBUTE.replace("h(engine, to_save)", 'h.dirname = "/data"'),
    "aliased": _ATTRIBUTE.replace("h(engine, to_save)", "g = h"),
    "copied_over": _ATTRIBUTE.replace("h(engine, to_save)", "shutil.copy(SRC, h.last_checkpoint)"),
    # a file the object names that may come from elsewhere, or a way out of the folder
    "pretrained_attribute": _ATTRIBUTE.replace("h.last_checkpoint", "h.pretrained_file"),
    "parent_attribute": _METHOD.replace("saver.latest()", 'saver.parent / "m.pt"'),
    "method_given_a_string": _METHOD.replace("saver.latest()", 'saver.find("best")'),
    # a helper's parameter: a call with another folder, a public or test function, handed elsewhere
    "helper_call_not_fresh": _HELPER.replace("_relay(0, tmp_path)", '_relay(0, "/data")'),
    "helper_public": _HELPER.replace("_check_saves", "check_saves"),
    "helper_is_a_test": _HELPER.replace("_check_saves", "test_saves"),
    "helper_handed_elsewhere": _HELPER.replace("_relay(0, tmp_path)", "on_start.append(_relay)"),
    "helper_default": _HELPER.replace("def _check_saves(device, folder)", "def _check_saves(device, folder=DATA)")
    .replace('_check_saves("cpu", folder=str(tmp_path))', '_check_saves("cpu")'),
    "helper_star_args": _HELPER.replace('_check_saves("cpu", folder=str(tmp_path))', "_check_saves(*ARGS)"),
    "helper_decorated": _HELPER.replace("def _check_saves", "@wrap\n    def _check_saves"),
    "helper_method": FIXTURE + '''
    class Checks:
        def _check(self, folder):
            assert torch.load(folder / "m.pt") is not None
        def test_it(self, tmp_path):
            self._check(tmp_path)
    ''',
    "helper_never_called": CLEARED["helper_inside_a_test"].replace("check(tmp_path)", "pass"),
}


def _flagged(source: str) -> int:
    return len(lint(textwrap.dedent(source), select="DL002"))


@pytest.mark.parametrize("name", sorted(CLEARED))
def test_a_file_an_object_or_helper_keeps_in_a_fresh_folder_is_not_flagged(name):
    assert _flagged(CLEARED[name]) == 0


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_a_close_variant_is_still_flagged(name):
    assert FLAGGED[name] not in CLEARED.values()  # (the variant changed its source)
    assert _flagged(FLAGGED[name]) >= 1
