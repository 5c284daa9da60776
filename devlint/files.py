"""Which files a run checks: explicit files always; folders walked for Python, honouring .gitignore."""

from __future__ import annotations

import os
import stat

DEFAULT_EXCLUDES = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages",
    "venv", "__pycache__", ".devlint_cache",
})
PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


class Discovered:
    """What discovery found (a plain class: the replay of a warm run, devlint.replay, discovers again
    without importing dataclasses)."""

    __slots__ = ("files", "errors", "skipped")

    def __init__(self, files: list[str], errors: list[tuple[str, str]],
                 skipped: list[tuple[str, str]] | None = None) -> None:
        self.files = files
        self.errors = errors  # (path, reason)
        # Named files left out with a warning (path, reason): e.g. README.md is not Python.
        self.skipped = [] if skipped is None else skipped

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Discovered) and (self.files, self.errors, self.skipped) == (
            other.files, other.errors, other.skipped)

    def __repr__(self) -> str:
        return f"Discovered(files={self.files!r}, errors={self.errors!r}, skipped={self.skipped!r})"


def discover(paths: list[str], exclude: list[str] | None = None, extend_exclude: tuple[str, ...] = (),
             root: str = ".", follow_links: bool = False, force_exclude: bool = False) -> Discovered:
    """Files to check. `exclude` (gitignore-style globs relative to `root`) replaces the default
    folder list; `extend_exclude` adds to it. Both apply to walked folders, and to named paths
    (or a folder above them, up to `root`) only with `force_exclude` (as ruff's flag: what
    pre-commit passes is then filtered like a walk).

    A named file is checked when it is .py, .pyi or .ipynb or starts with a python shebang (what
    pre-commit calls python); any other named file (README.md) is skipped with a warning.
    Walking `.` lists `a.py`, not `./a.py`: paths are shown as the user would type them.

    Each real file is listed once, under the first name that reaches it. A walk does not follow a
    symbolic link (to a folder or a file) that leads out of `root` and of the folder named, unless
    `follow_links`: --fix would rewrite files that are not the project's. A link named in `paths`
    is always followed: the user asked for it."""
    files: list[str] = []
    errors: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(path: str, key: str | None = None) -> None:
        key = os.path.realpath(path) if key is None else key
        if key not in seen:
            seen.add(key)
            files.append(path)

    names = DEFAULT_EXCLUDES if exclude is None else frozenset()
    patterns = [*(exclude or ()), *extend_exclude]
    excluded = _Excluded(patterns, root, names)
    for path in paths:
        if force_exclude and _named_excluded(path, excluded):
            continue
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            if os.path.lexists(path):
                add(path)  # a dangling link: reading it says so
            else:
                errors.append((path, "no such file or directory"))
            continue
        except OSError as exc:  # e.g. in a folder without search (x) permission: say so, not "no such file"
            errors.append((path, f"cannot read: {exc.strerror or exc}"))
            continue
        if is_dir:
            within = None if follow_links else (os.path.realpath(root), os.path.realpath(path))
            strip = path in (os.curdir, os.curdir + os.sep)  # `.` walks to `a.py`, not `./a.py`
            before = len(errors)
            for found, key in _walk(path, errors, excluded, within):
                add(found[2:] if strip and found.startswith(os.curdir + os.sep) else found, key)
            if strip:  # an unreadable folder met in the walk: `sub`, not `./sub`
                errors[before:] = [(p[2:] if p.startswith(os.curdir + os.sep) else p, reason)
                                   for p, reason in errors[before:]]
        elif _is_python_file(path):
            add(path)  # reading may still fail: that is reported by the run
        else:
            skipped.append((path, "skipped: not a Python file (devlint checks .py, .pyi, .ipynb and files "
                                  "with a python shebang)"))
    return Discovered(files, errors, skipped)


def _is_python_file(path: str) -> bool:
    """.py/.pyi/.ipynb, or a `#!...python...` first line (an unreadable file is kept: the run says why)."""
    if path.endswith(PYTHON_SUFFIXES):
        return True
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return True
    return first.startswith(b"#!") and b"python" in first


