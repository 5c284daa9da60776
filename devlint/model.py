"""Plain data passed between the stages: no logic lives here."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Position:
    line: int  # 1-based
    column: int  # 0-based, in characters


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions (end exclusive) by `content`."""

    start: Position
    end: Position
    content: str


class Applicability(str, enum.Enum):
    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # may change behaviour: only with --unsafe-fixes
    DISPLAY_ONLY = "display-only"  # a suggestion; never written


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[Edit, ...] = ()
    # The edits use the device variable and rely on the fixer defining it at module level.
    needs_device: bool = False


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    start: Position
    end: Position
    fix: Fix | None = None
    # Other lines whose `# noqa` silences this finding: the last line of a multi-line statement.
    suppress_lines: tuple[int, ...] = ()
    cell: int | None = None  # in a notebook: the cell (1-based, among all cells); lines count within it


@dataclass(frozen=True)
class FileError:
    """Why a file could not be checked (or written); reported as one line, exit code 2."""

    message: str
    line: int | None = None
    column: int | None = None  # 1-based, as shown to users
    internal: bool = False


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    # Set when fixing: the new text, the fixes applied, and what an unapplied unsafe fix could do.
    fixed_source: str | None = None
    applied: list[Finding] = field(default_factory=list)
    original_source: str | None = None
    added_noqa: int = 0
    notice: str | None = None  # skipped, not an error (e.g. over the size limit)
    # What the checks rested on besides the file's bytes (devlint.depends: files read, with their
    # digests, and paths looked for, found or not): the result cache checks the file again when one changes.
    dependencies: dict[str, str] = field(default_factory=dict)
    # The digest of the bytes checked (devlint.depends.digest), when the run hashed them (it uses a cache).
    digest: str | None = None
