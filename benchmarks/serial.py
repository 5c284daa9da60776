"""How much of a devlint run is serial, and how a warm and a one-file run compare (a script, not a test).

    python benchmarks/serial.py --corpus DIR
    /work/cmpvenv/bin/python benchmarks/serial.py --corpus DIR --tree OLD --tree NEW

For each tree of devlint (or the installed devlint when no --tree is given), side by side with
`ruff check --select F --no-cache` and `torchfix --select ALL` in the same run:

- cold (`--no-cache`) with -j 1 and -j N: wall time, the CPU time of the whole process tree, and the
  CPU time of devlint's own (parent) process, which is the serial work measured directly (start-up,
  discovery, what it does before its workers start and after they end); with -j 1 the parent does
  everything. The fit `time = serial + parallel / cores` is given twice: from the wall times (noise on
  a busy machine) and from CPU times, taking a -j N run to last its parent's CPU time plus its
  workers' CPU time shared among N cores (what it would take on N idle cores), which does not depend
  on the load. Work every worker repeats shows up as serial there too, as it should. Then the
  page faults of each run's processes and their system time: a count that does not drift with the
  machine's speed, where work a -j N run adds to -j 1's shows when the times cannot resolve it.
- side by side: the corpus in N parts (every Nth file) checked with -j 1, one after the other and then
  all at once, CPU times. N processes at once run slower on a machine whose cores share
  caches, memory and a hypervisor's time: the CPU fit counts that slowdown of the -j N run's workers
  as serial work, though no change of devlint removes it; it is given apart (`--no-side-by-side`
  skips it), and the fit less it.
- with --instructions, the cold runs once more under valgrind's cachegrind: each process's
  instructions, and the fit from them (converted to seconds at the -j 1 run's rate). A count does
  not move with the host's speed, as every time above does; it leaves out what the kernel does
  (page faults) and what cache misses cost.
- warm (cache filled, nothing changed: a replay, devlint.replay), warm without a replay (`-o`, which
  is never recorded: every result from the result cache) and one file (`--no-cache`, pre-commit
  style): the best of --repeat runs, wall and CPU time.

A tree runs from its folder (PYTHONPATH) under this interpreter, which then must not have devlint
installed (as benchmarks/compare_trees.py; /work/cmpvenv is such an interpreter). CPU times are
user + system seconds from getrusage, so they hold on a loaded machine where wall times do not.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import PEERS_VENV  # noqa: E402
from corpus import python_files, torch_sources  # noqa: E402

# Runs devlint as `python -m devlint` does, and writes its own (parent-only) CPU seconds to the file
# named by DEVLINT_BENCH_CPU when it exits. Forked workers leave through os._exit: they write nothing.
# With DEVLINT_BENCH_TIMELINE, each worker writes to that file when it is ready to check (its first
# chunk imports the checker first, timed apart) and when each chunk ends, and devlint when it exits.
_PROBE = (
    "import atexit, os, resource, runpy, sys, time\n"
    "_timeline = os.environ.pop('DEVLINT_BENCH_TIMELINE', None)\n"
    "def _mark(kind):\n"
    "    with open(_timeline, 'a') as handle: handle.write(f'{os.getpid()} {kind} {time.time()!r}\\n')\n"
    "def _report(out=os.environ.pop('DEVLINT_BENCH_CPU')):\n"
    "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    with open(out, 'w') as handle: handle.write(str(usage.ru_utime + usage.ru_stime))\n"
    "    if _timeline: _mark('exit')\n"
    "atexit.register(_report)\n"
    "if os.environ.pop('DEVLINT_BENCH_STOP_AT_FORK', None):\n"
    "    import devlint.runner as _forking\n"
    "    if hasattr(_forking, '_run_pool'):  # (where a -j N run forks its workers)\n"
    "        _forking._run_pool = lambda *args, **kwargs: os._exit(0)\n"
    "if _timeline:\n"
    "    import devlint.runner as _runner\n"
    "    _checked = _runner._check_chunk\n"
    "    def _check_chunk(paths, config, *args, **kwargs):\n"
    "        if not getattr(_check_chunk, 'ready', False):\n"
    "            if hasattr(_runner, '_import_checker'):  # (older trees import it at their first file)\n"
    "                _runner._import_checker(config)\n"
    "            _check_chunk.ready = True\n"
    "            _mark('ready')\n"
    "        try:\n"
    "            return _checked(paths, config, *args, **kwargs)\n"
    "        finally:\n"
    "            _mark('chunk')\n"
    "    _check_chunk.__module__, _check_chunk.__qualname__ = 'devlint.runner', '_check_chunk'\n"
    "    _runner._check_chunk = _check_chunk\n"
    "sys.argv[0] = 'devlint'\n"
    "runpy.run_module('devlint', run_name='__main__', alter_sys=True)\n"
)


class Run:
    def __init__(self, wall: float, cpu: float, parent: float | None, code: int, output: str,
                 idle: float | None = None, faults: int = 0, system: float = 0.0) -> None:
        self.wall, self.cpu, self.parent, self.code, self.output = wall, cpu, parent, code, output
        # page faults of every process (a count: it does not drift with the machine's speed, as CPU
        # time does) and their system time: memory mapped again and again shows there (devlint.frame_room)
        self.faults, self.system = faults, system
        # (a -j N run's timeline) the part of the run that was not N workers checking: wall time less
        # the workers' time from ready to their last chunk's end, shared among them
        self.idle = idle
        self.phases: tuple[float, ...] | None = None  # (a -j N run's timeline: see _phases)


def run(command: list[str], env: dict | None = None, cwd: str | None = None, timeline: bool = False,
        cores: int | None = None) -> Run:
    """One run: wall seconds, CPU seconds of every process it started, and (devlint) its own. `cores`:
    run on the first that many of this process's cores only (as `taskset`)."""
    with tempfile.NamedTemporaryFile("r", suffix=".cpu") as report, \
            tempfile.NamedTemporaryFile("r", suffix=".timeline") as marks:
        env = dict(env or os.environ, DEVLINT_BENCH_CPU=report.name)
        if timeline:
            env["DEVLINT_BENCH_TIMELINE"] = marks.name
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        launched = time.time()
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False,
                              preexec_fn=None if cores is None else _only_cores(cores))
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        text = report.read().strip()
        text_marks = marks.read() if timeline else ""
        idle = _idle(text_marks, launched) if timeline else None
    cpu = cpu_between(before, after)
    result = Run(wall, cpu, float(text) if text else None, done.returncode, done.stdout + done.stderr, idle,
                 after.ru_minflt - before.ru_minflt, after.ru_stime - before.ru_stime)
    result.phases = _phases(text_marks, launched) if timeline else None
    return result


