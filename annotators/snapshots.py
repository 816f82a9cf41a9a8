"""The dashboard's figures as durable snapshots: request one, run it in a worker, read the latest.

Counting a campaign's figures reads every label, so pages never count: they show the latest
``CampaignSnapshot`` and request a new one when it is stale. A snapshot is one kind of job
(``SNAPSHOT_JOBS``, ``common.jobs``), whose task is ``annotators.snapshot_refresh``. Its status
on the pages recurs: the figures' job polls on after it is done, asks for fresh figures once these
are stale (``snapshot_followed``), and reloads the page when newer ones are in.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from annotators.models import CampaignSnapshot
from common.jobs import DONE, JobAttempt, JobKind, JobPage, job_run, stage_pause
from labeling.models import Campaign
from labeling.permissions import REVIEW

log = logging.getLogger(__name__)

SNAPSHOTS_KEPT = 5


def snapshot_current(*, campaign: Campaign, refresh: bool = True) -> CampaignSnapshot | None:
    """The newest finished snapshot; with ``refresh``, a missing or stale one is recomputed.

    Stale: older than ``STEPWISE_SNAPSHOT_MAX_AGE`` seconds. The page shows the old figures with
    their time until the new ones are in.
    """
    snapshot = (
        CampaignSnapshot.objects.filter(campaign=campaign, status=CampaignSnapshot.Status.DONE)
        .order_by("-computed_at", "-id")
        .first()
    )
    if refresh and (snapshot is None or snapshot_is_stale(snapshot)):
        snapshot_request(campaign=campaign)
    return snapshot


def snapshot_is_stale(snapshot: CampaignSnapshot) -> bool:
    """Older than ``STEPWISE_SNAPSHOT_MAX_AGE``; or older than ``STEPWISE_SNAPSHOT_MIN_AGE``
    with solutions submitted after its figures were read (the minimum age keeps a busy campaign
    from recomputing after every submission)."""
    from annotators.selectors import snapshot_submitted_since

    age = timezone.now() - snapshot.computed_at
    if age > timedelta(seconds=settings.STEPWISE_SNAPSHOT_MAX_AGE):
        return True
    if age < timedelta(seconds=settings.STEPWISE_SNAPSHOT_MIN_AGE):
        return False
    return snapshot_submitted_since(snapshot, exists=True) > 0


def snapshot_pending(*, campaign: Campaign) -> CampaignSnapshot | None:
    """The snapshot being computed (or waiting for a worker), if any. One whose worker died is
    the jobs' sweep's: sent again, or failed after its attempts (``common.jobs``)."""
    return (
        CampaignSnapshot.objects.filter(
            campaign=campaign,
            status__in=[CampaignSnapshot.Status.PENDING, CampaignSnapshot.Status.RUNNING],
        )
        .order_by("-requested_at")
        .first()
    )


def snapshot_request(*, campaign: Campaign) -> CampaignSnapshot:
    """Have a worker compute fresh figures, unless a computation is already under way."""
    pending = snapshot_pending(campaign=campaign)
    if pending is not None:
        return pending
    snapshot = CampaignSnapshot.objects.create(campaign=campaign)
    SNAPSHOT_JOBS.send(snapshot.pk)
    return snapshot


def snapshot_followed(snapshot: CampaignSnapshot) -> CampaignSnapshot:
    """The figures' job a page showing ``snapshot`` should show now: the computation under way
    (requested here when the newest figures are stale), else the newest figures."""
    current = snapshot_current(campaign=snapshot.campaign)
    return snapshot_pending(campaign=snapshot.campaign) or current or snapshot


def snapshot_run(*, snapshot: CampaignSnapshot) -> CampaignSnapshot:
    """Compute and store a snapshot's figures in this process, as its Celery task does
    (``common.jobs.job_run``: one attempt at a time, a heartbeat while it computes)."""
    return job_run(SNAPSHOT_JOBS, snapshot) or snapshot


def _snapshot_work(snapshot: CampaignSnapshot, attempt: JobAttempt) -> None:
    """Compute the figures, store them (only while this attempt owns the job), keep the newest
    few."""
    from annotators.stats import campaign_stats

    started = time.monotonic()
    data = campaign_stats(campaign=snapshot.campaign)
    quality = data.pop("quality_blocks", {})
    stage_pause("snapshots.store")
    attempt.finish(
        DONE,
        computed_at=timezone.now(),
        seconds=time.monotonic() - started,
        data=data,
        quality=quality,
    )
    keep = (
        CampaignSnapshot.objects.filter(
            campaign_id=snapshot.campaign_id, status=CampaignSnapshot.Status.DONE
        )
        .order_by("-computed_at", "-id")
        .values_list("pk", flat=True)[:SNAPSHOTS_KEPT]
    )
    CampaignSnapshot.objects.filter(campaign_id=snapshot.campaign_id).exclude(
        pk__in=list(keep)
    ).exclude(
        status__in=[CampaignSnapshot.Status.PENDING, CampaignSnapshot.Status.RUNNING]
    ).delete()


SNAPSHOT_JOBS = JobKind(
    name="snapshots",
    model=CampaignSnapshot,
    task="annotators.snapshot_refresh",
    work=_snapshot_work,
    created_field="requested_at",
    finished_field=None,
    page=JobPage(
        template="annotators/_snapshot_job.html",
        url="annotators:dashboard",
        viewers=REVIEW,
        element="span",
        reload_when_done=True,
        follow=snapshot_followed,
    ),
)
