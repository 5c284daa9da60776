"""The GitHub Action (action.yml): its `run:` steps, run as the runner runs them, on a small git repository.

Each step is a bash script run with `bash --noprofile --norc -eo pipefail` (GitHub's `shell: bash`),
its `env:` expressions filled in from the inputs, the `github` context and the earlier steps'
outputs, which each step writes to a GITHUB_OUTPUT file of its own. `version: installed` runs the
devlint of this checkout, so nothing is installed and nothing touches the network.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")

OLD_BUG = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"  # DL001, on the base branch already
NEW_BUG = "import torch\nstate = torch.load('w.pt')\n"  # DL002, added by the pull request


@dataclass
class Run:
    returncode: int  # the action's: that of the step that failed, else 0
    outputs: dict[str, str]
    log: str
    steps: dict[str, dict[str, str]]


def _resolve(value: str, context: dict) -> str:
    """`${{ a.b.c }}` as GitHub fills it in: a missing property is the empty string."""
    def lookup(match: re.Match) -> str:
        node = context
        for part in match.group(1).split("."):
            node = node.get(part, "") if isinstance(node, dict) else ""
        return "" if node is None else str(node)

    return EXPRESSION.sub(lookup, value)


def _outputs(path: Path) -> dict[str, str]:
    outputs, lines = {}, path.read_text(encoding="utf-8").splitlines()
    while lines:
        line = lines.pop(0)
        if "<<" in line and "=" not in line.split("<<", 1)[0]:  # name<<DELIMITER ... DELIMITER
            name, delimiter = line.split("<<", 1)
            value = []
            while lines and lines[0] != delimiter:
                value.append(lines.pop(0))
            lines.pop(0)
            outputs[name] = "\n".join(value)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


def run_action(repo: Path, runner_temp: Path, inputs: dict | None = None, event: dict | None = None,
               event_name: str = "pull_request", only: tuple[str, ...] | None = None,
               path: str | None = None) -> Run:
    defaults = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    context = {
        "inputs": {**defaults, "version": "installed", **(inputs or {})},
        "github": {"action_path": str(ROOT), "action_repository": "devlint/devlint", "event": event or {}},
        "steps": {},
    }
    runner_temp.mkdir(exist_ok=True)
    base_env = {key: value for key, value in os.environ.items() if not key.startswith(("GITHUB_", "INPUT_"))}
    base_env.update(
        # `python3` is this test's interpreter, which imports this checkout's devlint.
        PATH=path or f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        RUNNER_TEMP=str(runner_temp), GITHUB_WORKSPACE=str(repo), GITHUB_EVENT_NAME=event_name,
        GITHUB_SERVER_URL="https://github.com", GITHUB_REPOSITORY="someone/project", CI="true",
        NO_COLOR="1",
    )
    log, returncode = [], 0
    for index, step in enumerate(ACTION["runs"]["steps"]):
        if only is not None and step["id"] not in only:
            continue
        output = runner_temp / f"output-{index}"
        output.write_text("")
        script = runner_temp / f"step-{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        env = {**base_env, "GITHUB_OUTPUT": str(output)}
        env.update({name: _resolve(str(value), context) for name, value in step.get("env", {}).items()})
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=120)
        log.append(done.stdout + done.stderr)
        context["steps"][step["id"]] = {"outputs": _outputs(output)}
        if done.returncode != 0:
            returncode = done.returncode
            break
    outputs = {name: _resolve(spec["value"], context) for name, spec in ACTION["outputs"].items()}
    return Run(returncode, outputs, "".join(log), {k: v["outputs"] for k, v in context["steps"].items()})


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path):
    """A base commit with one old bug and a clean file; a pull request's head that adds one bug and
    touches the clean file."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "old.py").write_text(OLD_BUG)
    (repo / "pkg" / "clean.py").write_text("x = 1\n")
    (repo / "README.md").write_text("a project\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    (repo / "pkg" / "new.py").write_text(NEW_BUG)
    (repo / "pkg" / "clean.py").write_text("x = 2\n")
    (repo / "README.md").write_text("a project, changed\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "head")
    return repo


def base_of(repo: Path) -> str:
    return git(repo, "rev-list", "--max-parents=0", "HEAD")


def pull_request(repo: Path) -> dict:
    return {"pull_request": {"base": {"sha": base_of(repo)}}}


def validate(sarif: Path) -> dict:
    jsonschema = pytest.importorskip("jsonschema")
    document = json.loads(sarif.read_text())
    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(document)
    return document


def test_no_input_is_expanded_inside_a_script():
    # `${{ inputs.src }}` inside `run:` would be pasted into the script before bash reads it: a
    # src of `x; curl ... | sh` would run. Inputs reach the scripts as environment variables only.
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step["run"], step["name"]
        assert step["shell"] == "bash"


def test_github_annotations_outputs_and_failing_on_findings(repo, tmp_path):
    run = run_action(repo, tmp_path / "runner")
    assert run.returncode == 1
    assert run.outputs == {"exit-code": "1", "findings-count": "2", "sarif-file": ""}
    annotations = [line for line in run.log.splitlines() if line.startswith("::error title=devlint (")]
    assert [a.split(",file=")[1].split(",")[0] for a in annotations] == ["pkg/new.py", "pkg/old.py"]


def test_sarif_format_writes_a_valid_report_and_counts_its_results(repo, tmp_path):
    run = run_action(repo, tmp_path / "runner", {"format": "sarif", "fail-on": "never"})
    assert run.returncode == 0  # fail-on: never
    assert run.outputs["exit-code"] == "1" and run.outputs["sarif-file"] == "devlint.sarif"
    document = validate(repo / run.outputs["sarif-file"])
    results = document["runs"][0]["results"]
    assert run.outputs["findings-count"] == str(len(results)) == "2"
    assert all(r["partialFingerprints"]["devlint/v1"] for r in results)
    assert "pkg/old.py:2:31: DL001" in run.log  # the log shows the text report


def test_github_format_with_a_sarif_file_writes_both_and_tells_of_the_annotation_limit(repo, tmp_path):
    (repo / "pkg" / "many.py").write_text("import torch\n" + "m = torch.nn.Linear(2, 2).cuda()\n" * 10)
    run = run_action(repo, tmp_path / "runner", {"sarif-file": "out/devlint.sarif", "fail-on": "never"})
    assert run.log.count("::error title=devlint (") == 12
    assert run.outputs["sarif-file"] == "out/devlint.sarif" and run.outputs["findings-count"] == "12"
    assert len(validate(repo / "out" / "devlint.sarif")["runs"][0]["results"]) == 12
    # GitHub shows 10 error annotations per step and drops the others without a word.
    assert "::notice title=devlint::12 findings; GitHub shows the first 10" in run.log


@pytest.mark.parametrize("fail_on, broken, returncode, exit_code", [
    ("errors", False, 0, "1"),  # findings are reported, the step passes
    ("errors", True, 2, "2"),  # a file devlint cannot read fails it
    ("never", True, 0, "2"),
])
def test_fail_on(repo, tmp_path, fail_on, broken, returncode, exit_code):
    if broken:
        (repo / "pkg" / "broken.py").write_text("def f(:\n")
    run = run_action(repo, tmp_path / "runner", {"fail-on": fail_on})
    assert (run.returncode, run.outputs["exit-code"], run.outputs["findings-count"]) == (returncode, exit_code, "2")


def test_a_clean_tree_passes(repo, tmp_path):
    run = run_action(repo, tmp_path / "runner", {"src": "pkg/clean.py"})
    assert (run.returncode, run.outputs["exit-code"], run.outputs["findings-count"]) == (0, "0", "0")


def test_changed_files_only_checks_the_pull_requests_python_files(repo, tmp_path):
    run = run_action(repo, tmp_path / "runner", {"changed-files-only": "true", "format": "sarif"},
                     pull_request(repo))
    assert run.returncode == 1
    assert "2 changed Python file(s)" in run.log  # new.py and clean.py; README.md is not Python
    results = validate(repo / "devlint.sarif")["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"pkg/new.py"} and run.outputs["findings-count"] == "1"  # old.py's bug is not the PR's


def test_changed_files_only_with_no_python_change_passes_and_still_writes_sarif(repo, tmp_path):
    (repo / "README.md").write_text("only the docs\n")
    git(repo, "commit", "-qam", "docs")
    head_before = git(repo, "rev-parse", "HEAD~1")
    run = run_action(repo, tmp_path / "runner", {"changed-files-only": "true", "sarif-file": "d.sarif"},
                     {"before": head_before}, event_name="push")
    assert (run.returncode, run.outputs["exit-code"], run.outputs["findings-count"]) == (0, "0", "0")
    assert validate(repo / "d.sarif")["runs"][0]["results"] == []


def test_changed_files_only_src_limits_the_diff(repo, tmp_path):
    (repo / "other").mkdir()
    (repo / "other" / "bug.py").write_text(NEW_BUG)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "more")
    run = run_action(repo, tmp_path / "runner", {"changed-files-only": "true", "src": "other"},
                     pull_request(repo))
    assert "1 changed Python file(s)" in run.log and run.outputs["findings-count"] == "1"
    assert ",file=other/bug.py," in run.log and "pkg/new.py" not in run.log


def test_changed_files_only_on_a_new_branch_checks_everything(repo, tmp_path):
    run = run_action(repo, tmp_path / "runner", {"changed-files-only": "true"}, {"before": "0" * 40},
                     event_name="push")
    assert "has no base commit; checking every file" in run.log
    assert run.outputs["findings-count"] == "2"


def test_a_shallow_checkout_fetches_the_base(repo, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{repo}", str(clone))
    assert subprocess.run(["git", "cat-file", "-e", f"{base_of(repo)}^{{commit}}"], cwd=clone).returncode != 0
    run = run_action(clone, tmp_path / "runner", {"changed-files-only": "true"}, pull_request(repo))
    assert run.outputs["findings-count"] == "1" and ",file=pkg/new.py," in run.log


def test_a_base_that_cannot_be_fetched_is_a_clear_error(repo, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{repo}", str(clone))
    git(clone, "remote", "remove", "origin")
    run = run_action(clone, tmp_path / "runner", {"changed-files-only": "true"}, pull_request(repo))
    assert f"the base commit {base_of(repo)} is not in this checkout" in run.log and "fetch-depth: 0" in run.log
    assert (run.returncode, run.outputs["exit-code"], run.outputs["findings-count"]) == (2, "2", "0")


@pytest.mark.parametrize("inputs, message", [
    ({"format": "xml"}, "format: 'xml' is not github or sarif"),
    ({"fail-on": "warning"}, "fail-on: 'warning' is not findings, errors or never"),
    ({"version": "v1 --index-url x"}, "is not a git ref"),
    ({"changed-files-only": "yes"}, "changed-files-only: 'yes' is not true or false"),
    ({"args": "--select 'DL001"}, "args: No closing quotation"),
    ({"args": "--select DL999"}, "::error title=devlint::devlint: error: --select: unknown rule code or prefix 'DL999'"),
    ({"args": "--select DL999", "format": "sarif"}, "::error title=devlint::devlint: error: --select: unknown rule"),
])
def test_bad_inputs_are_one_clear_message(repo, tmp_path, inputs, message):
    run = run_action(repo, tmp_path / "runner", inputs)
    assert run.returncode == 2 and message in run.log
    assert "Traceback" not in run.log


def test_args_are_split_like_a_shell_and_never_evaluated(repo, tmp_path):
    run = run_action(repo, tmp_path / "runner", {"args": "--ignore DL001 '$(touch pwned)'"})
    assert not (repo / "pwned").exists()
    assert run.outputs["exit-code"] == "2" and "$(touch pwned)" in run.log  # a path that does not exist


STUB_PYTHON = """#!/bin/bash
# python3 as the install step calls it: records what pip is asked to install.
if [ "$1" = -m ] && [ "$2" = venv ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; exit 0; fi
if [ "$1" = -m ] && [ "$2" = pip ]; then echo "$@" >> "$STUB_LOG"; exit 0; fi
exit 0
"""


@pytest.mark.parametrize("version, source", [
    ("", str(ROOT)),  # the default: the action's own checkout, the ref named in `uses:`
    ("v0.1.0", "git+https://github.com/devlint/devlint@v0.1.0"),
    ("0.1.0", "git+https://github.com/devlint/devlint@v0.1.0"),  # the release tag of that version
    ("0123456789abcdef0123456789abcdef01234567", "git+https://github.com/devlint/devlint@0123456789abcdef0123456789abcdef01234567"),
])
def test_install_pins_devlint_to_the_action(repo, tmp_path, monkeypatch, version, source):
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python3").write_text(STUB_PYTHON)
    (stub / "python3").chmod(0o755)
    monkeypatch.setenv("STUB_LOG", str(tmp_path / "pip.log"))
    run = run_action(repo, tmp_path / "runner", {"version": version}, only=("install",),
                     path=f"{stub}{os.pathsep}{os.environ['PATH']}")
    assert run.returncode == 0, run.log
    assert (tmp_path / "pip.log").read_text().split()[-1] == source
    assert run.steps["install"]["python"] == str(tmp_path / "runner" / "devlint-venv" / "bin" / "python")