def _only_cores(count: int):
    chosen = sorted(os.sched_getaffinity(0))[:count]
    return lambda: os.sched_setaffinity(0, chosen)


def _read_marks(marks: str) -> tuple[dict[str, float], dict[str, float], float | None]:
    """Each worker's `ready` time, each worker's last chunk's end, and devlint's exit (see _PROBE)."""
    ready: dict[str, float] = {}
    last: dict[str, float] = {}
    ended = None
    for line in marks.splitlines():
        pid, kind, when = line.split()
        if kind == "ready":
            ready[pid] = float(when)
        elif kind == "chunk":
            last[pid] = float(when)
        elif kind == "exit":
            ended = float(when)
    return ready, last, ended


def _phases(marks: str, launched: float) -> tuple[float, ...] | None:
    """Seconds from launch to: the first worker ready, the last ready, the first worker's last chunk
    done, the last worker's, and devlint's exit: where a -j N run's serial part lies (start, import,
    the tail of uneven work, the end)."""
    ready, last, ended = _read_marks(marks)
    if ended is None or not ready or not last:
        return None
    return tuple(round(t - launched, 3) for t in
                 (min(ready.values()), max(ready.values()), min(last.values()), max(last.values()), ended))


def _idle(marks: str, launched: float) -> float | None:
    """From the marks of a -j N run: its time from launch to exit, less the time each worker worked
    (ready to its last chunk's end) shared among the workers. What a run on N idle cores cannot do in
    parallel: the start before the workers are ready, their import, the tail after the first worker
    ran out of work, the end. Measured within one run, it does not drift with the machine's speed."""
    ready, last, ended = _read_marks(marks)
    if ended is None or not ready:
        return None
    working = sum(last[pid] - ready[pid] for pid in ready if pid in last)
    return (ended - launched) - working / len(ready)


