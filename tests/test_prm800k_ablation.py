"""The PRM800K ablation's harness (``bench/prm800k_ablation.py``) on a tiny world: its invariants,
not its figures (those are the benchmark's, docs/ablation.md)."""

from __future__ import annotations

import argparse
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

import prm
from bench.prm800k_ablation import run_served
from bench.prm800k_harness import (
    Harness,
    Options,
    Selection,
    best_of_k,
    chosen,
    noisy_labels,
    planted,
    problem_orders,
    slope_ratio,
    slopes,
    solution_auroc,
    world_pools,
    write_trl,
)
from bench.prm800k_world import (
    COPIED_MIX,
    COPIED_NUMBER,
    ERROR_KINDS,
    MIX,
    SLIP,
    WRONG_METHOD,
    World,
    world,
)
from prm.bestofn import Candidate, curve
from prm.metrics import solution_score


def tiny_world(mix: tuple[float, float, float] = MIX) -> World:
    return world(train_problems=24, held_out_problems=10, pool=16, seed=3, mix=mix)


@pytest.fixture(scope="module")
def pools():
    return world_pools(tiny_world(), k=8)


def test_the_world_knows_each_steps_truth_and_the_checks_catch_only_slips() -> None:
    w = tiny_world(COPIED_MIX)
    samples = [s for pool in w.train for s in pool]
    kinds = {s.kind for s in samples}
    assert {WRONG_METHOD, COPIED_NUMBER, SLIP, None} <= kinds
    for s in samples:
        labels = s.solution.labels
        assert labels is not None and len(labels) == len(s.solution.steps)
        assert s.first_error == s.solution.first_error
        if s.kind is None:
            assert all(labels) and s.solution.answer_correct
        else:  # unsound from the first error on, and the answer wrong
            assert not any(labels[s.first_error :]) and s.solution.answer_correct is False
    # the exact checks fire on every slip and on no sound step, wrong method or copied number
    for s in samples[:120]:
        found = prm.check_solution(s.solution.problem, list(s.solution.steps))
        if s.kind == SLIP:
            assert found[s.first_error]
        else:
            end = len(found) if s.first_error == -1 else s.first_error + 1
            assert not any(found[:end]) or s.kind == COPIED_NUMBER


def test_convincing_wrong_takes_the_80_20_rule_per_problem(pools) -> None:
    probs, _ = planted(pools, sigma=0.8, seed=0)
    orders = problem_orders(pools, Selection("planted", probs), "convincing-wrong", seed=0)
    flat, starts = pools.flat, pools.starts()
    for p, order in enumerate(orders):
        mine = range(starts[p], starts[p + 1])
        assert sorted(order) == list(mine)  # every sample of this problem, no other
        wrong = sorted(
            (i for i in mine if flat[i].answer_correct is False),
            key=lambda i: (-solution_score(list(probs[i])), i),
        )
        for n in (1, 2, 5, 10):
            head = order[:n]
            due = min(len(wrong), math.floor(0.8 * n + 0.5))
            if n - due <= len(mine) - len(wrong):
                assert [i for i in head if i in wrong] == wrong[:due]


def test_every_strategy_chooses_n_per_problem(pools) -> None:
    probs, spread = planted(pools, sigma=0.8, seed=0)
    selection = Selection("planted", probs, spread, [0.5] * len(probs))
    for strategy in ("uniform", "convincing-wrong", "uncertainty", "ensemble", "machines-disagree"):
        orders = problem_orders(pools, selection, strategy, seed=1)
        for n in (1, 4, 16, 40):
            picked = chosen(orders, n)
            assert len(picked) == len(set(picked)) == sum(min(n, len(p)) for p in pools.train)
            by_problem = [
                sum(s <= i < e for i in picked) for s, e in itertools.pairwise(pools.starts())
            ]
            assert by_problem == [min(n, len(p)) for p in pools.train]


def test_slopes_and_their_ratio() -> None:
    ns = [2, 4, 8, 16]
    x = np.log2(ns)
    uniform = np.broadcast_to((0.3 + 0.05 * x)[None, :, None], (3, 4, 20)).copy()
    twice = np.broadcast_to((0.2 + 0.10 * x)[None, :, None], (3, 4, 20)).copy()
    assert slopes(uniform.mean(axis=(0, 2)), ns) == pytest.approx(0.05)
    r = slope_ratio(twice, uniform, ns, boot=50)
    assert (r.point, r.low, r.high) == pytest.approx((2.0, 2.0, 2.0))
    flat = np.full((3, 4, 20), 0.5)
    assert math.isnan(slope_ratio(twice, flat, ns, boot=50).point)  # no ratio to a flat line


