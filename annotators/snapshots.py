"""The dashboard's figures as durable snapshots: request one, run it in a worker, read the latest.

Counting a campaign's figures reads every label, so pages never count: they show the latest
``CampaignSnapshot`` and request a new one when it is stale. A snapshot is a durable job
(``SNAPSHOT_JOBS``, swept by ``common.jobs``) run by the task ``annotators.snapshot_refresh``.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotators.models import CampaignSnapshot
from common.jobs import JobKind, job_claim, job_heartbeat, job_update
from labeling.models import Campaign

log = logging.getLogger(__name__)

# A requested snapshot that has not finished after this long is presumed lost (a worker died);
# the next page view may request another.
SNAPSHOT_LOST_AFTER = timedelta(minutes=10)
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
    """The snapshot being computed (or waiting for a worker), if any."""
    return (
        CampaignSnapshot.objects.filter(
            campaign=campaign,
            status__in=[CampaignSnapshot.Status.PENDING, CampaignSnapshot.Status.RUNNING],
            requested_at__gte=timezone.now() - SNAPSHOT_LOST_AFTER,
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


def _snapshot_send(snapshot_id: int) -> None:
    from annotators.tasks import snapshot_refresh_task

    transaction.on_commit(lambda: snapshot_refresh_task.delay(snapshot_id))


SNAPSHOT_JOBS = JobKind(
    name="snapshots",
    model=CampaignSnapshot,
    send=_snapshot_send,
    created_field="requested_at",
    finished_field=None,
)


def snapshot_run(*, snapshot: CampaignSnapshot) -> CampaignSnapshot:
    """Compute and store a snapshot's figures (the Celery task); keeps the newest few.

    Claimed like every durable job (``common.jobs``): one attempt at a time, a heartbeat while
    it computes, the result written only while this attempt owns it.
    """
    from annotators.stats import campaign_stats

    attempt = job_claim(SNAPSHOT_JOBS, snapshot.pk)
    if attempt is None:
        snapshot.refresh_from_db()
        return snapshot
    started = time.monotonic()
    try:
        with job_heartbeat(SNAPSHOT_JOBS, snapshot.pk, attempt):
            data = campaign_stats(campaign=snapshot.campaign)
    except Exception as error:
        log.exception("snapshot %s failed", snapshot.pk)
        job_update(
            SNAPSHOT_JOBS,
            snapshot.pk,
            attempt,
            status=CampaignSnapshot.Status.FAILED,
            error=f"{type(error).__name__}: {error}",
        )
        raise
    job_update(
        SNAPSHOT_JOBS,
        snapshot.pk,
        attempt,
        status=CampaignSnapshot.Status.DONE,
        computed_at=timezone.now(),
        seconds=time.monotonic() - started,
        data=data,
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
    snapshot.refresh_from_db()
    return snapshot
