"""Which files a run checks: explicit files always; folders walked for Python, honouring .gitignore."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pathspec

DEFAULT_EXCLUDES = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages",
    "venv", "__pycache__", ".devlint_cache",
})
PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass(frozen=True)
class Discovered:
    files: list[str]
    errors: list[tuple[str, str]]  # (path, reason)


def discover(paths: list[str], exclude: list[str] | None = None, extend_exclude: tuple[str, ...] = (),
             root: str = ".") -> Discovered:
    """Files to check. `exclude` (gitignore-style globs relative to `root`) replaces the default
    folder list; `extend_exclude` adds to it. Both apply to walked folders, not to named files."""
    files: list[str] = []
    errors: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            files.append(path)

    names = DEFAULT_EXCLUDES if exclude is None else frozenset()
    patterns = [*(exclude or ()), *extend_exclude]
    excluded = _Excluded(patterns, root, names)
    for path in paths:
        if os.path.isdir(path):
            for found in _walk(path, errors, excluded):
                add(found)
        elif os.path.lexists(path):
            add(path)  # explicit files are checked whatever their name; reading may still fail
        else:
            errors.append((path, "no such file or directory"))
    return Discovered(files, errors)


class _Excluded:
    def __init__(self, patterns: list[str], root: str, names: frozenset[str]) -> None:
        self.names = names
        self.root = os.path.abspath(root)
        self.spec = pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None

    def __call__(self, path: str, is_dir: bool) -> bool:
        name = os.path.basename(path)
        if name in self.names or (is_dir and name.endswith(".egg-info") and self.names):
            return True
        if self.spec is None:
            return False
        relative = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        return self.spec.match_file(relative + ("/" if is_dir else ""))


def _walk(root: str, errors: list[tuple[str, str]], excluded: _Excluded):
    ignores = _GitIgnores(root)
    visited: set[tuple[int, int]] = set()

    def on_error(exc: OSError) -> None:
        errors.append((exc.filename or root, exc.strerror or str(exc)))

    for directory, subdirs, filenames in os.walk(root, onerror=on_error, followlinks=True):
        stat = os.stat(directory)
        if (stat.st_dev, stat.st_ino) in visited:  # a symlink loop
            subdirs[:] = []
            continue
        visited.add((stat.st_dev, stat.st_ino))
        ignores.enter(directory)
        subdirs[:] = sorted(
            d for d in subdirs
            if not excluded(os.path.join(directory, d), True)
            and not ignores.ignored(os.path.join(directory, d), is_dir=True)
        )
        for name in sorted(filenames):
            path = os.path.join(directory, name)
            if (name.endswith(PYTHON_SUFFIXES) and not excluded(path, False)
                    and not ignores.ignored(path, is_dir=False)):
                yield path


class _GitIgnores:
    """The .gitignore files from the repository root down to each walked folder."""

    def __init__(self, root: str) -> None:
        self.specs: dict[str, pathspec.PathSpec] = {}
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
        if directory in self.specs:
            return
        path = os.path.join(directory, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                self.specs[directory] = pathspec.GitIgnoreSpec.from_lines(handle)
        except OSError:
            self.specs[directory] = None

    def ignored(self, path: str, is_dir: bool) -> bool:
        path = os.path.abspath(path)
        for directory, spec in self.specs.items():
            if spec is None or not path.startswith(directory + os.sep):
                continue
            relative = os.path.relpath(path, directory).replace(os.sep, "/")
            if spec.match_file(relative + ("/" if is_dir else "")):
                return True
        return False
