"""Latency of `devlint server` from a didChange to the publishDiagnostics of that version, on a
2,000-line file (functions in the style of a training script, a device bug in every fifth one).

    python benchmarks/server_latency.py [--lines 2000] [--changes 15] [--debounce 0.15]

Prints the median, minimum and maximum over the changes (each edits one line in the middle of the
file, as typing does), with the server's debounce delay included (it is part of what a user waits),
and, for scale, the wall time of `devlint FILE --no-cache` on the same text (process start included) and
the CPU time of one analysis in this process (what the latency comes to on an idle core).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.lsp_client import LspClient  # noqa: E402

HEADER = "import os\n\nimport torch\nimport torch.nn as nn\n\n"
BLOCK = '''

class Block{n}(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.inner = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        y = self.inner(x)
        return self.norm(y + x)


def train_{n}(model, batches, device, epochs=1):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for inputs, targets in batches:
            inputs = inputs.to(device)
            targets = targets.to(device)
            loss = nn.functional.mse_loss(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return {bug}
'''


def source(lines: int) -> str:
    parts, n = [HEADER], 0
    while sum(part.count("\n") for part in parts) < lines:
        bug = "model.cuda()" if n % 5 == 0 else "model"
        parts.append(BLOCK.format(n=n, bug=bug))
        n += 1
    return "".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--changes", type=int, default=15)
    parser.add_argument("--debounce", type=float, default=0.15, help="the server's delay (its default: 0.15 s)")
    args = parser.parse_args()
    text = source(args.lines)
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / ".git").mkdir()
        uri = (project / "big.py").as_uri()
        client = LspClient(cwd=project)
        try:
            client.initialize(project, debounce=args.debounce)
            started = time.perf_counter()
            client.open(uri, text)
            first = client.diagnostics(uri, version=1, timeout=120)
            opened = time.perf_counter() - started
            lines = text.splitlines(keepends=True)
            middle = len(lines) // 2
            times = []
            for version in range(2, args.changes + 2):
                lines[middle] = f"# edit {version}\n"
                changed = "".join(lines)
                started = time.perf_counter()
                client.change(uri, changed, version)
                client.diagnostics(uri, version=version, timeout=120)
                times.append(time.perf_counter() - started)
            client.shutdown()
        finally:
            client.close()
        (project / "big.py").write_text(text)
        command = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "devlint", "big.py", "--no-cache", "-q"], cwd=project,
                           capture_output=True)
            command.append(time.perf_counter() - started)
    from devlint.server import lint

    config = lint.Config()  # the defaults, as in the temporary project
    cpu = []
    for _ in range(3):
        started = time.process_time()
        lint.check("big.py", text, config)
        cpu.append(time.process_time() - started)
    print(f"{text.count(chr(10))} lines, {len(first)} diagnostics; "
          f"first diagnostics after didOpen: {opened * 1000:.0f} ms")
    print(f"didChange -> publishDiagnostics over {len(times)} changes "
          f"(debounce {args.debounce * 1000:.0f} ms included): "
          f"median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms")
    print(f"`devlint big.py --no-cache` on the same text: median {statistics.median(command) * 1000:.0f} ms; "
          f"CPU time of one analysis in-process: median {statistics.median(cpu) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
