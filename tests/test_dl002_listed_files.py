"""DL002: a file found by listing a folder under the program's own naming scheme (issue 23,
devlint.analysis.listed_files and devlint.analysis.path_templates). A program saves word lists as
`{source}--{stamp}--words.pt` in a folder given on the command line and finds one again with a glob of
exactly that scheme: not flagged. Every way the folder may hold another file of the pattern keeps the load
flagged."""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint

WORDS = '''
import glob
import os
import shutil
import time
from pathlib import Path

import torch


def words(opts, texts):
    found = list(Path(opts.out).glob("*--*--words.pt"))
    if len(found) == 1:
        found = found[0]
        return torch.load(found)
    result = [str(t).lower() for t in texts]
    path = opts.out + "/{s}--{t}--words.pt"
    path = path.format(s=opts.source, t=time.time())
    torch.save(result, path)
    return result
'''
LOAD_LINE = 15


def _lines(source: str) -> list[int]:
    return [f.start.line for f in lint(textwrap.dedent(source), select="DL002")]


def test_a_file_of_the_programs_own_scheme_saved_from_strings_is_not_flagged():
    assert _lines(WORDS) == []


@pytest.mark.parametrize("writer", [
    'os.path.join(opts.out, f"{opts.source}--{time.time()}--words.pt")',
    'f"{opts.out}/{opts.source}--{time.time()}--words.pt"',
    'opts.out + "/%s--%d--words.pt" % (opts.source, time.time())',
    'Path(opts.out) / (opts.source + "--" + str(time.time()) + "--words.pt")',
])
def test_the_name_template_may_be_written_any_way(writer):
    source = WORDS.replace("torch.save(result, path)", f"torch.save(result, {writer})")
    assert _lines(source) == []


@pytest.mark.parametrize("listing", [
    ('found = list(Path(opts.out).glob("*--*--words.pt"))', 'found = sorted(glob.glob(os.path.join(opts.out, '
     '"*--*--words.pt")))'),
    ('found = list(Path(opts.out).glob("*--*--words.pt"))', 'found = glob.glob(f"{opts.out}/*--*--words.pt")'),
    ('        found = found[0]\n', '        found = max(found, key=os.path.getmtime)\n'),
])
def test_the_listing_may_be_written_any_way(listing):
    assert _lines(WORDS.replace(*listing)) == []


def test_a_loop_over_the_listing_is_not_flagged():
    source = WORDS.replace("    if len(found) == 1:\n        found = found[0]\n        return torch.load(found)\n",
                           "    for f in found:\n        return torch.load(f)\n")
    assert _lines(source) == []


@pytest.mark.parametrize("change", [
    # the data saved under the scheme holds tensors of any place
    ("result = [str(t).lower() for t in texts]", "result = [torch.tensor(t).cuda() for t in texts]"),
    ("result = [str(t).lower() for t in texts]", "result = encoder(texts)"),
    # the pattern is wider than the scheme: the folder may hold other files
    ('glob("*--*--words.pt")', 'glob("*.pt")'),
    ('glob("*--*--words.pt")', 'glob("*--*")'),
    # not a listing we can read: recursive, a character class, a pattern in the folder part
    ('glob("*--*--words.pt")', 'rglob("*--*--words.pt")'),
    ('glob("*--*--words.pt")', 'glob("*--*--words.p[t]")'),
    ('Path(opts.out).glob("*--*--words.pt")', 'glob.glob(opts.out + "/*/*--*--words.pt")'),
    # the saves go to another folder: no writer of this one found
    ('path = opts.out + "/{s}--{t}--words.pt"', 'path = opts.cache + "/{s}--{t}--words.pt"'),
    # the folder is re-bound, or its attribute may be set by a computed name
    ("    result = [", "    opts.out = opts.cache\n    result = ["),
    ("    result = [", "    setattr(opts, name, value)\n    result = ["),
])
def test_anything_else_in_the_scheme_keeps_the_load_flagged(change):
    source = WORDS.replace(*change)
    assert source != WORDS
    assert _lines(source) == [LOAD_LINE]


@pytest.mark.parametrize("other", [
    # another save whose names are names of the pattern, of data of unknown place
    'torch.save(model, os.path.join(opts.out, "a--b--words.pt"))',
    # a save, a copy, a download, an extraction with names we cannot tell, into the folder
    "torch.save(model, os.path.join(opts.out, name))",
    "shutil.copy(src, opts.out)",
    "shutil.copy(src, os.path.join(opts.out, name))",
    "shutil.move(src, opts.out)",
    "os.replace(tmp, os.path.join(opts.out, name))",
    "write_all(opts.out)",
])
def test_another_writer_into_the_folder_keeps_the_load_flagged(other):
    source = WORDS.replace("    return result\n", f"    {other}\n    return result\n")
    assert _lines(source) == [LOAD_LINE]


