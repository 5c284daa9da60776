"""The `devlint` command: options -> Config -> files -> engine -> report -> exit code."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import click

from devlint import __version__
from devlint import quick_exit, replay, settings
from devlint.cache import ResultCache, default_directory, settings_key
from devlint.config import Config, ConfigError
from devlint.cores import usable_cores
from devlint.files import discover
from devlint.source import decode, encode
from devlint.output import OUTPUT_FORMATS, render
from devlint.report import (
    EXIT_ERROR,
    error_line,
    exit_code,
    render_diff,
    render_fixes,
    render_statistics,
    shown_path,
    would_fix_line,
)
from devlint.runner import check_files
from devlint.options import merge as _merge
from devlint.statistics_json import STATISTICS_FORMATS, render_statistics_json

# A fully cached run must not import LibCST (about a third of its time): nothing imported above
# loads a rule class; `devlint rule` and the checker import them when needed.


class _DefaultToCheck(click.Group):
    """`devlint [OPTIONS] PATHS` means `devlint check ...`; `devlint rule DL001` is a subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # `devlint --help` is the group's help (it lists the subcommands); `devlint PATHS` is `check`.
        if not args or (args[0] not in self.commands and args[0] not in ("--version", "--help", "-h")):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="devlint")
def main() -> None:
    """devlint: find and fix PyTorch device bugs.

    `devlint [OPTIONS] [PATHS]` is `devlint check [OPTIONS] [PATHS]` (see `devlint check --help`).
    """


@main.command()
# readable=False: an unreadable path is reported by the run (one line, exit 2), not by click's usage error.
@click.argument("paths", nargs=-1, type=click.Path(readable=False))
@click.option("--select", help="Comma-separated rule codes or prefixes to enable (ALL for every rule).")
@click.option("--extend-select", help="Rule codes or prefixes to enable on top of the selection.")
@click.option("--ignore", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), help="How findings are printed [default: text].")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), help="Write the findings to this file.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply (with --fix) unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the diff the fixes would make; write nothing.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when --fix changed a file.")
@click.option("--show-fixes", is_flag=True, help="List the fixes --fix applied.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa` directives for every current finding.")
@click.option("--ignore-noqa", is_flag=True, help="Report findings even where `# noqa` silences them.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print the findings only: no summary, no warnings (errors still go to stderr).")
@click.option("-s", "--silent", is_flag=True,
              help="Print nothing (the exit code tells); an -o file is still written.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--device-name", help="Variable the fixes use for the device [default: device].")
@click.option("--device-expression",
              help="What an inserted device definition says: 'cuda' (CUDA else CPU, the default), "
                   "'accelerator' (torch.accelerator, for MPS/XPU too) or a Python expression.")
