"""Active learning through a real Celery worker process (Redis in CI, the filesystem broker here).

The first test goes the whole way: labels submitted through the queue trigger a run, a worker
trains and reorders, and the queue then serves convincing wrong answers first. The second kills
the worker (SIGKILL) in the middle of training: the previous model stays active, the queue keeps
serving in the old order, and the sweep gets the run done by another worker.
"""

from __future__ import annotations

import os
import signal

import pytest

from common.job_recovery import job_kind_sweep
from labeling import queue
from labeling.models import Solution
from learning.models import ActiveLearningRun, PRMModel
from learning.run import active_learning_run
from learning.triggers import AL_RUNS, active_learning_trigger, submitted_labels
from tests.al_data import demo_campaign
from tests.factories import make_member, submit_ratings
from tests.waiting import log_tail, wait_until

DEADLINE_S = 240  # a failure bound, not a performance assertion


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


@pytest.fixture
def workers(celery_workers):
    """Real worker processes (conftest's ``celery_workers``) that beat a run's heartbeat often."""
    return lambda **env: celery_workers(STEPWISE_AL_HEARTBEAT_SECONDS="1", **env)


def _wait(predicate, *, proc, what: str):
    return wait_until(
        predicate, what=what, seconds=DEADLINE_S, every=0.05, processes=[proc], log=log_tail(proc)
    )


def _finished(run: ActiveLearningRun):
    run.refresh_from_db()
    return run if run.status in ("succeeded", "failed") else None


def _served(campaign, n: int) -> list[Solution]:
    """The first ``n`` solutions the real claim service serves a fresh annotator (each skipped)."""
    annotator = make_member(campaign=campaign).user
    out = []
    for _ in range(n):
        assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
        if assignment is None:
            break
        out.append(Solution.objects.get(pk=assignment.solution_id))
        queue.assignment_skip(assignment=assignment, annotator=annotator)
    return out


@pytest.mark.celery
@pytest.mark.slow
def test_submitted_labels_trigger_a_run_that_puts_convincing_wrong_answers_first(media, workers):
    campaign = demo_campaign(active_learning=True, al_strategy="convincing-wrong")
    already = submitted_labels(campaign=campaign)  # the PRM800K phase 1 history
    campaign.al_retrain_every = already + 10
    campaign.save()
    worker = workers()

    annotator = make_member(campaign=campaign).user
    submits = 0
    while not ActiveLearningRun.objects.filter(campaign=campaign).exists():
        assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
        n = assignment.solution.steps.count()
        submit_ratings(assignment=assignment, annotator=annotator, ratings=[1] * n)
        submits += 1
        assert submits < 30, "no run was triggered"
    assert submitted_labels(campaign=campaign) >= already + 10

    run = ActiveLearningRun.objects.get(campaign=campaign)
    assert run.trigger == "auto"
    run = _wait(lambda: _finished(run), proc=worker, what="the run")
    assert run.status == "succeeded", run.error
    assert "learning.active_learning_run" in worker.log_path.read_text(errors="replace")

    model = PRMModel.objects.get(campaign=campaign, is_active=True)
    assert model.version == 1 and run.model_id == model.pk
    assert model.training_labels == run.training_labels >= already + 10
    assert model.metrics.get("auroc") is not None and run.metrics == model.metrics
    assert run.queue_head["wrong"] == 80

    served = _served(campaign, 100)
    assert len(served) == 100
    wrong = [s for s in served if s.answer_is_correct is False]
    assert len(wrong) >= 75
    scores = [s.prm_score for s in wrong]
    assert all(score is not None for score in scores)
    assert scores == sorted(scores, reverse=True)


@pytest.mark.celery
@pytest.mark.slow
def test_a_worker_killed_mid_training_leaves_the_previous_model_and_the_sweep_recovers(
    media, workers
):
    campaign = demo_campaign(active_learning=True)
    first = active_learning_run(run=ActiveLearningRun.objects.create(campaign=campaign))
    assert first.status == "succeeded", first.error
    order_before = list(
        Solution.objects.filter(campaign=campaign).order_by("pk").values_list("pk", "priority")
    )

    # Training that lasts long enough to be killed in.
    doomed = workers(STEPWISE_AL_TRAIN='{"epochs": 100000, "patience": 100000}')
    run = active_learning_trigger(campaign=campaign)

    def training():
        run.refresh_from_db()
        return run.status == "running" and run.timings.get("stage") == "train"

    _wait(training, proc=doomed, what="training to start")
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=30)

    run.refresh_from_db()
    assert run.status == "running" and run.attempts == 1  # nobody finished it
    assert PRMModel.objects.filter(campaign=campaign).count() == 1
    assert PRMModel.objects.get(is_active=True).pk == first.model_id
    assert (
        list(
            Solution.objects.filter(campaign=campaign).order_by("pk").values_list("pk", "priority")
        )
        == order_before
    )
    served = _served(campaign, 3)
    top = Solution.objects.filter(campaign=campaign, kind="regular").order_by("-priority").first()
    assert [s.pk for s in served][:1] == [top.pk]  # the old order still serves

    # The lock holds while the heartbeat is fresh, so a new trigger gets the same run...
    assert active_learning_trigger(campaign=campaign).pk == run.pk
    # ...and the sweep (on beat every minute; here at once, with a zero stale bound) sends it again.
    assert job_kind_sweep(AL_RUNS, stale_seconds=0)["requeued"] == 1
    rescuer = workers()
    run = _wait(lambda: _finished(run), proc=rescuer, what="the recovered run")
    assert run.status == "succeeded", run.error
    assert run.attempts == 2
    active = PRMModel.objects.get(campaign=campaign, is_active=True)
    assert active.version == 2 and run.model_id == active.pk