FETCHES = [
    "urlretrieve(url, os.path.join(opts.out, name))",
    "zipfile.ZipFile(archive).extractall(opts.out)",
    "shutil.unpack_archive(archive, os.path.dirname(opts.out))",
    "download_and_extract(url, opts.out)",
]


@pytest.mark.parametrize("fetch", FETCHES)
def test_a_download_or_archive_brings_no_file_of_the_programs_own_scheme(fetch):
    # a file named by the program's own scheme holds what the program saves under it, on any machine
    source = WORDS.replace("    return result\n", f"    {fetch}\n    return result\n")
    assert _lines(source) == []


@pytest.mark.parametrize("fetch", FETCHES)
def test_a_download_or_archive_counts_for_a_glob_that_is_no_saves_exact_scheme(fetch):
    source = textwrap.dedent(f'''
        import glob
        import os
        import torch

        def last(folder, url, epochs):
            for e in range(epochs):
                torch.save(["a", "b"], os.path.join(folder, f"ckpt_{{e}}.pt"))
            {fetch.replace("opts.out", "folder")}
            return torch.load(sorted(glob.glob(os.path.join(folder, "ckpt_1*.pt")))[-1])
    ''')
    assert _lines(source) == [10]


ALIASES = '''
import zipfile
from pathlib import Path
import torch


def fetch(args):
    zipfile.ZipFile("corpus.zip").extractall(args.dataset)
    return ["a b c"]


def build(args, docs):
    words = [str(d).lower() for d in docs]
    words = list(dict.fromkeys(words))
    torch.save(words, args.dataset + "/{m}--{t}--words.pt".format(m="a", t="b"))
    return words


def words(args):
    docs = fetch(args)
    found = list(Path(args.dataset).glob("*--*--words.pt"))
    if len(found) == 1:
        return torch.load(found[0])
    return build(args, docs)
'''


def test_a_parameter_passed_on_is_one_folder_with_the_callers():
    # `build` and `fetch` get `words`' own `args`: the save in `build` is the listing's writer
    assert _lines(ALIASES) == []


@pytest.mark.parametrize("change", [
    # the writer the call reaches saves tensors
    ("words = list(dict.fromkeys(words))", "words = [encode(w) for w in words]"),
    # a copy into the shared folder from the other function may bring any file
    ("extractall(args.dataset)", "extractall(args.dataset)\n    shutil.copy(src, args.dataset)"),
    # the writer gets another object: its folder is not the listing's
    ("return build(args, docs)", "return build(other, docs)"),
])
def test_what_the_passed_on_folder_gets_decides(change):
    source = ALIASES.replace(*change)
    assert source != ALIASES
    assert _lines(source) == [1 + source.splitlines().index("        return torch.load(found[0])")]


def test_an_imported_chain_flows_host_values():
    source = WORDS.replace("    result = [str(t).lower() for t in texts]\n",
                           "    result = list(chain([str(t).lower() for t in texts], ['end']))\n").replace(
        "import torch\n", "import torch\nfrom itertools import chain\n")
    assert _lines(source) == []
    assert _lines(source.replace("['end']", "[encode(texts)]")) == [LOAD_LINE + 1]


@pytest.mark.parametrize("other", [
    # a file of another name, or of a subfolder, or a deletion
    'torch.save(model, os.path.join(opts.out, "model.pt"))',
    'torch.save(model, os.path.join(opts.out, "cache", name))',
    "shutil.copy(src, os.path.join(opts.out, 'train.json'))",
    "os.remove(os.path.join(opts.out, name))",
    # a save of another scheme whose name could match only through the text of its field
    'torch.save(model, os.path.join(opts.out, f"{opts.source}.pt"))',
])
def test_other_files_of_the_folder_do_not_matter(other):
    source = WORDS.replace("    return result\n", f"    {other}\n    return result\n")
    assert _lines(source) == []


def test_another_scheme_counts_when_the_glob_is_no_saves_exact_scheme():
    # without a save of exactly `*--*--words.pt`, `f"{name}.pt"` may be what the glob finds
    source = WORDS.replace('    path = opts.out + "/{s}--{t}--words.pt"\n    path = path.format(s=opts.source, '
                           't=time.time())\n    torch.save(result, path)\n',
                           '    torch.save(model, os.path.join(opts.out, f"{opts.source}.pt"))\n')
    assert _lines(source) == [LOAD_LINE]


