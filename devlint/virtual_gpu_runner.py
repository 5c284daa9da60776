"""Front doors of the virtual GPU: `devlint run --virtual-gpu SCRIPT` and the report of a device error.

Importing this module does not import torch; `run_script` imports `devlint.virtual_gpu` (and with it
torch) only when a script is run under the virtual GPU.
"""

from __future__ import annotations

import builtins
import os
import runpy
import sys
import sysconfig
import traceback
import types

_DEVLINT_DIR = os.path.dirname(os.path.abspath(__file__))


def _library_dirs() -> tuple[str, ...]:
    dirs = {_DEVLINT_DIR}
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.add(os.path.abspath(paths[key]))
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        dirs.add(os.path.dirname(os.path.abspath(torch.__file__)))
    for name in ("_pytest", "pluggy", "click"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            dirs.add(os.path.dirname(os.path.abspath(mod.__file__)))
    return tuple(d + os.sep for d in dirs)


def user_frame(exc: BaseException) -> tuple[str, int] | None:
    """(file, line) of the innermost frame of `exc`'s traceback in the user's code (not a library's)."""
    libs = _library_dirs()
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        name = frame.filename
        if name.startswith("<"):
            continue
        if os.path.abspath(name).startswith(libs):
            continue
        found = (name, frame.lineno or 0)
    return found


def _rule_hint(exc: BaseException) -> str | None:
    """The devlint rules whose pattern raises this error (devlint.rules.RUNTIME_ERRORS), if any."""
    from devlint.rules import rules_for_error

    found = rules_for_error(exc)
    return ", ".join(f"{info.code} ({info.name})" for info in found) or None


def _origin_line(exc: BaseException) -> str | None:
    """Where the stray tensor of a device error got its device (devlint.virtual_gpu.provenance)."""
    origin = getattr(exc, "_devlint_origin", None)
    if not origin:
        return None
    from devlint.virtual_gpu.provenance import describe

    return describe(origin, user_frame(exc))


# How the TorchScript interpreter reports an operation of compiled code that raised.
_TORCHSCRIPT_FAILURE = "The following operation failed in the TorchScript interpreter"


def _compiled_code_note(exc: BaseException) -> str | None:
    """Code compiled by TorchScript (`torch.jit.script`, `torch.jit.trace`) calls PyTorch's operators
    from C++, where the virtual GPU does not reach: its CUDA operations fail as on a machine without
    CUDA (`PyTorch is not linked with support for cuda devices`), although a GPU runs them. Said so,
    rather than reported as the program's error (seen on an H100: seven of 120 generated programs ran
    there and failed only here)."""
    text = str(exc)
    if not (isinstance(exc, RuntimeError) and text.startswith(_TORCHSCRIPT_FAILURE) and "cuda" in text.lower()):
        return None
    return ("devlint: the virtual GPU does not reach code compiled by TorchScript (torch.jit.script, "
            "torch.jit.trace): its CUDA operations fail here as without CUDA, and may run on a GPU")


def _place(exc: BaseException) -> str:
    """`file:line` of the user's innermost frame in `exc`'s traceback."""
    where = user_frame(exc)
    return f"{where[0]}:{where[1]}" if where else "<unknown>"


def device_error_report(exc: BaseException) -> str | None:
    """The lines devlint prints for a device error raised under the virtual GPU, or for an error a rule
    prevents (devlint.rules.RUNTIME_ERRORS); None for other errors."""
    vg = sys.modules.get("devlint.virtual_gpu")
    if vg is None:
        return None
    compiled = _compiled_code_note(exc)
    if compiled is not None:
        return f"devlint: error at {_place(exc)}: RuntimeError: {_TORCHSCRIPT_FAILURE}\n{compiled}"
    devices = vg.device_error_info(exc)
    hint = _rule_hint(exc)
    if devices is None and hint is None:
        return None  # (neither the virtual GPU's nor an error a rule prevents, such as model.device)
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    kind = "device error" if devices is not None else "error"
    lines = [f"devlint: {kind} at {_place(exc)}: {type(exc).__name__}: {first}"]
    if devices is not None and len(devices) == 2:
        lines.append(f"devlint: the two devices: {devices[0]} and {devices[1]}")
    origin = _origin_line(exc)
    if origin:
        lines.append(f"devlint: {origin}")
    if hint:
        lines.append(f"devlint: rule{'s' if ', ' in hint else ''} that cover{'' if ', ' in hint else 's'} "
                     f"this pattern: {hint}")
    return "\n".join(lines)


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback as `python SCRIPT` prints it: without devlint's own frames and runpy's."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack
         if not f.filename.startswith("<frozen runpy")
         and not os.path.abspath(f.filename).startswith(_DEVLINT_DIR + os.sep)])
    print("".join(te.format()), end="", file=sys.stderr)


def _run_main_file(path: str) -> None:
    """Execute the file at `path` as __main__, the way `python SCRIPT` does: sys.argv[0] stays as the user
    typed it (runpy.run_path would make it the absolute path), __file__ is absolute, and the module is
    sys.modules["__main__"] while it runs (pickle and spawned workers find its classes there)."""
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = builtins
    main.__spec__ = None
    with open(path, "rb") as f:  # bytes: compile() honours the file's encoding declaration
        code = compile(f.read(), path, "exec", dont_inherit=True)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)  # noqa: S102 - running the user's script is the point
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def run_script(script: str | None, args: list[str] | tuple[str, ...], devices: int = 1, virtual: bool = True,
               module: str | None = None, memory: int | None = None) -> int:
    """Run `script` as __main__ (like `python SCRIPT ARGS`), or with `module` like `python -m MODULE ARGS`,
    under the virtual GPU when `virtual`.

    Returns the exit status: the script's own on SystemExit, 1 after a device error or another exception.
    """
    import contextlib

    if virtual:
        try:
            import devlint.virtual_gpu  # noqa: F401
        except ImportError as exc:
            print(f"devlint: error: --virtual-gpu needs PyTorch (the CPU build is enough): {exc}", file=sys.stderr)
            return 2
    old_argv, old_path = sys.argv[:], sys.path[:]
    if module is None:
        path = os.path.abspath(script)
        sys.argv = [script, *args]
        sys.path.insert(0, os.path.dirname(path))
    else:
        sys.argv = [module, *args]  # run_module(alter_sys=True) makes it the module's file, as -m does
        sys.path.insert(0, os.getcwd())
    try:
        if virtual:
            from devlint.virtual_gpu import virtual_gpu
            ctx = virtual_gpu(devices=devices, memory=memory)
        else:
            ctx = contextlib.nullcontext()
        with ctx:
            if module is None:
                _run_main_file(path)
            else:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException as e:  # noqa: BLE001 - the script's own error is reported like Python does
        report = device_error_report(e)
        _print_user_traceback(e)
        if report:
            print(report, file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
        sys.stdout.flush()
    return 0
