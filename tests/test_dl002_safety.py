"""DL002's fix safety: `map_location` is safe only where the loaded value's device provably does not matter.

`torch.load` without `map_location` restores each tensor where it was saved: `map_location=device` moves
CPU-saved data onto the GPU (`.numpy()` then raises there), `"cpu"` moves GPU-saved tensors off it. Shapes
written fresh from the cases of issue 15.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import fix, lint


def _fixes(source: str, **options):
    return [(f.fix.applicability.value, f.fix.title) for f in lint(textwrap.dedent(source), select="DL002", **options)]


CPU_SAFE = [("safe", 'Add `map_location="cpu"`')]
CPU_UNSAFE = [("unsafe", 'Add `map_location="cpu"`')]
DEVICE_UNSAFE = [("unsafe", "Add `map_location=device`")]

SHAPES = {
    # data loading shaped like an image/mask reader: the tensor is turned into a numpy array
    "mask_reader_numpy": ('''
        import numpy as np
        import torch
        from PIL import Image

        def read_any(path):
            if path.endswith(".npy"):
                return Image.fromarray(np.load(path))
            if path.endswith((".pt", ".pth")):
                return Image.fromarray(torch.load(path).numpy())
            return Image.open(path)
    ''', CPU_SAFE),
    "np_asarray": ('''
        import numpy as np
        import torch

        def features(path):
            return np.asarray(torch.load(path))
    ''', CPU_SAFE),
    # a whole model saved elsewhere and called on CPU inputs: saved on the CPU, unless its forward moves
    # the inputs to its weights (then "cpu" would run it on the CPU): unsafe, with "cpu"
    "whole_model_on_cpu_inputs": ('''
        import torch

        def predict(path):
            net = torch.load(path, weights_only=False)
            net.eval()
            return net(torch.randn(4, 10)).argmax(1)
    ''', CPU_UNSAFE),
    # an expected output compared with a CPU model's output in a test
    "expected_vs_cpu_model": ('''
        import torch

        def test_forward_matches_golden():
            torch.manual_seed(0)
            layer = torch.nn.Conv1d(2, 3, 1)
            got = layer(torch.ones(1, 2, 5))
            want = torch.load("golden_conv.pt")
            torch.testing.assert_close(got, want)
    ''', CPU_SAFE),
    "expected_eq_all": ('''
        import torch

        def test_round_trip():
            enc = torch.nn.Embedding(10, 4)
            ids = torch.tensor([1, 2, 3])
            reference = torch.load("ref.pt")
            assert (enc(ids) == reference).all()
    ''', CPU_SAFE),
    "into_a_cpu_model": ('''
        import torch

        def score(path):
            head = torch.nn.Linear(8, 2)
            return head(torch.load(path))
    ''', CPU_SAFE),
    # the device does not matter: into load_state_dict, moved right after, bookkeeping, Python values
    "checkpoint_dict": ('''
        import torch

        def resume(net: torch.nn.Module, opt: torch.optim.Optimizer, path):
            state = torch.load(path)
            if "net" in state:
                net.load_state_dict(state["net"])
            opt.load_state_dict(state["opt"])
            return state["epoch"] + 1, state.get("best_acc")
    ''', CPU_SAFE),
    "unwrapped_state_dict": ('''
        import torch

        def weights(model: torch.nn.Module, path):
            ckpt = torch.load(path)
            ckpt = ckpt["state_dict"]
            model.load_state_dict(ckpt, strict=False)
    ''', CPU_SAFE),
    "to_device_chain": ('''
        import torch

        def embeddings(path, device):
            return torch.load(path).float().to(device)
    ''', CPU_SAFE),
    "cuda_chain": ('''
        import torch

        def table(path):
            return torch.load(path).cuda()
    ''', CPU_SAFE),
    "module_moved_next": ('''
        import torch

        def serve(path, device, batch):
            model = torch.load(path, weights_only=False)
            model.to(device).eval()
            return model(batch)
    ''', CPU_SAFE),
    "rebound_moved": ('''
        import torch

        def serve(path, device, batch):
            model = torch.load(path, weights_only=False)
            model = model.to(device)
            return model(batch)
    ''', CPU_SAFE),
    "tolist": ('''
        import torch

        def lengths(path):
            return torch.load(path).tolist()
    ''', CPU_SAFE),
    # the device matters: unsafe
    "vocab_object": ('''
        import torch

        def load_vocab(path):
            vocab = torch.load(path)
            return [vocab[w] for w in ["a", "b"]]
    ''', CPU_UNSAFE),
    "cache_attribute": ('''
        import torch

        class Speaker:
            def __init__(self, cache_path):
                self.cache = torch.load(cache_path)
    ''', CPU_UNSAFE),
    "numpy_on_one_branch": ('''
        import torch

        def read(path, raw, device):
            x = torch.load(path)
            if raw:
                return x.numpy()
            return x * 2
    ''', CPU_UNSAFE),
    "whole_model_returned": ('''
        import torch

        def restore(path, device):
            model = torch.load(path, weights_only=False)
            return model
    ''', DEVICE_UNSAFE),
    "tensor_move_thrown_away": ('''
        import torch

        def restore(path, device):
            t = torch.load(path)
            t.to(device)
            return t + 1
    ''', DEVICE_UNSAFE),
    "dtype_only_conversion": ('''
        import torch

        def restore(path, device):
            return torch.load(path).to(torch.float16)
    ''', DEVICE_UNSAFE),
    "whole_model_on_gpu_inputs": ('''
        import torch

        def predict(path, device):
            net = torch.load(path, weights_only=False)
            return net(torch.randn(4, 10, device=device))
    ''', DEVICE_UNSAFE),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_fix_safety(name):
    source, expected = SHAPES[name]
    assert _fixes(source) == expected


@pytest.mark.parametrize("name", ["mask_reader_numpy", "checkpoint_dict", "module_moved_next"])
def test_safe_fix_writes_cpu(name):
    source = textwrap.dedent(SHAPES[name][0])
    fixed = fix(source, select="DL002")
    assert fixed.count('map_location="cpu"') == 1 and "device = torch.device" not in fixed


# --map-location: an explicit choice keeps its value; it is safe only where that value keeps behaviour.
EXPLICIT = {
    ("checkpoint_dict", "device"): [("unsafe", "Add `map_location=device`")],  # bookkeeping keys
    ("to_device_chain", "device"): [("safe", "Add `map_location=device`")],
    ("mask_reader_numpy", "device"): [("unsafe", "Add `map_location=device`")],
    ("whole_model_returned", "cpu"): CPU_UNSAFE,
    ("module_moved_next", "cpu"): CPU_SAFE,
    ("vocab_object", "device"): DEVICE_UNSAFE,
}


@pytest.mark.parametrize("name, choice", list(EXPLICIT))
def test_explicit_map_location(name, choice):
    assert _fixes(SHAPES[name][0], map_location=choice) == EXPLICIT[(name, choice)]


def test_data_loading_code_keeps_cpu_safe():
    source = '''
        import torch
        from torch.utils.data import Dataset

        class Frames(Dataset):
            def __init__(self, files):
                self.files = files

            def __getitem__(self, i):
                frame = torch.load(self.files[i])
                return frame, frame.shape[0]
    '''
    assert _fixes(source) == CPU_SAFE
    assert _fixes(source, map_location="device") == DEVICE_UNSAFE


# -- saved and reloaded in the same file (a save/reload lesson on a CPU model): nothing to flag --------
NOT_FLAGGED = {
    "state_dict_same_literal": '''
        import torch
        from torch import nn

        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        optimizer = torch.optim.Adam(net.parameters())
        for epoch in range(5):
            optimizer.step()
        torch.save(net.state_dict(), "lesson.pth")

        fresh = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        fresh.load_state_dict(torch.load("lesson.pth"))
    ''',
    "whole_model_name_bound_once": '''
        import torch
        import torch.nn as nn

        class Tiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(3, 3)

            def forward(self, x):
                return self.body(x).relu()

        CKPT = "tiny_full.pt"
        model = Tiny()
        torch.save(model, CKPT)
        restored = torch.load(CKPT, weights_only=False)
        print(restored(torch.ones(3)))
    ''',
    "checkpoint_dict_in_a_function": '''
        import torch

        PATH = "ckpt.tar"
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def train(epochs):
            for epoch in range(epochs):
                torch.save({"epoch": epoch, "model": model.state_dict(), "opt": opt.state_dict()}, PATH)

        def resume():
            ckpt = torch.load(PATH)
            return ckpt["epoch"]
    ''',
    "tensor_saved_then_loaded": '''
        import torch

        x = torch.arange(6).reshape(2, 3)
        torch.save(x, "x.pt")
        print(torch.load("x.pt").numpy())
    ''',
}


@pytest.mark.parametrize("name", list(NOT_FLAGGED))
def test_cpu_saved_in_the_same_file_not_flagged(name):
    assert _fixes(NOT_FLAGGED[name]) == []


STILL_FLAGGED = {
    "saved_after_cuda": '''
        import torch

        net = torch.nn.Linear(4, 1).cuda()
        if save:  # (not a round trip: the file may come from an earlier run)
            torch.save(net.state_dict(), "gpu.pth")
        net.load_state_dict(torch.load("gpu.pth"))
    ''',
    "saved_after_to_device": '''
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = torch.nn.Linear(4, 1)
        net.to(device)
        if save:
            torch.save(net.state_dict(), "w.pth")
        net.load_state_dict(torch.load("w.pth"))
    ''',
    "tensor_to_cuda_string": '''
        import torch

        t = torch.ones(3).to("cuda")
        if save:
            torch.save(t, "t.pt")
        u = torch.load("t.pt")
    ''',
    "moved_by_a_helper": '''
        import torch

        def to_gpu(m):
            m.cuda()

        net = torch.nn.Linear(4, 1)
        to_gpu(net)
        if save:
            torch.save(net.state_dict(), "w.pth")
        net.load_state_dict(torch.load("w.pth"))
    ''',
    "another_path": '''
        import torch

        net = torch.nn.Linear(4, 1)
        torch.save(net.state_dict(), "a.pth")
        net.load_state_dict(torch.load("b.pth"))
    ''',
    "path_unknown": '''
        import torch

        net = torch.nn.Linear(4, 1)
        torch.save(net.state_dict(), f"{run}/w.pth")
        net.load_state_dict(torch.load(f"{run}/w.pth"))
    ''',
    "name_bound_twice": '''
        import torch

        net = torch.nn.Linear(4, 1)
        path = "a.pth"
        torch.save(net.state_dict(), path)
        path = other
        net.load_state_dict(torch.load(path))
    ''',
}


@pytest.mark.parametrize("name", list(STILL_FLAGGED))
def test_gpu_saved_or_other_path_still_flagged(name):
    assert len(_fixes(STILL_FLAGGED[name])) == 1


def test_notebook_save_and_reload_in_other_cells_not_flagged():
    import json

    from devlint.config import Config
    from devlint.documents.notebook import check_notebook

    cells = [
        "import torch\nmodel = torch.nn.Linear(2, 1)",
        "torch.save(model.state_dict(), 'nb.pt')",
        "%matplotlib inline\nmodel.load_state_dict(torch.load('nb.pt'))",
        "other = torch.load('elsewhere.pt')",
    ]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": c} for c in cells],
                "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    result = check_notebook("lesson.ipynb", json.dumps(notebook).encode(), Config(select=("DL002",)))
    assert [(f.cell, f.start.line) for f in result.findings] == [(4, 1)]


# -- the proof on the virtual GPU: a safe fix keeps the output; the unsafe alternative changes it ---------
PREPARE = '''
import torch
torch.manual_seed(0)
torch.save(torch.arange(6.0).reshape(2, 3), "mask.pt")
layer = torch.nn.Linear(3, 2)
torch.save(layer(torch.ones(1, 3)).detach(), "golden.pt")
'''
PROGRAMS = {
    "numpy_data": '''
import torch
print(torch.load("mask.pt").numpy().sum())
''',
    "input_of_a_cpu_model": '''
import torch
torch.manual_seed(0)
layer = torch.nn.Linear(3, 2)
print(round(layer(torch.load("mask.pt")).sum().item(), 4))
''',
    "golden_vs_cpu_model": '''
import torch
torch.manual_seed(0)
layer = torch.nn.Linear(3, 2)
got = layer(torch.ones(1, 3))
want = torch.load("golden.pt")
print(torch.equal(got, want))
''',
}


@pytest.mark.slow
def test_virtual_gpu_safe_fix_keeps_output_unsafe_alternative_breaks(tmp_path):
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"}

    def run(*args, hidden=False):
        return subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=240,
                              env={**env, "CUDA_VISIBLE_DEVICES": ""} if hidden else env)

    (tmp_path / "prepare.py").write_text(PREPARE)
    assert run("prepare.py").returncode == 0  # the files are saved on the CPU
    import importlib.util

    for name, program in PROGRAMS.items():
        if name == "numpy_data" and importlib.util.find_spec("numpy") is None:
            continue  # (torch's .numpy() needs numpy installed)
        prog = tmp_path / f"{name}.py"
        prog.write_text(program)
        before = run("-m", "devlint", "run", "--virtual-gpu", prog.name)
        assert before.returncode == 0, before.stderr

        # the safe fix (map_location="cpu"): the same output on the GPU, and it runs without CUDA
        assert _fixes(program) == CPU_SAFE
        prog.write_text(fix(program, select="DL002"))
        assert 'map_location="cpu"' in prog.read_text()
        after = run("-m", "devlint", "run", "--virtual-gpu", prog.name)
        assert (after.returncode, after.stdout) == (0, before.stdout), after.stderr
        assert run(prog.name, hidden=True).stdout == before.stdout

        # what the old safe label wrote (map_location=device) breaks it on the GPU: hence unsafe there
        assert _fixes(program, map_location="device") == [("unsafe", "Add `map_location=device`")]
        prog.write_text(fix(program, select="DL002", unsafe=True, map_location="device"))
        assert "map_location=device" in prog.read_text()
        broken = run("-m", "devlint", "run", "--virtual-gpu", prog.name)
        assert broken.returncode != 0 or broken.stdout != before.stdout, name