def test_a_narrower_glob_of_a_saved_template_is_judged_by_that_save():
    source = textwrap.dedent('''
        import glob
        import os
        import torch

        def last(folder, model, epochs):
            for e in range(epochs):
                torch.save(SAVED, os.path.join(folder, f"ckpt_{e}.pt"))
            return torch.load(sorted(glob.glob(os.path.join(folder, "ckpt_1*.pt")))[-1])
    ''')
    assert _lines(source.replace("SAVED", '["a", "b"]')) == []
    assert _lines(source.replace("SAVED", "model.state_dict()")) == [9]


def test_a_literal_name_of_the_pattern_with_other_data_keeps_it_flagged():
    source = WORDS.replace('glob("*--*--words.pt")', 'glob("*.pt")').replace(
        '"/{s}--{t}--words.pt"', '"/{s}.pt"').replace(
        "    return result\n", '    torch.save(model, opts.out + "/model.pt")\n    return result\n')
    assert _lines(source) == [LOAD_LINE]


def test_a_command_line_option_set_by_name_from_literal_strings_keeps_its_identity():
    setting = '    for p in ["lr", "seed"]:\n        setattr(opts, p, 1)\n'
    assert _lines(WORDS.replace("    result = [", setting + "    result = [")) == []
    assert _lines(WORDS.replace("    result = [", setting.replace('"seed"', '"out"') + "    result = [")) == [LOAD_LINE]


def test_what_the_file_held_saved_again_keeps_the_verdict():
    # the loaded words are saved again under the scheme: CPU data as long as every other save is
    source = WORDS.replace("        return torch.load(found)\n", "        old = torch.load(found)\n"
                           "        torch.save(old, opts.out + '/{s}--{t}--words.pt'.format(s=1, t=2))\n"
                           "        return old\n")
    assert _lines(source) == []
    assert _lines(source.replace("result = [str(t).lower() for t in texts]", "result = encoder(texts)")) == [LOAD_LINE]


LISTED = '''
import fnmatch
import os
import torch

OUT = os.path.join("runs", "vocab")


def restore():
    names = [f for f in os.listdir(OUT) if FILTER]
    if names:
        return torch.load(os.path.join(OUT, sorted(names)[-1]))


def keep(vocab, step):
    torch.save(sorted(str(w) for w in vocab), os.path.join(OUT, f"vocab_{step}.pt"))
'''


@pytest.mark.parametrize("keep", [
    'f.endswith(".pt") and f.startswith("vocab_")',
    'fnmatch.fnmatch(f, "vocab_*.pt")',
])
def test_a_filtered_listing_of_the_folder_is_a_listing_too(keep):
    assert _lines(LISTED.replace("FILTER", keep)) == []


@pytest.mark.parametrize("keep", [
    'f.endswith(".pt")',  # wider than the template: the folder may hold other files
    '"vocab" in f',
    "os.path.isfile(f)",  # no pattern at all
])
def test_a_listing_filtered_wider_than_the_template_stays_flagged(keep):
    assert _lines(LISTED.replace("FILTER", keep)) == [12]


def test_a_filtered_listing_of_a_save_of_tensors_stays_flagged():
    source = LISTED.replace("FILTER", 'f.startswith("vocab_")').replace("sorted(str(w) for w in vocab)", "vocab.cuda()")
    assert _lines(source) == [12]


def test_a_name_of_an_unfiltered_listing_stays_flagged():
    source = LISTED.replace("[f for f in os.listdir(OUT) if FILTER]", "os.listdir(OUT)")
    assert _lines(source) == [12]


def test_a_name_bound_again_from_itself_stays_host_data():
    # `result = list(dict.fromkeys(result))` reads the name it binds; every binding is host data
    source = WORDS.replace("    path = opts.out + ", "    result = list(dict.fromkeys(result))\n    path = opts.out + ")
    assert _lines(source) == []
    assert _lines(source.replace("list(dict.fromkeys(result))", "[encode(r) for r in result]")) == [LOAD_LINE]


def test_a_string_method_of_the_folder_path_writes_nothing():
    source = ALIASES.replace("    docs = fetch(args)\n", '    docs = fetch(args)\n    if "qa" in args.dataset.lower():\n'
                             "        docs = docs[:1]\n")
    assert _lines(source) == []
