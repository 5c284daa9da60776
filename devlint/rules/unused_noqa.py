from __future__ import annotations

from devlint.model import Applicability, Edit, Finding, Position
from devlint.rule import Invalid, Rule
from devlint.suppressions import Directive


class UnusedNoqa(Rule):
    """
    ## What it does
    Flags a `# noqa: DLxxx` code that silences nothing: the rule it names is selected and reports
    nothing on that line (or names no devlint rule at all). Off by default: turn it on with
    `--extend-select DL100` (or `--select ALL`).

    ## Why is this bad?
    A stale suppression hides the next real bug on that line, and readers take it for a warning
    that the code is device-specific. ruff's `RUF100` does the same for its own codes.

    ## Example
    ```python
    x = torch.zeros(3)  # noqa: DL001
    ```

    ## Use instead
    ```python
    x = torch.zeros(3)
    ```

    ## Fix safety
    Removing the unused codes (or the whole directive when none is used) is **safe**: a suppression
    does not change what the program does.

    ## Not flagged
    - A bare `# noqa`: it may be meant for another tool.
    - Codes of other tools, e.g. `# noqa: E501`.
    - Codes of rules that are not selected in this run: another run may select them.
    - Suppressions that silence a finding, e.g. `y = torch.zeros(1).cuda()  # noqa: DL001`.
    """

    code = "DL100"
    name = "unused-noqa"
    message = "unused `noqa` directive (unused: {codes})"
    default_enabled = False
    EXAMPLES_SELECT = "ALL"  # the examples need the rules whose codes they name

    VALID = (
        "x = 1  # noqa\n",
        "x = 1  # noqa: E501\n",
        "import torch\ny = torch.zeros(1).cuda()  # noqa: DL001\n",
    )
    INVALID = (
        Invalid("import torch\nx = torch.zeros(3)  # noqa: DL001\n", fixed="import torch\nx = torch.zeros(3)\n"),
        Invalid(
            "import torch\ny = torch.zeros(1).cuda()  # noqa: DL001, DL002  # why\n",
            fixed="import torch\ny = torch.zeros(1).cuda()  # noqa: DL001  # why\n",
        ),
        Invalid("x = 1  # noqa: DL999\n", fixed="x = 1\n"),
    )

    @classmethod
    def unused(cls, directive: Directive, selected: set[str], line_text: str) -> Finding | None:
        if directive.codes is None:
            return None
        known_or_devlint = [c for c in directive.codes if c.startswith("DL")]
        unused = [c for c in known_or_devlint
                  if c not in directive.used and (c in selected or not _is_rule_code(c))]
        if not unused:
            return None
        kept = [c for c in directive.codes if c not in unused]
        start = Position(directive.line, directive.start)
        end = Position(directive.line, directive.end)
        if kept:
            edit = Edit(start, end, f"# noqa: {', '.join(kept)}")
        else:  # drop the directive and the blank before it
            before = line_text[: directive.start]
            edit = Edit(Position(directive.line, len(before.rstrip(" \t"))), end, "")
            if line_text[directive.end:].strip():  # another comment follows: keep a separator
                edit = Edit(start, Position(directive.line, directive.end + _blank_after(line_text, directive.end)), "")
        fix = Rule.fix("Remove the unused `noqa` codes", Applicability.SAFE, edit)
        return Finding(cls.code, cls.name, cls.message.format(codes=", ".join(unused)), start, end, fix)


def _blank_after(line: str, column: int) -> int:
    return len(line[column:]) - len(line[column:].lstrip(" \t"))


def _is_rule_code(code: str) -> bool:
    from devlint.rules import RULES_BY_CODE

    return code in RULES_BY_CODE
