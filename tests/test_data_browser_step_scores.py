"""The item page's PRM step scores: ``learning.step_scores`` registers the campaign's active model
with ``labeling.scores``; a real bow PRM, trained on the repository's PRM800K fixture, scores."""

from __future__ import annotations

from pathlib import Path

import pytest

import prm
from labeling import scores
from learning import step_scores
from learning.models import PRMModel
from tests.factories import make_campaign, make_solution

pytestmark = pytest.mark.django_db

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def test_no_active_model_means_no_scores(media):
    campaign = make_campaign()
    solution = make_solution(campaign=campaign)
    PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v0001", is_active=False)
    assert scores.step_scores(campaign_id=campaign.pk, solution_id=solution.pk) == {}


def test_the_active_model_scores_each_step_once_then_from_the_cache(media):
    prm.train(SMALL, media / "prm" / "x" / "v0001", backbone="bow", epochs=1, progress=False)
    campaign = make_campaign()
    steps = ["We add 2 and 3 to get 5.", "So the answer is 5.", "# Answer\n\n5"]
    solution = make_solution(campaign=campaign, steps=steps)
    PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v0001", is_active=True)
    expected = prm.load(media / "prm" / "x" / "v0001").score([(solution.problem.text, steps)])[0]
    step_scores._scorer.cache_clear()

    first = scores.step_scores(campaign_id=campaign.pk, solution_id=solution.pk)
    assert list(first) == ["PRM"]
    assert first["PRM"] == [round(float(s), 4) for s in expected]
    assert step_scores._scorer.cache_info().misses == 1
    # the second ask is answered from the cache: the checkpoint is not even looked up again
    step_scores._scorer.cache_clear()
    assert scores.step_scores(campaign_id=campaign.pk, solution_id=solution.pk) == first
    assert step_scores._scorer.cache_info().misses == 0


def test_a_failing_scorer_is_left_out_and_the_others_still_answer(media):
    campaign = make_campaign()
    solution = make_solution(campaign=campaign, steps=["a", "b"])

    def broken(**_):
        raise RuntimeError("no GPU")

    scores.step_scorer_register("Broken", broken)
    scores.step_scorer_register("Steady", lambda **_: [0.5, 0.25])
    try:
        got = scores.step_scores(campaign_id=campaign.pk, solution_id=solution.pk)
    finally:
        scores.step_scorer_unregister("Broken")
        scores.step_scorer_unregister("Steady")
    assert got == {"Steady": [0.5, 0.25]}


def test_the_item_page_defers_a_costly_scorer_and_asks_for_it_once_shown(client):
    from django.urls import reverse

    from labeling.models import Membership
    from tests.factories import make_member

    campaign = make_campaign(slug="deferred")
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    asked = []

    def costly(*, campaign_id, solution_id, cached_only=False):
        asked.append(cached_only)
        if cached_only:
            raise scores.ScoresPending("a model to load")
        return [0.25, 0.75]

    scores.step_scorer_register("Costly", costly, deferrable=True)
    try:
        client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
        url = reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": solution.pk})
        first = client.get(url).content.decode()
        assert asked == [True]  # nothing computed for the page itself
        assert 'hx-get="?scores=now" hx-trigger="load"' in first
        assert '<td class="num prm">…</td>' in first
        now = client.get(url + "?scores=now", headers={"HX-Request": "true"}).content.decode()
        assert asked == [True, False]
        assert now.lstrip().startswith('<div id="steps-table"')  # the table alone
        assert '<td class="num prm">0.250</td>' in now and "hx-trigger" not in now
    finally:
        scores.step_scorer_unregister("Costly")


def test_the_active_prm_is_pending_until_loaded_or_cached(media):
    campaign = make_campaign()
    solution = make_solution(campaign=campaign, steps=["a"])
    PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v0001", is_active=True)
    got = scores.step_scores_deferred(campaign_id=campaign.pk, solution_id=solution.pk)
    assert got["PRM"] is None  # would load a model: left for the page's own request
