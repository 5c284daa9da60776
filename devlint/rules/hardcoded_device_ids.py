from __future__ import annotations

import libcst as cst

from devlint.rule import Invalid, Rule
from devlint.rules._hardcoded import qualified
from devlint.syntax import dotted_name, find_arg, last_component

_WRAPPERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
})
_FUNCTIONS = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})


class HardcodedDeviceIds(Rule):
    """
    ## What it does
    Flags literal GPU ids given to the data-parallel wrappers: `device_ids=[0, 1, 2]`,
    `device_ids=list(range(4))` and `output_device=0` (by keyword or position) in
    `nn.DataParallel`, `nn.parallel.DistributedDataParallel`, `nn.parallel.data_parallel` and
    wrappers named like them (`MMDataParallel`, `MMDistributedDataParallel`).

    On by default: only literal ids are flagged, so well-written code costs nothing; the test corpus
    has none (every `device_ids` there is computed: `[args.gpu]`, `[self.local_rank]`,
    `[args.device_id]`).

    ## Why is this bad?
    The ids describe the author's machine. On a box with fewer GPUs, `DataParallel(model,
    device_ids=[0, 1, 2, 3])` fails with `AssertionError: Invalid device id` (or an index error);
    `DistributedDataParallel(model, device_ids=[0])` puts every process of a multi-GPU job on GPU 0,
    which runs out of memory or silently serialises the job.

    ## Example
    ```python
    model = nn.DataParallel(model, device_ids=[0, 1, 2, 3])
    ddp = DistributedDataParallel(model, device_ids=[0], output_device=0)
    ```

    ## Use instead
    ```python
    model = nn.DataParallel(model)  # every visible GPU; or list(range(torch.cuda.device_count()))
    local_rank = int(os.environ["LOCAL_RANK"])
    ddp = DistributedDataParallel(model, device_ids=[local_rank], output_device=local_rank)
    ```

    ## Fix safety
    **display-only**: which GPUs to use is a decision about the job (all visible ones, the local
    rank, a command-line option) that the code does not show. Select GPUs from outside with
    `CUDA_VISIBLE_DEVICES` rather than in the code.

    ## Not flagged
    - Computed ids: `device_ids=[args.local_rank]`, `device_ids=list(range(torch.cuda.device_count()))`,
      `output_device=local_rank`, `device_ids=None`.
    - Code under a CUDA condition (same guards as DL001), e.g.
      `if torch.cuda.device_count() > 1: model = nn.DataParallel(model, device_ids=[0, 1])`.
    - Other calls with such keywords: `launch(device_ids=[0, 1])`.

    ## References
    - [DataParallel](https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html)
    - [DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    """

    code = "DL007"
    name = "hardcoded-device-ids"
    message = "hard-coded GPU ids: fails on a machine with fewer GPUs"

    VALID = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "m = DDP(model, device_ids=[args.local_rank])\n",
        "import torch\nm = torch.nn.DataParallel(model, device_ids=list(range(torch.cuda.device_count())))\n",
        "import torch\nm = torch.nn.parallel.DistributedDataParallel(model, output_device=local_rank)\n",
        "import torch.nn as nn\nm = nn.DataParallel(model, device_ids=None)\n",
        "import torch\nimport torch.nn as nn\n"
        "if torch.cuda.device_count() > 1: model = nn.DataParallel(model, device_ids=[0, 1])\n",
        "launch(device_ids=[0, 1])\n",
    )
    INVALID = (
        Invalid("import torch.nn as nn\nmodel = nn.DataParallel(model, device_ids=[0, 1, 2, 3])\n"),
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            "ddp = DDP(model, device_ids=[0], output_device=0)\n",
            count=2,
        ),
        Invalid("import torch\nmodel = torch.nn.DataParallel(model, [0, 1])\n"),
        Invalid("import torch.nn as nn\nmodel = nn.DataParallel(model, device_ids=list(range(4)))\n"),
        Invalid("from mmcv.parallel import MMDataParallel\nmodel = MMDataParallel(model, device_ids=[0])\n"),
        Invalid("import torch\ny = torch.nn.parallel.data_parallel(model, x, [0, 1])\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = last_component(func) or ""
        if last.endswith("DataParallel"):
            positions = (1, 2)  # written as a data-parallel wrapper: torch's, or one named like it
        elif last == "data_parallel" or isinstance(func, cst.Name):
            found = qualified(self.ctx, func, _WRAPPERS | _FUNCTIONS)  # `DDP` imported under another name
            if found is None:
                return
            positions = (1, 2) if found in _WRAPPERS else (2, 3)
        else:
            return
        ids = find_arg(node, "device_ids", positions[0])
        output = find_arg(node, "output_device", positions[1])
        literal = [arg for arg in (ids, output) if arg is not None and (
            _literal_ids(arg.value) if arg is ids else isinstance(arg.value, cst.Integer))]
        if not literal or self.ctx.guards.is_guarded(node):
            return
        for arg in literal:
            what = "GPU ids" if arg is ids else "output GPU"
            self.report(arg.value, f"hard-coded {what} `{self.ctx.code(arg.value)}`: fails on a machine with fewer "
                        "GPUs, and gives every distributed process the same GPU", self.display_only(_GUIDANCE))


_GUIDANCE = ("Derive the ids at run time: omit `device_ids` for every visible GPU, or use `[local_rank]` "
             "(`int(os.environ['LOCAL_RANK'])`) with DistributedDataParallel")


def _literal_ids(node: cst.BaseExpression) -> bool:
    """`[0, 1]`, `(0,)`, `range(4)`, `list(range(2))`: GPU ids written out."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return bool(node.elements) and all(
            not isinstance(e, cst.StarredElement) and isinstance(e.value, cst.Integer) for e in node.elements
        )
    if isinstance(node, cst.Call) and node.args:
        name = dotted_name(node.func)
        if name in {"list", "tuple"} and len(node.args) == 1:
            return _literal_ids(node.args[0].value)
        if name == "range":
            return all(isinstance(arg.value, cst.Integer) for arg in node.args)
    return False
