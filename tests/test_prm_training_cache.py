"""Training ``bow`` from flat arrays and the on-disk cache of featurised items (prm.items,
prm.item_cache, prm.trainset): a run featurises only what it has not seen, a changed text again,
and the model is exactly the one training without the cache gives."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import prm
from prm.backbones import build_backbone
from prm.data import read_dataset
from prm.item_cache import KEEP_FACTOR, MAX_SHARDS, ItemCache
from prm.items import RowIndex, featurise
from prm.trainset import packed_sets

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "tests" / "fixtures" / "prm" / "phase1_trl_small.jsonl"


@pytest.fixture(scope="module")
def dataset():
    return read_dataset(SMALL)


def _distinct(rows) -> set[tuple]:
    """The rows' distinct steps, counted independently of prm: (problem, prefix with the step)."""
    return {(s.problem, s.steps[: i + 1]) for s in rows for i in range(len(s.steps))}


def _trained_rows(dataset):
    return dataset.split("train") + dataset.split("validation")


def _version(out: Path) -> str:
    return json.loads((out / "config.json").read_text())["version"]


def test_a_second_run_featurises_only_the_new_labels(dataset, tmp_path):
    rows = dataset.solutions
    first = rows[:150]
    later = rows[:150] + rows[150:170]
    cache = tmp_path / "cache"
    m1 = prm.train(first, tmp_path / "m1", epochs=1, progress=False, cache_dir=str(cache))
    before = _distinct(_trained_rows(dataset.__class__(first)))
    assert m1["prepare"]["featurised"] == len(before) and m1["prepare"]["from_cache"] == 0

    m2 = prm.train(later, tmp_path / "m2", epochs=1, progress=False, cache_dir=str(cache))
    after = _distinct(_trained_rows(dataset.__class__(later)))
    new = after - before
    assert 0 < len(new) < len(after)
    assert m2["prepare"]["featurised"] == len(new)
    assert m2["prepare"]["from_cache"] == len(after & before) == len(after) - len(new)


def test_a_changed_step_text_is_featurised_again(dataset, tmp_path):
    rows = list(dataset.solutions)
    cache = str(tmp_path / "cache")
    prm.train(rows, tmp_path / "m1", epochs=1, progress=False, cache_dir=cache)
    r = next(i for i, s in enumerate(rows) if s in dataset.split("train") and len(s.steps) >= 4)
    steps = list(rows[r].steps)
    steps[2] = steps[2] + " (checked again)"
    changed = [*rows[:r], dataclasses.replace(rows[r], steps=tuple(steps)), *rows[r + 1 :]]
    m2 = prm.train(changed, tmp_path / "m2", epochs=1, progress=False, cache_dir=cache)
    new = _distinct(_trained_rows(dataset.__class__(changed))) - _distinct(
        _trained_rows(dataset.__class__(rows))
    )
    # the changed step and every step after it in that row (their prefix changed)
    assert len(new) == len(steps) - 2
    assert m2["prepare"]["featurised"] == len(new)


def test_training_with_the_cache_gives_exactly_the_model_without_it(dataset, tmp_path):
    cache = str(tmp_path / "cache")
    plain = prm.train(dataset, tmp_path / "plain", epochs=3, seed=2, progress=False)
    cold = prm.train(dataset, tmp_path / "cold", epochs=3, seed=2, progress=False, cache_dir=cache)
    warm = prm.train(dataset, tmp_path / "warm", epochs=3, seed=2, progress=False, cache_dir=cache)
    n = len(_distinct(_trained_rows(dataset)))
    assert cold["prepare"]["featurised"] == plain["prepare"]["featurised"] == n
    assert warm["prepare"]["featurised"] == 0 and warm["prepare"]["from_cache"] == n
    versions = {_version(tmp_path / m) for m in ("plain", "cold", "warm")}
    assert len(versions) == 1
    assert plain["history"] == cold["history"] == warm["history"]
    scores = [prm.load(tmp_path / m).score(dataset.solutions) for m in ("plain", "warm")]
    assert scores[0] == scores[1]


def test_featurising_as_a_tree_gives_each_step_the_features_its_row_gives(dataset, monkeypatch):
    backbone = build_backbone("bow")
    rows = dataset.solutions
    index = RowIndex.build(rows)
    assert len(index) == len(_distinct(rows)) < index.row_starts[-1]  # rows share prefixes
    done, bags = featurise(backbone, rows, index, np.ones(len(index), dtype=bool))
    assert (done == np.arange(len(index))).all()
    seen = set()
    for r, s in enumerate(rows):
        for i, item in enumerate(backbone.prepare(s.problem, s.steps)):
            j = int(index.row_items[index.row_starts[r] + i])
            if j in seen:
                continue
            seen.add(j)
            for name, (flat, off) in bags.items():
                assert flat[off[j] : off[j + 1]].tolist() == item.features[name], (r, i, name)
    assert len(seen) == len(index)

    # Forked processes featurise the same.
    import prm.items

    monkeypatch.setattr(prm.items, "PARALLEL_ITEMS", 1)
    done2, bags2 = featurise(backbone, rows, index, np.ones(len(index), dtype=bool), workers=2)
    assert (done2 == done).all()
    for name in bags:
        assert (bags2[name][0] == bags[name][0]).all() and (bags2[name][1] == bags[name][1]).all()


