"""The `devlint` command (the installed script and `python -m devlint`): a check run before with
nothing it rests on changed is replayed (devlint.replay); anything else is the click command line."""

from __future__ import annotations

import sys


def main() -> None:
    from devlint import collector, replay

    argv = sys.argv[1:]
    if not (argv and argv[0] in replay.OTHER_COMMANDS):
        # A check. `devlint run` runs the user's program, whose memory (the virtual GPU's too) keeps
        # Python's collector; `devlint server` lives for days: nothing of it is ever frozen.
        collector.tune()
    code = replay.attempt(argv)
    if code is not None:
        sys.exit(code)
    replay.ARGV = argv  # (this run may be recorded)
    from devlint.cli import main as command_line

    command_line()