def test_best_of_k_is_prm_bestofns_expectation() -> None:
    scores = [0.9, 0.2, 0.9, 0.5, 0.7, 0.1]
    correct = [False, True, True, True, False, True]
    cands = [Candidate(None, c, {"prm": s}) for s, c in zip(scores, correct, strict=True)]
    expected = curve([cands], methods=["prm"], samples=10_000)
    for n, acc in zip(expected["n"], expected["accuracy"]["prm"], strict=True):
        assert best_of_k(scores, correct, n) == pytest.approx(acc)


def test_labelled_samples_are_written_as_the_apps_trl_export(pools, tmp_path: Path) -> None:
    labels = noisy_labels(pools, noise=0.3, seed=0)
    rows = list(zip(pools.flat[:40], labels[:40], strict=True))
    write_trl(rows, tmp_path / "labels.jsonl")
    read = prm.read_dataset(tmp_path / "labels.jsonl").solutions
    for (s, lab), r in zip(rows, read, strict=True):
        cut = lab.index(False) + 1 if False in lab else len(lab)  # cut after the first negative
        assert (r.problem, r.steps, r.labels) == (s.problem, s.steps[:cut], lab[:cut])
    # the labeller's noise is what it says, and the same labels come back for a seed
    flips = [
        a != b
        for s, lab in zip(pools.flat, labels, strict=True)
        for a, b in zip(s.labels, lab, strict=True)
    ]
    assert 0.2 < sum(flips) / len(flips) < 0.4
    assert noisy_labels(pools, noise=0.3, seed=0) == labels


def test_planted_selectors_are_as_good_as_planted(pools) -> None:
    good, _ = planted(pools, sigma=0.3, seed=0)
    poor, _ = planted(pools, sigma=50.0, seed=0)
    assert solution_auroc(pools, good) > 0.95
    assert 0.35 < solution_auroc(pools, poor) < 0.65


# Trains 14 bow PRMs on a tiny world: about 4 CPU seconds.
@pytest.mark.slow
def test_the_harness_trains_and_measures_every_strategy(pools, tmp_path: Path) -> None:
    options = Options(
        ns=[1, 2, 4], seeds=[0], strategies=["convincing-wrong", "ensemble"], noise=0.05
    )
    h = Harness(
        pools, options, tmp_path, labeller=lambda s: noisy_labels(pools, noise=0.05, seed=s)
    )
    h.uniform(0)
    h.run(h.trained_selector(0), options.strategies, 0, key="bow selector")
    c = h.curves
    assert set(c.acc) == {
        ("uniform", "uniform"),
        ("bow selector", "convincing-wrong"),
        ("bow selector", "ensemble"),
    }
    for acc in c.acc.values():
        assert acc.shape == (1, 3, len(pools.held_out)) and ((acc >= 0) & (acc <= 1)).all()
    assert 0.0 <= c.aurocs["bow selector"][0] <= 1.0
    assert c.trained == 3 + 1 + 4 + 2 * 3  # uniform, the selector, its members, two strategies
    held = c.held[("bow selector", "convincing-wrong")]
    assert held[1]["wrong"] == pytest.approx(
        sum(min(2, sum(s.answer_correct is False for s in p)) for p in pools.train)
        / (2 * len(pools.train))
    )
    assert set(ERROR_KINDS) <= set(held[0])


# A local /pooling server scores 144 samples, then 15 bow PRMs train: about 4 CPU seconds.
@pytest.mark.slow
def test_a_served_prm_labels_and_selects(tmp_path: Path) -> None:
    from tests.pooling_server import PoolingServer

    args = argparse.Namespace(
        problems=12, held_out=6, pool=8, world_seed=1, mix=None, served_key_env=None
    )
    options = Options(ns=[1, 2], seeds=[0], strategies=["convincing-wrong"], noise=0.0)
    with PoolingServer() as server:
        figures = run_served(args, options, tmp_path, server.url, "tiny-prm")
        asked = server.script.inputs()
    assert len(asked) == 12 * 8 + 6 * 8  # every training and held-out sample, once
    assert all(text.count("<extra_0>") >= 4 for text in asked)
    assert set(figures["ratios"]) == {
        "bow selector/convincing-wrong",
        "served PRM/convincing-wrong",
    }
