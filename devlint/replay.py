"""A warm run replayed: a command run again, with nothing it rests on changed, prints what it printed
and exits as it exited, without parsing its options with click or loading the result cache, the
findings, the rules or LibCST (issue 28: a warm run as quick as ruff's; this is most of the difference).

What a check's output rests on, and how a replay finds each unchanged (all must hold; else the run is
an ordinary one, which may use the result cache):

- its arguments, its current folder, the environment variables devlint reads, whether stdout and
  stderr are terminals and their encodings, the interpreter and devlint's own code (the digest of
  its modules, as the result cache's name holds it): the record's name is made of them;
- the settings file: found and read again (devlint.settings), and compared;
- which files it checks: discovered again (devlint.files) with the excludes the run used, and compared;
- each file's bytes: read and hashed again, with the digest the result cache keys hold;
- what each result rested on besides its file's bytes (devlint.depends: project files read, folders
  listed, paths looked for): observed again.

Only a check that wrote nothing but its report is recorded: no --diff, --add-noqa, -o or stdin, no
--fix that fixed anything (one that found nothing to fix, as pre-commit's fixing hook on a clean
commit, is recorded: with the same bytes, settings and observations it finds nothing again), with the
result cache in use and no warning from it, and every file read and checked (none unreadable, over
the size limit, or failing). The record lives in the cache folder beside the
results (`devlint clean` removes both), written whole under a temporary name and renamed into place;
the newest KEEP records are kept. Anything unexpected while replaying (an unreadable record, an
error) is no replay: nothing has been printed yet, and the ordinary run decides.

Only a run started from the command line (devlint.entry) records or replays: a check called in
process (tests, the editor server) never does.
"""

from __future__ import annotations

import json
import os
import sys

from devlint import __version__

FORMAT = 1
KEEP = 16
PREFIX = "run-"
# Every variable a check reads (devlint.cli: colour, hyperlinks, the progress line); a test holds
# this list to the code.
ENVIRONMENT = ("NO_COLOR", "FORCE_COLOR", "TERM", "CI", "FORCE_HYPERLINK", "VTE_VERSION", "TERM_PROGRAM",
               "DOMTERM", "WT_SESSION", "KONSOLE_VERSION")

# The commands other than a check (a first argument that names one is not a path).
OTHER_COMMANDS = ("rule", "clean", "server", "run")

# The arguments of the command line that started this process (devlint.entry), None in process.
ARGV: list[str] | None = None

# The options a recorded check may have: they change what is printed, never what is written.
# (--fix writes; such a run is recorded only when it fixed nothing: devlint.cli)
_FLAGS = frozenset({"-q", "--quiet", "-s", "--silent", "--exit-zero", "--ignore-noqa", "--statistics",
                    "--force-exclude", "--follow-links", "--isolated", "--unsafe-fixes", "--no-unsafe-fixes",
                    "--show-fixes", "--exit-non-zero-on-fix", "--fix"})
_VALUED = {"--select": "--select", "--extend-select": "--extend-select", "--ignore": "--ignore",
           "--output-format": "--output-format", "--device-name": "--device-name",
           "--device-expression": "--device-expression", "--map-location": "--map-location",
           "--config": "--config", "--cache-dir": "--cache-dir", "-j": "--jobs", "--jobs": "--jobs",
           "--max-file-size": "--max-file-size"}


class Arguments:
    """What locating and checking a record needs from a command line: its paths, --config,
    --isolated and --cache-dir (the rest is in the record's name)."""

    __slots__ = ("paths", "config", "isolated", "cache_dir")

    def __init__(self, paths: list[str], config: str | None, isolated: bool, cache_dir: str | None) -> None:
        self.paths, self.config, self.isolated, self.cache_dir = paths, config, isolated, cache_dir

    def stored(self) -> list:
        return [self.paths, self.config, self.isolated, self.cache_dir]


def parse(argv: list[str]) -> Arguments | None:
    """The arguments of a check that may be recorded, or None (another command, an option that
    writes, reads stdin or is not known here). Read as click reads them; a reading that differed
    would only find no record, or one whose stored arguments differ: no replay either way."""
    args = list(argv)
    if args and args[0] == "check":
        args = args[1:]
    paths: list[str] = []
    values: dict[str, str] = {}
    flags: set[str] = set()
    index, only_paths = 0, False
    while index < len(args):
        arg = args[index]
        index += 1
        if only_paths or (not arg.startswith("-")):
            if not paths and not only_paths and index == 1 and arg in OTHER_COMMANDS:
                return None  # a subcommand
            paths.append(arg)
        elif arg == "--":
            only_paths = True
        elif arg in _FLAGS:
            flags.add(arg)
        elif arg in _VALUED:
            if index >= len(args):
                return None
            values[_VALUED[arg]] = args[index]
            index += 1
        elif arg.startswith("--") and arg.partition("=")[0] in _VALUED:
            name, _, value = arg.partition("=")
            values[_VALUED[name]] = value
        elif arg.startswith("-j") and len(arg) > 2:
            values["--jobs"] = arg[2:]
        else:
            return None  # `-` (stdin), --diff, --add-noqa, -o, --no-cache, --help, ...
    if "-" in paths:
        return None
    return Arguments(paths or ["."], values.get("--config"), "--isolated" in flags, values.get("--cache-dir"))