def _named_excluded(path: str, excluded: "_Excluded") -> bool:
    """A named path, or one of its folders below the project root, matches the excludes."""
    absolute = os.path.abspath(path)
    if excluded(path, os.path.isdir(path), absolute):
        return True
    root = excluded.root
    folder = os.path.dirname(absolute)
    while folder != root and _is_within(folder, root) and folder != os.path.dirname(folder):
        if excluded(folder, True, folder):
            return True
        folder = os.path.dirname(folder)
    return False


def _relative(path: str, directory: str) -> str:
    """os.path.relpath(path, directory) for a normalised absolute `path` under the normalised
    absolute `directory`, without relpath's cost (it normalises both and splits them)."""
    if len(directory) > 1 and path.startswith(directory) and path[len(directory):len(directory) + 1] == os.sep:
        return path[len(directory) + 1:]
    return os.path.relpath(path, directory)


class _Matcher:
    """A compiled GitIgnoreSpec, answering exactly as its match_file does, but first asking one
    regular expression that joins all its patterns whether any pattern matches at all: most paths
    match none, and then the spec cannot exclude them (an unmatched path is never excluded)."""

    def __init__(self, lines) -> None:
        import pathspec
        from pathspec.util import normalize_file

        self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        self.normalize = normalize_file
        self.any_pattern = _any_pattern(self.spec)

    def __call__(self, relative: str) -> bool:
        if self.any_pattern is not None and self.any_pattern.search(self.normalize(relative)) is None:
            return False
        return self.spec.match_file(relative)


_DIR_GROUP = "(?P<ps_d>"  # the one named group in pathspec's gitignore regexes
_ANY_FOLDER = "^(?:.+/)?"  # how they start for a pattern without a slash


def _any_pattern(spec) -> re.Pattern | None:
    """One regex matching a path when any of the spec's (non-null) patterns' regexes does, or None
    when the patterns are not all plain `re` patterns that can be joined safely."""
    import re  # (with pathspec, which imports it anyway: a walk without .gitignore needs neither)

    parts: list[str] = []
    flags = None
    for pattern in spec.patterns:
        if pattern.include is None:
            continue  # a no-op pattern (a comment, a blank line): never decides anything
        regex = getattr(pattern, "regex", None)
        if not isinstance(regex, re.Pattern) or not isinstance(regex.pattern, str):
            return None
        if flags is None:
            flags = regex.flags
        elif regex.flags != flags:
            return None
        source = regex.pattern
        # Capture groups would clash once joined: the directory marker is made non-capturing, and
        # only when it is provably the sole group (its text appears once and the regex has one group).
        if regex.groups == 0 and "(?P" not in source:
            parts.append(source)
        elif (regex.groups == 1 and regex.groupindex == {"ps_d": 1} and source.count("(?P") == 1
              and source.count(_DIR_GROUP) == 1):
            parts.append(source.replace(_DIR_GROUP, "(?:"))
        else:
            return None
    if not parts:
        return re.compile(r"(?!)")  # no pattern: nothing matches
    # Most patterns match a name in any folder: `^(?:.+/)?NAME...`. Sharing that prefix tries each
    # folder boundary once for all of them rather than once per pattern (about 4x faster).
    anywhere = [part[len(_ANY_FOLDER):] for part in parts if part.startswith(_ANY_FOLDER)]
    others = [f"(?:{part})" for part in parts if not part.startswith(_ANY_FOLDER)]
    if anywhere:
        others.insert(0, f"(?:{_ANY_FOLDER}(?:{'|'.join(f'(?:{rest})' for rest in anywhere)}))")
    try:
        joined = re.compile("|".join(others), flags)
    except re.error:
        return None
    return joined if joined.groups == 0 else None


