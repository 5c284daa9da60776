"""The runtime part of the adversarial run (issue 29): random RUNNABLE programs of the shapes of issue 29
and of every default rule with a fix (benchmarks/runtime_programs.py, runtime_shapes.py), each run before
and after `devlint --fix` (safe fixes only), for a given number of minutes.

    python benchmarks/adversarial_runtime.py --minutes 30 [--seed S] [--batch 40] [--logs DIR] [--real-gpu]

Per batch: one `devlint --fix` over copies of all its programs, one `devlint run --virtual-gpu` that runs
every original and every fixed program (a forked child each, so that each starts from the same state),
and one plain run of the fixed programs with CUDA hidden. The properties:
- an original that ran to completion on the virtual GPU prints exactly the same after the fix
  (a safe fix that changes a program's output is a failure);
- a fixed program that no longer has a finding that claims a CUDA-less failure runs with CUDA hidden
  (when the fix changed it; one that fails with CUDA hidden and had no such finding to begin with is
  counted as information: a finding devlint does not make, not a fix that breaks);
- devlint itself never ends with an internal error or a traceback.
Failing programs (original, fixed, both outputs) are kept under --logs.
"""

from __future__ import annotations

import argparse
import difflib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from runtime_programs import Names, plain
from runtime_shapes import SHAPES

# Rules whose finding says the line fails where CUDA is missing (the others fail on the GPU, or cost time).
CUDA_LESS = {"DL001", "DL002", "DL004", "DL005", "DL006", "DL007", "DL015", "DL016", "DL017"}
PROGRAM_TIMEOUT = 120  # seconds; a hang is reported as the program's output
QUIET = {"PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}

# Runs each `DIR::OUT` of argv in a forked child: cwd and sys.path[0] are DIR, stdout and stderr go to
# OUT.out and OUT.err, the last stdout line says how it ended. Forking after torch is imported costs
# milliseconds where a new interpreter costs seconds, and each program starts from the same state.
DRIVER = r'''
import os, random, runpy, sys, time, traceback
import torch

torch.set_num_threads(1)
for spec in sys.argv[1:]:
    folder, out = spec.split("::")
    pid = os.fork()
    if pid == 0:
        code = 0
        with open(out + ".out", "w") as o, open(out + ".err", "w") as e:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(o.fileno(), 1); os.dup2(e.fileno(), 2)
            try:
                os.chdir(folder)
                sys.path.insert(0, os.path.abspath("."))
                sys.argv = ["main.py"]
                random.seed(0)
                torch.manual_seed(0)
                runpy.run_path(os.path.abspath("main.py"), run_name="__main__")
                print("== exit 0")
            except SystemExit as exc:
                print(f"== exit {exc.code}")
            except BaseException as exc:
                traceback.print_exc()
                first = (str(exc).splitlines() or [""])[0]
                print(f"!! {type(exc).__name__}: {first}")
                code = 1
            sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    deadline = time.monotonic() + TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            status = -1
            break
        time.sleep(0.01)
    if status and not os.WIFEXITED(status):
        with open(out + ".out", "a") as o:
            o.write("!! timeout\n" if status == -1 else f"!! signal {os.WTERMSIG(status)}\n")
'''.replace("TIMEOUT", str(PROGRAM_TIMEOUT))


def generate(seed: int, index: int) -> dict[str, str]:
    """Program `index` of batch `seed`: a project of file name -> text, `main.py` the one to run."""
    rng = random.Random(f"{seed}:{index}")
    names = Names(rng)
    if rng.random() < 0.5:
        return plain(rng, names)
    return rng.choice(SHAPES)(rng, names)


@dataclass
class Outcome:
    """What happened to one program."""

    name: str
    fixes: Counter = field(default_factory=Counter)
    remaining: set = field(default_factory=set)  # codes still found after --fix
    original: str = ""
    fixed: str = ""
    hidden: str = ""
    verdict: str = ""


def completed(output: str) -> bool:
    return output.rstrip().endswith("== exit 0")


def judge(o: Outcome, fix_failed: bool | None) -> str:
    """"ok", "changed" (a safe fix changed the output), "hidden-fails" (with CUDA hidden the fixed program
    fails on a line a fix wrote, and no CUDA-less finding is left), "original-fails" (nothing to compare),
    or, as information only, "hidden-info" (fails with CUDA hidden where a CUDA-less finding remains) and
    "missed" (fails with CUDA hidden on a line no fix touched and no finding claims: a finding devlint does
    not make, not a fix that breaks). `fix_failed`: whether the hidden run failed on a line a fix wrote
    (None when no line of the program's files is in its traceback)."""
    if completed(o.original) and o.fixed != o.original:
        return "changed"
    if not completed(o.hidden):
        if o.remaining & CUDA_LESS:
            return "hidden-info"
        return "missed" if fix_failed is False else "hidden-fails" if o.fixes else "missed"
    return "ok" if completed(o.original) else "original-fails"


FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+)', re.MULTILINE)


