"""The PRM metrics: AUROC, bootstrap interval, first-error F1, aggregation, best-of-N."""

from __future__ import annotations

import math

import pytest

from prm.metrics import (
    aggregate,
    auroc,
    best_first_error_threshold,
    best_of_n,
    bootstrap_auroc,
    first_error_scores,
)


def test_auroc_counts_ties_as_half():
    assert auroc([True, False], [0.9, 0.1]) == 1.0
    assert auroc([True, False], [0.1, 0.9]) == 0.0
    assert auroc([True, False, True, False], [0.5, 0.5, 0.5, 0.5]) == 0.5
    assert auroc([True, True, False], [0.8, 0.4, 0.6]) == 0.5
    assert math.isnan(auroc([True, True], [0.1, 0.2]))


def test_bootstrap_interval_brackets_the_estimate():
    labels = [i % 3 != 0 for i in range(300)]
    scores = [(i % 3 != 0) * 0.3 + (i % 7) / 10 for i in range(300)]
    groups = [str(i // 10) for i in range(300)]
    low, high = bootstrap_auroc(labels, scores, groups, n=200)
    assert low <= auroc(labels, scores) <= high


def test_first_error_scores_follow_processbench():
    probs = [[0.9, 0.2, 0.9], [0.9, 0.9], [0.9, 0.3]]
    truth = [1, -1, -1]
    scores = first_error_scores(probs, truth, threshold=0.5)
    assert scores["accuracy_erroneous"] == 1.0
    assert scores["accuracy_error_free"] == 0.5
    assert scores["f1"] == pytest.approx(2 / 3)
    assert first_error_scores(probs, truth, best_first_error_threshold(probs, truth))["f1"] >= 2 / 3


def test_aggregations():
    assert aggregate([0.5, 0.5]) == pytest.approx(0.25)
    assert aggregate([0.5, 0.2, 0.9], "min") == 0.2
    assert aggregate([0.5, 0.2, 0.9], "last") == 0.9
    assert aggregate([]) == 1.0
    with pytest.raises(ValueError):
        aggregate([0.5], "mean")


def test_best_of_n_against_majority_and_random():
    groups = [
        [(0.9, "4", True), (0.1, "5", False), (0.2, "5", False)],
        [(0.2, "1", False), (0.8, "2", True)],
    ]
    result = best_of_n(groups)
    assert result["prm"] == 1.0
    assert result["majority"] == 0.0  # "5" wins the first vote, "1" (first) the tied second
    assert result["random"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert result["oracle"] == 1.0
