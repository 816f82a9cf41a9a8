"""The three meanings of a step's consensus (``labeling.consensus``), each on the ratings that
tell it from the others."""

from __future__ import annotations

from itertools import product

import pytest

from labeling.consensus import majority_label, plurality_rating, strict_majority_rating

SPLIT = [-1, 0, 0, 1, 1]


def test_the_three_differ_on_the_same_ratings():
    assert plurality_rating(SPLIT) == 0
    assert strict_majority_rating([SPLIT.count(r) for r in (-1, 0, 1)]) is None
    assert majority_label([r >= 0 for r in SPLIT]) is True


@pytest.mark.parametrize(
    ("ratings", "expected"),
    [([], None), ([None, None], None), ([1, None], 1), ([1, -1], -1), ([1, 1, 0, 0, -1], 0)],
)
def test_the_plurality_breaks_ties_to_the_more_negative_and_ignores_unrated(ratings, expected):
    assert plurality_rating(ratings) == expected


@pytest.mark.parametrize(
    ("votes", "expected"),
    [([], False), ([True], True), ([True, False], False), ([True, True, False], True)],
)
def test_the_binary_majority_calls_a_tie_negative(votes, expected):
    assert majority_label(votes) is expected


def test_the_strict_majority_is_more_than_half_or_none():
    for counts in product(range(4), repeat=3):
        ratings = [r for r, n in zip((-1, 0, 1), counts, strict=True) for _ in range(n)]
        over_half = [r for r in (-1, 0, 1) if 2 * ratings.count(r) > len(ratings)]
        assert strict_majority_rating(list(counts)) == (over_half[0] if over_half else None)