def failed_on_fixed_line(err: str, original: Path, fixed: Path) -> bool | None:
    """Whether the innermost frame of `err` (a traceback) in the program's files is a line that the fix
    changed or inserted; None when no frame is in the program's files."""
    frames = [(Path(m["file"]), int(m["line"])) for m in FRAME.finditer(err)
              if Path(m["file"]).resolve().is_relative_to(fixed.resolve())]
    if not frames:
        return None
    path, line = frames[-1]
    before = original / path.resolve().relative_to(fixed.resolve())
    old = before.read_text(encoding="utf-8").splitlines() if before.exists() else []
    new = path.read_text(encoding="utf-8").splitlines()
    touched = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            touched.update(range(j1 + 1, j2 + 1))
    return line in touched


FIXED_HEAD = re.compile(r"^- (?P<path>.+):$")
FIXED_ROW = re.compile(r"^\s+(?P<n>\d+) × (?P<code>DL\d+)")
FINDING = re.compile(r"^(?P<path>[^\s:]+):\d+:\d+: (?P<code>DL\d+) ")


def parse_fix_output(stdout: str) -> tuple[dict[str, Counter], dict[str, set]]:
    """Fixes applied per program folder and codes remaining per program folder, from `--show-fixes`."""
    fixes: dict[str, Counter] = {}
    remaining: dict[str, set] = {}
    current = None
    for line in stdout.splitlines():
        if m := FINDING.match(line):
            remaining.setdefault(Path(m["path"]).parts[1], set()).add(m["code"])
        elif m := FIXED_HEAD.match(line):
            current = Path(m["path"]).parts[1]
        elif current and (m := FIXED_ROW.match(line)):
            fixes.setdefault(current, Counter())[m["code"]] += int(m["n"])
    return fixes, remaining


def python(cwd: Path, *args: str, hide_cuda: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, **QUIET, **({"CUDA_VISIBLE_DEVICES": ""} if hide_cuda else {})}
    return subprocess.run([sys.executable, *args], check=False, cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=PROGRAM_TIMEOUT * 60)


@dataclass
class Batch:
    seed: int
    outcomes: list[Outcome]
    verdicts: Counter
    crash: str = ""  # devlint's traceback or internal error, if any


def run_batch(seed: int, count: int, work: Path, real_gpu: bool = False) -> Batch:
    """Generate `count` programs, fix copies, run originals and fixed programs (on the virtual GPU, or on
    this machine's own GPU with `real_gpu`); judge each."""
    orig, fixed, results = work / "orig", work / "fixed", work / "results"
    for folder in (orig, results):
        folder.mkdir(parents=True)
    names = [f"p{i:04d}" for i in range(count)]
    for i, name in enumerate(names):
        for file, text in generate(seed, i).items():
            (orig / name / file).parent.mkdir(parents=True, exist_ok=True)
            (orig / name / file).write_text(text, encoding="utf-8")
        (orig / name / "pyproject.toml").write_text("")  # each program is its own project
    shutil.copytree(orig, fixed)
    fix = python(work, "-m", "devlint", "--no-cache", "--isolated", "--fix", "--show-fixes", "fixed")
    crash = ""
    said = fix.stdout + fix.stderr
    # (devlint not importable by this interpreter exits 1 too: every batch would pass without a fix)
    if fix.returncode not in (0, 1) or any(sign in said for sign in ("Traceback", "internal error", "No module named")):
        crash = f"devlint --fix exit {fix.returncode}\n{fix.stdout}\n{fix.stderr}"
    fixes, remaining = parse_fix_output(fix.stdout)
    (work / "driver.py").write_text(DRIVER)
    specs = [f"{root / n}::{results / f'{kind}-{n}'}" for kind, root in (("original", orig), ("fixed", fixed))
             for n in names]
    if real_gpu:
        python(work, "driver.py", *specs)
    else:
        python(work, "-m", "devlint", "run", "--virtual-gpu", "driver.py", *specs)
    python(work, "driver.py", *[f"{fixed / n}::{results / f'hidden-{n}'}" for n in names], hide_cuda=True)
    outcomes, verdicts = [], Counter()
    for n in names:
        def read(kind: str, n: str = n) -> str:
            path = results / f"{kind}-{n}.out"
            return path.read_text(errors="replace") if path.exists() else "!! no output\n"
        o = Outcome(n, fixes.get(n, Counter()), remaining.get(n, set()), read("original"), read("fixed"),
                    read("hidden"))
        changed = any((orig / n / f.name).read_bytes() != f.read_bytes() for f in (fixed / n).iterdir()
                      if f.is_file() and (orig / n / f.name).exists())
        err = results / f"hidden-{n}.err"
        on_fix = failed_on_fixed_line(err.read_text(errors="replace"), orig / n, fixed / n) if err.exists() else None
        verdict = judge(o, on_fix)
        verdicts[verdict] += 1
        verdicts["fixed-programs"] += changed
        outcomes.append(o)
        o.verdict = verdict
    return Batch(seed, outcomes, verdicts, crash)


