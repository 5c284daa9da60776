"""devlint as a flake8 plugin: `flake8 --select DL` reports devlint's findings, at devlint's positions.

Registered as the `DL` entry of `flake8.extension` (pyproject.toml), as TorchFix registers `TOR`.
Findings only: flake8 applies no fixes (`devlint --fix` does).

- Configuration: the file's nearest `[tool.devlint]`, as `devlint FILE` reads it (selection,
  per-file-ignores, device options), so the plugin reports what devlint reports; flake8's own
  `--select` / `--ignore` / `--extend-ignore` / `# noqa` then filter as for any plugin.
- Positions: flake8 takes a 0-based column from a plugin and shows it plus one, so `file:5:25:` is
  devlint's `file:5:25:` (devlint keeps 0-based columns and prints them plus one too).
- A file devlint cannot check, or a bad `[tool.devlint]`, is one `DL000` finding at the top of the
  file saying why, never a crashed flake8 run.
- flake8 imports this module every time it starts, for every file type and selection: nothing heavy
  is imported here; LibCST and the rules load in `run()`, on the first file checked.
"""

from __future__ import annotations

import os
from functools import lru_cache

from devlint import __version__

NOT_CHECKED = "DL000"


class DevlintChecker:
    name = "devlint"
    version = __version__

    # flake8 passes what the parameter names ask for; `tree` makes this an AST plugin (flake8 has
    # parsed the file already: a file that does not parse is flake8's E999, and never reaches us).
    def __init__(self, tree, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self):
        from devlint.config import ConfigError
        from devlint.documents import load_checker

        try:
            config = _config(os.path.dirname(os.path.abspath(self.filename)))
        except ConfigError as exc:
            yield 1, 0, f"{NOT_CHECKED} devlint: {exc}", type(self)
            return
        load_checker(config)  # (LibCST's import, its kept code first: once per flake8 process)
        from devlint.engine import check_source

        data = _source_bytes(self.lines)
        if len(data) > config.max_file_size:
            return  # devlint skips it too (with a warning, exit code 0): max-file-size
        result = check_source(self.filename, data, config)
        if result.error is not None:
            line = result.error.line or 1
            column = max((result.error.column or 1) - 1, 0)
            yield line, column, f"{NOT_CHECKED} devlint could not check this file: {result.error.message}", type(self)
        for finding in result.findings:
            yield finding.start.line, finding.start.column, f"{finding.code} {finding.message}", type(self)


@lru_cache(maxsize=64)
def _config(folder: str):
    """The settings of the files in `folder` (the nearest [tool.devlint] depends on the folder only:
    one read per folder, not per file)."""
    from devlint.options import config_for

    return config_for(folder)


def _source_bytes(lines: list[str]) -> bytes:
    """flake8's decoded lines as the file's bytes again (devlint reads the coding cookie itself):
    flake8 may be reading stdin, so the file on disk is not necessarily what is being checked."""
    import io
    import tokenize

    text = "".join(lines)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8", "surrogateescape")).readline)
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeError):
        return text.encode("utf-8", "surrogateescape")
