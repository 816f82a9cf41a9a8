"""Agreement figures computed from labels in the database, checked against hand-computed values.

The pure functions are checked in test_agreement.py; here the same cases go through the tables:
which labels count (submitted only, rated only, not screening), and the stored snapshot.
"""

from __future__ import annotations

import pytest

from annotators.models import CampaignSnapshot
from annotators.snapshots import snapshot_run
from annotators.stats import agreement_triples, campaign_stats
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db


def one_step_solutions(campaign, n):
    return [make_solution(campaign=campaign, steps=[f"Only step of {i}."]) for i in range(n)]


def rate(solutions, annotator, ratings):
    """``annotator`` rates solution i's only step ``ratings[i]`` (None: does not label it)."""
    for solution, rating in zip(solutions, ratings, strict=True):
        if rating is not None:
            make_labelled(solution=solution, ratings=[rating], annotator=annotator)


@pytest.fixture
def campaign():
    return make_campaign(overlap=3)


def coders(campaign, *names):
    users = [make_user(username=n) for n in names]
    for u in users:
        make_member(campaign=campaign, user=u)
    return users


def test_perfect_agreement_gives_alpha_and_kappa_of_one(campaign):
    a, b = coders(campaign, "ann", "bob")
    solutions = one_step_solutions(campaign, 4)
    rate(solutions, a, [1, -1, 0, 1])
    rate(solutions, b, [1, -1, 0, 1])

    figures = campaign_stats(campaign=campaign)["agreement"]

    assert figures["alpha_nominal"] == pytest.approx(1.0)
    assert figures["alpha_interval"] == pytest.approx(1.0)
    assert figures["units"] == 4
    [pair] = figures["pairs"]
    assert (pair["a"], pair["b"], pair["shared"], pair["percent"]) == ("ann", "bob", 4, 1.0)
    assert pair["kappa"] == pytest.approx(1.0)


def test_total_disagreement_gives_kappa_of_minus_one_and_alpha_below_zero(campaign):
    a, b = coders(campaign, "ann", "bob")
    solutions = one_step_solutions(campaign, 4)
    rate(solutions, a, [1, -1, 1, -1])
    rate(solutions, b, [-1, 1, -1, 1])

    stats = campaign_stats(campaign=campaign)

    # p_o = 0, p_e = 0.5 -> kappa -1. Alpha: n_1 = n_-1 = 4, D_o = 1, D_e = 32/56 -> -0.75.
    assert stats["agreement"]["pairs"][0]["kappa"] == pytest.approx(-1.0)
    assert stats["agreement"]["alpha_nominal"] == pytest.approx(-0.75)
    # Interval: every disagreement is -1 vs +1 (delta 4); D_o = 4, D_e = 4*32/56 -> also -0.75.
    assert stats["agreement"]["alpha_interval"] == pytest.approx(-0.75)
    by_name = {r["username"]: r for r in stats["annotators"]}
    assert by_name["ann"]["kappa"] == pytest.approx(-1.0)
    assert by_name["ann"]["percent"] == 0.0


def test_missing_ratings_use_only_the_steps_two_or_more_rated(campaign):
    # The worked example of test_agreement.py: c skipped steps 3 and 4; only a rated step 4.
    a, b, c = coders(campaign, "a", "b", "c")
    solutions = one_step_solutions(campaign, 5)
    rate(solutions, a, [1, 0, -1, 1, 1])
    rate(solutions, b, [1, 1, -1, 0, None])
    rate(solutions, c, [1, 0, -1, None, None])

    figures = campaign_stats(campaign=campaign)["agreement"]

    assert figures["units"] == 4  # step 4 has one rating
    assert figures["alpha_nominal"] == pytest.approx(1 - (4 / 11) / (78 / 110))
    pairs = {(p["a"], p["b"]): p for p in figures["pairs"]}
    assert pairs[("a", "b")]["kappa"] == pytest.approx((0.5 - 6 / 16) / (1 - 6 / 16))
    assert pairs[("a", "c")]["shared"] == 3
    assert pairs[("a", "c")]["kappa"] == pytest.approx(1.0)


def test_only_submitted_rated_non_screening_labels_count(campaign):
    a, b = coders(campaign, "ann", "bob")
    [shared] = one_step_solutions(campaign, 1)
    rate([shared], a, [1])
    rate([shared], b, [1])
    # A draft (leased), an unrated step and a screening solution's labels are not agreement data.
    [draft] = one_step_solutions(campaign, 1)
    make_labelled(solution=draft, ratings=[1], annotator=a)
    make_labelled(solution=draft, ratings=[-1], annotator=b, status="leased")
    [unrated] = one_step_solutions(campaign, 1)
    make_labelled(solution=unrated, ratings=[None], annotator=a, finish_reason="give_up")
    make_labelled(solution=unrated, ratings=[1], annotator=b)
    screening = make_gold_solution(campaign=campaign, kind="screening", gold=[1])
    make_labelled(solution=screening, ratings=[1], annotator=a)
    make_labelled(solution=screening, ratings=[-1], annotator=b)

    triples = agreement_triples(campaign=campaign)

    assert {step for step, _, _ in triples} == {shared.steps.get().pk}


def test_a_snapshot_stores_the_figures_and_the_agreement_page_shows_them(campaign, client):
    a, b = coders(campaign, "ann", "bob")
    solutions = one_step_solutions(campaign, 4)
    rate(solutions, a, [1, -1, 1, -1])
    rate(solutions, b, [-1, 1, -1, 1])
    manager = make_member(campaign=campaign, role="manager").user

    snapshot = snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    client.force_login(manager)
    page = client.get(f"/campaigns/{campaign.slug}/agreement/").content.decode()

    assert snapshot.status == "done"
    assert snapshot.data["agreement"]["alpha_nominal"] == pytest.approx(-0.75)
    assert 'id="alpha-nominal"><span class="big">-0.75</span>' in page
    assert "-1.00" in page  # the pair's kappa