def at_once(commands: list[list[str]], env: dict, cwd: str) -> float:
    """The CPU seconds of `commands` run at the same time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    running = [subprocess.Popen(c, env=dict(env, DEVLINT_BENCH_CPU=os.devnull), cwd=cwd,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in commands]
    for each in running:
        each.wait()
    return cpu_between(before, resource.getrusage(resource.RUSAGE_CHILDREN))


def cpu_between(before, after) -> float:
    """User and system seconds between two getrusage readings."""
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def side_by_side(tree: "Tree", folder: str, files: list[str], parts: int, repeat: int) -> tuple[float, float]:
    """CPU seconds of -j 1 checks of the corpus in `parts` parts run one after the other, and all at
    once (each the least of `repeat`, taking turns)."""
    shares = [[os.path.relpath(p, folder) for p in files[start::parts]] for start in range(parts)]
    commands = [tree.command("--no-cache", "-j", "1", *share) for share in shares]
    apart, together = [], []
    for _ in range(max(1, repeat)):
        apart.append(sum(run(c, env=tree.env, cwd=folder).cpu for c in commands))
        together.append(at_once(commands, tree.env, folder))
    return min(apart), min(together)


def best(repeat: int, command: list[str], **kwargs) -> Run:
    """The fastest of `repeat` runs by wall time; its CPU time is the least seen (the least disturbed)."""
    return fastest_of([run(command, **kwargs) for _ in range(max(1, repeat))])


def fastest_of(runs: list[Run]) -> Run:
    fastest = min(runs, key=lambda r: r.wall)
    fastest.cpu = min(r.cpu for r in runs)
    idles = [r.idle for r in runs if r.idle is not None]
    fastest.idle = min(idles) if idles else None
    parents = [r.parent for r in runs if r.parent is not None]
    fastest.parent = min(parents) if parents else None
    fastest.faults = min(r.faults for r in runs)
    fastest.system = min(r.system for r in runs)
    return fastest


class Tree:
    """How to run one devlint: the installed one (tree None), or the one in a source folder."""

    def __init__(self, tree: str | None) -> None:
        self.tree = os.path.abspath(tree) if tree else None
        self.name = self.tree or "installed"
        # Compiled modules go to a folder of their own (no tree is written to), filled by a first run:
        # as an installed devlint, nothing is compiled again on each run.
        self.env = dict(os.environ, PYTHONPYCACHEPREFIX=os.path.join(tempfile.gettempdir(), "devlint-bench-pyc"))
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        if self.tree:
            # the tree first; what the interpreter was given (where LibCST was installed) after it
            self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [self.tree, os.environ.get("PYTHONPATH")]))
            where = "import devlint, os; print(os.path.dirname(os.path.dirname(devlint.__file__)))"
            probe = subprocess.run([sys.executable, "-c", where], env=self.env, cwd="/",
                                   capture_output=True, text=True, check=True)
            if os.path.realpath(probe.stdout.strip()) != os.path.realpath(self.tree):
                sys.exit(f"{sys.executable} imports devlint from {probe.stdout.strip()}, not {self.tree}: "
                         "use a venv without devlint")

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-c", _PROBE, "--exit-zero", "-q", *args]


def fit(one: float, many: float, jobs: int) -> tuple[float, float]:
    """(serial, parallel) of `time = serial + parallel / cores` through (1, one) and (jobs, many)."""
    serial = (jobs * many - one) / (jobs - 1)
    return serial, one - serial


def cpu_fit(one: Run, many: Run, jobs: int) -> tuple[float, float]:
    """The fit from CPU times: on N idle cores a -j N run lasts its parent's CPU time plus its workers'
    shared among them."""
    parent = many.parent or 0.0
    return fit(one.cpu, parent + (many.cpu - parent) / jobs, jobs)


def paired_fits(ones: list[Run], manys: list[Run], jobs: int):
    """The fit from each -j 1 run and the -j N run right after it: (median, lowest, highest), from wall
    times and from CPU times; None for fewer than 3 pairs. The fit above takes the fastest of each
    kind, which may come minutes apart: this machine's speed drifts by a few percent over minutes,
    and twice the -j N time less the -j 1 time turns 2% of a 5 s run into 0.1 s of "serial" work.
    A pair's runs are seconds apart, and the median drops the pairs a busy moment split."""
    if len(ones) < 3:
        return None
    walls = sorted(fit(one.wall, many.wall, jobs)[0] for one, many in zip(ones, manys))
    cpus = sorted(cpu_fit(one, many, jobs)[0] for one, many in zip(ones, manys))
    return tuple((statistics.median(values), values[0], values[-1]) for values in (walls, cpus))


