"""`python -m devlint`: the `devlint` command."""

import os
import sys


def _drop_the_current_folder() -> None:
    """`python -m` puts the current folder first on sys.path: a user's `click.py`, `json.py` or
    `libcst.py` beside the files being checked would be imported in place of the library (the
    console script `devlint` has no such entry). The devlint package itself is already imported;
    its modules are found through it. Kept when the current folder is devlint's own checkout."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return  # python -P: the folder was never added
    cwd = os.getcwd()
    if os.path.abspath(sys.path[0] or os.curdir) != cwd:
        return
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.realpath(checkout) != os.path.realpath(cwd):
        del sys.path[0]


_drop_the_current_folder()

from devlint.entry import main  # noqa: E402

main()
