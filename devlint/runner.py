"""The disk side of a run: read each file, check it with the core (in worker processes when there
are many), reuse cached results, and write fixes back atomically."""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import replace

from devlint import collector, schedule, worker_share
from devlint.cache import ResultCache
from devlint.config import Config
from devlint.documents import check_document, load_checker, written_encoding
from devlint.model import FileError, FileResult
from devlint.size_limit import raw_limit, raw_limit_notice
from devlint.source import NotWritten, decode, encode, write_fixed

# A fully cached run reads, hashes and reports: it imports neither LibCST (see check_file) nor
# multiprocessing (see _in_workers).

# Below this many files to check, starting worker processes costs more than it saves.
MIN_FILES_FOR_WORKERS = 16


def _mp_context():
    """Forking is the cheapest start on Linux (nothing to re-import); elsewhere the platform's default."""
    import multiprocessing

    return multiprocessing.get_context("fork") if sys.platform == "linux" else None


def read(path: str, config: Config) -> tuple[bytes | None, FileResult | None]:
    """The file's bytes, or a result saying why it is not checked. A run reads each file once: these
    bytes are the ones hashed for the cache key, checked, and compared before a fix is written.
    Only a regular file is opened (a FIFO swapped in meanwhile is refused, never waited on), and no
    more than the size limit is read from one that grows."""
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            return None, FileResult(path, error=FileError("is a directory"))
        if not stat.S_ISREG(info.st_mode):
            return None, FileResult(path, error=FileError("not a regular file"))
        limit = raw_limit(path, config)  # a notebook's code cells are measured once read
        if info.st_size > limit:
            return None, _too_big(path, info.st_size, config)
        data = _read_regular(path, limit + 1)
        if data is None:
            return None, FileResult(path, error=FileError("not a regular file"))
        if len(data) > limit:
            return None, _too_big(path, len(data), config)
        return data, None
    except OSError as exc:
        return None, FileResult(path, error=FileError(f"cannot read: {exc.strerror or exc}"))


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


