"""DL012 (issue 23, held-out evaluation): a class that writes its attributes through `self.__dict__` or
`vars(self)` (`self.__dict__.update(locals())`) may have any attribute, `device` included: devlint.analysis.bulk_attributes.
Both sides: a class of the checked file and one of another file of the project; a read-only use still flagged."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devlint.config import Config
from devlint.engine import check_source
from tests.helpers import lint

CLASS = """
import torch
import torch.nn as nn

class Backend(nn.Module):
    def __init__(self, weights, device=torch.device("cpu")):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        {line}
"""

WRITES = [
    "self.__dict__.update(locals())",
    "vars(self).update(locals())",
    "self.__dict__['device'] = device",
    "for k, v in dict(device=device).items(): self.__dict__[k] = v",
    "attrs = self.__dict__; attrs.update(device=device)",
]
READS = [
    "print(self.__dict__.keys())",
    "n = len(vars(self).items())",
    "pass",
]


def _source(line: str) -> str:
    return textwrap.dedent(CLASS).format(line=line)


@pytest.mark.parametrize("line", WRITES)
def test_a_class_writing_its_dict_may_have_a_device_in_the_same_file(line):
    assert lint(_source(line) + "model = Backend('w')\nprint(model.device)\n", "DL012") == []


@pytest.mark.parametrize("line", READS)
def test_a_class_only_reading_its_dict_is_still_flagged(line):
    assert len(lint(_source(line) + "model = Backend('w')\nprint(model.device)\n", "DL012")) == 1


@pytest.mark.parametrize("line, flagged", [(WRITES[0], False), (WRITES[1], False), (READS[0], True)])
def test_a_class_of_another_file(tmp_path: Path, line, flagged):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text(_source(line))
    run = tmp_path / "run.py"
    run.write_text("from models import Backend\nmodel = Backend('w')\nprint(model.device)\n")
    result = check_source(str(run), run.read_bytes(), Config(select=("DL012",)))
    assert result.error is None, result.error
    assert [f.start.line for f in result.findings] == ([3] if flagged else [])
