"""The virtual GPU decides mixes by PyTorch's own rules (devlint/virtual_gpu/decide.py), as an H200 did
(../shared/gpu-truth/optable-h200-2026-11-26.jsonl): each case below is a row of that table that the
earlier case list got wrong, a false alarm or a miss."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from devlint.virtual_gpu import decide, virtual_gpu  # noqa: E402

SAME = "Expected all tensors to be on the same device"


def _g(*shape):
    return torch.ones(*shape, device="cuda")


ALLOWED = [  # (id, call, device of the result on the GPU)
    ("expand_as CPU self", lambda: torch.ones(3).expand_as(_g(2, 3)), "cpu"),
    ("expand_as CUDA self", lambda: _g(3).expand_as(torch.ones(2, 3)), "cuda:0"),
    ("view_as", lambda: torch.ones(6).view_as(_g(2, 3)), "cpu"),
    ("broadcast_tensors", lambda: torch.broadcast_tensors(torch.ones(3), _g(2, 3))[0], "cpu"),
    ("isclose with 0-dim CPU", lambda: torch.isclose(_g(3), torch.tensor(1.0)), "cuda:0"),
    ("allclose with 0-dim CPU", lambda: torch.allclose(_g(3), torch.tensor(1.0)), None),
    ("diagonal_scatter into CPU", lambda: torch.diagonal_scatter(torch.zeros(3, 3), _g(3)), "cpu"),
    ("select_scatter into CPU", lambda: torch.select_scatter(torch.zeros(3, 3), _g(3), 0, 0), "cpu"),
    ("index_put with CPU indices", lambda: torch.index_put(_g(4), (torch.tensor([0, 2]),), _g(2)), "cuda:0"),
    ("logical_and CUDA, 0-dim CPU", lambda: torch.logical_and(_g(3), torch.tensor(True)), "cuda:0"),
    ("where 0-dim CPU", lambda: torch.where(_g(3) > 0, torch.tensor(1.0), _g(3)), "cuda:0"),
    ("ctc_loss CPU log_probs, CUDA targets", lambda: F.ctc_loss(
        torch.randn(5, 2, 3).log_softmax(2), torch.tensor([[1, 2], [1, 1]], device="cuda"),
        torch.tensor([5, 5], device="cuda"), torch.tensor([2, 2], device="cuda")), "cpu"),
]

RAISES = [  # (id, call, text of the GPU's message)
    ("logaddexp 0-dim CPU", lambda: torch.logaddexp(_g(3), torch.tensor(1.0)), SAME),
    ("gcd 0-dim CPU", lambda: torch.gcd(_g(3).long(), torch.tensor(2)), SAME),
    ("complex 0-dim CPU", lambda: torch.complex(_g(3), torch.tensor(1.0)), SAME),
    ("logical_and 0-dim CPU self", lambda: torch.logical_and(torch.tensor(True), _g(3)), SAME),
    ("addr 0-dim CPU self", lambda: torch.addr(torch.tensor(1.0), _g(2), _g(3)), SAME),
    ("clamp 0-dim CPU min", lambda: torch.clamp(_g(3), min=torch.tensor(0.0)), SAME),
    ("mse_loss broadcasts a 0-dim CPU target", lambda: F.mse_loss(_g(3), torch.tensor(1.0)), SAME),
    ("mm names the argument", lambda: torch.mm(_g(2, 2), torch.ones(2, 2)),
     "but got mat2 is on cpu, different from other tensors on cuda:0"),
    ("conv module on the CPU, CUDA input", lambda: torch.nn.Conv1d(1, 2, 3)(_g(1, 1, 5)),
     "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same"),
    ("conv CUDA module, CPU input", lambda: torch.nn.Conv1d(1, 2, 3).cuda()(torch.ones(1, 1, 5)),
     "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same"),
    ("block_diag", lambda: torch.block_diag(_g(2, 2), torch.ones(2, 2)),
     "torch.block_diag: input tensors must all be on the same device"),
    # The GPU's take_along_dim checks first ("Expected tensor to have cpu Device"); here the gather it
    # runs raises (a composite over remainder.Scalar, whose wrapped scalar once broke the probe).
    ("take_along_dim CPU indices", lambda: torch.take_along_dim(_g(3, 4), torch.tensor([[0], [1], [2]]), dim=1),
     "but got index is on cpu"),
    ("index_select CPU self, CUDA index", lambda: torch.index_select(torch.ones(3), 0, torch.tensor([0], device="cuda")),
     "but got index is on cuda:0"),
]


def test_mixes_as_on_the_gpu():
    """One virtual-GPU session for all the rows (each a fresh call): cheap, and every row is asserted."""
    wrong = []
    with virtual_gpu(devices=1):
        for name, call, device in ALLOWED:
            try:
                res = call()
            except Exception as e:  # noqa: BLE001 - a false alarm is what this test looks for
                wrong.append(f"{name}: raised {e}")
                continue
            if device is not None and str(res.device) != device:
                wrong.append(f"{name}: result on {res.device}, GPU: {device}")
        for name, call, text in RAISES:
            try:
                call()
            except RuntimeError as e:
                if text not in str(e):
                    wrong.append(f"{name}: raised {e!s:.120}, GPU says {text!r}")
                continue
            wrong.append(f"{name}: allowed, GPU raises {text!r}")
    assert not wrong, "\n".join(wrong)


def test_rules_read_from_pytorchs_metadata():
    """The kind of each operator comes from native_functions.yaml as shipped in the torch wheel."""
    if not decide.entries():
        pytest.skip("this torch wheel ships no native_functions.yaml")
    aten = torch.ops.aten
    assert decide.kind_of(aten.add.Tensor)[0] == "iter"  # device_check: NoCheck  # TensorIterator
    assert decide.kind_of(aten.gcd.default)[0] == "exact"  # structured TensorIterator, default device check
    assert decide.kind_of(aten.mm.default) == ("exact", "wrapper_CUDA_mm")
    assert decide.kind_of(aten.index_select.default) == ("exact", "wrapper_CUDA__index_select")
    assert decide.kind_of(aten.allclose.default)[0] == "composite"
    assert decide.kind_of(aten._index_put_impl_.default)[0] == "iter"


def test_unmixed_calls_never_reach_the_probe(monkeypatch):
    """The rules run only for calls that mix devices: an all-CUDA program pays nothing for them."""
    def boom(*a, **k):
        raise AssertionError("probe used")

    monkeypatch.setattr(decide, "run_mixed", boom)
    with virtual_gpu(devices=1):
        x = _g(4, 4)
        y = (x @ x + 1).relu().sum()
        assert y.device.type == "cuda"
