"""Fix safety on real code: `devlint --fix --unsafe-fixes` on copies of repositories, every fixed file checked.

For each repository (a folder of Python files and notebooks, e.g. a `git archive` of a fetched one):

- findings per rule and per fix label (safe / unsafe / display-only) before fixing;
- every file the fixes changed: it still compiles; a second `--fix` changes nothing; pyflakes reports
  nothing it did not report before (an import the fix made unused, an undefined `device`); DL008 reports
  nothing new (a CUDA query written before a `CUDA_VISIBLE_DEVICES` assignment);
- no device definition at module level of a library module (a .py file without
  `if __name__ == "__main__":`): it would query CUDA when the module is imported.

The repositories are never modified: each is copied (its .py and .ipynb files) into a temporary folder.

    pip install -e '.[bench]'          # pyflakes
    python benchmarks/fix_safety.py /tmp/repos/semseg /tmp/repos/text --diffs /tmp/fix-diffs

Exit status 1 when any check fails. `--safe-only` applies safe fixes only (what `--fix` does).
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    from pyflakes import api as pyflakes_api
    from pyflakes import reporter as pyflakes_reporter
except ImportError:  # pragma: no cover - a set-up problem, said plainly
    sys.exit("benchmarks/fix_safety.py needs pyflakes: pip install -e '.[bench]'")

_MAIN = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.M)
_DEFINITION = re.compile(r"^_?device\s*=")
_SUFFIXES = (".py", ".ipynb")
_LINE = re.compile(r"\bline \d+")


def devlint(*args: str) -> subprocess.CompletedProcess:
    # `python -m devlint` so that PYTHONPATH picks the devlint under test (a worktree, an old commit).
    return subprocess.run([sys.executable, "-m", "devlint", "check", "--isolated", "--no-cache", *args],
                          capture_output=True, text=True)


def findings(folder: str, *args: str) -> list[dict]:
    result = devlint(folder, "--output-format", "json", "--exit-zero", *args)
    # Exit 2 with findings on stdout: some files could not be checked (a notebook cell that does not
    # parse, say); the others were.
    if result.returncode not in (0, 1) and not result.stdout.startswith("["):
        raise SystemExit(f"devlint failed on {folder} (exit {result.returncode}):\n{result.stderr[-2000:]}")
    return json.loads(result.stdout or "[]")


def snapshot(folder: str) -> dict[str, bytes]:
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            if name.endswith(_SUFFIXES):
                path = os.path.join(root, name)
                with open(path, "rb") as handle:
                    files[os.path.relpath(path, folder)] = handle.read()
    return files


def copy_sources(repo: str, target: str) -> None:
    def ignore(directory, names):
        return [n for n in names if not os.path.isdir(os.path.join(directory, n)) and not n.endswith(_SUFFIXES)]

    shutil.copytree(repo, target, ignore=ignore, symlinks=True)


class _Collector(pyflakes_reporter.Reporter):
    def __init__(self) -> None:
        self.messages: list[str] = []

    def unexpectedError(self, filename, msg):  # noqa: N802 - pyflakes' API
        self.messages.append(f"error: {msg}")

    def syntaxError(self, filename, msg, lineno, offset, text):  # noqa: N802
        self.messages.append(f"syntax error: {msg}")

    def flake(self, message):
        # Without positions (some messages name a line: "redefinition of unused 'x' from line 12"):
        # a fix that shifts lines changes no message.
        self.messages.append(_LINE.sub("line N", message.message % message.message_args))


def pyflakes_messages(source: bytes) -> collections.Counter:
    collector = _Collector()
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return collections.Counter()
    pyflakes_api.check(text, "<file>", collector)
    return collections.Counter(collector.messages)


def compiles(source: bytes) -> str | None:
    try:
        compile(source, "<fixed>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return str(exc)
    return None


def check_repo(repo: str, safe_only: bool, diffs: str | None) -> tuple[dict, list[str]]:
    name = os.path.basename(os.path.normpath(repo))
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="devlint-fix-safety-") as scratch:
        copy = os.path.join(scratch, name)
        copy_sources(repo, copy)
        before = snapshot(copy)
        found = findings(copy)
        dl008_before = collections.Counter(f["path"] for f in findings(copy, "--select", "DL008"))
        fix_args = ["--fix", "--exit-zero"] + ([] if safe_only else ["--unsafe-fixes"])
        result = devlint(copy, *fix_args)
        unreadable = [line for line in result.stderr.splitlines() if ": error: " in line]
        if result.returncode not in (0, 1) and not unreadable:
            problems.append(f"{name}: --fix exited {result.returncode}: {result.stderr.strip()[-500:]}")
        after = snapshot(copy)
        changed = sorted(p for p in after if after[p] != before.get(p))
        devlint(copy, *fix_args)
        again = snapshot(copy)
        dl008_after = collections.Counter(f["path"] for f in findings(copy, "--select", "DL008"))
        remaining = findings(copy)
        library_definitions = 0
        for path in changed:
            old, new = before[path], after[path]
            if again[path] != new:
                problems.append(f"{name}/{path}: a second --fix changed it again")
            if diffs:
                target = os.path.join(diffs, name, path + ".diff")
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "w", encoding="utf-8") as handle:
                    handle.writelines(difflib.unified_diff(
                        old.decode("utf-8", "replace").splitlines(True), new.decode("utf-8", "replace").splitlines(True),
                        f"a/{path}", f"b/{path}"))
            full = os.path.join(copy, path)
            if dl008_after[full] > dl008_before[full]:
                problems.append(f"{name}/{path}: DL008 reports {dl008_after[full] - dl008_before[full]} new finding(s)")
            if not path.endswith(".py"):
                continue  # notebooks: devlint's own tests check their cells compile
            error = compiles(new)
            if error:
                problems.append(f"{name}/{path}: does not compile after the fix: {error}")
            new_flakes = pyflakes_messages(new) - pyflakes_messages(old)
            for message in new_flakes:
                problems.append(f"{name}/{path}: pyflakes, new: {message}")
            added = [line for line in _added_lines(old, new) if _DEFINITION.match(line)]
            if added and not _MAIN.search(new.decode("utf-8", "replace")):
                library_definitions += 1
                problems.append(f"{name}/{path}: a device definition at module level of a library module")
    labels = collections.Counter((f["code"], (f.get("fix") or {}).get("applicability", "none")) for f in found)
    row = {
        "repo": name,
        "files": sum(1 for p in before if p.endswith(".py")),
        "notebooks": sum(1 for p in before if p.endswith(".ipynb")),
        "findings": len(found),
        "per_rule": dict(sorted(collections.Counter(f["code"] for f in found).items())),
        "labels": {f"{code}:{label}": n for (code, label), n in sorted(labels.items())},
        "changed": len(changed),
        "not_checked": len(unreadable),
        "remaining": len(remaining),
        "library_definitions": library_definitions,
        "problems": len(problems),
    }
    return row, problems


def _added_lines(old: bytes, new: bytes) -> list[str]:
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    return [line[1:] for line in difflib.unified_diff(a, b, lineterm="", n=0)
            if line.startswith("+") and not line.startswith("+++")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+", help="folders to copy and fix")
    parser.add_argument("--safe-only", action="store_true", help="apply safe fixes only")
    parser.add_argument("--diffs", help="write each fixed file's diff under this folder")
    parser.add_argument("--json", help="write the table (and problems) as JSON to this file")
    args = parser.parse_args(argv)
    rows, every_problem = [], []
    for repo in args.repos:
        row, problems = check_repo(repo, args.safe_only, args.diffs)
        rows.append(row)
        every_problem.extend(problems)
        print(f"{row['repo']}: {row['findings']} findings, {row['changed']} files fixed, "
              f"{row['problems']} problems", file=sys.stderr, flush=True)
        if args.json:  # after each repository: a long run interrupted keeps what it measured
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump({"rows": rows, "problems": every_problem}, handle, indent=2)
    print("| repository | .py | notebooks | findings | per rule | fixed files | left after fix | not checked | library definitions | problems |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        rules = ", ".join(f"{code} {n}" for code, n in r["per_rule"].items())
        print(f"| {r['repo']} | {r['files']} | {r['notebooks']} | {r['findings']} | {rules} | {r['changed']} "
              f"| {r['remaining']} | {r['not_checked']} | {r['library_definitions']} | {r['problems']} |")
    for problem in every_problem:
        print(f"- {problem}")
    return 1 if every_problem else 0


if __name__ == "__main__":
    sys.exit(main())
