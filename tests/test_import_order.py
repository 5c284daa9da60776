"""The device definition `--fix` inserts keeps ruff's and isort's import check (I001) passing.

The definition goes after the whole import header with one blank line above it (the blank lines that
followed the imports now follow it), and an `import torch` the fix adds goes where isort sorts it.
Each shape is fixed in-process and compared with the expected text; ruff then checks every
original and fixed text in ONE run (rule examples, golden fixtures, the notebook fixture, the shapes):
a fixed text whose original passed must pass when the fix gained a module-level definition.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import pytest

from devlint.config import Config
from devlint.documents.notebook import check_notebook
from devlint.rules import ALL_RULES
from tests.helpers import fix
from tests.test_notebook import notebook, sources

DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
FIXTURES = Path(__file__).parent / "fixtures"
NOTEBOOK = Path(__file__).parent / "fixtures_notebooks" / "train.ipynb"

# name: (original, fixed)
SHAPES = {
    "no blank line after the imports": (
        "import torch\nx = torch.ones(1).cuda()\n",
        f"import torch\n\n{DEVICE}\nx = torch.ones(1).to(device)\n",
    ),
    "one blank line after the imports": (
        "import torch\n\nx = torch.ones(1).cuda()\n",
        f"import torch\n\n{DEVICE}\n\nx = torch.ones(1).to(device)\n",
    ),
    "a def after the imports keeps its two blank lines": (
        "import torch\n\n\ndef f():\n    return 1\n\n\nx = torch.ones(1).cuda()\n",
        f"import torch\n\n{DEVICE}\n\n\ndef f():\n    return 1\n\n\nx = torch.ones(1).to(device)\n",
    ),
    "a comment after the imports stays with its code": (
        "import torch\n\n# the input\nx = torch.ones(1).cuda()\n",
        f"import torch\n\n{DEVICE}\n\n# the input\nx = torch.ones(1).to(device)\n",
    ),
    "docstring only: torch is imported below it": (
        '"""Doc."""\n\nx = y.cuda()\nfor i in z:\n    pass\n',
        f'"""Doc."""\n\nimport torch\n\n{DEVICE}\n\nx = y.to(device)\nfor i in z:\n    pass\n',
    ),
    "nothing above: torch is imported first": (
        "x = y.cuda()\nfor i in z:\n    pass\n",
        f"import torch\n\n{DEVICE}\nx = y.to(device)\nfor i in z:\n    pass\n",
    ),
    "from __future__": (
        "from __future__ import annotations\n\nimport torch\n\nx = torch.ones(1).cuda()\n",
        f"from __future__ import annotations\n\nimport torch\n\n{DEVICE}\n\nx = torch.ones(1).to(device)\n",
    ),
    "from __future__, torch added in a section of its own": (
        "from __future__ import annotations\n\nx = y.cuda()\nfor i in z:\n    pass\n",
        f"from __future__ import annotations\n\nimport torch\n\n{DEVICE}\n\nx = y.to(device)\nfor i in z:\n"
        "    pass\n",
    ),
    "matplotlib.use between imports": (
        'import matplotlib\nimport torch\n\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n\n'
        "x = torch.ones(1).cuda()\n",
        'import matplotlib\nimport torch\n\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n\n'
        f"{DEVICE}\n\nx = torch.ones(1).to(device)\n",
    ),
    "sys.path.insert between imports": (
        'import os\nimport sys\n\nimport torch\n\nROOT = os.path.dirname(os.path.abspath(__file__))\n'
        "sys.path.insert(0, ROOT)\nfrom mypkg import model\n\nx = torch.ones(1).cuda()\n",
        'import os\nimport sys\n\nimport torch\n\nROOT = os.path.dirname(os.path.abspath(__file__))\n'
        f"sys.path.insert(0, ROOT)\nfrom mypkg import model\n\n{DEVICE}\n\nx = torch.ones(1).to(device)\n",
    ),
    "a try block of imports": (
        "import torch\n\ntry:\n    import apex\nexcept ImportError:\n    apex = None\n\nx = torch.ones(1).cuda()\n",
        f"import torch\n\ntry:\n    import apex\nexcept ImportError:\n    apex = None\n\n{DEVICE}\n\n"
        "x = torch.ones(1).to(device)\n",
    ),
    "CRLF": (
        "import torch\r\n\r\nx = torch.ones(1).cuda()\r\n",
        f"import torch\r\n\r\n{DEVICE}\r\n\r\nx = torch.ones(1).to(device)\r\n",
    ),
    "torch added after the standard library": (
        "import os\nimport sys\n\nx = y.cuda()\nfor i in z:\n    pass\n",
        f"import os\nimport sys\n\nimport torch\n\n{DEVICE}\n\nx = y.to(device)\nfor i in z:\n    pass\n",
    ),
    "torch added among the third-party imports": (
        "import os\n\nimport numpy as np\nimport yaml\nfrom scipy import stats\n\nx = y.cuda()\nfor i in z:\n"
        "    pass\n",
        "import os\n\nimport numpy as np\nimport torch\nimport yaml\nfrom scipy import stats\n\n"
        f"{DEVICE}\n\nx = y.to(device)\nfor i in z:\n    pass\n",
    ),
    "torch added before a from-import of torch": (
        "from torch import nn\n\nx = y.cuda()\nfor i in z:\n    pass\n",
        f"import torch\nfrom torch import nn\n\n{DEVICE}\n\nx = y.to(device)\nfor i in z:\n    pass\n",
    ),
    "torch added before the local imports": (
        "import os\n\nfrom . import models\n\nx = y.cuda()\nfor i in z:\n    pass\n",
        f"import os\n\nimport torch\n\nfrom . import models\n\n{DEVICE}\n\nx = y.to(device)\nfor i in z:\n"
        "    pass\n",
    ),
    "torch added for a local definition": (
        '"""Doc."""\n\n\ndef f(y):\n    return y.cuda()\n',
        f'"""Doc."""\n\nimport torch\n\n\ndef f(y):\n    {DEVICE}\n    return y.to(device)\n',
    ),
}


@pytest.mark.parametrize("name", SHAPES)
def test_the_definition_is_placed_as_the_import_check_wants(name):
    original, expected = SHAPES[name]
    assert fix(original, select="DL00") == expected  # DL001's definition (DL018 would go one step further)
    assert fix(expected, select="DL00") == expected


def test_a_site_in_the_import_header_gets_no_module_level_definition_it_cannot_see():
    # the definition goes after the `try` block of imports: the site in it cannot see it
    header = "import torch\n\ntry:\n    import apex\n    t = torch.ones(1).cuda()\nexcept ImportError:\n    pass\n\n"
    fixed = fix(header + "x = torch.ones(1).cuda()\n", select="DL00")
    assert fixed == header + f"{DEVICE}\n\nx = torch.ones(1).to(device)\n"  # `t`'s fix is display-only


def test_a_visible_devices_setting_between_imports_comes_before_the_definition():
    source = ("import os\n\nimport torch\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nimport numpy as np\n\n"
              "x = torch.ones(1).cuda()\n")
    fixed = fix(source, select="DL00")
    assert fixed.index("CUDA_VISIBLE_DEVICES") < fixed.index(DEVICE)
    assert fixed.endswith(f"import numpy as np\n\n{DEVICE}\n\nx = torch.ones(1).to(device)\n")


def test_a_notebook_gets_the_definition_in_the_cell_that_imports_torch():
    new = sources(check_notebook("nb.ipynb", notebook("import torch\nimport numpy as np", "x = torch.ones(1).cuda()"),
                                 Config(fix=True)).fixed_source)
    assert new == [f"import torch\nimport numpy as np\n\n{DEVICE}", "x = torch.ones(1).to(device)"]
    new = sources(check_notebook("nb.ipynb", notebook("%matplotlib inline\nprint('start')", "x = y.cuda()"),
                                 Config(fix=True)).fixed_source)
    assert new == [f"%matplotlib inline\nimport torch\n\n{DEVICE}\nprint('start')", "x = y.to(device)"]


# -- ruff, once, on every fixed text --------------------------------------------------------------------

@functools.cache
def _all_cases() -> tuple[tuple[str, str, str, str], ...]:
    return tuple(_cases())


def _cases() -> list[tuple[str, str, str, str]]:
    """(name, suffix, original, fixed) for every rule example, golden fixture and shape."""
    cases = []
    for rule in ALL_RULES:
        select = getattr(rule, "EXAMPLES_SELECT", rule.code)
        for i, case in enumerate(rule.INVALID):
            cases.append((f"{rule.code}_invalid_{i}", ".py", case.code, fix(case.code, select=select,
                                                                           unsafe=case.unsafe)))
    for path in sorted(FIXTURES.glob("DL*/*.py")):
        source = path.read_text()
        cases.append((f"{path.parent.name}_{path.stem}", ".py", source, fix(source, unsafe=True)))
    for i, (original, _) in enumerate(SHAPES.values()):
        cases.append((f"shape_{i}", ".py", original, fix(original, unsafe=True)))
    data = NOTEBOOK.read_bytes()
    fixed = check_notebook(str(NOTEBOOK), data, Config(fix=True)).fixed_source
    cases.append(("notebook", ".ipynb", data.decode(), fixed))
    return cases


def _gains_definition(original: str, fixed: str) -> bool:
    before = set(original.splitlines())
    return any(line.startswith(("device = ", "_device = ")) and line not in before for line in fixed.splitlines())


def test_ruff_import_check_passes_on_fixed_files_where_it_passed_before(tmp_path):
    """Every example and fixture twice: as written, and with its imports first put in order by ruff
    (most examples have no blank line after their imports). Two ruff runs in all."""
    ruff = pytest.importorskip("ruff.__main__", reason="ruff comes with the test extra")
    binary = [ruff.find_ruff_bin(), "check", "--isolated", "--select", "I", "--no-cache"]
    cases = list(_all_cases())
    (tmp_path / "sorted").mkdir()
    for name, suffix, original, _ in cases:
        (tmp_path / "sorted" / f"{name}{suffix}").write_bytes(original.encode())
    run = subprocess.run([*binary, "--fix", "--exit-zero", "sorted"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for name, suffix, original, fixed in list(cases):
        ordered = (tmp_path / "sorted" / f"{name}{suffix}").read_bytes().decode()
        if ordered != original and suffix == ".py":
            cases.append((f"{name}_sorted", suffix, ordered, _fix_like(name, ordered)))
    names = []
    for name, suffix, original, fixed in cases:
        for kind, text in (("original", original), ("fixed", fixed)):
            (tmp_path / f"{name}_{kind}{suffix}").write_bytes(text.encode())
            names.append(f"{name}_{kind}{suffix}")
    run = subprocess.run([*binary, "--output-format", "json", *names], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr
    failing = {Path(f["filename"]).name for f in json.loads(run.stdout)}
    checked = [name for name, suffix, original, fixed in cases
               if f"{name}_original{suffix}" not in failing and _gains_definition(original, fixed)]
    assert len(checked) >= 30  # the examples and fixtures that gain a module-level definition
    assert [name for name, suffix, *_ in cases
            if f"{name}_original{suffix}" not in failing and f"{name}_fixed{suffix}" in failing] == []


def _fix_like(name: str, source: str) -> str:
    rule = next((r for r in ALL_RULES if name.startswith(f"{r.code}_invalid_")), None)
    if rule is None:
        return fix(source, unsafe=True)
    case = rule.INVALID[int(name.split("_")[2])]
    return fix(source, select=getattr(rule, "EXAMPLES_SELECT", rule.code), unsafe=case.unsafe)


def test_isort_check_passes_where_it_passed_before():
    isort = pytest.importorskip("isort", reason="isort comes with the test extra")
    config = isort.Config()
    cases = [(name, original, fixed) for name, suffix, original, fixed in _all_cases() if suffix == ".py"]
    for name, original, _ in list(cases):
        if not isort.check_code(original, config=config):  # put in order first, as with ruff
            ordered = isort.code(original, config=config)
            cases.append((f"{name}_sorted", ordered, fix(ordered, unsafe=True)))
    passed = [name for name, original, _ in cases if isort.check_code(original, config=config)]
    assert len(passed) >= 30
    assert [name for name, _, fixed in cases if name in passed and not isort.check_code(fixed, config=config)] == []
