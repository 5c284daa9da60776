"""LibCST's import with its dataclasses' generated code kept between runs (devlint.cst_import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from devlint import cst_import

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A fresh interpreter (LibCST not yet imported) loads LibCST and says how many texts it compiled, and
# whether the classes behave as dataclasses made them.
_PROBE = """
import dataclasses, json, sys
from devlint import cst_import
compiled = []
def counting(*args, **kwargs):
    compiled.append(1)
    return compile(*args, **kwargs)
cst_import.compile = counting
cst = cst_import.load()
name = cst.Name("x")
try:
    name.value = "y"
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
module = cst.parse_module("x = f(1, y=[2])  # c\\n")
print(json.dumps({
    "compiled": len(compiled),
    "equal": name.deep_equals(cst.Name("x")) and not name.deep_equals(cst.Name("y")) and hash(name) == hash(name),
    "repr": repr(cst.Integer("1")),
    "frozen": frozen,
    "round_trip": module.code,
    "defaults": cst.Call(func=cst.Name("f")).args == (),
    "patch_left": "exec" in vars(dataclasses),
    "path": cst_import.cache_path(),
}))
"""


def _load(prefix: str | None, *flags: str, **environ: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, **environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if prefix is not None:
        env["PYTHONPYCACHEPREFIX"] = prefix
    done = subprocess.run([sys.executable, *flags, "-c", _PROBE], env=env, cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def _behaves(run: dict) -> None:
    assert run["equal"] and run["frozen"] and run["defaults"]
    assert run["repr"].startswith("Integer(\n    value='1',")
    assert run["round_trip"] == "x = f(1, y=[2])  # c\n"
    assert not run["patch_left"]


def test_the_second_import_compiles_nothing(tmp_path):
    first = _load(str(tmp_path))
    assert first["compiled"] > 100  # ~1,000 on 3.10-3.12, ~130 on 3.13
    assert os.path.isfile(first["path"]) and first["path"].startswith(str(tmp_path))
    second = _load(str(tmp_path))
    assert second["compiled"] == 0
    _behaves(first)
    _behaves(second)


# The checker's import (LibCST, the engine, the rules) in a fresh interpreter: how many texts it
# compiled, and what a check of one file finds (devlint's own dataclasses built from kept code).
_CHECKER_PROBE = """
import json
from devlint import cst_import
compiled = []
def counting(*args, **kwargs):
    compiled.append(args[0])
    return compile(*args, **kwargs)
cst_import.compile = counting
from devlint.config import Config
from devlint.documents import load_checker
config = Config()
load_checker(config)
from devlint.engine import check_source
result = check_source("a.py", b"import torch\\nx = torch.ones(2).cuda()\\n", config)
print(json.dumps({
    "compiled": len(compiled),
    "findings": [(f.code, f.start.line, f.start.column) for f in result.findings],
    "equal": result.findings[0] == result.findings[0].__class__(**vars(result.findings[0])),
}))
"""


def test_the_checkers_second_import_compiles_nothing_of_devlint_either(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONPYCACHEPREFIX=str(tmp_path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def probe() -> dict:
        done = subprocess.run([sys.executable, "-c", _CHECKER_PROBE], env=env, cwd=ROOT, capture_output=True,
                              text=True, check=True)
        return json.loads(done.stdout)

    first = _load(str(tmp_path))  # LibCST's texts kept; devlint's own not yet
    assert first["compiled"] > 100
    second = probe()
    assert second["compiled"] > 20  # devlint's analyses' and rules' dataclasses (~60)
    third = probe()
    assert third["compiled"] == 0
    assert second["findings"] == third["findings"] == [["DL001", 2, 18]]  # (`.cuda()`, 0-based column)
    assert third["equal"]


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG cache folder")
def test_without_a_bytecode_prefix_the_users_cache_folder_holds_it(tmp_path):
    first = _load(None, XDG_CACHE_HOME=str(tmp_path))
    assert os.path.dirname(first["path"]) == str(tmp_path / "devlint")
    assert os.path.isfile(first["path"])
    assert _load(None, XDG_CACHE_HOME=str(tmp_path))["compiled"] == 0


def test_another_installations_texts_stay(tmp_path):
    path = _load(str(tmp_path))["path"]
    kept = cst_import.read(path)
    other = "def __create_fn__():\n def f(self): return 1\n return f"  # (as another LibCST would write)
    kept[other] = compile(other, "<string>", "exec", dont_inherit=True)
    kept.pop(next(iter(kept)))  # and one text of this LibCST is missing: the next import compiles it
    cst_import.write(path, kept)
    assert _load(str(tmp_path))["compiled"] == 1
    assert other in cst_import.read(path)


def test_a_damaged_file_is_as_none_and_written_again(tmp_path):
    path = _load(str(tmp_path))["path"]
    with open(path, "r+b") as handle:
        handle.seek(-10, os.SEEK_END)
        handle.write(b"\0" * 10)
    assert cst_import.read(path) == {}
    again = _load(str(tmp_path))
    assert again["compiled"] > 100
    _behaves(again)
    assert cst_import.read(path)  # whole again
    assert _load(str(tmp_path))["compiled"] == 0


def test_nothing_is_written_without_bytecode(tmp_path):
    run = _load(str(tmp_path), "-B")
    assert run["compiled"] > 100
    assert not os.path.exists(run["path"])
    _behaves(run)


def test_an_unwritable_place_keeps_nothing_and_fails_nothing(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    run = _load(str(blocked))  # the cache's folder would be below a file
    _behaves(run)
    assert not os.path.exists(run["path"])


def test_read_and_write(tmp_path):
    path = str(tmp_path / "sub" / "kept.marshal")
    code = compile("x = 1", "<string>", "exec")
    cst_import.write(path, {"x = 1": code})
    assert cst_import.read(path) == {"x = 1": code}
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["kept.marshal"]  # no partial file left
    assert cst_import.read(str(tmp_path / "missing")) == {}


@pytest.mark.parametrize("damage", ["foreign header", "truncated", "not a dict", "not code"])
def test_read_refuses_what_it_did_not_write_whole(tmp_path, damage):
    path = str(tmp_path / "kept.marshal")
    cst_import.write(path, {"x = 1": compile("x = 1", "<string>", "exec")})
    with open(path, "rb") as handle:
        data = handle.read()
    if damage == "foreign header":
        data = b"\0\0\0\0" + data[4:]
    elif damage == "truncated":
        data = data[:-5]
    else:
        import marshal

        body = marshal.dumps(["x = 1"] if damage == "not a dict" else {"x = 1": 1})
        header = cst_import._header()
        data = header + cst_import._digest(body) + body
    with open(path, "wb") as handle:
        handle.write(data)
    assert cst_import.read(path) == {}
