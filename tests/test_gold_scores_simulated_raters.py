"""Screening and QC scores against simulated raters driven through the API as annotators.

Gold sets, real and in the repository: the demo's quality-control set (ProcessBench records,
``demo/processbench_samples.jsonl``) and 30 screening solutions built from the demo's PRM800K
phase 1 trajectories (real human ratings, cut at the first negative step:
``bench.gold_scores.prm800k_gold``). Each rater asks for work (``next``) and submits ratings up to
their first -1, as the labelling page makes them. Constant and random raters must fail at the
default threshold, a rater who reproduces gold with 10% of the steps changed must pass.
``bench/gold_scores.py`` prints the distributions behind the default.
"""

from __future__ import annotations

import random

import pytest

from annotators.stats import qc_agreement
from bench.gold_scores import constant, noisy, prm800k_gold, processbench_gold, uniform
from labeling import queue
from labeling.gold.scores import DEFAULT_THRESHOLD
from labeling.models import Campaign, Membership
from tests.factories import api_client_for, make_campaign, make_gold_solution, make_member

pytestmark = pytest.mark.django_db

RATERS = {
    "always +1": constant(1),
    "always 0": constant(0),
    "always -1": constant(-1),
    "uniform random": uniform,
}
CAREFUL = noisy(0.1)
GOLD_SETS = {"demo-qc": processbench_gold, "demo-prm800k": prm800k_gold}


def gold_campaign(kind: str, gold_set: str, **fields) -> tuple[Campaign, dict[int, list]]:
    """A campaign whose only solutions are ``gold_set`` as ``kind`` questions; their gold by id."""
    campaign = make_campaign(overlap=10, **fields)
    gold = {}
    for steps, ratings in GOLD_SETS[gold_set]():
        solution = make_gold_solution(campaign=campaign, kind=kind, gold=ratings, steps=steps)
        gold[solution.pk] = ratings
    return campaign, gold


def work_through(campaign: Campaign, gold: dict[int, list], rater, seed: int) -> Membership:
    """A new annotator answers every question the API serves them with ``rater``'s ratings."""
    membership = make_member(campaign=campaign)
    client = api_client_for(membership.user)
    rng = random.Random(seed)
    for _ in range(len(gold)):
        served = client.post(f"/api/campaigns/{campaign.slug}/next/").json()["assignment"]
        if served is None:
            break
        ratings = rater(gold[served["solution"]], rng)
        assert 0 < len(ratings) <= len(served["steps"])
        response = client.post(
            served["submit_url"],
            {"submission_key": f"k{served['id']}", "ratings": ratings},
            format="json",
        )
        assert response.status_code == 200, response.json()
    membership.refresh_from_db()
    return membership


@pytest.mark.parametrize("gold_set", GOLD_SETS)
@pytest.mark.parametrize("rater", RATERS)
def test_a_constant_or_random_rater_fails_screening(gold_set, rater):
    campaign, gold = gold_campaign("screening", gold_set, requires_screening=True)
    assert campaign.screening_threshold == DEFAULT_THRESHOLD
    membership = work_through(campaign, gold, RATERS[rater], seed=1)
    assert membership.screening == Membership.Screening.FAILED
    assert membership.screening_score < DEFAULT_THRESHOLD


@pytest.mark.parametrize("gold_set", GOLD_SETS)
def test_a_rater_who_changes_a_tenth_of_the_steps_passes_screening(gold_set):
    campaign, gold = gold_campaign("screening", gold_set, requires_screening=True)
    membership = work_through(campaign, gold, CAREFUL, seed=1)
    assert membership.screening == Membership.Screening.PASSED
    assert membership.screening_score >= DEFAULT_THRESHOLD


def test_the_always_positive_rater_that_the_old_rule_let_in_is_kept_out():
    campaign, gold = gold_campaign("screening", "demo-prm800k", requires_screening=True)
    membership = work_through(campaign, gold, RATERS["always +1"], seed=1)

    detail = queue.screening_score(campaign=campaign, annotator_id=membership.user_id)
    # The old rule: 89% of the scored steps alike, above its 0.75.
    assert detail.agreement > 0.75
    assert detail.kappa == pytest.approx(0.0)
    assert detail.found == 0 and detail.errors > 0
    assert membership.screening == Membership.Screening.FAILED


@pytest.mark.parametrize("gold_set", GOLD_SETS)
def test_qc_scores_separate_careless_from_careful_raters(gold_set):
    campaign, gold = gold_campaign("qc", gold_set, qc_rate=1.0)
    scores = {}
    for name, rater in [*RATERS.items(), ("gold, 10% changed", CAREFUL)]:
        membership = work_through(campaign, gold, rater, seed=1)
        qc = qc_agreement(campaign=campaign, annotator_id=membership.user_id)
        assert qc["scored"] > 0
        scores[name] = qc["score"]
    assert scores.pop("gold, 10% changed") >= DEFAULT_THRESHOLD
    assert all(score < DEFAULT_THRESHOLD for score in scores.values()), scores
