"""`--gpu-memory`: the virtual devices account the memory of their tensors (issue 25, optional part)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from devlint.cli import main

torch = pytest.importorskip("torch")

from devlint.virtual_gpu import virtual_gpu  # noqa: E402

MiB = 2**20


def test_memory_is_accounted_and_a_program_that_does_not_fit_raises():
    with virtual_gpu(devices=1, memory="64MiB"):
        assert torch.cuda.memory_allocated() == 0
        assert torch.cuda.mem_get_info() == (64 * MiB, 64 * MiB)
        assert torch.cuda.get_device_properties(0).total_memory == 64 * MiB
        # the caching allocator's 512-byte rounding: Linear(1000, 1000) is 4,000,000 + 4,000 bytes
        m = torch.nn.Linear(1000, 1000).cuda()
        assert torch.cuda.memory_allocated() == 4_000_256 + 4_096
        a = torch.empty(16 * MiB, dtype=torch.uint8, device="cuda")
        view = a[:10]  # a view shares the storage: counted once
        assert torch.cuda.memory_allocated() == 4_004_352 + 16 * MiB
        cpu = torch.empty(40 * MiB, dtype=torch.uint8)  # CPU tensors are not the GPU's
        assert torch.cuda.memory_allocated() == 4_004_352 + 16 * MiB
        del a, view
        assert torch.cuda.memory_allocated() == 4_004_352
        assert torch.cuda.max_memory_allocated() == 4_004_352 + 16 * MiB
        torch.cuda.reset_peak_memory_stats()
        assert torch.cuda.max_memory_allocated() == 4_004_352
        with pytest.raises(torch.OutOfMemoryError, match="CUDA out of memory. Tried to allocate 70.00 MiB"):
            torch.empty(70 * MiB, dtype=torch.uint8, device="cuda")
        kept = cpu.cuda()  # 40 MiB fits beside the model ...
        assert kept.is_cuda
        with pytest.raises(torch.OutOfMemoryError):
            cpu.cuda()  # ... a second copy does not
        del kept
        cpu.cuda()  # a copy nobody keeps is freed: it fits again
        del m


def test_gpu_memory_option_checks_its_input():
    bad = CliRunner().invoke(main, ["run", "--virtual-gpu", "--gpu-memory", "lots", "x.py"])
    assert bad.exit_code == 2 and "not a memory size: 'lots'" in bad.output
    alone = CliRunner().invoke(main, ["run", "--gpu-memory", "16GB", "x.py"])
    assert alone.exit_code == 2 and "--gpu-memory needs --virtual-gpu" in alone.output