def streams_usable() -> bool:
    """Output is replayed as text written to stdout and stderr, as click wrote it: where click
    writes otherwise (Windows consoles, a stream that is not UTF-8, which click rewraps), no replay."""
    if os.name != "posix":
        return False
    for stream in (sys.stdout, sys.stderr):
        encoding = str(getattr(stream, "encoding", "") or "").lower().replace("_", "-")
        if encoding not in ("utf-8", "utf8"):
            return False
    return True


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def key(argv: list[str], cwd: str) -> str:
    import hashlib

    from devlint.code_fingerprint import fingerprint

    code = fingerprint(os.path.dirname(os.path.abspath(__file__)))
    streams = [[is_terminal(s), getattr(s, "encoding", None), getattr(s, "errors", None)]
               for s in (sys.stdout, sys.stderr)]
    environment = [[name, os.environ.get(name)] for name in ENVIRONMENT]
    text = json.dumps([FORMAT, __version__, sys.implementation.cache_tag, sys.executable, code, cwd, argv,
                       environment, streams])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def attempt(argv: list[str]) -> int | None:
    """Replay the check `argv` if a record of it holds: print its output and return its exit code;
    None when there is no such record (nothing printed then)."""
    if not streams_usable():
        return None
    arguments = parse(argv)
    if arguments is None:
        return None
    try:
        record = _valid_record(argv, arguments)
    except Exception:  # noqa: BLE001 (whatever it is, the ordinary run decides, and reports it)
        return None
    if record is None:
        return None
    for stream, text in record["writes"]:
        target = sys.stdout if stream == "out" else sys.stderr
        if text:
            target.write(text)
        target.flush()
    return record["exit"]


def _valid_record(argv: list[str], arguments: Arguments) -> dict | None:
    from devlint import cache_folder, depends, files, settings

    file_settings = settings.resolve([p for p in arguments.paths if p != "-"] or ["."], arguments.config,
                                     arguments.isolated)
    folder = arguments.cache_dir or cache_folder.default_directory(arguments.paths, file_settings.path)
    name = key(argv, os.getcwd())
    if not cache_folder._has_tag(folder):
        return None
    try:
        with open(os.path.join(folder, f"{PREFIX}{name}.json"), "rb") as handle:
            record = json.loads(handle.read())
    except FileNotFoundError:
        return None
    if type(record) is not dict or record.get("format") != FORMAT or record.get("key") != name \
            or record.get("arguments") != arguments.stored() \
            or record.get("settings") != [file_settings.path, file_settings.root, file_settings.values]:
        return None
    exclude, extend_exclude, root, follow_links, force_exclude = record["discover"]
    discovered = files.discover(arguments.paths, exclude, tuple(extend_exclude), root, follow_links=follow_links,
                                force_exclude=force_exclude)
    if _stored_discovery(discovered) != record["discovered"]:
        return None
    digests = record["files"]
    if len(digests) != len(discovered.files):
        return None
    known: dict[str, str] = {}
    for path, place, digest in zip(discovered.files, depends.places(discovered.files), digests):
        data, _info = depends.read_regular(path)
        if data is None or depends.digest(data) != digest:
            return None
        known[place] = digest  # (read_regular read it whole: under READ_LIMIT)
    if not depends.unchanged(record["rests_on"], {}, known):
        return None
    writes = record.get("writes")
    if type(writes) is not list or type(record.get("exit")) is not int or not all(
            type(w) is list and len(w) == 2 and w[0] in ("out", "err") and type(w[1]) is str for w in writes):
        return None
    return record


def _stored_discovery(discovered) -> list:
    return [list(discovered.files), [list(e) for e in discovered.errors], [list(s) for s in discovered.skipped]]


def save(folder: str, arguments: Arguments, file_settings, discover: list, discovered, results: list,
         writes: list[list[str]], exit_code: int) -> None:
    """Record the check the command line ARGV ran (the caller decides it may be recorded: see the
    module's docstring), into the cache folder `folder`, which the run made. Never fails the run."""
    from devlint import cache_folder

    if ARGV is None or not streams_usable() or not cache_folder._has_tag(folder):
        return
    read_here = parse(ARGV)
    if read_here is None or read_here.stored() != arguments.stored():
        return  # (read here otherwise than click read it: a replay would never find it)
    rests_on: dict[str, str] = {}  # what all the results rest on: the files share most of it
    for result in results:
        if result.digest is None:
            return
        for observation, found in (result.dependencies or {}).items():
            if rests_on.setdefault(observation, found) != found:
                return  # (a file changed while the run looked at it: no replay could hold)
    name = key(ARGV, os.getcwd())
    record = {"format": FORMAT, "key": name, "arguments": arguments.stored(),
              "settings": [file_settings.path, file_settings.root, file_settings.values],
              "discover": discover, "discovered": _stored_discovery(discovered),
              "files": [r.digest for r in results], "rests_on": rests_on, "writes": writes, "exit": exit_code}
    try:
        cache_folder.write_atomically(folder, f"{PREFIX}{name}.json",
                                      json.dumps(record, separators=(",", ":")).encode("ascii"))
        _keep_newest(folder)
    except (OSError, ValueError, TypeError):
        pass  # a record is only an optimisation


def _keep_newest(folder: str) -> None:
    from devlint import cache_folder

    records = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(PREFIX) and entry.name.endswith(".json"):
                try:
                    records.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
                except OSError:
                    pass
    for _, path in sorted(records)[:-KEEP]:
        cache_folder.remove_quietly(path)