def _read_regular(path: str, most: int) -> bytes | None:
    """At most `most` bytes of the file, or None when what is opened is not a regular file (never
    waited on: a FIFO or a device named *.py). Raises OSError."""
    with os.fdopen(os.open(path, _READ_FLAGS), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(most)


def _too_big(path: str, size: int, config: Config) -> FileResult:
    return FileResult(path, notice=raw_limit_notice(path, size, config))


def check_file(path: str, config: Config, *, write: bool, data: bytes | None = None) -> FileResult:
    """Check one file (its bytes `data` when given, else read) and, with `write`, write its fixes."""
    if data is None:
        data, problem = read(path, config)
        if problem is not None:
            return problem
    result = check_document(path, data, config)  # LibCST is loaded only when something is checked
    if write and result.fixed_source is not None and result.error is None:
        encoding = written_encoding(path, data)
        try:
            write_fixed(path, encode(result.fixed_source, encoding), expected=data)
        except UnicodeEncodeError as exc:
            _not_written(result, data, config, f"cannot write fixes: not representable in {encoding}: {exc.reason}")
        except NotWritten as exc:
            _not_written(result, data, config, str(exc))
        except OSError as exc:
            _not_written(result, data, config, f"cannot write fixes: {exc.strerror or exc}")
    return result


def _not_written(result: FileResult, data: bytes, config: Config, message: str) -> None:
    """A fix that did not reach the disk is no fix: report the file as it still is, with the error."""
    unchanged = check_file(result.path, replace(config, fix=False, add_noqa=False), write=False, data=data)
    result.findings = unchanged.findings
    result.fixed_source, result.applied, result.added_noqa = None, [], 0
    result.error = FileError(message)


def check_files(paths: list[str], config: Config, *, write: bool, jobs: int = 1,
                cache: ResultCache | None = None) -> list[FileResult]:
    """Results in the order of `paths`, whatever order the workers finish in.

    With a cache, each file is read once: the bytes hashed for its key are the bytes checked (and
    fixed), so an entry always describes the bytes of its key, whatever edits happen during the run."""
    from devlint import depends
    from devlint.source import SourceError

    project = sys.modules.get("devlint.analysis.project")  # (not imported by a fully cached run)
    if project is not None:
        project.forget_probes()
    results: list[FileResult | None] = [None] * len(paths)
    keys: dict[int, str] = {}
    codes: dict[int, tuple[str, ...]] = {}
    todo: list[int] = []
    read_once: dict[int, bytes] = {}
    seen: dict[str, str | None] = {}  # what the dependencies of cached results hold, looked at once per run
    if cache is None:
        todo = list(range(len(paths)))
    places = depends.places(paths) if cache is not None else ()
    # Each file's bytes are hashed once: the digest its dependants recorded (devlint.depends) is
    # the one its key is made of.
    digests: dict[int, str] = {}
    for index, path in enumerate(paths if cache is not None else ()):
        data, problem = read(path, config)
        if problem is not None:
            results[index] = problem
            continue
        codes[index] = config.codes_for(path)
        digests[index] = digest = depends.digest(data)
        keys[index] = cache.key(digest, codes[index], cache.kind(path), places[index])
        read_once[index] = data
    # Most dependencies of cached results are files of this run: what they hold was just read.
    known = {places[index]: depends.ABSENT if len(read_once[index]) > depends.READ_LIMIT else value
             for index, value in digests.items()}
    for index, key in keys.items():
        path, data = paths[index], read_once[index]
        cached = cache.get(key, codes[index])
        # --add-noqa writes a directive for every finding, whatever its fix: only a file the cache
        # knows to have none is not checked.
        usable = cached is not None and not (write and _has_applicable_fix(cached, config)) \
            and not (config.add_noqa and cached)
        rests_on = cache.dependencies(key) if usable else None
        if usable and depends.unchanged(rests_on, seen, known):
            try:
                # The source is kept for the formats that quote it (full, gitlab).
                source = decode(data).text if cached else None
            except SourceError:  # such bytes were never cached by devlint: a forged entry
                todo.append(index)
                continue
            results[index] = FileResult(path, findings=cached, original_source=source, dependencies=rests_on or {})
            del read_once[index]
        else:
            todo.append(index)
    known.clear()

    todo_paths = [paths[i] for i in todo]
    todo_data = [read_once.get(i) for i in todo]
    read_once.clear()
    if jobs > 1 and len(todo) >= MIN_FILES_FOR_WORKERS:
        fresh = _in_workers(todo_paths, config, write, jobs, todo_data)
    else:
        fresh = [check_file(p, config, write=write, data=d) for p, d in zip(todo_paths, todo_data)]
    for index, result in zip(todo, fresh):
        results[index] = result
        # A result with fixes applied describes other bytes than the key's: never stored.
        if cache is not None and index in keys and result.error is None and result.fixed_source is None \
                and result.notice is None and not config.add_noqa:
            cache.put(keys[index], result.findings, result.dependencies or None)
    # What a record of the run (devlint.replay) names as the bytes checked: never a fixed file's.
    for index, value in digests.items():
        if results[index] is not None and results[index].fixed_source is None:
            results[index].digest = value
    return results  # type: ignore[return-value]


def place(path: str) -> str:
    """Where the file is, as the project index resolves its imports from (devlint.analysis.project): two files
    with the same bytes in two folders may import different things, so they have different keys."""
    return os.path.abspath(path)


def _has_applicable_fix(findings, config: Config) -> bool:
    from devlint.engine import fixable

    return any(fixable(f, config) for f in findings)


# In a worker: set when devlint was interrupted (Ctrl-C); the worker then checks nothing more.
_stop = None


def _check_chunk(paths: list[str], config: Config, write: bool, data: list | None = None) -> list[FileResult]:
    """`data`: the bytes the parent read for each path (None: read them here)."""
    results = []
    for path, read_once in zip(paths, data or [None] * len(paths)):
        if (_stop is not None and _stop.is_set()) or (_parent is not None and os.getppid() != _parent):
            break  # devlint is gone: nobody reads these results
        result = check_file(path, config, write=write, data=read_once)
        if not result.findings and result.fixed_source is None:
            # Nothing the parent shows quotes the source of a file without findings or fixes (as a
            # cached result's): not sent back, it costs the parent no unpickling (issue 28).
            result.original_source = None
        results.append(result)
    return results


_parent = None  # in a worker: devlint's pid


def _start_worker(parent: int, stop, share: str | None = None) -> None:
    """In a worker: ignore Ctrl-C, which a terminal sends to the whole process group. Interrupted
    mid-file, a worker would drop that file and take the next from the queue; instead devlint sets
    `stop`, and each worker ends the file in hand (a fix is never left half written) and stops."""
    import signal

    global _stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    collector.tune()  # (inherited with fork; set for the platforms that spawn)
    _stop = stop
    worker_share.FOLDER = share  # (inherited with fork; set for the platforms that spawn)
    _exit_with_parent(parent)


def _exit_with_parent(parent: int) -> None:
    """In a worker: exit when devlint itself is gone, at once, and write nothing more.

    A killed devlint (SIGKILL from a CI timeout or an impatient pre-commit) cannot shut its pool
    down: its workers went on checking and fixing their queued files (for 2.4 s), then waited for
    work forever. On Linux the kernel sends the worker SIGTERM when devlint dies (PR_SET_PDEATHSIG),
    which ends it at once, or right after the write in hand (writes hold SIGTERM, see
    devlint.source); elsewhere a thread watches for the parent's end. Either way no write starts
    once devlint is gone (devlint.source.stop_writing_without), nor another file (_check_chunk).
    """
    import signal
    import threading
    import time

    from devlint.source import _write_lock, stop_writing_without

    global _parent
    _parent = parent
    stop_writing_without(parent)
    if sys.platform == "linux" and _parent_death_signal(signal.SIGTERM):
        # (no watching thread here: SIGTERM could reach it while a write holds it in the main thread)
        if os.getppid() != parent:
            os._exit(1)  # devlint died before the signal was asked for
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.1)
        with _write_lock:  # the write in hand ends first
            os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _parent_death_signal(signum: int) -> bool:
    """Ask Linux to send `signum` to this process when its parent dies; False where that fails.

    (The kernel sends it when the thread that forked this process ends: devlint forks its workers
    from the thread that waits for them.)"""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, signum, 0, 0, 0) == 0  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def _in_workers(paths: list[str], config: Config, write: bool, jobs: int,
                data: list | None = None) -> list[FileResult]:
    """Check `paths` (whose bytes are `data`, when the parent read them) in `jobs` worker processes.
    Ctrl-C (KeyboardInterrupt) is raised at once: the queued files are dropped and the workers stop
    after the file in hand."""
    import multiprocessing

    # Where forking starts the workers and they will likely need the checker, it is imported here,
    # once (_checker_likely_needed); otherwise a worker imports it at its first file the pre-pass
    # does not clear (devlint.cleared), and one whose files are all cleared never does.
    context = _mp_context()
    if context is not None and _checker_likely_needed(data, jobs, paths):
        _import_checker(config)
    stop = (context or multiprocessing).Event()
    share = worker_share.start()  # what one worker computes that the others would compute again
    if context is not None:
        collector.before_fork()
    try:
        return _run_pool(paths, config, write, jobs, data, context, stop, share)
    finally:
        worker_share.stop(share)


