"""A devlint process skips the interpreter's last collection over what it built (devlint.quick_exit):
cyclic garbage left at exit is not traversed (it is what LibCST's trees are); stdout is still flushed."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
class Cycle:
    def __del__(self):
        print("collected", flush=True)
cycle = Cycle()
cycle.me = cycle
del cycle
import gc
gc.disable()  # (left for the collection at exit)
if sys.argv[1] == "devlint":
    from devlint import quick_exit
    quick_exit.at_exit()
sys.stdout.write("done")  # unflushed: the interpreter flushes it at exit
"""


def test_a_devlint_process_skips_the_last_collection_and_still_flushes_its_output():
    plain, devlint = (subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True,
                                     check=True).stdout for mode in ("plain", "devlint"))
    assert "collected" in plain  # (what the exit costs without it: a collection of everything)
    assert devlint == "done"
