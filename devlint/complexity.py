"""How deep LibCST's tree of a file will be, read from the standard `ast`, and what devlint does about it.

Valid Python can be nested far deeper than LibCST survives: its native parser recurses once per
level and a deep enough expression overflows the thread's stack (a segmentation fault that kills
the whole run, not an exception), and devlint's own passes over the tree (rendering code, metadata)
recurse in Python. LibCST also nests some structures that CPython keeps flat: a BooleanOperation
per operand pair (`a or b or c` is two levels), a ConcatenatedString per implicit concatenation
(`'a' 'b' 'c'` is two levels), so CPython accepting a file says nothing about LibCST's depth.

Measured with LibCST 1.9.0 on CPython 3.11, x86-64 Linux (8 MiB main-thread stack):

- native parser, main thread: `a or a or ...` crashes between 7,000 and 8,000 operands; in a thread
  with a 2 MiB stack, 1,000 chained `.abs()` calls (2,000 levels) or 1,000 nested `lambda:` crash
  (over 2 KiB of stack per level); with a 512 MiB stack, 16,000 `or` operands parse.
- native parser: more than 3,000 implicitly concatenated strings are refused as a syntax error.
- chains (`.abs()`, `[0]`, `.b`, `+`) take time quadratic in their length to parse: 1,000 `.abs()`
  calls 2 s, 2,000 calls 8.6 s, 4,000 calls over a minute.
- devlint's own recursion (sys.setrecursionlimit 10,000): fixing `(a or ... or a).cuda()` works with
  3,000 operands and hits the recursion limit with 3,500 (rendering recurses ~3 frames per level).

So: a file whose LibCST depth exceeds MAX_DEPTH (2,000: 1.5x under the rendering limit and the
string limit, at most ~2 s of parse for a chain) is skipped with a notice, never an error (valid code
must not turn a CI gate red); one deeper than THREAD_DEPTH is analysed on a thread with a 512 MiB
stack (address space reserved, not memory used), so no depth under the limit can overflow the stack.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import threading
import tokenize

MAX_DEPTH = 2_000  # LibCST levels; over this a file is skipped with a notice
THREAD_DEPTH = 200  # over this, parse and analyse on a thread with a big stack
STACK_SIZE = 512 * 1024 * 1024
# LibCST's visitors recurse per nesting level; deep (but valid) code needs more than the default.
RECURSION_LIMIT = 10_000

_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class Unanalysable(Exception):
    """Valid Python that devlint skips rather than risk a crash; str() is the notice."""


def over_limit(depth: int) -> Unanalysable:
    return Unanalysable(f"skipped: expression nesting of {depth:,} levels is over devlint's limit of "
                        f"{MAX_DEPTH:,} (LibCST cannot analyse it safely)")


def cannot_parse(message: str) -> Unanalysable:
    message = " ".join(message.split())
    if len(message) > 200:
        message = message[:197] + "..."
    return Unanalysable(f"skipped: valid Python that LibCST cannot parse ({message})")


class DepthCounter:
    """The depth LibCST's tree will have, from `ast` nodes visited with their parent's depth."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._lines: list[bytes] | None = None

    def weight(self, node: ast.AST, depth: int) -> int:
        """How many LibCST levels `node` adds below a parent at `depth`."""
        if isinstance(node, ast.BoolOp):
            return max(1, len(node.values) - 1)
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant)
                                               and isinstance(node.value, (str, bytes))):
            return self._strings(node, depth)
        return 1

    def _strings(self, node: ast.expr, depth: int) -> int:
        """One level per implicitly concatenated string; each takes at least two characters, so
        only a long enough span is tokenised to count them."""
        end_line, end_col = node.end_lineno, node.end_col_offset
        if end_line is None or end_col is None:
            return 1
        room = THREAD_DEPTH - depth
        if node.lineno == end_line and end_col - node.col_offset < 2 * room:
            return 1
        if self._lines is None:
            self._lines = [line.encode("utf-8", "surrogatepass") for line in _LINES.findall(self.text)]
        lines = self._lines[node.lineno - 1:end_line]
        if not lines:
            return 1
        if len(lines) == 1:
            span = lines[0][node.col_offset:end_col]
        else:
            span = b"".join([lines[0][node.col_offset:], *lines[1:-1], lines[-1][:end_col]])
        if len(span) < 2 * room:
            return 1
        return max(1, _count_strings(span.decode("utf-8", "surrogatepass")))


def _count_strings(span: str) -> int:
    """The number of string literals in an implicit concatenation (an upper bound if unreadable)."""
    count = nested = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(f"({span})").readline):
            name = tokenize.tok_name[token.type]
            if name == "FSTRING_START":  # Python 3.12+: an f-string is several tokens
                count += nested == 0
                nested += 1
            elif name == "FSTRING_END":
                nested -= 1
            elif token.type == tokenize.STRING and nested == 0:
                count += 1
    except (tokenize.TokenError, SyntaxError):
        return len(span) // 2
    return count


def run_with_big_stack(function, *args):
    """`function(*args)` on a thread with a STACK_SIZE stack: its result, or its exception raised here."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, function(*args)))
        except BaseException as exc:  # handed to the caller, which decides
            outcome.append((False, exc))

    thread = threading.Thread(target=target, name="devlint-deep", daemon=True)
    previous = threading.stack_size()  # read when a thread starts
    try:
        threading.stack_size(STACK_SIZE)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    ok, value = outcome[0]
    if ok:
        return value
    raise value


class deep_recursion:
    """Raise the interpreter's recursion limit to RECURSION_LIMIT inside the block."""

    def __enter__(self):
        self.previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.previous, RECURSION_LIMIT))

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.previous)