def keep(batch: Batch, work: Path, logs: Path) -> None:
    """The failing programs of a batch (both versions, all outputs) under `logs`."""
    for o in batch.outcomes:
        if o.verdict not in ("changed", "hidden-fails", "missed"):
            continue
        dest = logs / f"{o.verdict}-seed{batch.seed}-{o.name}"
        shutil.copytree(work / "orig" / o.name, dest / "original", dirs_exist_ok=True)
        shutil.copytree(work / "fixed" / o.name, dest / "fixed", dirs_exist_ok=True)
        for kind in ("original", "fixed", "hidden"):
            for ext in ("out", "err"):
                src = work / "results" / f"{kind}-{o.name}.{ext}"
                if src.exists():
                    shutil.copy(src, dest / f"{kind}.{ext}")
    if batch.crash:
        (logs / f"crash-seed{batch.seed}.log").write_text(batch.crash)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--seed", type=int, default=None, help="first batch's seed (default: random)")
    parser.add_argument("--batch", type=int, default=40, help="programs per batch")
    parser.add_argument("--logs", type=Path, default=Path("adversarial-runtime-logs"))
    parser.add_argument("--real-gpu", action="store_true",
                        help="run the originals and the fixed programs on this machine's GPU, not the virtual one")
    args = parser.parse_args()
    if args.real_gpu and python(Path.cwd(), "-c", "import torch; assert torch.cuda.is_available()").returncode:
        parser.error("--real-gpu: torch sees no GPU here")
    args.logs.mkdir(parents=True, exist_ok=True)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    first_seed = seed
    started = time.monotonic()
    deadline = started + args.minutes * 60
    totals, fixes, crashes, batches = Counter(), Counter(), 0, 0
    while batches == 0 or time.monotonic() < deadline:
        with tempfile.TemporaryDirectory(prefix="devlint-advrt-") as tmp:
            batch = run_batch(seed, args.batch, Path(tmp), args.real_gpu)
            keep(batch, Path(tmp), args.logs)
        batches += 1
        crashes += bool(batch.crash)
        totals.update(batch.verdicts)
        for o in batch.outcomes:
            fixes.update(o.fixes)
        bad = {k: batch.verdicts[k] for k in ("changed", "hidden-fails") if batch.verdicts[k]}
        print(f"[{(time.monotonic() - started) / 60:5.1f} min] batch {batches} seed {seed}: "
              f"{args.batch} programs, {batch.verdicts['fixed-programs']} fixed"
              f"{', ' + str(bad) if bad else ''}{', devlint crashed' if batch.crash else ''}", flush=True)
        seed += 1
    programs = batches * args.batch
    print(f"\n{batches} batches (seeds {first_seed}-{seed - 1}), {programs} programs in "
          f"{(time.monotonic() - started) / 60:.1f} min; {totals['fixed-programs']} changed by --fix, "
          f"{sum(fixes.values())} safe fixes applied ({', '.join(f'{c}: {n}' for c, n in sorted(fixes.items()))})")
    print(f"originals that ran on the {'GPU' if args.real_gpu else 'virtual GPU'}: "
          f"{programs - totals['original-fails']}; "
          f"output changed by a safe fix: {totals['changed']}; fixed programs failing with CUDA hidden: "
          f"{totals['hidden-fails']}; devlint crashes: {crashes}")
    print(f"info: failing with CUDA hidden where a CUDA-less finding remains: {totals['hidden-info']}; "
          f"failing with CUDA hidden with no finding and no fix (missed): {totals['missed']}")
    if totals["changed"] or totals["hidden-fails"] or crashes or totals["missed"]:
        print(f"programs kept (failures, and the missed ones as information): {args.logs}/")
    return 1 if totals["changed"] or totals["hidden-fails"] or crashes else 0


if __name__ == "__main__":
    sys.exit(main())
