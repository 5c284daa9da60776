"""Where DL018 (move-after-creation), DL016 (get-device-as-index) meet DL001 (cuda-call) and DL003
(discarded-tensor-move) on one call: one finding each bug, and fixes that converge."""

from __future__ import annotations

from tests.helpers import codes, fix

DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def test_an_unguarded_cuda_factory_is_dl001s_then_dl018_finishes_the_fix():
    source = "import torch\nx = torch.zeros(3).cuda()\n"
    assert codes(source) == [(2, "DL001")]  # one finding, not two fixes fighting over one call
    assert codes(source, select="DL018") == []
    fixed = fix(source)
    assert fixed == "import torch\n\n" + DEVICE + "x = torch.zeros(3, device=device)\n"
    assert codes(fixed) == []


def test_a_guarded_cuda_factory_is_dl018s():
    source = "import torch\nif torch.cuda.is_available():\n    x = torch.zeros(3).cuda()\n"
    assert codes(source) == [(3, "DL018")]
    assert fix(source) == "import torch\nif torch.cuda.is_available():\n    x = torch.zeros(3, device=\"cuda\")\n"


def test_a_discarded_move_of_a_factory_is_nobodys_finding():
    # a temporary no name holds (a warm-up): not DL003's (issue 23), and not DL018's either
    assert codes("import torch\ntorch.zeros(3).to(device)\n") == []


def test_cuda_of_get_device_keeps_the_tensors_device_even_with_unsafe_fixes():
    source = "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return y.cuda(x.get_device())\n"
    assert sorted(code for _, code in codes(source)) == ["DL001", "DL016"]
    expected = "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return y.to(x.device)\n"
    assert fix(source) == expected  # DL001's fix drops the index: unsafe, so DL016's safe one applies
    assert fix(source, unsafe=True) == expected  # DL016's finding starts first: its fix wins the overlap
