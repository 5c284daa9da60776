"""`devlint server`: the language server (LSP over stdio) for editors, built on pygls.

pygls is an optional extra (`pip install 'devlint[server]'`): only this package imports it, and only
once the command runs, so the linter stays light and fast without it.

    protocol.py       the LSP handlers (pygls)
    documents.py      open documents, debounce, the analysis thread, stale results dropped
    configuration.py  each document's [tool.devlint], as the CLI reads it
    diagnostics.py    findings as diagnostics
    actions.py        quick fixes, fix all, disable for this line
    hover.py          a rule's documentation over `# noqa: DLxxx`
    positions.py      devlint's positions <-> the client's (UTF-16 by default), text -> edits
    lint.py           the one door into devlint's engine, settings and documentation
"""

from __future__ import annotations

import sys

# Distinct from devlint's 0/1/2 (clean, findings, error): the server cannot start without its extra.
EXIT_NO_SERVER = 3


def main() -> None:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        print("devlint: error: `devlint server` needs pygls: install devlint[server] "
              "(pip install 'devlint[server]')", file=sys.stderr)
        sys.exit(EXIT_NO_SERVER)
    from devlint.server.protocol import serve

    serve()
