"""When active learning retrains a large campaign, and what a run keeps between runs.

``Campaign.al_labels_before_retrain``: ``al_retrain_every`` new labels, or 10% of the labels the
last run trained on when that is more; runs featurise only the labels the previous ones did not
(the training cache under ``MEDIA_ROOT/prm/<campaign>/train-cache``)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from labeling import queue
from labeling.models import Campaign
from labeling.models.campaigns import AL_RETRAIN_GROWTH
from learning.models import ActiveLearningRun, PRMModel
from learning.run import active_learning_run
from learning.triggers import active_learning_after_submit
from prm.data import split_of
from tests.al_data import demo_campaign
from tests.factories import make_campaign, make_member, make_solution, submit_ratings


def test_small_campaigns_retrain_every_al_retrain_every_labels():
    campaign = Campaign(al_retrain_every=500)
    assert campaign.al_labels_before_retrain(trained_on=0) == 500
    assert campaign.al_labels_before_retrain(trained_on=4_000) == 500
    assert campaign.al_labels_before_retrain(trained_on=5_000) == 500


def test_large_campaigns_wait_for_a_share_of_what_they_trained_on():
    campaign = Campaign(al_retrain_every=500)
    assert AL_RETRAIN_GROWTH == 0.1
    assert campaign.al_labels_before_retrain(trained_on=5_001) == 501
    assert campaign.al_labels_before_retrain(trained_on=1_000_000) == 100_000
    # a setting above the share still wins
    assert Campaign(al_retrain_every=200_000).al_labels_before_retrain(trained_on=10**6) == 200_000
    assert Campaign(al_retrain_every=0).al_labels_before_retrain(trained_on=0) == 1


def test_over_a_campaigns_life_the_runs_cost_a_bounded_multiple_of_the_last():
    campaign = Campaign(al_retrain_every=500)
    trained, total = 0, 0
    while trained < 10**6:  # labels arriving steadily, a run whenever the rule says so
        trained += campaign.al_labels_before_retrain(trained_on=trained)
        total += trained
    assert total <= (1 + 1 / AL_RETRAIN_GROWTH) * trained + 5_000 / AL_RETRAIN_GROWTH


def _serve_and_submit(campaign, annotator) -> int:
    """Label the next solution all +1; its number of steps."""
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
    n = assignment.solution.steps.count()
    submit_ratings(assignment=assignment, annotator=annotator, ratings=[1] * n)
    return n


@pytest.mark.django_db
def test_the_trigger_waits_for_a_share_of_the_labels_of_the_last_run():
    campaign = make_campaign(active_learning=True, al_retrain_every=3)
    for _ in range(10):
        make_solution(campaign=campaign, steps=["a", "b", "c"])
    member = make_member(campaign=campaign)
    # The last run trained on 60 labels: 10% of that (6) is more than al_retrain_every (3).
    ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        started_at=timezone.now(),
        training_labels=60,
    )
    assert _serve_and_submit(campaign, member.user) == 3
    assert active_learning_after_submit(campaign_id=campaign.pk) is None  # 3 < 6
    _serve_and_submit(campaign, member.user)
    run = active_learning_after_submit(campaign_id=campaign.pk)  # 6 >= 6
    assert run is not None and run.status == "queued"


@pytest.mark.django_db
def test_a_run_that_failed_before_counting_falls_back_to_the_newest_models_labels():
    campaign = make_campaign(active_learning=True, al_retrain_every=3)
    for _ in range(10):
        make_solution(campaign=campaign, steps=["a", "b", "c"])
    PRMModel.objects.create(campaign=campaign, version=1, path="x", training_labels=90)
    ActiveLearningRun.objects.create(
        campaign=campaign, status="failed", started_at=timezone.now(), training_labels=None
    )
    member = make_member(campaign=campaign)
    for _ in range(2):
        _serve_and_submit(campaign, member.user)
    assert active_learning_after_submit(campaign_id=campaign.pk) is None  # 6 < 9
    _serve_and_submit(campaign, member.user)
    assert active_learning_after_submit(campaign_id=campaign.pk) is not None  # 9 >= 9


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_second_run_featurises_only_the_labels_the_first_did_not_see(media):
    campaign = demo_campaign(active_learning=True)
    first = active_learning_run(run=ActiveLearningRun.objects.create(campaign=campaign))
    assert first.status == "succeeded", first.error
    assert first.timings["train_items_cached"] == 0
    seen = first.timings["train_items_featurised"]
    assert seen > 0
    assert (media / "prm" / campaign.slug / "train-cache").is_dir()

    # New labels: a few open solutions labelled (every step +1).
    member = make_member(campaign=campaign)
    new_steps = trained_steps = 0
    for _ in range(6):
        assignment = queue.assignment_next(campaign=campaign, annotator=member.user)
        steps = list(assignment.solution.steps.values_list("text", flat=True))
        submit_ratings(assignment=assignment, annotator=member.user, ratings=[1] * len(steps))
        new_steps += len(steps)
        if split_of(assignment.solution.problem.text) != "test":  # test rows are never trained on
            trained_steps += len(steps)
    second = active_learning_run(run=ActiveLearningRun.objects.create(campaign=campaign))
    assert second.status == "succeeded", second.error
    assert second.training_labels == first.training_labels + new_steps
    assert second.timings["train_items_cached"] == seen
    assert second.timings["train_items_featurised"] == trained_steps
