"""Triggering active learning: a run queued by hand, after enough new labels, or after an import.

``active_learning_trigger`` creates the run row, which is also the lock (see
``ActiveLearningRun``), and sends its job on commit (``learning.run.AL_RUNS``, one kind of job
of ``common.jobs``).
``active_learning_after_submit`` and ``active_learning_after_import`` are subscribed to
``labeling.events`` (``learning.apps``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from labeling.models import Campaign, StepLabel
from learning.models import ActiveLearningRun
from learning.run import AL_RUNS

log = logging.getLogger(__name__)


def active_learning_trigger(
    *,
    campaign: Campaign,
    requested_by: AbstractBaseUser | None = None,
    trigger: str = ActiveLearningRun.Trigger.MANUAL,
) -> ActiveLearningRun:
    """Queue a run for the campaign, or return the one already queued or running.

    The partial unique constraint makes this safe under concurrency: two triggers at once create one
    run, the loser reads the winner's row. The task is enqueued when the transaction commits, so a
    worker never looks for a row it cannot see yet.
    """
    existing = _active_run(campaign)
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            run = ActiveLearningRun.objects.create(
                campaign=campaign, trigger=trigger, requested_by=requested_by
            )
    except IntegrityError:
        existing = _active_run(campaign)
        if existing is None:  # finished in between: the caller may simply ask again
            raise
        return existing
    AL_RUNS.send(run.pk)
    return run


def _active_run(campaign: Campaign) -> ActiveLearningRun | None:
    return (
        ActiveLearningRun.objects.filter(
            campaign=campaign, status__in=ActiveLearningRun.ACTIVE_STATUSES
        )
        .order_by("pk")
        .first()
    )


def submitted_labels(*, campaign: Campaign, since=None) -> int:
    """Rated step labels of submitted assignments (submitted after ``since`` when given).

    What a run trains on, and what the automatic trigger counts. With ``since`` the count reads
    the ``(campaign, submitted_at)`` index, so the check after each submit stays cheap however
    many labels the campaign has.
    """
    labels = StepLabel.objects.submitted_rated().filter(assignment__campaign=campaign)
    if since is not None:
        labels = labels.filter(assignment__submitted_at__gt=since)
    return labels.count()


def active_learning_after_submit(*, campaign_id: int, **_) -> ActiveLearningRun | None:
    """After a submit: trigger a run once enough new labels have come in
    (``Campaign.al_labels_before_retrain``: ``al_retrain_every``, more for a large campaign).

    Subscribed to ``labeling.events.labels_submitted``. "New" means submitted after the last run
    took its snapshot of the labels (its start); a run that failed counts too, so a campaign
    whose training keeps failing does not retry on every submit (a manager can always retrain by
    hand). Called on commit of the submit; it never fails it (errors are logged).
    """
    try:
        campaign = Campaign.objects.filter(pk=campaign_id, active_learning=True).first()
        if campaign is None:
            return None
        last = campaign.al_runs.order_by("-created_at", "-pk").first()
        if last is not None and last.is_active:
            return None
        since = None if last is None else (last.started_at or last.created_at)
        trained_on = _labels_trained_on(campaign, last)
        wanted = campaign.al_labels_before_retrain(trained_on=trained_on)
        if submitted_labels(campaign=campaign, since=since) < wanted:
            return None
        return active_learning_trigger(campaign=campaign, trigger=ActiveLearningRun.Trigger.AUTO)
    except Exception:  # a submit must never fail because of active learning
        log.exception("active learning trigger failed for campaign %s", campaign_id)
        return None


def _labels_trained_on(campaign: Campaign, last: ActiveLearningRun | None) -> int:
    """How many labels the last run trained on: its own count, else (it failed before counting)
    the newest model's."""
    if last is not None and last.training_labels is not None:
        return last.training_labels
    newest = campaign.prm_models.order_by("-version").values_list("training_labels", flat=True)
    return next(iter(newest[:1]), 0)


def steers_by_served(campaign: Campaign) -> bool:
    """Whether the campaign's served PRM orders its queue: it has one, and its strategy orders
    by it (``served-prm``; ``auto``, which tries it), or the campaign has no PRM of its own yet
    (the served PRM stands in for it)."""
    if not campaign.al_scoring_endpoint:
        return False
    from learning.strategies import AUTO, SERVED, strategy_get

    strategy = campaign.al_strategy
    if strategy == AUTO or SERVED in strategy_get(strategy).signals:
        return True
    return not campaign.prm_models.filter(is_active=True).exists()


def active_learning_after_scoring(*, campaign_id: int, **_) -> ActiveLearningRun | None:
    """After a served PRM's scores were stored: a campaign it steers reorders its queue (a run;
    its own PRM trains and is evaluated beside it once there are labels), from the first minute.
    Subscribed to ``labeling.events.served_scores_stored``."""
    campaign = Campaign.objects.filter(pk=campaign_id, active_learning=True).first()
    if campaign is None or not steers_by_served(campaign):
        return None
    return active_learning_trigger(campaign=campaign, trigger=ActiveLearningRun.Trigger.AUTO)


def active_learning_after_import(*, campaign_id: int, **_) -> Any:
    """After an import added solutions (an upload, a generation, the demo): score them.

    Subscribed to ``labeling.events.solutions_imported``. New solutions sit at priority 0, below
    every scored one, until a run scores them; without a run they would wait for the next
    ``al_retrain_every`` labels. A campaign with a served PRM has it score the new solutions (a
    scoring job that asks only for those it has not scored); when that PRM steers the campaign,
    the job's end reorders the queue (``active_learning_after_scoring``). Otherwise: a run once
    a model exists, or the first one when the campaign has never run but holds submitted labels
    (an import of labelled data, such as the demo); one without labels has nothing to train on
    yet (its first run comes from submits).
    """
    campaign = Campaign.objects.filter(pk=campaign_id, active_learning=True).first()
    if campaign is None:
        return None
    if campaign.al_scoring_endpoint:
        from machines.served import ScoringRefused, scoring_job_start

        try:
            job = scoring_job_start(campaign=campaign, only_new=True)
        except ScoringRefused:  # no longer declared: the page says so; the queue goes on
            log.warning("campaign %s: its served PRM cannot score new solutions", campaign.pk)
        else:
            if steers_by_served(campaign):
                return job
    if campaign.prm_models.filter(is_active=True).exists():
        return active_learning_trigger(campaign=campaign, trigger=ActiveLearningRun.Trigger.AUTO)
    if not campaign.al_runs.exists() and submitted_labels(campaign=campaign) > 0:
        return active_learning_trigger(campaign=campaign, trigger=ActiveLearningRun.Trigger.AUTO)
    return None
