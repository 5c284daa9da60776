"""Does a process group being initialised mean CUDA? Yes, where every group the project starts is NCCL.

Distributed helpers copied from project to project (torchvision's references, DETR, DeiT, MAE, DINO)
allocate on the GPU once a process group exists:

    def is_dist_avail_and_initialized():
        return dist.is_available() and dist.is_initialized()

    def synchronize_between_processes(self):
        if not is_dist_avail_and_initialized():
            return
        t = torch.tensor([self.count, self.total], device="cuda")   # a CPU run returned above

The NCCL backend refuses to start without a GPU ("ProcessGroupNCCL is only supported with GPUs"), so
`torch.distributed.is_initialized()` is a CUDA condition (devlint.analysis.guards) when the project's
every `init_process_group(...)` call passes the literal backend `"nccl"` (`backend="nccl"`, a first
positional `"nccl"`, `dist.Backend.NCCL`, or a name or attribute the simple statements right above the
call set to one: `args.dist_backend = "nccl"`), and there is at least one. The default backend, another
variable (`backend=args.dist_backend`), `"gloo"` or `"cpu:gloo,cuda:nccl"`, `**kwargs`, and any other use of
`init_process_group` (`fn = dist.init_process_group`, `getattr(dist, "init_process_group")`) answer no,
as does a project that names a framework or call that may start a group itself (`init_device_mesh`,
`init_rpc`, DeepSpeed, Lightning, Accelerate, Horovod, Ray, the Hugging Face `Trainer`, ...: the words
of FRAMEWORKS anywhere in a project file, `Trainer` only beside `transformers`).

The files are the project's, listed as devlint.analysis.project_calls lists them (without a project
view, only the checked text); each one's digest is recorded in the view's observations, so a cached
result is checked again when any init call changes or a file is added. A file that cannot be read or
parsed, or a project too large to list, answers no.
"""

from __future__ import annotations

import ast

from devlint.prefilter import parsed_or_none
from devlint import depends

INIT = "init_process_group"
# what may start a process group without an `init_process_group` call of the project
FRAMEWORKS = frozenset({
    "init_device_mesh", "DeviceMesh", "init_rpc", "init_distributed", "init_dist", "initialize_model_parallel",
    "deepspeed", "lightning", "pytorch_lightning", "lightning_fabric", "Fabric", "accelerate", "Accelerator",
    "horovod", "torch_xla", "ray", "colossalai", "megatron", "mmengine", "mmcv", "ignite",
    "TrainingArguments", "init_parallel_env",
})


def _starts_groups(words) -> bool:
    """Does a file with these identifiers name a framework that may start a group (the Hugging Face
    `Trainer` only beside `transformers`: projects name their own classes `Trainer`)?"""
    return bool(words & FRAMEWORKS) or {"Trainer", "transformers"} <= words


def nccl_only(ctx) -> bool:
    """Is every process group the project may start an NCCL one (and is there an init call)? Once per file."""
    memo = ctx.memo
    if "nccl_only" not in memo:
        memo["nccl_only"] = _nccl_only(ctx.source, ctx.project)
    return memo["nccl_only"]


def _nccl_only(own_code: str, view) -> bool:
    from devlint.analysis.project_calls import _project_files, _words

    inits = _inits(own_code)
    if inits is None:
        return False
    found = [inits]
    if view is not None:
        files = _project_files(view)
        if files is None:
            return False
        for path in files:
            if path == view.path:
                continue
            observed, words = _words(view.index, path)
            view.observed[f"{depends.READ}:{path}"] = observed
            if words is None or _starts_groups(words):
                return False
            if INIT in words:
                found.append(_file_inits(view.index, path, observed))
    return all(f is not None and all(f) for f in found) and any(found)


def _file_inits(index, path: str, observed: str):
    memo = index.__dict__.setdefault("_process_group_inits", {})
    if observed not in memo:
        data, _ = depends.read_regular(path)
        memo[observed] = None if data is None or depends.digest(data) != observed else _inits(data)
    return memo[observed]


def _inits(source) -> list[bool] | None:
    """For each `init_process_group(...)` call of the file, whether it starts an NCCL group; None when
    the file may start one devlint cannot see (it does not parse, names a framework, or uses the
    function other than by calling it)."""
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    if _starts_groups(set(_words_of(text))):
        return None
    tree = parsed_or_none(source)
    if tree is None:
        return None
    callees = set()
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == INIT:
            callees.add(id(node.func))
            calls.append(_starts_nccl(node, _set_before(tree, node)))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and _name(node) == INIT and id(node) not in callees:
            return None  # (handed on, or re-bound: called where devlint cannot see)
        if isinstance(node, ast.Constant) and node.value == INIT:
            return None  # (`getattr(dist, "init_process_group")`)
        if isinstance(node, ast.alias) and (node.asname or node.name).split(".")[-1] == INIT and node.asname:
            return None  # (`from torch.distributed import init_process_group as start`)
    return calls


def _starts_nccl(call: ast.Call, set_before: dict) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    backend = next((k.value for k in call.keywords if k.arg == "backend"), call.args[0] if call.args else None)
    if isinstance(backend, (ast.Name, ast.Attribute)):
        backend = set_before.get(ast.unparse(backend), backend)  # (`args.dist_backend = "nccl"` just above)
    if isinstance(backend, ast.Constant):
        return isinstance(backend.value, str) and backend.value.strip().lower() == "nccl"
    return isinstance(backend, ast.Attribute) and backend.attr == "NCCL" and _name(backend.value) == "Backend"


def _set_before(tree, call: ast.Call) -> dict:
    """The values the simple statements right above the call's statement, in its block, last gave to a name
    or an attribute (`args.dist_backend = "nccl"`), keyed by its text; a compound statement between
    them (which may or may not run) ends the search."""
    for block in (b for n in ast.walk(tree) for b in (getattr(n, f, None) for f in ("body", "orelse", "finalbody"))
                  if isinstance(b, list)):
        index = next((i for i, stmt in enumerate(block) if any(n is call for n in ast.walk(stmt))), None)
        if index is None or not isinstance(block[index], (ast.Expr, ast.Assign)):
            continue
        found: dict = {}
        for stmt in reversed(block[:index]):
            if not isinstance(stmt, (ast.Assign, ast.Expr, ast.AnnAssign, ast.AugAssign)):
                break
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
            for target in targets:
                if isinstance(target, (ast.Name, ast.Attribute)):
                    found.setdefault(ast.unparse(target), stmt.value if isinstance(stmt, ast.Assign) else None)
        return {k: v for k, v in found.items() if v is not None}
    return {}


def _name(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _words_of(text: str):
    from devlint.analysis.project_calls import _WORD

    return _WORD.findall(text)
