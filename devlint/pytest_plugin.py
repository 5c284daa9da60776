"""pytest plugin: `pytest --virtual-gpu [--virtual-gpu-devices N]` runs a test suite on the virtual GPU.

Registered by the package under the `pytest11` entry point `devlint`; it does nothing unless
`--virtual-gpu` is given (and only then imports torch). The virtual GPU is on for the whole session,
from configuration to the end, so that test modules imported at collection see it too. A test that
fails with a device error gets a "devlint virtual GPU" section naming the user's file and line, the
two devices and, when one exists, the devlint rule that covers the pattern.
"""

from __future__ import annotations

import contextlib

import pytest

_STACK_KEY = "_devlint_virtual_gpu_stack"


def pytest_addoption(parser):
    group = parser.getgroup("devlint", "devlint virtual GPU")
    group.addoption("--virtual-gpu", action="store_true", default=False,
                    help="Run the tests on devlint's virtual GPU (CUDA devices simulated on the CPU build).")
    group.addoption("--virtual-gpu-devices", type=int, default=1, metavar="N",
                    help="Number of virtual CUDA devices [default: 1].")
    group.addoption("--virtual-gpu-memory", default=None, metavar="SIZE",
                    help="Memory of each virtual device (e.g. 16GiB): beyond it, torch.OutOfMemoryError.")


def pytest_configure(config):
    if not config.getoption("virtual_gpu", default=False):
        return
    try:
        from devlint.virtual_gpu import virtual_gpu
    except ImportError as exc:
        raise pytest.UsageError(f"--virtual-gpu needs PyTorch (the CPU build is enough): {exc}") from None

    memory = config.getoption("virtual_gpu_memory", default=None)
    if memory is not None:
        from devlint.memory_size import parse_memory

        if parse_memory(memory) is None:
            raise pytest.UsageError(f"--virtual-gpu-memory: not a memory size: {memory!r} (examples: 16GiB, 512MiB)")
        memory = parse_memory(memory)
    stack = contextlib.ExitStack()
    stack.enter_context(virtual_gpu(devices=config.getoption("virtual_gpu_devices"), memory=memory))
    setattr(config, _STACK_KEY, stack)


def pytest_unconfigure(config):
    stack = getattr(config, _STACK_KEY, None)
    if stack is not None:
        delattr(config, _STACK_KEY)
        stack.close()


def pytest_report_header(config):
    if getattr(config, _STACK_KEY, None) is not None:
        return f"devlint virtual GPU: {config.getoption('virtual_gpu_devices')} CUDA device(s) on the CPU"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.excinfo is None or getattr(item.config, _STACK_KEY, None) is None:
        return
    from devlint.virtual_gpu_runner import device_error_report

    text = device_error_report(call.excinfo.value)
    if text:
        report = outcome.get_result()
        report.sections.append(("devlint virtual GPU", text))
