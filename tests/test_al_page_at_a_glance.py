"""The active-learning page read at a glance (issue 25): a plain sentence on whether the PRM
picks better than random and majority vote, the wrong-answer share only where the strategy uses
it, and a first-error F1 of 0 explained."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Membership
from learning.bestofn import best_of_n_verdict
from learning.models import ActiveLearningRun, PRMModel
from tests.factories import make_campaign, make_member

CURVE = {
    "n": [1, 2, 4, 8],
    "problems_at_n": [147, 147, 140, 96],
    "accuracy": {
        "PRM (product)": [0.43, 0.41, 0.39, 0.38],
        "random": [0.43, 0.43, 0.43, 0.43],
        "majority": [0.43, 0.45, 0.47, 0.48],
        "oracle": [0.43, 0.55, 0.63, 0.69],
    },
}


def test_the_sentence_says_when_the_prm_picks_worse_than_random_and_majority_vote():
    assert best_of_n_verdict(CURVE) == (
        "At N=8 (96 problems) the PRM picks worse than random (43%) and than majority vote "
        "(48%): 38% of its picks have the right answer. Its scores do not yet help choose "
        "among solutions here."
    )


def test_the_sentence_says_when_it_picks_at_least_as_well():
    better = CURVE | {"accuracy": CURVE["accuracy"] | {"PRM (product)": [0.43, 0.5, 0.55, 0.6]}}
    assert best_of_n_verdict(better).startswith(
        "At N=8 (96 problems) the PRM picks at least as well as random (43%) and majority vote"
    )
    assert best_of_n_verdict({}) == ""


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("strategy", "shown"), [("uniform", False), ("uncertainty", False), ("convincing-wrong", True)]
)
def test_the_wrong_answer_share_shows_only_for_the_strategies_that_use_it(client, strategy, shown):
    campaign = make_campaign(al_strategy=strategy)
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    body = client.get(reverse("learning:page", kwargs={"slug": campaign.slug})).content.decode()
    assert ('id="al-wrong-share"' in body) is shown


@pytest.mark.django_db
def test_the_page_explains_a_first_error_f1_of_0_and_says_how_the_prm_picks(client):
    campaign = make_campaign()
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    url = reverse("learning:page", kwargs={"slug": campaign.slug})
    PRMModel.objects.create(
        campaign=campaign, version=1, path="prm/x/v1", metrics={"first_error_f1": 0.4}
    )
    assert 'id="al-f1-zero"' not in client.get(url).content.decode()
    PRMModel.objects.create(
        campaign=campaign, version=2, path="prm/x/v2", metrics={"first_error_f1": 0.0}
    )
    ActiveLearningRun.objects.create(campaign=campaign, status="succeeded", best_of_n=CURVE)
    body = client.get(url).content.decode()
    assert 'id="al-f1-zero"' in body and "harmonic mean" in body
    assert "the PRM picks worse than random (43%) and than majority vote (48%)" in body
