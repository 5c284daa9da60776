"""devlint's safe fixes, proved on the virtual GPU: same output there, and the fixed program runs without CUDA.

Each program runs on the GPU as written (under `devlint run --virtual-gpu`); after `devlint --fix`
(safe fixes only) it must print the same under the virtual GPU and also run on the plain CPU build
(CUDA hidden). A fix that changes what a program does under the virtual GPU is not safe.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

PROGRAMS = {
    "cuda_calls": '''
        import torch

        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1).cuda()
        x = torch.ones(2, 3).cuda()
        y = model(x)
        print(round(y.sum().item(), 4), y.is_cuda == torch.cuda.is_available())
    ''',
    "load_without_map_location": '''
        import sys
        import torch

        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1).cuda()
        torch.save(model.state_dict(), sys.argv[1])
        state = torch.load(sys.argv[1])
        model.load_state_dict(state)
        print(round(model(torch.ones(1, 3).cuda()).sum().item(), 4))
    ''',
    "legacy_type_and_optimiser": '''
        import torch

        idx = torch.cuda.LongTensor([0, 2])
        x = torch.arange(4.0).cuda()
        w = torch.nn.Parameter(torch.ones(4).cuda())
        opt = torch.optim.SGD([w], lr=0.5)
        for _ in range(2):
            loss = ((x * w)[idx] ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print([round(v, 4) for v in w.tolist()], x[idx].tolist())
    ''',
    # DOMAIN.md (seen on an H100): a class whose cuda() override moves a plain tensor attribute breaks
    # on the GPU once `.cuda()` becomes `.to(device)`.
    "cuda_override_moves_plain_attribute": '''
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(2, 2)
                self.mask = torch.ones(2)

            def cuda(self, device=None):
                self.mask = self.mask.cuda(device)
                return super().cuda(device)

            def forward(self, x):
                return self.lin(x) * self.mask

        torch.manual_seed(0)
        net = Net().cuda()
        print(round(net(torch.ones(1, 2).cuda()).sum().item(), 4))
    ''',
}

# Programs where a rewrite would change what the GPU run does: the fix must not be safe, so after a
# safe --fix the finding remains (exit 1) and the program still does on the virtual GPU what it did.
UNSAFE_REWRITES = {
    # `.to(device)` would skip the class's cuda() override: the crash the H100 showed.
    "cuda_override_moves_plain_attribute",
}

_ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"}


def _run(args, cwd, env=_ENV):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=240)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_safe_fix_keeps_virtual_gpu_output_and_runs_without_cuda(name, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PROGRAMS[name]).lstrip())
    before = _run(["-m", "devlint", "run", "--virtual-gpu", "prog.py", "before.pt"], tmp_path)
    assert before.returncode == 0, f"the original must run on the (virtual) GPU:\n{before.stderr}"

    fixed = _run(["-m", "devlint", "--fix", "--no-cache", "--isolated", "prog.py"], tmp_path)
    if name in UNSAFE_REWRITES:
        assert fixed.returncode == 1 and "--unsafe-fixes" in fixed.stdout, fixed.stdout + fixed.stderr
    else:
        assert fixed.returncode == 0, f"every finding should have a safe fix here:\n{fixed.stdout}{fixed.stderr}"
    assert prog.read_text() != textwrap.dedent(PROGRAMS[name]).lstrip()

    after = _run(["-m", "devlint", "run", "--virtual-gpu", "prog.py", "after.pt"], tmp_path)
    assert after.returncode == 0, f"the fix broke the program on the (virtual) GPU:\n{after.stderr}"
    assert after.stdout == before.stdout

    if name in UNSAFE_REWRITES:
        return  # a `.cuda()` is left for the author: it still needs CUDA
    hidden = _run(["prog.py", "hidden.pt"], tmp_path, env={**_ENV, "CUDA_VISIBLE_DEVICES": ""})
    assert hidden.returncode == 0, f"the fixed program must run without CUDA:\n{hidden.stderr}"