@click.option("--map-location", type=click.Choice(("auto", "device", "cpu")),
              help="What DL002's fix writes: 'cpu' for load_state_dict inputs and device otherwise (auto, the default).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Read [tool.devlint] from this file.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option("--stdin-filename", help="The path of the source read from stdin (`devlint -`), for reporting and config.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes [default: the usable cores].")
@click.option("--force-exclude", is_flag=True,
              help="Apply exclude/extend-exclude to paths named on the command line too (for pre-commit).")
@click.option("--follow-links", is_flag=True,
              help="Walk into symbolic links that lead out of the project (by default they are skipped).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Where the result cache lives [default: .devlint_cache in the project root].")
@click.option("--max-file-size", type=click.IntRange(min=0),
              help="Skip (with a notice) files larger than this many bytes (for a notebook: its code cells) "
                   "[default: 1048576].")
@click.version_option(__version__, prog_name="devlint")
def check(paths, output_file, exit_zero, fix, diff, exit_non_zero_on_fix, show_fixes, add_noqa, ignore_noqa,
          statistics, config_path, isolated, stdin_filename, jobs, follow_links, no_cache, cache_dir, force_exclude,
          quiet, silent, **options) -> None:
    """Check PATHS (files or folders; default: .) for PyTorch device bugs. `-` reads stdin.

    Exit codes: 0 no findings, 1 findings, 2 bad input, usage or internal error.
    `devlint rule CODE` prints a rule's documentation.
    """
    # As ruff: -q keeps the findings (and the errors that explain exit 2), -s prints nothing at all.
    # A usage or configuration error is printed whatever the level: exit 2 alone would say nothing.
    quick_exit.at_exit()
    _written.clear()
    level = SILENT if silent else QUIET if quiet else DEFAULT
    _refuse_ignored_options(paths, config_path, isolated, stdin_filename)
    if add_noqa:  # as ruff, which refuses these with --add-noqa
        for flag, given in (("--fix", fix), ("--ignore-noqa", ignore_noqa), ("--statistics", statistics)):
            if given:
                _fail(f"--add-noqa cannot be used with {flag} (fix first, then add noqa to what remains)"
                      if flag == "--fix" else f"--add-noqa cannot be used with {flag}")
    # As ruff: --stdin-filename with no path reads stdin (an editor passes only the name).
    paths = list(paths) or (["-"] if stdin_filename is not None else ["."])
    try:
        file_settings = settings.resolve([p for p in paths if p != "-"] or ["."], config_path, isolated)
        config, output_format, exclude, extend_exclude = _merge(options, file_settings, fix or diff)
        config = replace(config, ignore_noqa=ignore_noqa, add_noqa=add_noqa)
        config.codes()
    except ConfigError as exc:
        _fail(str(exc))
    if statistics and output_format not in STATISTICS_FORMATS:  # as ruff: no silent fallback to text
        _fail(f"--statistics prints text or json; --output-format {output_format} has no statistics form")

    if paths == ["-"]:
        if add_noqa:
            _fail("--add-noqa needs files to write to; it cannot be used with stdin (-)")
        sys.exit(_check_stdin(config, stdin_filename or "-", output_format, fix or diff, exit_zero, diff, level))

    try:
        discovered, results, cache = _run(paths, exclude, extend_exclude, file_settings.root, follow_links,
                                          output_file, config, no_cache,
                                          cache_dir or default_directory(paths, file_settings.path), jobs,
                                          write=(fix or add_noqa) and not diff, use_cache=not diff,
                                          force_exclude=force_exclude, level=level)
    except KeyboardInterrupt:
        # Workers finish the file in hand (writes are atomic) and queued files are dropped.
        click.echo("devlint: interrupted; files already fixed are complete, the others are unchanged", err=True)
        sys.exit(130)
    if cache is not None:
        cache.save()
        for warning in cache.warnings:
            _say(level, DEFAULT, f"devlint: warning: {warning}")
    for result in results:
        if result.error:
            _say(level, QUIET, error_line(result))
        elif result.notice:
            _say(level, DEFAULT, f"{shown_path(result.path)}: warning: {result.notice}")
    if not discovered.files and not discovered.errors and not discovered.skipped:
        _say(level, DEFAULT, f"warning: no Python files found under {' '.join(paths)}")
    other_errors, other_warnings = len(discovered.errors), len(discovered.skipped)

    if diff:
        diffs = [render_diff(r) for r in results if r.fixed_source is not None]
        if level >= QUIET:
            click.echo("".join(diffs), nl=False)
        _say(level, DEFAULT, would_fix_line(results))  # as ruff: after the diff, on stderr
        code = exit_code(results, len(discovered.errors), exit_zero=False)
        sys.exit(code if code == EXIT_ERROR else int(bool(diffs)))

    if add_noqa:
        added = sum(r.added_noqa for r in results)
        if level >= DEFAULT:
            click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
        sys.exit(exit_code(results, len(discovered.errors), exit_zero=True))
    if statistics:
        rendered = render_statistics_json(results) if output_format == "json" else render_statistics(results)
    else:
        color = output_file is None and _use_color()
        rendered = render(output_format, results, fixing=fix, unsafe_fixes=config.unsafe_fixes,
                          other_errors=other_errors, other_warnings=other_warnings,
                          color=color, show_fixes=fix and show_fixes, summary=level >= DEFAULT,
                          hyperlinks=color and _use_hyperlinks())
    if level >= QUIET or output_file is not None:
        _emit(rendered, output_file)
    if fix and show_fixes and (statistics or output_format != "text") and level >= QUIET:
        # A machine format on stdout must stay parsable: the block goes to stderr there.
        click.echo(render_fixes(results), err=True, nl=False)
    code = exit_code(results, len(discovered.errors), exit_zero=exit_zero)
    if code != EXIT_ERROR and exit_non_zero_on_fix and any(r.fixed_source for r in results):
        code = 1
    # A check that wrote nothing but its report, every file read and checked, may be replayed.
    fixed = fix and any(r.fixed_source is not None or r.applied for r in results)
    if replay.ARGV is not None and not (fixed or add_noqa) and output_file is None and cache is not None \
            and cache.usable and not cache.warnings and not discovered.errors \
            and all(r.error is None and r.notice is None for r in results):
        replay.save(cache.directory, replay.Arguments(paths, config_path, isolated, cache_dir), file_settings,
                    [exclude, list(extend_exclude), file_settings.root, follow_links, force_exclude], discovered,
                    results, _written, code)
    sys.exit(code)


def _refuse_ignored_options(paths, config_path, isolated: bool, stdin_filename) -> None:
    """Usage errors for combinations where one option would silently lose to another."""
    if "-" in paths and len(paths) > 1:
        _fail("`-` (read stdin) cannot be combined with other paths; check stdin or the files, not both")
    if isolated and config_path is not None:
        _fail("--isolated ignores every configuration file; it cannot be used with --config")
    if stdin_filename is not None and any(p != "-" for p in paths):
        _fail("--stdin-filename names the source read from stdin; it cannot be used with paths to check")


# How much a run prints: -s, -q, or everything.
SILENT, QUIET, DEFAULT = 0, 1, 2


def _say(level: int, needed: int, message: str) -> None:
    """A line on stderr, if the run's level (-s / -q) lets lines of this kind through."""
    if level >= needed:
        _echo(message, err=True)


# What this check printed, for a record of it (devlint.replay): [stream, text], as click wrote them.
_written: list[list[str]] = []


def _echo(text: str, *, err: bool = False, nl: bool = True, color: bool | None = None) -> None:
    click.echo(text, nl=nl, err=err, color=color)
    out = text + "\n" if nl else text
    stream = sys.stderr if err else sys.stdout
    # (what click.echo writes: the text without its styles where it strips them)
    if (not color) if color is not None else not replay.is_terminal(stream):
        out = click.unstyle(out)
    _written.append(["err" if err else "out", out])


def _run(paths, exclude, extend_exclude, root, follow_links, output_file, config, no_cache, cache_dir, jobs,
         *, write: bool, use_cache: bool, force_exclude: bool = False, level: int = DEFAULT):
    """Discover, then check (and fix): the part of a run that Ctrl-C may interrupt."""
    discovered = discover(paths, exclude, extend_exclude, root, follow_links=follow_links,
                          force_exclude=force_exclude)
    if output_file is not None:
        _refuse_input_as_output(output_file, discovered.files)
    for path, reason in discovered.errors:
        _say(level, QUIET, f"{shown_path(path)}: error: {reason}")
    for path, reason in discovered.skipped:
        _say(level, DEFAULT, f"{shown_path(path)}: warning: {reason}")
    cache = None
    if not no_cache and use_cache:
        cache = ResultCache(cache_dir, settings_key(config))
    # More workers than files or cores only costs forks (-j 3000 once started 2,400 processes); the
    # cores are those this process may use (devlint.cores), not the machine's.
    cores = usable_cores()
    jobs = max(1, min(jobs or cores, cores, len(discovered.files) or 1))
    with _Progress(len(discovered.files), enabled=level >= DEFAULT):
        checked = check_files(discovered.files, config, write=write, jobs=jobs, cache=cache)
    return discovered, checked, cache


class _Progress:
    """`devlint: checking 1,234 files (5 s)` on stderr, rewritten in place once a second, for runs
    over `after` seconds on a terminal; never in a pipe, a file or CI (the CI variable), and the
    line is erased when the run ends."""

    def __init__(self, total: int, stream=None, after: float = 2.0, enabled: bool = True) -> None:
        import threading

        self.total, self.after = total, after
        self.stream = sys.stderr if stream is None else stream
        self.done = threading.Event()
        self.shown = False
        self.thread = None
        try:
            on_terminal = self.stream.isatty()
        except (AttributeError, ValueError):
            on_terminal = False
        if enabled and on_terminal and not os.environ.get("CI") and os.environ.get("TERM") != "dumb":
            self.thread = threading.Thread(target=self._show, daemon=True)

    def _show(self) -> None:
        import signal
        import time

        if hasattr(signal, "pthread_sigmask"):  # SIGTERM goes to the main thread, which holds it during a write
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        start = time.monotonic()
        if self.done.wait(self.after):
            return
        while not self.done.is_set():
            noun = "file" if self.total == 1 else "files"
            self.stream.write(f"\rdevlint: checking {self.total:,} {noun} ({time.monotonic() - start:.0f} s)")
            self.stream.flush()
            self.shown = True
            self.done.wait(1.0)

    def __enter__(self) -> "_Progress":
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join()
        if self.shown:
            self.stream.write("\r\x1b[K")  # erase the line: the report follows
            self.stream.flush()


def _check_stdin(config: Config, filename: str, output_format: str, fix: bool, exit_zero: bool,
                 diff: bool = False, level: int = DEFAULT) -> int:
    """`devlint - [--fix | --diff]`: what editors call. With --fix the fixed source goes to stdout
    (whatever -q / -s say: it is the product, not a message)."""
    from devlint.documents import check_document

    data = sys.stdin.buffer.read()
    result = check_document(filename, data, config)
    if result.error:
        _say(level, QUIET, error_line(result))
    elif result.notice:
        _say(level, DEFAULT, f"{shown_path(filename)}: warning: {result.notice}")
    if diff:
        shown = render_diff(result) if result.error is None and result.fixed_source is not None else ""
        if level >= QUIET:
            click.echo(shown, nl=False)
        return EXIT_ERROR if result.error else int(bool(shown))
    if fix:
        if result.error is None and result.fixed_source is not None:
            sys.stdout.buffer.write(encode(result.fixed_source, decode(data).encoding))
        else:
            sys.stdout.buffer.write(data)
        sys.stdout.flush()
    elif level >= QUIET:
        click.echo(render(output_format, [result], fixing=False, unsafe_fixes=config.unsafe_fixes,
                          summary=level >= DEFAULT), nl=False)
    return exit_code([result], 0, exit_zero=exit_zero)


def _use_color() -> bool:
    """Colour on a terminal only; NO_COLOR turns it off, FORCE_COLOR on (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


# Terminals known to render OSC 8 hyperlinks (as the supports-hyperlinks crate ruff uses); others
# would print nothing wrong, but not every one ignores the sequence cleanly.
_HYPERLINK_PROGRAMS = ("Hyper", "iTerm.app", "terminology", "WezTerm", "vscode", "ghostty")
_HYPERLINK_TERMS = ("xterm-kitty", "alacritty", "alacritty-direct", "xterm-ghostty", "foot", "foot-extra")


def _use_hyperlinks() -> bool:
    """Whether the (coloured) codes link to their pages: FORCE_HYPERLINK=1 / =0 decides; otherwise
    only on a terminal known to render OSC 8 links, and never in CI."""
    forced = os.environ.get("FORCE_HYPERLINK")
    if forced is not None:
        return forced.strip() != "0"
    if os.environ.get("CI"):
        return False
    env = os.environ
    try:
        vte = int(env.get("VTE_VERSION", "0"))
    except ValueError:
        vte = 0
    return (vte >= 5000 or env.get("TERM_PROGRAM") in _HYPERLINK_PROGRAMS or env.get("TERM") in _HYPERLINK_TERMS
            or "DOMTERM" in env or "WT_SESSION" in env or "KONSOLE_VERSION" in env)


def _emit(text: str, output_file: str | None) -> None:
    if output_file is None:
        _echo(text, nl=False, color=_use_color())  # click strips styles it is not told to keep
        return
    try:
        # A file name that is not UTF-8 is reported as the terminal shows it: its own bytes.
        with open(output_file, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
    except OSError as exc:
        _fail(f"{output_file}: cannot write the output file: {exc.strerror or exc}")


def _refuse_input_as_output(output_file: str, inputs: list[str]) -> None:
    """`-o` must never name a file being checked: the report would replace the user's source.

    The same file under another name is refused too: a symbolic link (same real path) or a hard link
    (same device and inode)."""
    target = os.path.realpath(output_file)
    try:
        info = os.stat(output_file)
        identity = (info.st_dev, info.st_ino)
    except OSError:
        identity = None  # not there yet (or not reachable): no input can be it

    def same(path: str) -> bool:
        if os.path.realpath(path) == target:
            return True
        if identity is None:
            return False
        try:
            other = os.stat(path)
        except OSError:
            return False
        return (other.st_dev, other.st_ino) == identity

    if any(same(path) for path in inputs):
        _fail(f"-o/--output-file: {output_file} is one of the files being checked (or a link to one); "
              "choose another file")


@main.command()
@click.option("--cache-dir", type=click.Path(file_okay=False), help="The cache folder to remove.")
def clean(cache_dir: str | None) -> None:
    """Remove the result cache (.devlint_cache in the project root).

    Only a folder devlint made its cache (it holds devlint's CACHEDIR.TAG) is removed; anything
    else, a symbolic link included, is refused (exit 2).
    """
    import shutil

    from devlint.cache import is_cache_dir, not_a_cache

    try:
        settings_file = settings.resolve(["."], None, False).path
    except ConfigError:
        settings_file = None
    target = cache_dir or default_directory(["."], settings_file)
    path = os.path.abspath(target)  # also drops a trailing slash, which would make a link look like its folder
    if os.path.islink(path):
        _fail(f"{target} is a symbolic link; not removed (remove the link, or clean the folder it points to)")
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path) or not is_cache_dir(path):
        _fail(f"{not_a_cache(target)}; not removed")
    try:
        shutil.rmtree(path)
    except OSError as exc:
        _fail(f"{target}: cannot remove the cache: {exc.strerror or exc}")
    click.echo(f"Removed {target}")


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Print every rule's documentation.")
def rule(code: str | None, show_all: bool) -> None:
    """Print a rule's documentation (`devlint rule DL002`), or list the rules."""
    from devlint.rules import ALL_RULES, RULES_BY_CODE

    if show_all:
        for each in ALL_RULES:
            click.echo(f"# {each.code} {each.name}\n\n{each.documentation()}\n")
        return
    if code is None:
        for each in ALL_RULES:
            click.echo(f"{each.code}  {each.name:36} {each.summary()}")
        return
    found = RULES_BY_CODE.get(code.upper()) or next((r for r in ALL_RULES if r.name == code), None)
    if found is None:
        _fail(f"unknown rule {code!r} (known: {', '.join(RULES_BY_CODE)})")
    click.echo(f"# {found.code} {found.name}\n\n{found.documentation()}")


@main.command()
def server() -> None:
    """Run the language server (LSP over stdio) for editors; needs `pip install 'devlint[server]'`."""
    from devlint.server import main as serve  # imports pygls only when it is installed

    serve()


def _top_level_module_exists(module: str) -> bool:
    """Whether MODULE's top-level package can be found from here (as `python -m` looks: the current
    directory first); the top level only, so that no package's code runs before the virtual GPU does."""
    import importlib.util

    top = module.split(".", 1)[0]
    if not top.isidentifier():
        return False
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path.pop(0)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--virtual-gpu", "use_virtual_gpu", is_flag=True,
              help="Run on devlint's virtual GPU: CUDA devices simulated on the CPU build of torch.")
@click.option("--devices", type=click.IntRange(min=0), default=1, show_default=True,
              help="Number of virtual CUDA devices (with --virtual-gpu).")
@click.option("--gpu-memory", metavar="SIZE",
              help="Memory of each virtual device (e.g. 24GiB, 16GB): beyond it, torch.OutOfMemoryError.")
@click.option("-m", "module", metavar="MODULE", help="Run a module as `python -m MODULE` does (no SCRIPT then).")
@click.argument("script", required=False, type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(use_virtual_gpu: bool, devices: int, gpu_memory: str | None, module: str | None, script: str | None,
        args: tuple[str, ...]) -> None:
    """Run SCRIPT as __main__ (`devlint run --virtual-gpu train.py --epochs 1`, or `-m package.module`).

    Under --virtual-gpu, the first device error (mixed devices in an op, .numpy() of a GPU tensor, ...)
    prints the script's file and line, the two devices and the rule that covers it, then exits 1.
    """
    from devlint.memory_size import parse_memory
    from devlint.virtual_gpu_runner import run_script  # imports torch only when a script is run

    memory = None
    if gpu_memory is not None:
        if not use_virtual_gpu:
            _fail("--gpu-memory needs --virtual-gpu")
        memory = parse_memory(gpu_memory)
        if memory is None:
            _fail(f"--gpu-memory: not a memory size: {gpu_memory!r} (examples: 24GiB, 16GB, 512MiB)")
    if module is not None:
        if not _top_level_module_exists(module):
            _fail(f"{module}: no such module")
        # Everything after MODULE is the module's own arguments, as with `python -m MODULE ARGS`.
        args = ((script,) if script is not None else ()) + args
        sys.exit(run_script(None, list(args), devices=devices, virtual=use_virtual_gpu, module=module, memory=memory))
    if script is None:
        _fail("give a SCRIPT to run, or -m MODULE")
    if not os.path.isfile(script):
        _fail(f"{script}: no such file")
    sys.exit(run_script(script, list(args), devices=devices, virtual=use_virtual_gpu, memory=memory))


def _fail(message: str) -> None:
    click.echo(f"devlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)
