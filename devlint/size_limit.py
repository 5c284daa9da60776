"""The size limit (`--max-file-size`) for what devlint checks, not for what a file carries.

A `.py` file is all code: its bytes count. A notebook's bytes are mostly its embedded outputs (a plot
is a base64 PNG of 50-500 KB), which nothing checks: the limit counts its code cells' source instead
(`code_size_notice`, asked once the JSON is read). Its raw size still has a bound, so that a run
never reads gigabytes: `NOTEBOOK_RAW_FACTOR` times the limit (32 MiB by default), far above a
notebook whose code is near the limit with a few dozen plots, below what would cost a worker more
memory than a large `.py` file does (the text is held as bytes, as a string, as parsed JSON).
"""

from __future__ import annotations

from devlint.notebook_json import source_text

NOTEBOOK_RAW_FACTOR = 32


def raw_limit(path: str, config) -> int:
    """How many bytes of the file `path` may be read at most."""
    return config.max_file_size * NOTEBOOK_RAW_FACTOR if path.endswith(".ipynb") else config.max_file_size


def raw_limit_notice(path: str, size: int, config) -> str:
    if path.endswith(".ipynb"):
        return (f"skipped: {size} bytes is over the size limit for a notebook's file ({raw_limit(path, config)}: "
                f"{NOTEBOOK_RAW_FACTOR} times --max-file-size, which counts its code cells)")
    return f"skipped: {size} bytes is over the size limit ({config.max_file_size}; see --max-file-size)"


def code_size_notice(cells: list, config) -> str | None:
    """Why a notebook is skipped: its code cells' source (UTF-8 bytes) is over the limit; else None."""
    size = 0
    for cell in cells:
        if cell.get("cell_type") == "code":  # (validated by notebook_json.load)
            size += len(source_text(cell).encode("utf-8", "surrogatepass")) + 1  # and a line between cells
    if size <= config.max_file_size:
        return None
    return (f"skipped: its code cells hold {size} bytes, over the size limit "
            f"({config.max_file_size}; see --max-file-size)")
