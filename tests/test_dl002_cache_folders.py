"""DL002: a file of a cache folder whose every writer saves CPU data (issue 23, devlint.analysis.cache_folders
and devlint.analysis.cpu_containers). A tokenizer's output gathered per key, joined with `torch.cat` and
saved as `{key}.pt` in a folder of the instance, is loaded back under the same pattern: not flagged.
Every way the folder may get other data keeps the load flagged."""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint

TOKENS = '''
import os
import shutil
import torch


class Tokens:
    def __init__(self, root, tokenizer):
        self.root = root
        self.tokenizer = tokenizer

    def tokens(self, texts, kind):
        keys = ["input_ids", "attention_mask"]
        folder = os.path.join(self.root, "tokens", kind)
        if all(os.path.exists(os.path.join(folder, f"{k}.pt")) for k in keys):
            return {k: torch.load(os.path.join(folder, f"{k}.pt")) for k in keys}
        gathered = {k: [] for k in keys}
        for i in range(0, len(texts), 8):
            batch = self.tokenizer(texts[i:i + 8], return_tensors="pt")
            for k in batch.keys():
                gathered[k].append(batch[k])
        gathered = {k: torch.cat(v) for k, v in gathered.items()}
        os.makedirs(folder, exist_ok=True)
        for k, tensor in gathered.items():
            torch.save(tensor, os.path.join(folder, f"{k}.pt"))
            print("saved", os.path.join(folder, f"{k}.pt"))
        return gathered
'''
LOAD_LINE = 16


def _lines(source: str) -> list[int]:
    return [f.start.line for f in lint(textwrap.dedent(source), select="DL002")]


def test_a_cache_of_tokenizer_output_joined_on_the_cpu_is_not_flagged():
    assert _lines(TOKENS) == []


def test_other_files_of_the_folder_under_another_name_do_not_matter():
    source = TOKENS.replace("        return gathered\n", "        torch.save(self.settings, os.path.join(folder, "
                            "\"settings.json\"))\n        return gathered\n")
    assert _lines(source) == []


@pytest.mark.parametrize("change", [
    # the data: moved, or of unknown place, or filled through an alias
    ('return_tensors="pt")', 'return_tensors="pt").to(self.device)'),
    ("gathered[k].append(batch[k])", "gathered[k].append(batch[k].cuda())"),
    ("gathered[k].append(batch[k])", "gathered[k].append(self.extra[k])"),
    ("gathered[k].append(batch[k])", "part = gathered[k]\n                part.append(self.extra[k])"),
    ("gathered[k].append(batch[k])", "gathered.setdefault(k, []).append(self.extra[k])"),
    ("        os.makedirs(folder, exist_ok=True)\n",
     "        for part in gathered.values():\n            part.append(self.extra)\n"),
    # another writer of a name that can match, of the folder, or of a folder above it
    ("        return gathered\n", "        torch.save(self.extra, os.path.join(folder, \"extra.pt\"))\n"
     "        return gathered\n"),
    ("        return gathered\n", "        shutil.copytree(self.source, folder)\n        return gathered\n"),
    ("        return gathered\n", "        download(self.url, os.path.join(self.root, \"tokens\"))\n"
     "        return gathered\n"),
    ("        return gathered\n", "        download(self.url, os.path.join(self.root, self.sub))\n"
     "        return gathered\n"),
])
def test_a_folder_that_may_get_other_data_keeps_the_load_flagged(change):
    source = TOKENS.replace(*change)
    assert source != TOKENS
    assert LOAD_LINE in _lines(source) or LOAD_LINE + 3 in _lines(source)


def test_a_name_read_from_a_listing_has_no_pattern():
    source = TOKENS.replace('return {k: torch.load(os.path.join(folder, f"{k}.pt")) for k in keys}',
                            "return {n: torch.load(os.path.join(folder, n)) for n in os.listdir(folder)}")
    assert _lines(source) == [LOAD_LINE]


def test_a_module_level_cache_folder_with_a_literal_path():
    source = '''
    import os
    import torch

    def load(name):
        return torch.load(os.path.join("cache", f"{name}-vocab.pt"))

    def save(vocabularies):
        for name, words in vocabularies.items():
            torch.save(sorted(words), os.path.join("cache", f"{name}-vocab.pt"))
    '''
    # `vocabularies` is a parameter: its words are of unknown kind
    assert _lines(source) == [6]
    cpu = source.replace("sorted(words)", "[str(w) for w in words]")
    assert _lines(cpu) == []
    # another writer of a name of the pattern, of unknown data, or one that may write anything there
    assert _lines(cpu + "    torch.save(model.state_dict(), os.path.join('cache', 'best-vocab.pt'))\n") == [6]
    assert _lines(cpu + "    open('cache/en-vocab.pt', 'wb')\n") == [6]
    assert _lines(cpu + "    shutil.copy(source, 'cache')\n") == [6]
    # a writer of another name of the folder, or of the same name in another folder
    assert _lines(cpu + "    open('cache/log.txt', 'w')\n") == []
    assert _lines(cpu + "    open('/cache/en-vocab.pt', 'wb')\n") == []


def test_modules_of_a_container_moved_in_place_are_not_cpu_data():
    source = '''
    import os
    import torch

    def load(k):
        return torch.load(os.path.join("cache", f"{k}.pt"), weights_only=False)

    def save(keys):
        models = {k: torch.nn.Linear(2, 2) for k in keys}
        for k, m in models.items():
            torch.save(m, os.path.join("cache", f"{k}.pt"))
    '''
    assert _lines(source) == []
    moved = source.replace("        for k, m in models.items():", "        for m in models.values():\n"
                           "            m.cuda()\n        for k, m in models.items():")
    assert _lines(moved) == [6]


@pytest.mark.parametrize("loop", ["for e in encodings:", "for i, e in enumerate(encodings):"])
def test_tokenizer_outputs_of_a_container_moved_in_place_are_not_cpu_data(loop):
    source = '''
    import os
    import torch

    def load(k):
        return torch.load(os.path.join("cache", f"{k}.pt"), weights_only=False)

    def save(tokenizer, texts):
        encodings = [tokenizer(t, return_tensors="pt") for t in texts]
        for k, encoding in enumerate(encodings):
            torch.save(encoding, os.path.join("cache", f"{k}.pt"))
    '''
    assert _lines(source) == []
    moved = source.replace("        for k, encoding in enumerate(encodings):", f"        {loop}\n"
                           "            e.to(\"cuda\")\n        for k, encoding in enumerate(encodings):")
    assert _lines(moved) == [6]


FEATURES = '''
import os
import torch


class Features:
    def __init__(self, root):
        self.cache_dir = os.path.join(root, "features")

    def build(self, model, images, names):
        for name, image in zip(names, images):
            feats = model(image){move}
            torch.save(feats, os.path.join(self.cache_dir, f"{{name}}.pt"))

    def __getitem__(self, name):
        return torch.load(os.path.join(self.cache_dir, f"{{name}}.pt"))
'''


def test_a_cache_folder_of_the_instance_written_and_read_by_two_methods():
    assert _lines(FEATURES.format(move=".cpu()")) == []
    assert _lines(FEATURES.format(move="")) == [16]  # features of a model of unknown place
    assert _lines(FEATURES.format(move=".cpu().cuda()")) == [16]
