"""PRM800K's step-label codec (``labeling.prm800k_steps``): a step's completions split into its
own and the alternatives, and joined back in PRM800K's order."""

from __future__ import annotations

import pytest

from labeling.prm800k_steps import completions_join, completions_split, own_completion

COMPLETIONS = [
    {"text": t, "rating": r, "flagged": None} for t, r in (("a", 1), ("b", -1), ("c", 0))
]


@pytest.mark.parametrize(
    ("chosen", "human", "own"),
    [(2, None, 2), (0, None, 0), (None, {"text": "mine"}, None), (None, None, 0), (1, "x", 1)],
)
def test_the_own_completion_is_the_chosen_none_for_a_written_step_else_the_first(
    chosen, human, own
):
    assert own_completion(chosen=chosen, human=human) == own


@pytest.mark.parametrize("own", [None, 0, 1, 2])
def test_split_and_join_give_back_prm800ks_list(own):
    mine, alternatives = completions_split(COMPLETIONS, own)
    assert mine == (None if own is None else COMPLETIONS[own])
    assert len(alternatives) == len(COMPLETIONS) - (own is not None)
    assert mine not in alternatives or mine is None
    joined = completions_join(alternatives, own, mine or {})
    assert joined == COMPLETIONS
