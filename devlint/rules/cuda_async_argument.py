from __future__ import annotations

from devlint.model import Applicability, Edit, Finding, Fix, Position
from devlint.rescue import RENAMED, AsyncArgument, async_arguments
from devlint.rule import Invalid, Rule

# The methods whose `async` parameter PyTorch 0.4 renamed `non_blocking` (Tensor, Variable and
# Storage `.cuda()` and `.type()`, `Tensor.copy_()`; `.to()` took both in 0.4).
RENAMED_IN_TORCH = frozenset({"cuda", "to", "type", "copy_"})


class CudaAsyncArgument(Rule):
    """
    ## What it does
    Flags an `async=` argument of a call (`x.cuda(async=True)`, `x.to(device, async=True)`,
    `x.type(t, async=True)`, `y.copy_(x, async=True)`): code written for PyTorch 0.3 that does not
    parse on Python 3.7 or later. devlint finds it token by token in a file it cannot otherwise read,
    reports it beside the syntax error, and with `--fix` renames the argument, then checks and fixes
    the rest of the file as usual (so `x.cuda(async=True)` becomes `x.to(device, non_blocking=True)`
    in the same run).

    On by default: it only speaks where a file does not parse, and there it says why. On six
    repositories of 2017-2019 that use the idiom (DARTS, pytorch-classification, densenet-pytorch,
    pytorch-vqa, BinaryNet.pytorch, CondenseNet) it found 21 such arguments, all `.cuda(async=True)`,
    in 12 files that no tool could read; `--fix` made all 12 parse and, in the same run, fixed the 52
    device findings they held (DL001 41, DL002 10, DL005 1).

    ## Why is this bad?
    `async` became a reserved keyword in Python 3.7, so `target.cuda(async=True)`, copied into many
    ImageNet-style training loops of that era, is a `SyntaxError` before a single line runs. PyTorch
    0.4 renamed the argument `non_blocking`, which means the same (copy asynchronously from pinned
    memory when the destination is a GPU; ignored otherwise). Every other tool stops at the syntax
    error too, so the device bugs in the rest of the file go unreported.

    ## Example
    ```python
    target = target.cuda(async=True)
    ```

    ## Use instead
    ```python
    target = target.cuda(non_blocking=True)
    ```
    (which DL001 then makes `target.to(device, non_blocking=True)`).

    ## Fix safety
    Renaming `async=` to `non_blocking=` in a call of `.cuda()`, `.to()`, `.type()` or `.copy_()` is
    **safe**: it is the same argument under its PyTorch 0.4 name, and the only change made to a file
    that does not parse. The rest of the file is then checked and fixed like any other; if it still
    does not parse once renamed (Python 2 `print` statements, `def f(async=False)`, `args.async`),
    nothing is written and the syntax error that remains is reported. An `async=` given to any other
    call (`to_gpu(x, async=True)`) is reported with a **display-only** fix: the called function's
    own `async` parameter has to be renamed too, and devlint cannot see it.

    A `# noqa: DL017` (or a bare `# noqa`) on the line of the argument or the last line of its
    statement silences the finding, and `--fix` then leaves that argument as it is, so the file still
    does not parse. In a notebook the code cell with the argument is rescued the same way; without
    `--fix` it stays a skipped cell, with the finding beside it.

    ## Not flagged
    - The PyTorch 0.4 spelling: `x.cuda(non_blocking=True)`, `x.to(device, non_blocking=True)`.
    - `async` as the keyword it is: `async def fetch(): ...`, `async with lock: ...`, `async for x in aiter(): ...`.
    - A parameter list, which is not a call: `def cuda(self, device=None, async=False)` (the file
      still does not parse: the syntax error alone is reported).
    - `async` passed by position or named otherwise: `x.cuda(0, True)`, `f(is_async=True)`.

    ## References
    - [PyTorch 0.4.0 release notes](https://github.com/pytorch/pytorch/releases/tag/v0.4.0)
    - [What's New In Python 3.7: async and await are reserved keywords](https://docs.python.org/3/whatsnew/3.7.html)
    - [Tensor.cuda](https://pytorch.org/docs/stable/generated/torch.Tensor.cuda.html)
    """

    code = "DL017"
    name = "cuda-async-argument"
    message = ("`async=` does not parse on Python 3.7+ (`async` is a keyword); PyTorch 0.4 renamed it "
               "`non_blocking=`")

    VALID = (
        "import torch\nx = x.cuda(non_blocking=True)\ny = x.to(device, non_blocking=True)\n",
        "import asyncio\nasync def fetch(): ...\nasync def main(lock, aiter):\n"
        "    async with lock: ...\n    async for x in aiter(): ...\n",
        "import torch\nx = x.cuda(0, True)\nf(is_async=True)\n",
        "import torch\ndef cuda(self, device=None, async=False):\n    return self\n",
    )
    INVALID = (
        Invalid("target = target.cuda(async=True)\n", fixed="target = target.cuda(non_blocking=True)\n"),
        Invalid(
            "import torch\nfor i, (inputs, target) in enumerate(loader):\n"
            "    inputs, target = inputs.to(device, async=True), target.type(torch.LongTensor, async=True)\n",
            fixed="import torch\nfor i, (inputs, target) in enumerate(loader):\n"
            "    inputs, target = inputs.to(device, non_blocking=True), target.type(torch.LongTensor, "
            "non_blocking=True)\n",
            count=2,
        ),
        Invalid("buffer.copy_(\n    source,\n    async = True,\n)\n",
                fixed="buffer.copy_(\n    source,\n    non_blocking = True,\n)\n"),
    )

    @classmethod
    def findings_in(cls, text: str) -> list[Finding]:
        """The findings in a text the parser refuses, from its tokens (devlint.rescue)."""
        return [cls._finding(argument) for argument in async_arguments(text)]

    @classmethod
    def _finding(cls, argument: AsyncArgument) -> Finding:
        start = argument.start
        lines = tuple(sorted({argument.end.line, argument.last_line} - {start.line}))
        if argument.method and argument.callee in RENAMED_IN_TORCH:
            rename = Edit(start, Position(start.line, start.column + len("async")), RENAMED)
            fix = Fix(f"Rename `async=` to `{RENAMED}=`", Applicability.SAFE, (rename,))
            return Finding(cls.code, cls.name, cls.message, start, argument.end, fix, lines)
        called = f"`{argument.callee}`" if argument.callee else "the called function"
        message = (f"`async=` does not parse on Python 3.7+ (`async` is a keyword); rename it here and in "
                   f"the parameters of {called}")
        fix = cls.display_only(f"Rename the `async` parameter of {called} and this argument "
                               "(not a PyTorch method whose `async` became `non_blocking`)")
        return Finding(cls.code, cls.name, message, start, argument.end, fix, lines)
