"""DL002 and files this run wrote before loading them (devlint.analysis.round_trip).

A round trip (`torch.save(x, p)` that runs before `torch.load(p)` on every path) cannot meet a device
the machine lacks; nor can a cache whose only writer, in the same function, saved CPU data. Shapes from
the evaluation of /work/eval/REPORT.md (S1, S3b, S5): both sides of each.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import lint


def _flagged(source: str) -> int:
    return len(lint(textwrap.dedent(source), select="DL002"))


CLEARED = {
    # S1: ignite's lr_finder / param_scheduler, a temporary cache of a state read back at once
    "temporary_dir_round_trip": '''
        import tempfile, torch
        def snapshot(model):
            with tempfile.TemporaryDirectory() as d:
                p = d + "/cache.pt"
                torch.save(model.state_dict(), p)
                sd = torch.load(p)
                model.load_state_dict(sd)
    ''',
    # ignite's param_scheduler: the path written and read as `.as_posix()` of one Path, loads nested later
    "as_posix_round_trip": '''
        import tempfile, torch
        from pathlib import Path
        def simulate(objs, schedulers):
            with tempfile.TemporaryDirectory() as tmpdirname:
                cache_filepath = Path(tmpdirname) / "cache.pt"
                torch.save(objs, cache_filepath.as_posix())
                for s in schedulers:
                    s.step()
                objs = torch.load(cache_filepath.as_posix(), weights_only=True)
                return objs
    ''',
    # the load nested in a later statement still runs after the save
    "load_in_later_branch": '''
        import torch
        def f(model, check):
            torch.save(model, "m.pt")
            if check:
                return torch.load("m.pt", weights_only=False)
    ''',
    # S3b: torch.jit.save, then torch.jit.load
    "jit_round_trip": '''
        import torch
        def test_jit(tmp_path):
            path = str(tmp_path / "model.pt")
            conv = torch.jit.script(torch.nn.Linear(8, 32).cuda())
            torch.jit.save(conv, path)
            conv = torch.jit.load(path)
    ''',
    "module_level_round_trip": '''
        import torch
        net = torch.nn.Linear(2, 2).cuda()
        torch.save(net.state_dict(), "net.pt")
        state = torch.load("net.pt")
    ''',
    # S5: a cache kept by the same function, of a tokenizer's output (built on the CPU), never moved
    "tokenizer_cache": '''
        import os, torch
        class TAGDataset:
            def tokens(self, path, texts):
                f = os.path.join(path, "input_ids.pt")
                if os.path.exists(f):
                    return torch.load(f)
                ids = self.tokenizer(texts, return_tensors="pt")["input_ids"]
                torch.save(ids, f)
                return ids
    ''',
    # a name bound twice: between the bindings it holds the first one's value on every path
    "path_rebound_after_load": '''
        import os.path as osp, torch
        def test_packaging(home, model):
            path = osp.join(home(), "model.pt")
            torch.save(model, path)
            model = torch.load(path, weights_only=False)
            path = osp.join(home(), "package.pt")
            export(model, path)
    ''',
    "path_rebound_before_save": '''
        import torch
        def f(model, other):
            p = other
            p = "a.pt"
            torch.save(model.state_dict(), p)
            return torch.load(p)
    ''',
    # the best-so-far idiom: `best` starts at an infinity every score beats, so the first turn saves
    "best_so_far_from_minus_infinity": '''
        import torch
        def train(model, epochs):
            best = -float("inf")
            for epoch in range(epochs):
                acc = evaluate(model)
                if acc > best:
                    best = acc
                    torch.save(model.state_dict(), "best.pt")
            model.load_state_dict(torch.load("best.pt"))
    ''',
    "best_so_far_loss_on_the_left": '''
        import math, torch
        def train(model, epochs):
            best_loss = math.inf
            for epoch in range(1, epochs + 1):
                loss = evaluate(model)
                if best_loss >= loss:
                    torch.save(model, "best.pt")
                    best_loss = loss
            return torch.load("best.pt", weights_only=False)
    ''',
    # the direction chosen at run time, the start and the comparison on the same side of one flag
    "best_so_far_either_direction": '''
        import math, operator, torch
        def main(args, model):
            higher_is_better = args.metric == "auc"
            best = -math.inf if higher_is_better else math.inf
            for epoch in range(args.epochs):
                score = evaluate(model)
                is_better = operator.gt if higher_is_better else operator.lt
                if is_better(score, best):
                    best = score
                    torch.save(model.state_dict(), "best.pt")
            model.load_state_dict(torch.load("best.pt"))
    ''',
    # saved on every turn of a counted loop (a run of no epoch is outside the program's use)
    "save_every_turn_of_literal_counted_loop": '''
        import torch
        def f(model):
            for _ in range(10, 0, -1):
                torch.save(model.state_dict(), "last.pt")
            return torch.load("last.pt")
    ''',
    "save_every_turn_of_counted_loop": '''
        import torch
        def f(model, epochs):
            for _ in range(epochs):
                torch.save(model.state_dict(), "last.pt")
            return torch.load("last.pt")
    ''',
    # `model._load_checkpoint` is another object's attribute, not a use of the helper
    "helper_beside_a_method_of_the_same_name": '''
        import torch
        def _load_checkpoint(p):
            return torch.load(p)
        def restore(model, state):
            torch.save(state, "m.pt")
            model._load_checkpoint = None
            model.load_state_dict(_load_checkpoint("m.pt"))
    ''',
}

FLAGGED = {
    # the save only on one path: the file may come from anywhere
    "save_in_branch": '''
        import os, torch
        def f(model, p):
            if not os.path.exists(p):
                torch.save(model.state_dict(), p)
            return torch.load(p)
    ''',
    "save_after_load": '''
        import torch
        def f(model, p):
            sd = torch.load(p)
            torch.save(model.state_dict(), p)
            return sd
    ''',
    "different_path": '''
        import torch
        def f(model):
            torch.save(model.state_dict(), "a.pt")
            return torch.load("b.pt")
    ''',
    "path_rebound_between": '''
        import torch
        def f(model, other):
            p = "a.pt"
            torch.save(model.state_dict(), p)
            p = other
            return torch.load(p)
    ''',
    # a re-binding that may run between (in a branch), or after the load in a loop around it
    "path_rebound_in_branch_between": '''
        import torch
        def f(model, other, check):
            p = "a.pt"
            torch.save(model.state_dict(), p)
            if check:
                p = other
            return torch.load(p)
    ''',
    "path_rebound_after_load_in_loop": '''
        import torch
        def f(model, others):
            p = "a.pt"
            torch.save(model.state_dict(), p)
            for other in others:
                sd = torch.load(p)
                p = other
    ''',
    # another function re-binds the global name the load reads
    "path_global_rebound": '''
        import torch
        p = "c.pt"
        def reset():
            global p
            p = "b.pt"
        def f(model):
            global p
            p = "a.pt"
            torch.save(model.state_dict(), p)
            reset()
            return torch.load(p)
    ''',
    # saved in a loop body that may run zero times (over a collection, a literal empty range), loaded after it
    "save_in_loop_body": '''
        import torch
        def f(model, batches):
            for _ in batches:
                torch.save(model.state_dict(), "best.pt")
            return torch.load("best.pt")
    ''',
    "save_in_empty_range": '''
        import torch
        def f(model):
            for _ in range(0):
                torch.save(model.state_dict(), "best.pt")
            return torch.load("best.pt")
    ''',
    "save_in_empty_range_with_step": '''
        import torch
        def f(model):
            for _ in range(10, 0, 1):
                torch.save(model.state_dict(), "best.pt")
            return torch.load("best.pt")
    ''',
    # a best-so-far save the first turn may skip: a finite start, the wrong direction, another condition
    "best_so_far_from_zero": '''
        import torch
        def train(model, epochs):
            best = 0.0
            for epoch in range(epochs):
                acc = evaluate(model)
                if acc > best:
                    best = acc
                    torch.save(model.state_dict(), "best.pt")
            model.load_state_dict(torch.load("best.pt"))
    ''',
    "best_so_far_wrong_direction": '''
        import math, torch
        def train(model, epochs):
            best = math.inf
            for epoch in range(epochs):
                acc = evaluate(model)
                if acc > best:
                    best = acc
                    torch.save(model.state_dict(), "best.pt")
            model.load_state_dict(torch.load("best.pt"))
    ''',
    "save_under_arbitrary_condition": '''
        import torch
        def train(model, epochs):
            for epoch in range(epochs):
                if epoch % 10 == 9:
                    torch.save(model.state_dict(), "ckpt.pt")
            model.load_state_dict(torch.load("ckpt.pt"))
    ''',
    "best_rebound_before_comparison": '''
        import torch
        def train(model, epochs, previous):
            best = -float("inf")
            for epoch in range(epochs):
                best = previous
                acc = evaluate(model)
                if acc > best:
                    torch.save(model.state_dict(), "best.pt")
            model.load_state_dict(torch.load("best.pt"))
    ''',
    "first_turns_skipped": '''
        import torch
        def train(model, epochs):
            best = -float("inf")
            for epoch in range(epochs):
                if epoch < 5:
                    continue
                acc = evaluate(model)
                if acc > best:
                    best = acc
                    torch.save(model.state_dict(), "best.pt")
            model.load_state_dict(torch.load("best.pt"))
    ''',
    "directions_on_different_flags": '''
        import math, operator, torch
        def main(args, model):
            best = -math.inf if args.higher else math.inf
            for epoch in range(args.epochs):
                score = evaluate(model)
                is_better = operator.gt if args.maximise else operator.lt
                if is_better(score, best):
                    best = score
                    torch.save(model.state_dict(), "best.pt")
            model.load_state_dict(torch.load("best.pt"))
    ''',
    # the load in a function defined after the save: it may run before it, or in another run
    "load_in_nested_function": '''
        import torch
        def f(model):
            torch.save(model.state_dict(), "m.pt")
            def restore():
                return torch.load("m.pt")
            return restore
    ''',
    # the file may be replaced by one from elsewhere between
    "copied_over_between": '''
        import shutil, torch
        def f(model, src):
            torch.save(model.state_dict(), "m.pt")
            shutil.copy(src, "m.pt")
            return torch.load("m.pt")
    ''',
    # a cache of values that may be on the GPU
    "tokenizer_cache_moved": '''
        import os, torch
        class TAGDataset:
            def tokens(self, path, texts, device):
                f = os.path.join(path, "input_ids.pt")
                if os.path.exists(f):
                    return torch.load(f)
                ids = self.tokenizer(texts, return_tensors="pt")["input_ids"].to(device)
                torch.save(ids, f)
                return ids
    ''',
    "cache_of_unknown_value": '''
        import os, torch
        def features(model, f, x):
            if os.path.exists(f):
                return torch.load(f)
            out = model(x)
            torch.save(out, f)
            return out
    ''',
    # another function writes the same literal path: the file may come from it
    "cache_written_elsewhere_too": '''
        import os, torch
        def tokens(self, texts):
            if os.path.exists("ids.pt"):
                return torch.load("ids.pt")
            ids = self.tokenizer(texts, return_tensors="pt")["input_ids"]
            torch.save(ids, "ids.pt")
            return ids
        def other(model):
            torch.save(model.state_dict(), "ids.pt")
    ''',
}


@pytest.mark.parametrize("name", sorted(CLEARED))
def test_written_by_this_run_is_not_flagged(name):
    assert _flagged(CLEARED[name]) == 0


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_file_from_elsewhere_stays_flagged(name):
    assert _flagged(FLAGGED[name]) == 1
