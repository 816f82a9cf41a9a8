"""The item page's PRM step scores: asked by ``labeling.events.step_scores`` and answered by
``learning.step_scores`` with the campaign's active model (a stand-in scorer here: no torch)."""

from __future__ import annotations

import pytest

from labeling import events
from learning import step_scores
from learning.models import PRMModel
from tests.factories import make_campaign, make_solution

pytestmark = pytest.mark.django_db


class FakeScorer:
    calls = 0

    def score(self, solutions):
        FakeScorer.calls += 1
        return [[0.9 - 0.1 * i for i in range(len(steps))] for _, steps in solutions]


def test_no_active_model_means_no_scores():
    campaign = make_campaign()
    solution = make_solution(campaign=campaign)
    PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v0001", is_active=False)
    assert events.step_scores(campaign_id=campaign.pk, solution_id=solution.pk) is None


def test_the_active_model_scores_each_step_once_then_from_the_cache(monkeypatch):
    monkeypatch.setattr(step_scores, "_scorer", lambda path: FakeScorer())
    campaign = make_campaign()
    solution = make_solution(campaign=campaign, steps=["a", "b", "c"])
    PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v0001", is_active=True)
    FakeScorer.calls = 0
    for _ in range(2):
        scores = events.step_scores(campaign_id=campaign.pk, solution_id=solution.pk)
        assert scores == [0.9, 0.8, 0.7]
    assert FakeScorer.calls == 1
