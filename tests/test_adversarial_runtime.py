"""The runtime adversarial run (benchmarks/adversarial_runtime.py), small: one batch of a few generated
programs, each run on the virtual GPU before and after `devlint --fix` and with CUDA hidden after it, and
the judgement of its outcomes. `python benchmarks/adversarial_runtime.py --minutes 30` runs it for long.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import adversarial_runtime as harness

DONE = "x [2.0] torch.float32 (1,) cuda\n== exit 0\n"


def outcome(original=DONE, fixed=DONE, hidden=DONE, remaining=(), fixes=("DL001",)):
    return harness.Outcome("p", Counter(fixes), set(remaining), original, fixed, hidden)


def test_a_fix_that_changes_the_output_of_a_program_that_ran_is_a_failure():
    assert harness.judge(outcome(), None) == "ok"
    assert harness.judge(outcome(fixed=DONE.replace("cuda", "cpu")), None) == "changed"
    assert harness.judge(outcome(fixed="!! RuntimeError: boom\n"), None) == "changed"
    # nothing to compare when the original did not run to completion
    assert harness.judge(outcome(original="!! AttributeError: x\n", fixed="other\n"), None) == "original-fails"


def test_failing_with_cuda_hidden_is_a_failure_only_on_a_line_a_fix_wrote_and_no_claim_is_left():
    failed = "!! RuntimeError: Device index must not be negative\n"
    assert harness.judge(outcome(hidden=failed), True) == "hidden-fails"
    assert harness.judge(outcome(hidden=failed), None) == "hidden-fails"
    assert harness.judge(outcome(hidden=failed), False) == "missed"
    assert harness.judge(outcome(hidden=failed, fixes=()), None) == "missed"
    assert harness.judge(outcome(hidden=failed, remaining={"DL002"}), True) == "hidden-info"


def test_the_failing_line_is_found_in_the_traceback_and_compared_with_the_original(tmp_path):
    (tmp_path / "o").mkdir(), (tmp_path / "f").mkdir()
    (tmp_path / "o" / "main.py").write_text("import torch\nx = torch.ones(2).cuda()\ny = x.get_device()\n")
    fixed = tmp_path / "f" / "main.py"
    fixed.write_text("import torch\ndevice = 1\nx = torch.ones(2).to(device)\ny = x.get_device()\n")

    def err(line):
        return f'Traceback (most recent call last):\n  File "{fixed}", line {line}, in <module>\n  File "/lib/t.py", line 9\n'

    assert harness.failed_on_fixed_line(err(3), tmp_path / "o", tmp_path / "f") is True
    assert harness.failed_on_fixed_line(err(2), tmp_path / "o", tmp_path / "f") is True  # the inserted definition
    assert harness.failed_on_fixed_line(err(4), tmp_path / "o", tmp_path / "f") is False
    assert harness.failed_on_fixed_line('  File "/elsewhere/x.py", line 2\n', tmp_path / "o", tmp_path / "f") is None


def test_the_fix_report_is_read_per_program():
    stdout = ("fixed/p0003/main.py:5:5: DL002 `torch.load` without `map_location`\n\nFixed 3 errors:\n"
              "- fixed/p0001/main.py:\n    2 × DL001 (cuda-call)\n    1 × DL004 (hardcoded-device-string)\n")
    fixes, remaining = harness.parse_fix_output(stdout)
    assert fixes == {"p0001": Counter({"DL001": 2, "DL004": 1})}
    assert remaining == {"p0003": {"DL002"}}


@pytest.mark.slow
def test_one_small_batch_runs_and_no_safe_fix_changes_an_output(tmp_path):
    pytest.importorskip("torch")
    batch = harness.run_batch(seed=29, count=6, work=tmp_path)
    assert not batch.crash, batch.crash
    assert len(batch.outcomes) == 6
    assert sum(batch.verdicts[k] for k in ("ok", "changed", "hidden-fails", "original-fails", "hidden-info",
                                              "missed")) == 6
    assert batch.verdicts["fixed-programs"] > 0 and any(o.fixes for o in batch.outcomes)
    ran = [o for o in batch.outcomes if harness.completed(o.original)]
    assert ran and any(" cuda" in o.original for o in ran)  # they ran on the virtual GPU
    assert batch.verdicts["changed"] == 0 and batch.verdicts["hidden-fails"] == 0, [
        (o.name, o.original, o.fixed, o.hidden) for o in batch.outcomes if o.verdict in ("changed", "hidden-fails")]


def test_a_devlint_the_interpreter_cannot_import_is_a_crash_not_a_quiet_pass(tmp_path, monkeypatch):
    # `python -m devlint` from the batch's folder exits 1 without devlint installed: it read as "0 fixed"
    real = harness.python

    def python(cwd, *args, **kwargs):
        return real(cwd, *("devlint_not_installed" if a == "devlint" else a for a in args), **kwargs)

    monkeypatch.setattr(harness, "python", python)
    batch = harness.run_batch(seed=29, count=1, work=tmp_path)
    assert "No module named devlint_not_installed" in batch.crash


def test_the_real_gpu_is_refused_where_torch_sees_none():
    import subprocess

    done = subprocess.run([sys.executable, str(Path(harness.__file__)), "--real-gpu", "--minutes", "0"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 2
    assert "--real-gpu: torch sees no GPU here" in done.stderr