def _checker_likely_needed(data: list | None, jobs: int, paths: list[str] | None = None) -> bool:
    """Whether every worker will likely import the checker (LibCST and the rules, about 0.2 s each):
    then the parent imports it once before forking, and each forked worker has it (issue 28: on 16
    cores, 15 imports fewer; the 16 workers of a --no-cache run on torch's sources became ready over
    0.14 s as they imported it side by side, 3 s of CPU in all). A guess, never a correctness question:
    at least `jobs` files mention what most files the pre-pass sends to the checker mention
    (devlint.candidates). Files the parent did not read (--no-cache) are sniffed: the start of at most
    SNIFFED_FILES of them, read until `jobs` match (a few milliseconds where LibCST's import is 0.2 s)."""
    if data is None or all(each is None for each in data):
        return paths is not None and _sniffed_likely(paths, jobs)
    likely = sum(1 for each in data if each is not None and any(word in each for word in _CHECKED_WORDS))
    return likely >= jobs


# A --no-cache run reads the start of at most this many files, each at most SNIFFED_BYTES, to guess.
SNIFFED_FILES = 256
SNIFFED_BYTES = 1 << 18


def _sniffed_likely(paths: list[str], jobs: int) -> bool:
    likely = 0
    for path in paths[:SNIFFED_FILES]:
        try:
            head = _read_regular(path, SNIFFED_BYTES)
        except OSError:
            continue  # (the worker reports it)
        if head is not None and any(word in head for word in _CHECKED_WORDS):
            likely += 1
            if likely >= jobs:
                return True
    return False


# What the files a rule could flag mostly say (`.cuda()`, `torch.load`, `.to(device)`, "cuda:0").
_CHECKED_WORDS = (b"cuda", b"load", b".to(", b"device")


def _import_checker(config: Config) -> None:
    load_checker(config)


def _run_pool(paths, config, write, jobs, data, context, stop, share) -> list[FileResult]:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    chunks = schedule.chunks(paths, data, jobs)  # the biggest files first
    results: dict[int, FileResult] = {}
    suspects: list[int] = []
    pool_options = {"mp_context": context, "initializer": _start_worker, "initargs": (os.getpid(), stop, share)}
    pool = ProcessPoolExecutor(jobs, **pool_options)
    try:
        futures = {pool.submit(_check_chunk, [paths[i] for i in chunk], config, write, _part(data, chunk)): chunk
                   for chunk in chunks}
        for future in as_completed(futures):
            try:
                results.update(zip(futures[future], future.result()))
            except BrokenProcessPool:
                suspects.extend(futures[future])
    except BaseException:
        # Ctrl-C: waiting for the pool (what leaving a `with` block does) would check and fix every
        # queued file first.
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    # A worker died (a crash in native code, the memory limit): retry those files one by one, each
    # alone in a fresh worker, so that only the file that kills it is reported.
    for index in sorted(suspects):
        try:
            with ProcessPoolExecutor(1, **pool_options) as pool:
                results[index] = pool.submit(_check_chunk, [paths[index]], config, write,
                                             _part(data, [index])).result()[0]
        except BrokenProcessPool:
            results[index] = FileResult(paths[index], error=FileError(
                "internal error: the worker process died while checking this file", internal=True))
    return [results[i] for i in range(len(paths))]


def _part(data: list | None, indexes: list[int]) -> list | None:
    return None if data is None else [data[i] for i in indexes]
