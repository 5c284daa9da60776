"""The fix options (`FixOptions`: what the fixer writes), and whether `--device-name` and
`--device-expression` can be written as `NAME = EXPRESSION` at module level.

The fixer inserts exactly that line into the user's file, so an option that is not valid there
would make `--fix` write a file that does not compile (`yield 1`, `await f()`, `*a`,
`__debug__`), or make LibCST's parse of the inserted line fail and be reported as a SyntaxError of
the user's file (`)`, `class`). Outside `devlint.rules` and free of LibCST: the settings are read on
every run, and a fully cached run imports neither.
"""

from __future__ import annotations

import ast
import keyword
import unicodedata
from dataclasses import dataclass

NAMED_EXPRESSIONS = ("cuda", "accelerator")


@dataclass(frozen=True)
class FixOptions:
    """What the fixer writes; shared by every rule that needs a device."""

    device_name: str = "device"
    device_expression: str = "cuda"  # 'cuda', 'accelerator', or a Python expression
    map_location: str = "auto"  # 'auto', 'device' or 'cpu'


def device_expression(options_expression: str, torch_name: str) -> str:
    """The expression `--device-expression` stands for, written with `torch_name` for the torch module."""
    if options_expression == "cuda":
        return f'{torch_name}.device("cuda" if {torch_name}.cuda.is_available() else "cpu")'
    if options_expression == "accelerator":
        return (f"{torch_name}.accelerator.current_accelerator() if {torch_name}.accelerator.is_available() "
                f'else {torch_name}.device("cpu")')
    return options_expression


def device_name_problem(name: object) -> str | None:
    """Why `name` cannot be the variable a fix writes, or None."""
    problem = "is not a variable name (an identifier that is not a keyword or __debug__)"
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name == "__debug__":
        return problem
    try:
        compile(f"{name} = None\n", "<device-name>", "exec")
    except (SyntaxError, ValueError):
        return problem
    if unicodedata.normalize("NFKC", name) != name:
        # Python reads `ﬁ` as `fi`; the analysis compares names as written and would miss the clash
        return f"is not in NFKC normal form (Python reads it as {unicodedata.normalize('NFKC', name)!r})"
    if name == "torch":
        return "would shadow the torch module the device definition is written with"
    return None


def device_expression_problem(expression: object) -> str | None:
    """Why `expression` cannot be the value of the inserted definition, or None.

    'cuda' and 'accelerator' name the built-in idioms; anything else must be one expression on one
    line that compiles as the value of a module-level assignment (no `yield`, `await` or `*a` there).
    """
    if expression in NAMED_EXPRESSIONS:
        return None
    problem = "is not a single expression valid at module level"
    if not isinstance(expression, str) or "\n" in expression or "\r" in expression:
        return problem
    # Python's parser and compiler, and LibCST's, recurse per level of nesting: `-` * 30000 + `1` ended
    # in a MemoryError or RecursionError traceback (or a crash of the native parser).
    if len(expression) > MAX_EXPRESSION_LENGTH:
        return f"is longer than {MAX_EXPRESSION_LENGTH} characters"
    try:
        tree = ast.parse(expression, mode="eval")  # one expression: no statements, no `x = 1`, no `a; b`
        if _depth(tree) > MAX_EXPRESSION_DEPTH:
            return f"is nested more than {MAX_EXPRESSION_DEPTH} levels deep"
        compile(f"_ = {expression}\n", "<device-expression>", "exec")  # valid there: no yield/await
    except (SyntaxError, ValueError):  # ValueError: a null character
        return problem
    except (RecursionError, MemoryError):
        return f"is nested too deeply to parse (at most {MAX_EXPRESSION_DEPTH} levels)"
    return None


# A device expression is a call or two (`torch.device(f"cuda:{rank}" if ... else "cpu")`: 8 levels).
MAX_EXPRESSION_LENGTH = 1000
MAX_EXPRESSION_DEPTH = 100


def _depth(tree: ast.AST) -> int:
    """The depth of the syntax tree, without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest
