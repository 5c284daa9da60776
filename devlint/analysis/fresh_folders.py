"""Files inside a folder created empty during this run (DL002).

A `torch.load` without `map_location` fails only where the file names a device the machine lacks. A file
in a fresh folder was written during this run, on this machine (by this process or a child it started),
so every device its tensors name exists here; on a machine without CUDA its writer had none. Fresh folders:

- pytest's `tmp_path` / `tmpdir` (a new empty folder per test) and `tmp_path_factory.mktemp(...)` /
  `tmpdir_factory.mktemp(...)` (new per call, whatever the fixture's scope), where no fixture of the
  project takes the name (devlint.analysis.fixtures.receives_builtin);
- `tempfile.mkdtemp()`, `tempfile.TemporaryDirectory()` (its `as` target, or `.name`);
- a fixture (this file, or a `conftest.py` above: devlint.analysis.origin_files) whose every returned or
  yielded value is a path inside one of those.

The loaded path must provably lie inside: built from the folder by `/`, `os.path.join`, `.joinpath`,
`str()`/`Path()`, an f-string or `+ "/..."`, with each added part relative and not climbing out (a literal
without a leading `/` or a `..`, a name bound once to one, a number, an entry of `os.listdir(...)`), or a
name whose binding its read sees (bound once, or the last binding that certainly ran:
devlint.analysis.flow.last_binding) is such an expression. Also a path that an object built on a fresh
folder names (`h = Saver(tmp_path)`, `torch.load(h.last_checkpoint)`: devlint.analysis.saver_objects), and a
private helper's parameter that every direct call, or hand-off to a launcher with a literal `args=` tuple
(devlint.analysis.handoffs), fills with a fresh path (devlint.analysis.param_paths).
`tempfile.gettempdir()` is shared, not fresh; a folder a test gets from elsewhere, a fixed path, another
parameter: not cleared. A file brought in from outside keeps the finding:
any call named like a copy, a download or an unpacking, or a binary `open(..., "wb")`/`.write_bytes`,
with a fresh path as an argument anywhere in the file (or, for a conftest fixture, in that conftest).
"""

from __future__ import annotations

import libcst as cst

from devlint.facts import FileFacts
from devlint.syntax import calls_in, descendants, dotted_name, find_arg, string_value

FOLDERS = frozenset({"tmp_path", "tmpdir"})
FACTORIES = frozenset({"tmp_path_factory", "tmpdir_factory"})
MAKERS = frozenset({"tempfile.mkdtemp"})
TEMPORARY_DIRECTORY = frozenset({"tempfile.TemporaryDirectory"})
SAME_PATH = frozenset({"str", "os.fspath", "pathlib.Path", "Path", "pathlib.PurePath", "py.path.local"})
SAME_PATH_METHODS = frozenset({"as_posix", "resolve", "absolute", "expanduser", "strpath"})
JOINS = frozenset({"os.path.join", "posixpath.join"})
# A call with a fresh path as an argument whose name says it may bring a file from outside.
IMPORT_WORDS = ("copy", "download", "fetch", "retrieve", "extract", "untar", "unzip", "unpack", "move", "rename",
                "link", "wget", "clone", "mirror", "sync", "url")
# A command run in a shell or a child process, with a fresh path among its arguments, that may copy in.
SHELLS = frozenset({"os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
                    "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput",
                    "subprocess.getstatusoutput"})
SHELL_WORDS = frozenset({"cp", "mv", "ln", "wget", "curl", "rsync", "scp", "tar", "unzip", "gsutil", "aws", "git",
                         "rclone", "azcopy", "huggingface-cli", "hf", "gdown", "7z"})
MAX_DEPTH = 12


def in_fresh_folder(ctx: FileFacts, path: cst.CSTNode) -> bool:
    """Is `path` inside a folder created empty during this run, into which this file brings nothing from outside?"""
    return fresh(ctx, path) and not brings_in(ctx, ctx.module)


def fixture_gives_fresh(ctx: FileFacts, function: cst.FunctionDef) -> bool:
    """Does the fixture return (or yield) only paths inside fresh folders, bringing nothing in from outside?"""
    from devlint.analysis.fixtures import returned_values

    values = returned_values(function)
    return bool(values) and all(fresh(ctx, v) for v in values) and not brings_in(ctx, function)


def brings_in(ctx: FileFacts, root: cst.CSTNode) -> bool:
    """A call under `root` that may put a file from outside into a fresh folder."""
    memo = ctx.__dict__.setdefault("_devlint_brings_in", {})
    if id(root) not in memo:
        memo[id(root)] = any(_brings_in(ctx, call) for call in calls_in(root))
    return memo[id(root)]


def _brings_in(ctx: FileFacts, call: cst.Call) -> bool:
    if ctx.qualified_names(call.func) & SHELLS:
        return _shell_brings_in(ctx, call)
    name = (dotted_name(call.func) or "").rsplit(".", 1)[-1].lower()
    name = name.replace("remove", "").replace("unlink", "")  # (deletions: nothing comes in)
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "write_bytes":
        return fresh(ctx, call.func.value)
    if name == "open":
        mode = find_arg(call, "mode", 1)
        text = string_value(mode.value) if mode is not None else "r"
        if text is not None and "b" not in text or text is not None and not set(text) & set("wax+"):
            return False
        return any(fresh(ctx, a.value) for a in call.args[:1])
    if not any(word in name for word in IMPORT_WORDS):
        return False
    receiver = [call.func.value] if isinstance(call.func, cst.Attribute) else []
    return any(fresh(ctx, value) for value in receiver + [a.value for a in call.args])


def _shell_brings_in(ctx: FileFacts, call: cst.Call) -> bool:
    """`subprocess.run(["wget", url, "-P", tmp_path])`, `os.system(f"cp {src} {d}")`: a command that may copy."""
    nodes = list(descendants(call))
    words = {w for n in nodes if isinstance(n, (cst.SimpleString, cst.FormattedStringText))
             for w in (string_value(n) if isinstance(n, cst.SimpleString) else n.value).replace("/", " ").split()}
    return bool(words & SHELL_WORDS) and any(fresh(ctx, n) for n in nodes if isinstance(n, cst.BaseExpression))


# -- inside a fresh folder --------------------------------------------------------------------------------
def fresh(ctx: FileFacts, expr: cst.CSTNode, depth: int = 0) -> bool:
    """Is `expr` a fresh folder, or a path provably inside one?"""
    if depth > MAX_DEPTH:
        return False
    if isinstance(expr, cst.Name):
        return _fresh_name(ctx, expr, depth)
    if isinstance(expr, cst.Attribute):
        if expr.attr.value == "name":
            return _temporary_directory(ctx, expr.value)  # `TemporaryDirectory().name`
        if expr.attr.value == "strpath":
            return fresh(ctx, expr.value, depth + 1)  # (py.path's `tmpdir.strpath`)
        return _object_path(ctx, expr, depth)
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Divide):
            return fresh(ctx, expr.left, depth + 1) and _relative(ctx, expr.right, depth + 1)
        if isinstance(expr.operator, cst.Add):  # `d + "/m.pt"`: only a part that starts a new component
            text = string_value(expr.right)
            return (fresh(ctx, expr.left, depth + 1) and text is not None and text.startswith("/")
                    and _relative_text(text[1:]))
        return False
    if isinstance(expr, cst.FormattedString):
        return _fresh_format(ctx, expr, depth)
    if isinstance(expr, cst.Call) and not any(a.star or a.keyword for a in expr.args):
        return _fresh_call(ctx, expr, depth)
    return False


def _fresh_call(ctx: FileFacts, call: cst.Call, depth: int) -> bool:
    names = ctx.qualified_names(call.func) | {dotted_name(call.func) or ""}
    args = [a.value for a in call.args]
    if names & MAKERS:
        return True
    if names & SAME_PATH:
        return len(args) == 1 and fresh(ctx, args[0], depth + 1)
    if names & JOINS:
        return bool(args) and fresh(ctx, args[0], depth + 1) and all(_relative(ctx, a, depth + 1) for a in args[1:])
    if isinstance(call.func, cst.Attribute):
        method, owner = call.func.attr.value, call.func.value
        if method in SAME_PATH_METHODS and not args:
            return fresh(ctx, owner, depth + 1)
        if method == "joinpath" or method == "join" and _py_path(ctx, owner, depth):  # (py.path's `tmpdir.join`)
            return bool(args) and fresh(ctx, owner, depth + 1) and all(_relative(ctx, a, depth + 1) for a in args)
        if method == "mktemp" and isinstance(owner, cst.Name):
            param = _parameter(ctx, owner)
            return param is not None and param.name.value in FACTORIES and _builtin(ctx, param)
        return _object_path(ctx, call, depth)
    return False


def _object_path(ctx: FileFacts, expr: cst.CSTNode, depth: int) -> bool:
    """`h.last_checkpoint`, `h.best()` of `h = Saver(tmp_path)`: devlint.analysis.saver_objects."""
    from devlint.analysis.saver_objects import object_path

    return object_path(ctx, expr, lambda e: fresh(ctx, e, depth + 1), IMPORT_WORDS)


def _py_path(ctx: FileFacts, expr: cst.CSTNode, depth: int) -> bool:
    """pytest's `tmpdir` (a py.path, whose `.join` makes a path below it; a string's `.join` does not), or
    a name bound once to its `.join(...)` or to `tmpdir_factory.mktemp(...)`."""
    if depth > MAX_DEPTH or not isinstance(expr, (cst.Name, cst.Call)):
        return False
    if isinstance(expr, cst.Call):
        func = expr.func
        return isinstance(func, cst.Attribute) and (
            func.attr.value == "join" and _py_path(ctx, func.value, depth + 1)
            or func.attr.value == "mktemp" and isinstance(func.value, cst.Name)
            and getattr(_parameter(ctx, func.value), "name", None) is not None
            and _parameter(ctx, func.value).name.value == "tmpdir_factory")
    assignments = ctx.bindings(expr)
    if len(assignments) != 1:
        return False
    node = assignments[0].node
    if isinstance(node, cst.Param):
        return node.name.value == "tmpdir"
    value = ctx.assigned_value(node)
    return value is not None and _py_path(ctx, value, depth + 1)


def _fresh_name(ctx: FileFacts, name: cst.Name, depth: int) -> bool:
    if name.value in ctx.imported_names:
        return False
    assignments = ctx.bindings(name)
    if len(assignments) > 1:  # re-bound: the binding this read sees, where one certainly ran last
        from devlint.analysis.flow import last_binding

        assignments = [b for b in [last_binding(ctx, name)] if b is not None]
    if len(assignments) != 1:
        return False
    node = assignments[0].node
    if isinstance(node, cst.Param):
        return _fresh_param(ctx, node, depth)
    parent = ctx.parent(ctx.parent(node))
    if isinstance(parent, cst.WithItem) and parent.asname is not None and parent.asname.name is node:
        return _temporary_directory_call(ctx, parent.item)  # `with TemporaryDirectory() as d`
    value = ctx.assigned_value(node)
    return value is not None and fresh(ctx, value, depth + 1)


def _fresh_param(ctx: FileFacts, param: cst.Param, depth: int) -> bool:
    from devlint.analysis.fixtures import fixture_of

    if param.name.value in FOLDERS and _builtin(ctx, param):
        return True
    fixture = fixture_of(ctx, param)
    if fixture is None:
        return _every_call_passes_fresh(ctx, param, depth)
    if fixture.definition is None:
        return bool(getattr(fixture.facts, "fresh_dir", False))
    return fixture_gives_fresh(ctx, fixture.definition)


def _every_call_passes_fresh(ctx: FileFacts, param: cst.Param, depth: int) -> bool:
    """A helper's parameter that each of its calls fills with a fresh path: devlint.analysis.param_paths."""
    from devlint.analysis.param_paths import every_call_gives

    return every_call_gives(ctx, param, lambda call, value: fresh(ctx, value, depth + 1), "fresh")


def _builtin(ctx: FileFacts, param: cst.Param) -> bool:
    from devlint.analysis.fixtures import receives_builtin

    return receives_builtin(ctx, param)


def _parameter(ctx: FileFacts, name: cst.Name) -> cst.Param | None:
    assignments = ctx.bindings(name)
    node = assignments[0].node if len(assignments) == 1 else None
    return node if isinstance(node, cst.Param) else None


def _temporary_directory(ctx: FileFacts, expr: cst.CSTNode) -> bool:
    """`TemporaryDirectory()`, or a name bound once to it."""
    if isinstance(expr, cst.Name):
        assignments = ctx.bindings(expr)
        if len(assignments) != 1:
            return False
        value = ctx.assigned_value(assignments[0].node)
        return value is not None and _temporary_directory_call(ctx, value)
    return _temporary_directory_call(ctx, expr)


def _temporary_directory_call(ctx: FileFacts, expr: cst.CSTNode) -> bool:
    return isinstance(expr, cst.Call) and bool(ctx.qualified_names(expr.func) & TEMPORARY_DIRECTORY)


def _fresh_format(ctx: FileFacts, string: cst.FormattedString, depth: int) -> bool:
    """`f"{d}/m_{i}.pt"`: a fresh folder first, then parts that name a relative path below it."""
    parts = list(string.parts)
    if not parts or not isinstance(parts[0], cst.FormattedStringExpression) or parts[0].format_spec is not None:
        return False
    if not fresh(ctx, parts[0].expression, depth + 1):
        return False
    if len(parts) == 1:
        return True
    first = parts[1]
    if not isinstance(first, cst.FormattedStringText) or not first.value.startswith("/"):
        return False
    return _relative_parts(ctx, [cst.FormattedStringText(first.value[1:])] + parts[2:], depth)


def _relative(ctx: FileFacts, expr: cst.CSTNode, depth: int) -> bool:
    """Is `expr` a relative path that stays below the folder it is joined to?"""
    if depth > MAX_DEPTH:
        return False
    text = string_value(expr)
    if text is not None:
        return _relative_text(text)
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        assignments = ctx.bindings(expr)
        value = ctx.assigned_value(assignments[0].node) if len(assignments) == 1 else None
        return value is not None and _relative(ctx, value, depth + 1)
    if isinstance(expr, cst.FormattedString):
        return _relative_parts(ctx, list(expr.parts), depth)
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Call):
        return bool(ctx.qualified_names(expr.value.func) & {"os.listdir"})  # an entry's name: no `/`, never `..`
    return False


def _relative_parts(ctx: FileFacts, parts: list, depth: int) -> bool:
    text = "".join(p.value if isinstance(p, cst.FormattedStringText) else "x" for p in parts)
    if not _relative_text(text):
        return False
    for part in parts:
        if isinstance(part, cst.FormattedStringExpression):
            if part.conversion is not None or not _relative(ctx, part.expression, depth + 1):
                return False
    return True


def _relative_text(text: str) -> bool:
    return bool(text) and not text.startswith(("/", "\\", "~")) and ":" not in text and ".." not in text.replace(
        "\\", "/").split("/")
