"""Agreement figures checked against values computed by hand."""

from __future__ import annotations

import pytest

from annotators.agreement import cohen_kappa, krippendorff_alpha, pairwise_kappa, per_coder


def test_perfect_agreement_gives_alpha_and_kappa_of_one():
    triples = [(u, c, v) for u, v in enumerate([1, -1, 0, 1]) for c in ("a", "b")]
    assert krippendorff_alpha(triples) == pytest.approx(1.0)
    [pair] = pairwise_kappa(triples)
    assert (pair.shared, pair.percent, pair.kappa) == (4, 1.0, pytest.approx(1.0))


def test_total_disagreement_on_two_values_gives_kappa_of_minus_one():
    # a says 1,-1,1,-1; b the opposite. p_o = 0, p_e = (2*2 + 2*2)/16 = 0.5 -> kappa = -1.
    pairs = [(1, -1), (-1, 1), (1, -1), (-1, 1)]
    assert cohen_kappa(pairs) == pytest.approx(-1.0)
    # alpha: every unit pairs 1 with -1. n_c(1) = n_c(-1) = 4, n = 8.
    # D_o = 8/8 = 1; D_e = 2*4*4 / (8*7) = 32/56 -> alpha = 1 - 56/32 = -0.75.
    triples = [(u, c, v) for u, (a, b) in enumerate(pairs) for c, v in (("a", a), ("b", b))]
    assert krippendorff_alpha(triples) == pytest.approx(-0.75)


def test_a_worked_example_with_missing_ratings():
    # Three coders, five steps; coder c skipped steps 3 and 4, step 4 has one rating only.
    triples = [
        (0, "a", 1), (0, "b", 1), (0, "c", 1),
        (1, "a", 0), (1, "b", 1), (1, "c", 0),
        (2, "a", -1), (2, "b", -1), (2, "c", -1),
        (3, "a", 1), (3, "b", 0),
        (4, "a", 1),
    ]  # fmt: skip
    # Coincidences (unit 4 dropped): unit 0: (1,1) x6 /2 = 3; unit 1: values 0,1,0 -> (0,0) 2/2=1,
    # (0,1) 2/2 = 1, (1,0) 1; unit 2: (-1,-1) 3; unit 3: (1,0) 1, (0,1) 1.
    # n_1 = 3 + 1 + 1 = 5, n_0 = 1 + 1 + 1 = 3, n_-1 = 3; n = 11.
    # D_o (nominal) = (1 + 1 + 1 + 1) / 11 = 4/11.
    # D_e = (2*5*3 + 2*5*3 + 2*3*3) / (11*10) = 78/110.
    expected = 1 - (4 / 11) / (78 / 110)
    assert krippendorff_alpha(triples) == pytest.approx(expected)

    pairs = {(p.coder_a, p.coder_b): p for p in pairwise_kappa(triples)}
    # a vs b on units 0-3: (1,1), (0,1), (-1,-1), (1,0): p_o = 2/4.
    # a: 1 x2, 0 x1, -1 x1; b: 1 x2, 0 x1, -1 x1 -> p_e = (2*2 + 1*1 + 1*1)/16 = 6/16.
    assert pairs[("a", "b")].kappa == pytest.approx((0.5 - 6 / 16) / (1 - 6 / 16))
    # a vs c on units 0-2: all equal -> kappa 1.
    assert pairs[("a", "c")].shared == 3
    assert pairs[("a", "c")].kappa == pytest.approx(1.0)

    coders = per_coder(pairs.values())
    # a: pairs (a,b) 4 shared, (a,c) 3 shared.
    assert coders["a"].shared == 7
    assert coders["a"].percent == pytest.approx((0.5 * 4 + 1.0 * 3) / 7)
    assert coders["a"].kappa == pytest.approx((0.2 * 4 + 1.0 * 3) / 7)


def test_interval_metric_weighs_a_far_disagreement_more():
    near = [(0, "a", 1), (0, "b", 0), (1, "a", -1), (1, "b", -1), (2, "a", 1), (2, "b", 1)]
    far = [(0, "a", 1), (0, "b", -1), (1, "a", 0), (1, "b", 0), (2, "a", 1), (2, "b", 1)]
    assert krippendorff_alpha(near, metric="interval") > krippendorff_alpha(far, metric="interval")


def test_undefined_figures_are_none():
    assert krippendorff_alpha([]) is None
    assert krippendorff_alpha([(0, "a", 1)]) is None  # nothing pairable
    assert krippendorff_alpha([(0, "a", 1), (0, "b", 1)]) is None  # no variation at all
    assert cohen_kappa([]) is None
    assert cohen_kappa([(1, 1), (1, 1)]) is None