def test_the_checks_prior_of_packed_items_is_the_prior_of_the_items(dataset):
    backbone = build_backbone("bow")
    rows = dataset.split("train")
    (packed,), _ = packed_sets(backbone, [rows])
    seen, items = set(), []
    for s in rows:
        for it in backbone.prepare(s.problem, s.steps):
            if it.key not in seen:
                seen.add(it.key)
                items.append(dataclasses.replace(it, labels=(s.labels[it.steps[0]],)))
    assert build_backbone("bow").fit_prior(items) == backbone.fit_prior_packed(packed.packed)
    assert backbone.fit_prior_packed(packed.packed)  # the fixture has checks that fire


class _CompactedMeanwhile(ItemCache):
    """A cache whose shards another process removes right after this one listed them."""

    def lookup(self, keys):
        found = super().lookup(keys)
        for shard in self.read:
            shard.unlink()
        return found


def test_a_shard_removed_by_another_process_is_featurised_again(dataset, tmp_path):
    rows = _trained_rows(dataset)
    backbone = build_backbone("bow")
    (plain,), _ = packed_sets(backbone, [rows])
    packed_sets(backbone, [rows], cache=ItemCache(tmp_path, backbone))
    (again,), stats = packed_sets(backbone, [rows], cache=_CompactedMeanwhile(tmp_path, backbone))
    assert stats["featurised"] == len(plain) and stats["from_cache"] == 0
    for name, (flat, off) in plain.packed.bags.items():
        assert (again.packed.bags[name][0] == flat).all()
        assert (again.packed.bags[name][1] == off).all()


def test_the_cache_stays_within_its_bounds_as_the_training_set_moves(dataset, tmp_path):
    backbone = build_backbone("bow")
    rows = dataset.solutions
    for start in range(0, 200, 10):  # twenty runs, each on a window of rows
        window = rows[start : start + 50]
        cache = ItemCache(tmp_path, backbone)
        (s,), _ = packed_sets(backbone, [window], cache=cache)
        shards = sorted(cache.folder.glob("shard-*.npz"))
        held = sum(len(np.load(p)["keys"]) for p in shards)
        assert len(shards) <= MAX_SHARDS
        assert len(s) <= held <= KEEP_FACTOR * len(s)
        check = ItemCache(tmp_path, backbone)
        found, _ = check.lookup(s.packed.keys)
        assert found.all()


# slow: two fresh Python processes, each importing torch and training (about 7 s)
@pytest.mark.slow
def test_two_processes_training_at_once_share_the_cache_safely(tmp_path):
    cache = tmp_path / "cache"

    def command(k: int) -> list[str]:
        out = str(tmp_path / f"m{k}")
        return [sys.executable, "-m", "prm", "train", "--data", str(SMALL), "--out", out,
                "--epochs", "2", "--quiet", "--cache-dir", str(cache)]  # fmt: skip

    procs = [
        subprocess.Popen(
            command(k), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for k in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    assert _version(tmp_path / "m0") == _version(tmp_path / "m1")
    third = prm.train(SMALL, tmp_path / "m2", epochs=2, progress=False, cache_dir=str(cache))
    assert third["prepare"]["featurised"] == 0
    assert _version(tmp_path / "m2") == _version(tmp_path / "m0")
    assert not list(cache.rglob(".tmp-*"))


def test_evaluation_reads_the_training_cache_and_keeps_what_training_kept(dataset, tmp_path):
    from prm.evaluation import step_scores_of

    cache = tmp_path / "cache"
    prm.train(dataset, tmp_path / "m", epochs=2, progress=False, cache_dir=str(cache))
    scorer = prm.load(tmp_path / "m")
    plain = prm.evaluate(scorer, dataset, bootstrap=50)
    cached = prm.evaluate(scorer, dataset, bootstrap=50, cache_dir=cache)
    assert cached == plain
    test_rows = dataset.split("test")
    for mine, theirs in zip(
        step_scores_of(scorer, test_rows, cache), scorer.score(test_rows), strict=True
    ):
        assert mine == pytest.approx(theirs, rel=1e-6, abs=1e-9)

    # The evaluation added the test rows' steps and removed none of training's.
    backbone = build_backbone("bow")
    for rows in (_trained_rows(dataset), test_rows):
        found, _ = ItemCache(cache, backbone).lookup(RowIndex.build(rows).keys)
        assert found.all()


def test_a_callers_prepare_cache_gives_the_same_model(dataset, tmp_path):
    memo: dict = {}
    plain = prm.train(dataset, tmp_path / "plain", epochs=2, progress=False)
    first = prm.train(dataset, tmp_path / "m1", epochs=2, progress=False, prepare_cache=memo)
    assert 0 < len(memo) <= len(_trained_rows(dataset))  # an entry per row it prepared
    again = prm.train(dataset, tmp_path / "m2", epochs=2, progress=False, prepare_cache=memo)
    assert plain["history"] == first["history"] == again["history"]
    assert len({_version(tmp_path / m) for m in ("plain", "m1", "m2")}) == 1
