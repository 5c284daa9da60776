"""Where the result cache lives and how devlint knows the folder is its own (see devlint.cache), in a
module of its own: the replay of a warm run (devlint.replay) finds the folder without importing the
cache's entries, findings and rule table."""

from __future__ import annotations

import os
import stat

CACHE_DIR_NAME = ".devlint_cache"
TAG_NAME = "CACHEDIR.TAG"
TAG_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
_TAG_OWNER = b"created by devlint"
TAG = (TAG_SIGNATURE + b"\n# This file is a cache directory tag " + _TAG_OWNER + b".\n"
       b"# For information about cache directory tags, see https://bford.info/cachedir/\n")
GITIGNORE = "# Automatically created by devlint.\n*\n"
# What a cache folder written before the CACHEDIR.TAG held: it is recognised and adopted.
_LEGACY_FILE = r"results-[0-9a-f]{20}\.json|\.results-.*\.tmp"


def is_cache_dir(directory: str) -> bool:
    """Whether `directory` is a devlint cache: a folder holding devlint's CACHEDIR.TAG (a regular
    file, not a link), or a cache folder from before the tag (only devlint's own files in it)."""
    return _has_tag(directory) or _is_legacy(directory)


def _has_tag(directory: str) -> bool:
    tag = os.path.join(directory, TAG_NAME)
    try:
        if not stat.S_ISREG(os.lstat(tag).st_mode):
            return False
        with open(tag, "rb") as handle:
            head = handle.read(1024)
    except OSError:
        return False
    return head.startswith(TAG_SIGNATURE) and _TAG_OWNER in head


def _is_legacy(directory: str) -> bool:
    import re

    try:
        names = os.listdir(directory)
        if ".gitignore" not in names:
            return False
        for name in names:
            if not stat.S_ISREG(os.lstat(os.path.join(directory, name)).st_mode):
                return False
            if name != ".gitignore" and not re.fullmatch(_LEGACY_FILE, name):
                return False
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8") as handle:
            return handle.read(len(GITIGNORE) + 1) == GITIGNORE
    except (OSError, ValueError):
        return False


def not_a_cache(directory: str) -> str:
    return f"{directory} is not a devlint cache (no {TAG_NAME} written by devlint)"


def default_directory(paths: list[str], settings_file: str | None) -> str:
    """Where the cache lives unless --cache-dir says: in the project root, as ruff puts .ruff_cache
    beside the pyproject.toml it uses. That is the folder of the settings file in use; without one,
    the nearest folder above the checked paths holding a pyproject.toml or .git; else the current
    folder. Checking `src/` from inside `src/` then uses the same cache as checking it from the root."""
    return os.path.join(project_root(paths, settings_file), CACHE_DIR_NAME)


def project_root(paths: list[str], settings_file: str | None) -> str:
    if settings_file is not None:
        return os.path.dirname(os.path.abspath(settings_file))
    try:
        start = os.path.commonpath([os.path.abspath(p) for p in paths if p != "-"] or [os.getcwd()])
    except ValueError:  # paths on different drives
        return os.getcwd()
    folder = start if os.path.isdir(start) else os.path.dirname(start)
    while True:
        if os.path.isfile(os.path.join(folder, "pyproject.toml")) or os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.getcwd()
        folder = parent


def usual_mode(path: str) -> None:
    """Give a file made by mkstemp (always 0600) the mode any new file gets (0666 less the umask), as
    the cache's other files and ruff's have: a cache shared by a team or a CI user stays readable."""
    os.chmod(path, 0o666 & ~umask())


def umask() -> int:
    mask = os.umask(0o022)  # the only portable way to read it is to set it: put it back at once
    os.umask(mask)
    return mask


def write_atomically(directory: str, name: str, content: bytes) -> None:
    """Write `content` as `directory`/`name`, whole or not at all: a reader sees the old file or the new."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        usual_mode(tmp)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        remove_quietly(tmp)
        raise


def remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
