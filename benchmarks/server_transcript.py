"""A scripted editor session with `devlint server`, printed as an abbreviated JSON-RPC transcript:
initialize, open a file with one bug of each default rule, the diagnostics, a quick fix applied, fix all
applied, and a check that the text equals what `devlint --fix` writes.

    python benchmarks/server_transcript.py [--out /tmp/lsp-transcript.txt]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.lsp_client import LspClient, apply_workspace_edit  # noqa: E402

EVERY_RULE = '''\
"""One bug of each default rule (DL017, `async=`, makes a file unparsable: see the syntax-error test)."""
import os

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.mask = torch.ones(2)

    def forward(self, x):
        return self.fc(x) * self.mask + torch.zeros(2)


model = Net().cuda()
model.load_state_dict(torch.load("checkpoint.pt"))
inputs = torch.randn(8, 4)
inputs.to("cuda")
scaler = torch.cuda.amp.GradScaler()
wrapped = nn.DataParallel(model, device_ids=[0, 1])
os.environ["CUDA_VISIBLE_DEVICE"] = "0"
legacy = torch.cuda.FloatTensor(3)
print(model.device)
batch = [torch.zeros(2), torch.ones(2)]
for t in batch:
    t = t.to("cpu")
where = torch.device(inputs.get_device())
outputs = model(inputs)
print(outputs.to("cuda").numpy())
'''


def short(value, width: int = 70):
    """A message with long texts cut and diagnostics one line each."""
    if isinstance(value, str):
        return value if len(value) <= width else f"{value[:width]}...({len(value)} chars)"
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "severity" in v and "range" in v for v in value):
            return [f"{d.get('code', 'error')} {d['range']['start']['line']}:{d['range']['start']['character']}-"
                    f"{d['range']['end']['line']}:{d['range']['end']['character']} sev={d['severity']}"
                    f"{' tags=' + str(d['tags']) if d.get('tags') else ''} {short(d['message'], 50)}" for d in value]
        return [short(v, width) for v in value]
    if isinstance(value, dict):
        if "capabilities" in value and "processId" in value:
            return {"processId": "...", "rootUri": value.get("rootUri"), "capabilities": "{...}"}
        return {k: short(v, width) for k, v in value.items()}
    return value


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/lsp-transcript.txt")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / ".git").mkdir()
        path = project / "every_rule.py"
        client = LspClient(cwd=project)
        try:
            client.initialize(project, debounce=0.15)
            uri = path.as_uri()
            client.open(uri, EVERY_RULE)
            diagnostics = client.diagnostics(uri, version=1)
            line = next(d for d in diagnostics if d["code"] == "DL002")["range"]["start"]["line"]
            actions = client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": {"start": {"line": line, "character": 0},
                                                        "end": {"line": line, "character": 0}},
                "context": {"diagnostics": [d for d in diagnostics if d["range"]["start"]["line"] == line]}})
            quick = next(a for a in actions if a.get("isPreferred"))
            text = apply_workspace_edit({uri: EVERY_RULE}, quick["edit"])[uri]
            client.change(uri, text, 2)  # the editor applies the edit and says so
            client.diagnostics(uri, version=2)
            (fix_all,) = client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0},
                                                        "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": [], "only": ["source.fixAll"]}})
            text = apply_workspace_edit({uri: text}, fix_all["edit"])[uri]
            client.change(uri, text, 3)
            remaining = client.diagnostics(uri, version=3)
            client.shutdown()
        finally:
            client.close()
        path.write_text(EVERY_RULE)
        subprocess.run([sys.executable, "-m", "devlint", str(path), "--fix", "--no-cache", "-q"], cwd=project,
                       capture_output=True)
        expected = path.read_text()
    lines = []
    for at, direction, message in client.transcript:
        if message.get("method") == "client/registerCapability" or (direction == "->" and "method" not in message
                                                                     and message.get("result") is None):
            continue
        lines.append(f"{at:7.3f}s {direction} {json.dumps(short(message))}")
    equal = text == expected
    lines.append(f"# fix all + quick fix text == `devlint --fix` text: {equal}")
    lines.append(f"# remaining diagnostics: {sorted(d['code'] for d in remaining)}")
    lines.append("# the fixed text:")
    lines += ["#   " + line for line in text.splitlines()]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