class _Excluded:
    def __init__(self, patterns: list[str], root: str, names: frozenset[str]) -> None:
        self.names = names
        self.root = os.path.abspath(root)
        self.match = _Matcher(patterns) if patterns else None

    def __call__(self, path: str, is_dir: bool, absolute: str | None = None) -> bool:
        """`absolute`, when given, is os.path.abspath(path)."""
        name = os.path.basename(path)
        if name in self.names or (is_dir and name.endswith(".egg-info") and self.names):
            return True
        if self.match is None:
            return False
        absolute = os.path.abspath(path) if absolute is None else absolute
        relative = _relative(absolute, self.root).replace(os.sep, "/")
        return self.match(relative + ("/" if is_dir else ""))


def _walk(root: str, errors: list[tuple[str, str]], excluded: _Excluded, within: tuple[str, ...] | None):
    """(path, os.path.realpath(path)) for each Python file under `root` that is not excluded, not
    reached through a link leading out of the real folders `within` (None: any link is followed)."""
    ignores = _GitIgnores(root)
    visited: set[tuple[int, int]] = set()
    # The real path of each folder to walk, from its parent's: one lstat per entry instead of one
    # per path component (what os.path.realpath costs).
    real = {root: os.path.realpath(root)}

    def on_error(exc: OSError) -> None:
        errors.append((exc.filename or root, f"cannot read: {exc.strerror or exc}"))

    def real_path(path: str, parent: str, name: str) -> str | None:
        """None for a link out of `within`."""
        if not os.path.islink(path):
            return os.path.join(parent, name)
        target = os.path.realpath(path)
        if within is None or any(_is_within(target, folder) for folder in within):
            return target
        return None

    join = os.path.join
    for directory, subdirs, filenames in os.walk(root, onerror=on_error, followlinks=True):
        info = os.stat(directory)
        if (info.st_dev, info.st_ino) in visited:  # a symlink loop
            subdirs[:] = []
            continue
        visited.add((info.st_dev, info.st_ino))
        ignores.enter(directory)
        absolute = os.path.abspath(directory)
        real_directory = real.pop(directory, None) or os.path.realpath(directory)
        kept = []
        for d in subdirs:
            path = join(directory, d)
            full = join(absolute, d)
            if not excluded(path, True, full) and not ignores.ignored(full, is_dir=True):
                target = real_path(path, real_directory, d)
                if target is not None:
                    kept.append(d)
                    real[path] = target
        subdirs[:] = sorted(kept)
        for name in sorted(filenames):
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            path = join(directory, name)
            full = join(absolute, name)
            if not excluded(path, False, full) and not ignores.ignored(full, is_dir=False):
                target = real_path(path, real_directory, name)
                if target is not None:
                    yield path, target


def _is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class _GitIgnores:
    """The .gitignore files from the repository root down to each walked folder.

    A path is ignored when any .gitignore of a folder above it (from the repository root, among
    those read so far: the walk is top-down, so all of them) matches it relative to its folder.
    """

    def __init__(self, root: str) -> None:
        self.read: set[str] = set()  # folders whose .gitignore was looked for
        self.specs: list[tuple[str, str, _Matcher]] = []  # (folder, folder + os.sep, matcher), found ones
        top = os.path.abspath(root)
        repository = top
        while not os.path.exists(os.path.join(repository, ".git")):
            parent = os.path.dirname(repository)
            if parent == repository:
                repository = top
                break
            repository = parent
        folder = top
        while True:
            self.enter(folder)
            if folder == repository:
                break
            folder = os.path.dirname(folder)

    def enter(self, directory: str) -> None:
        directory = os.path.abspath(directory)
        if directory in self.read:
            return
        self.read.add(directory)
        path = os.path.join(directory, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                self.specs.append((directory, directory + os.sep, _Matcher(handle)))
        except OSError:
            pass

    def ignored(self, path: str, is_dir: bool) -> bool:
        """`path` is absolute and normalised (os.path.abspath)."""
        for directory, prefix, match in self.specs:
            if not path.startswith(prefix):
                continue
            relative = _relative(path, directory).replace(os.sep, "/")
            if match(relative + ("/" if is_dir else "")):
                return True
        return False