def instruction_fit(tree: "Tree", folder: str, jobs: int, one_cpu: float):
    """The cold runs again under valgrind's cachegrind, which counts each process's instructions (its
    forked workers' too) and does not drift with the host as times do: (-j 1's count, the -j N
    parent's, its workers' together, the fit `(N x (parent + workers / N) - one) / (N - 1)` in
    instructions, and that in seconds at the -j 1 run's own rate: its count over `one_cpu`). None
    without valgrind. User-space instructions only: page faults and cache misses are not in it. A
    third run stops the -j N parent where it would fork: its count there is taken off each worker's."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    counts = {}
    for count, stop in (("1", False), (str(jobs), False), (str(jobs), True)):
        env = dict(tree.env, DEVLINT_BENCH_STOP_AT_FORK="1") if stop else tree.env
        done = run([valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                    *tree.command("--no-cache", "-j", count, ".")], env=env, cwd=folder)
        per_process = {pid: int(n.replace(",", "")) for pid, n in re.findall(r"==(\d+)== I\s+refs:\s+([\d,]+)",
                                                                             done.output)}
        started = re.search(r"==(\d+)== Command:", done.output)
        if started is None or started[1] not in per_process:
            return None
        parent = per_process.pop(started[1])
        counts[count, stop] = (parent, sum(per_process.values()), len(per_process))
    one = sum(counts["1", False][:2])
    parent, workers, forked = counts[str(jobs), False]
    # A forked worker's count starts from its parent's at the fork (valgrind's counters are copied
    # with the process): that much of each worker's count is the parent's work, counted once above.
    at_fork, _, stray = counts[str(jobs), True]
    if stray:  # (a tree without _run_pool: the workers started elsewhere; nothing taken off)
        at_fork = 0
    workers -= forked * at_fork
    serial = (jobs * (parent + workers / jobs) - one) / (jobs - 1)
    return one, parent, workers, serial, serial / (one / one_cpu)


def peers() -> tuple[str | None, str | None]:
    bin_dir = os.path.join(PEERS_VENV, "bin")
    torchfix = os.path.join(bin_dir, "torchfix")
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or os.path.join(bin_dir, "ruff")
    return (torchfix if os.path.exists(torchfix) else None), (ruff if os.path.exists(ruff) else None)


def one_file_default(files: list[str]) -> str:
    """The first file (in sorted order) that moves something to CUDA: a file LibCST must analyse."""
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as handle:
            if ".cuda(" in handle.read():
                return path
    return files[0]


def row(name: str, r: Run) -> str:
    parent = f"{r.parent:8.2f}" if r.parent is not None else f"{'-':>8}"
    return f"  {name:44} {r.wall:8.2f} {r.cpu:8.2f} {parent}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="a folder of Python files (default: the torch wheel's sources)")
    parser.add_argument("--tree", action="append", default=[], help="a devlint source tree (repeat for several)")
    parser.add_argument("--jobs", type=int, default=2, help="the -j of the parallel cold run (default 2)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of the short commands; the best is kept")
    parser.add_argument("--cold-repeat", type=int, default=1, help="runs of each cold run; the best is kept")
    parser.add_argument("--one-file", help="the file of the one-file run (default: the first with `.cuda(`)")
    parser.add_argument("--cores", help="e.g. 2,16: cold runs with the default -j on the first 2 and on the first "
                        "16 cores (as taskset), and the fit between them (the issue's table)")
    parser.add_argument("--no-side-by-side", action="store_true", help="skip the side-by-side slowdown")
    parser.add_argument("--instructions", action="store_true", help="also count the cold runs' instructions under "
                        "valgrind (cachegrind): the fit without the host's noise (minutes per tree)")
    parser.add_argument("--no-torchfix", action="store_true", help="skip TorchFix (minutes on a big corpus)")
    parser.add_argument("--no-torchfix-cold", action="store_true", help="run TorchFix on the one file only")
    args = parser.parse_args()
    if args.jobs < 2:
        parser.error("--jobs must be at least 2")

    folder = os.path.abspath(args.corpus) if args.corpus else torch_sources()
    files = python_files(folder)
    one = os.path.abspath(args.one_file) if args.one_file else one_file_default(files)
    trees = [Tree(t) for t in args.tree] or [Tree(None)]
    torchfix, ruff = peers()
    if args.no_torchfix:
        torchfix = None
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"corpus: {folder} ({len(files)} files); one file: {os.path.relpath(one, folder)}")
    print(f"cores: {os.cpu_count()}; load average at start: {load:.1f} (wall times are noise when it is high)\n")
    print(f"  {'':44} {'wall s':>8} {'cpu s':>8} {'parent':>8}")

    # The cold runs take turns, tree after tree and -j 1 after -j N: this machine's speed drifts by
    # a tenth over minutes (other tenants, clocks), which run one tree after the other would take
    # for a difference between trees, and the fit (twice the -j N time less the -j 1 time) doubles.
    cold: dict[tuple[int, str], list[Run]] = {}
    for tree in trees:
        run(tree.command("--no-cache", "--select", "ALL", one), env=tree.env, cwd=folder)  # compiles its modules
    for _ in range(max(1, args.cold_repeat)):
        for number, tree in enumerate(trees):
            for jobs in ("1", str(args.jobs)):
                cold.setdefault((number, jobs), []).append(
                    run(tree.command("--no-cache", "-j", jobs, "."), env=tree.env, cwd=folder, timeline=jobs != "1"))

    summary = []
    for number, tree in enumerate(trees):
        print(f"devlint {tree.name}")
        kwargs = {"env": tree.env, "cwd": folder}
        cold1, coldn = fastest_of(cold[number, "1"]), fastest_of(cold[number, str(args.jobs)])
        for name, r in (("cold -j 1", cold1), (f"cold -j {args.jobs}", coldn)):
            print(row(name, r))
            if r.code != 0:
                print(f"    exit {r.code}: {r.output[-400:]}")
        wall_serial, wall_parallel = fit(cold1.wall, coldn.wall, args.jobs)
        parent = coldn.parent or 0.0
        workers = coldn.cpu - parent
        checking = cold1.cpu - parent  # what the -j 1 run did beyond what the -j N run's parent does
        cpu_serial, cpu_parallel = cpu_fit(cold1, coldn, args.jobs)
        print(f"  {'fit from wall times: serial, parallel':44} {wall_serial:8.2f} {wall_parallel:8.2f}")
        print(f"  {'fit from CPU times: serial, parallel':44} {cpu_serial:8.2f} {cpu_parallel:8.2f}")
        print(f"  {'  of which: parent CPU; workers CPU beyond -j 1':44} {parent:8.2f} {workers - checking:8.2f}")
        paired = paired_fits(cold[number, "1"], cold[number, str(args.jobs)], args.jobs)
        if paired is not None:
            (wall_median, wall_low, wall_high), (cpu_median, cpu_low, cpu_high) = paired
            print(f"  {f'paired fits, median of {args.cold_repeat} (range): wall':44} {wall_median:8.2f}"
                  f"  ({wall_low:.2f} to {wall_high:.2f})")
            print(f"  {'  CPU':44} {cpu_median:8.2f}  ({cpu_low:.2f} to {cpu_high:.2f})")
        counted = instruction_fit(tree, folder, args.jobs, cold1.cpu) if args.instructions else None
        if counted is not None:
            one_i, parent_i, workers_i, serial_i, seconds = counted
            print(f"  {'instructions: -j 1; parent, workers (own)':44} {one_i / 1e9:7.2f}G "
                  f"{parent_i / 1e9:7.2f}G {workers_i / 1e9:7.2f}G")
            print(f"  {'serial: fit from instructions (at -j 1 rate)':44} {serial_i / 1e9:7.2f}G {seconds:8.2f} s")
        less_machine = None
        if not args.no_side_by_side:
            apart, together = side_by_side(tree, folder, files, args.jobs, args.cold_repeat)
            slowdown = together / apart - 1
            # the -j 1 run's checking, as much slower as N processes at once are
            machine = slowdown * checking
            print(f"  {f'side by side: {args.jobs} parts -j 1 apart, at once (CPU)':44} {apart:8.2f} {together:8.2f}"
                  f"  {slowdown:+.1%}")
            less_machine = cpu_serial - machine
            print(f"  {'fit from CPU times, less that slowdown':44} {less_machine:8.2f}")
        if coldn.idle is not None:
            print(f"  {f'-j {args.jobs} timeline: not all workers checking':44} {coldn.idle:8.2f}")
        if coldn.phases:
            print(f"  {'  first, last ready; first, last done; exit':44} " + ", ".join(f"{t:.2f}" for t in coldn.phases))
        print(f"  {f'page faults -j 1, -j {args.jobs} (system s)':44} {cold1.faults:,} ({cold1.system:.2f}), "
              f"{coldn.faults:,} ({coldn.system:.2f})")
        with tempfile.TemporaryDirectory() as work:
            cache = os.path.join(work, "cache")  # devlint creates it (it refuses a folder it did not mark)
            run(tree.command("--cache-dir", cache, "."), **kwargs)  # fill the cache
            warm = best(args.repeat, tree.command("--cache-dir", cache, "."), **kwargs)
            # -o is never recorded (devlint.replay): every file from the result cache, nothing replayed.
            unreplayed = best(args.repeat, tree.command("--cache-dir", cache, "-o", os.devnull, "."), **kwargs)
        print(row("warm (cache filled: replayed)", warm))
        print(row("warm, not replayed (-o: from the result cache)", unreplayed))
        single = best(args.repeat, tree.command("--no-cache", one), **kwargs)
        print(row("one file (--no-cache)", single))
        summary.append((tree.name, coldn.parent, cpu_serial, less_machine, coldn.idle, warm, single, paired, counted))

    peer_rows = {}
    if ruff is not None:
        print(f"ruff {ruff}")
        for name, target in (("cold", "."), ("one file", one)):
            peer_rows["ruff " + name] = r = best(args.repeat, [ruff, "check", "--select", "F", "--no-cache",
                                                                "--exit-zero", "--quiet", target], cwd=folder)
            print(row(f"check --select F --no-cache ({name})", r))
    if torchfix is not None:
        print(f"torchfix {torchfix}")
        runs = (("cold", ".", args.cold_repeat), ("one file", one, args.repeat))
        for name, target, repeat in runs[1:] if args.no_torchfix_cold else runs:
            peer_rows["torchfix " + name] = r = best(repeat, [torchfix, "--select", "ALL", target], cwd=folder)
            print(row(f"--select ALL ({name})", r))

    core_fits = by_cores(args, trees, folder, ruff) if args.cores else []

    print("\nsummary (targets: serial under 0.3 s; warm at most 1.5x ruff's cold run)")
    for name, parent, serial, less_machine, idle, warm, single, paired, counted in summary:
        line = f"  {name}: parent CPU {parent or 0:.2f} s, serial (CPU fit) {serial:.2f} s"
        if less_machine is not None:
            line += f" ({less_machine:.2f} s less the side-by-side slowdown)"
        if paired is not None:
            line += f", paired fits' medians {paired[0][0]:.2f} s wall, {paired[1][0]:.2f} s CPU"
        if counted is not None:
            line += f", instruction fit {counted[3] / 1e9:.2f} G ({counted[4]:.2f} s at the -j 1 rate)"
        if idle is not None:
            line += f", timeline {idle:.2f} s"
        if "ruff cold" in peer_rows:
            ruff_cold = peer_rows["ruff cold"]
            line += (f", warm / ruff: {warm.wall / ruff_cold.wall:.1f}x wall, "
                     f"{warm.cpu / max(ruff_cold.cpu, 1e-3):.1f}x CPU")
        if "ruff one file" in peer_rows:
            line += f", one file / ruff: {single.wall / peer_rows['ruff one file'].wall:.0f}x wall"
        print(line)
    for line in core_fits:
        print(line)
    return 0


def by_cores(args, trees: list[Tree], folder: str, ruff: str | None) -> list[str]:
    """Cold runs with the default -j restricted to the first A, then B cores (as `taskset` does): what a
    user of an A-core and a B-core machine waits, and the fit `wall = serial + parallel / cores` between
    the two, per tree. The runs take turns (tree, cores) for the machine's drift; the best wall is kept."""
    counts = sorted({int(each) for each in args.cores.split(",")})
    available = len(os.sched_getaffinity(0))
    if len(counts) < 2 or counts[0] < 1 or counts[-1] > available:
        sys.exit(f"--cores: two or more core counts between 1 and {available}")
    timings: dict[tuple[str, int], list[Run]] = {}
    for _ in range(max(1, args.cold_repeat)):
        for tree in trees:
            for count in counts:
                timings.setdefault((tree.name, count), []).append(
                    run(tree.command("--no-cache", "."), env=tree.env, cwd=folder, cores=count))
        if ruff is not None:
            for count in counts:
                timings.setdefault(("ruff", count), []).append(
                    run([ruff, "check", "--select", "F", "--no-cache", "--exit-zero", "--quiet", "."], cwd=folder,
                        cores=count))
    print(f"\ncold, the default -j, on the first N cores ({', '.join(map(str, counts))})")
    print(f"  {'':44} " + " ".join(f"{f'{n} cores':>9}" for n in counts) + f" {'serial':>8} {'parallel':>8}")
    lines = []
    for name in [tree.name for tree in trees] + (["ruff"] if ruff is not None else []):
        walls = [fastest_of(timings[name, n]).wall for n in counts]
        low, high = counts[0], counts[-1]
        serial = (high * walls[-1] - low * walls[0]) / (high - low)
        parallel = (walls[0] - serial) * low
        print(f"  {name[-44:]:44} " + " ".join(f"{w:9.2f}" for w in walls) + f" {serial:8.2f} {parallel:8.2f}")
        lines.append(f"  {name}: {low} -> {high} cores {walls[0]:.2f} -> {walls[-1]:.2f} s wall "
                     f"({walls[0] / walls[-1]:.1f}x), serial (wall fit) {serial:.2f} s")
    return lines


if __name__ == "__main__":
    sys.exit(main())
