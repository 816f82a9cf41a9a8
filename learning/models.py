"""Active learning's records: the PRM checkpoints a campaign trained and the runs that made them.

Both tables were created by ``labeling`` and keep their names (``labeling_prmmodel``,
``labeling_activelearningrun``): the models moved here without touching the database.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.models import RecoverableJob
from labeling.models import Campaign


def prm_checkpoint_path(campaign_slug: str, version: int) -> str:
    """Where a campaign's PRM checkpoints live, relative to ``MEDIA_ROOT``."""
    return f"prm/{campaign_slug}/v{version:04d}"


class PRMModel(models.Model):
    """A trained PRM checkpoint of one campaign: its version, training set size and metrics.

    At most one model per campaign is active (a conditional unique constraint): the one whose
    scores ordered the current queue. Active learning registers a new version inactive and only
    flips ``is_active`` at the very end, in the same transaction as the priority rewrite, so a
    worker that dies mid-run leaves the previous model active and the queue as it was.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="prm_models")
    version = models.PositiveIntegerField()
    backbone = models.CharField(max_length=100, default="bow")
    path = models.CharField(
        max_length=300, help_text="Checkpoint directory, relative to MEDIA_ROOT."
    )
    metrics = models.JSONField(default=dict, blank=True)
    training_labels = models.PositiveIntegerField(
        default=0, help_text="Submitted step labels in the training export."
    )
    training_solutions = models.PositiveIntegerField(default=0)
    is_active = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "labeling_prmmodel"
        ordering = ["campaign", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "version"], name="prmmodel_unique_version"),
            models.UniqueConstraint(
                fields=["campaign"], condition=Q(is_active=True), name="prmmodel_one_active"
            ),
        ]

    def __str__(self) -> str:
        return f"PRM v{self.version} of {self.campaign_id}"


class ActiveLearningRun(RecoverableJob):
    """One active-learning run: export, train, evaluate, register, rescore, reorder the queue.

    The partial unique constraint on ``campaign`` while ``queued`` or ``running`` is the lock that
    keeps two runs of one campaign from overlapping, in every process and on every database. A
    worker that dies cannot hold it forever: the running worker beats ``heartbeat_at``, and the jobs
    sweep (``common.job_recovery.jobs_sweep``, kind ``learning.run.AL_RUNS``) re-enqueues a run
    whose heartbeat is stale, or fails it after ``MAX_ATTEMPTS``, which frees the lock. It is the
    durable-job mechanism of every background job (``common.jobs``, ``RecoverableJob``'s
    ``heartbeat_at``, ``attempts`` and ``error``), under this model's own status names.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    class Trigger(models.TextChoices):
        AUTO = "auto", "automatic"
        MANUAL = "manual", "manual"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="al_runs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    model = models.ForeignKey(
        PRMModel, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    training_labels = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Submitted step labels in the training export (the trigger counts from it).",
    )
    metrics = models.JSONField(default=dict, blank=True)
    timings = models.JSONField(default=dict, blank=True, help_text="Seconds per stage.")
    queue_head = models.JSONField(
        default=dict, blank=True, help_text="Composition of the new queue head."
    )
    strategy = models.CharField(
        max_length=20,
        blank=True,
        help_text="The selection strategy that ordered the queue (the campaign's at the time).",
    )
    best_of_n = models.JSONField(
        default=dict,
        blank=True,
        help_text="Best-of-N accuracy against N on held-out problems (learning.bestofn).",
    )
    data_efficiency = models.JSONField(
        default=dict,
        blank=True,
        help_text="Is active learning paying here: the strategy's labels against the control "
        "arm's (learning.efficiency).",
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "labeling_activelearningrun"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign"],
                condition=Q(status__in=["queued", "running"]),
                name="alrun_one_active_per_campaign",
            ),
        ]
        indexes = [models.Index(fields=["campaign", "-created_at"], name="alrun_by_campaign")]

    def __str__(self) -> str:
        return f"active-learning run {self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES
