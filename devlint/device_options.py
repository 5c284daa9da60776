"""Whether `--device-name` and `--device-expression` can be written as `NAME = EXPRESSION` at module level.

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

NAMED_EXPRESSIONS = ("cuda", "accelerator")


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
    try:
        ast.parse(expression, mode="eval")  # one expression: no statements, no `x = 1`, no `a; b`
        compile(f"_ = {expression}\n", "<device-expression>", "exec")  # valid there: no yield/await
    except (SyntaxError, ValueError):  # ValueError: a null character
        return problem
    return None
