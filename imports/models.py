"""An uploaded file on its way into a campaign.

The table was created by ``annotators`` and keeps its name (``annotators_importjob``): the model
moved here without touching the database.
"""

from __future__ import annotations

from pathlib import Path

from django.db import models

from common.models import BackgroundJob
from labeling.models import Campaign


class ImportJob(BackgroundJob):
    """One uploaded file, imported by a Celery worker with ``imports.pipeline.import_file``.

    The import is all or nothing: a job ends ``done`` with its counts, or ``failed`` with the
    importer's errors (file, line, field, message) and nothing written. While it runs, ``phase``
    (validating, writing, grading) and ``progress`` (share of the file read in that phase) are
    updated from a separate connection, so the page can show them before the import commits.
    The uploaded file is deleted once the job has finished; its size and sha256 stay here.
    A worker killed mid-import leaves nothing written (the transaction dies with it); the sweep
    sends the job again (``common.jobs``), and the claim lets one attempt at a time run it.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="import_jobs")
    file_name = models.CharField(max_length=255, help_text="The name it was uploaded with.")
    stored_path = models.CharField(max_length=500, blank=True, help_text="Under MEDIA_ROOT.")
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    format = models.CharField(max_length=30)
    options = models.JSONField(default=dict, blank=True)
    grade = models.BooleanField(default=True, help_text="Grade new answers after the import.")
    phase = models.CharField(max_length=20, blank=True)
    progress = models.FloatField(default=0.0)
    counts = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True, help_text="[{file, line, field, message}]")
    errors_truncated = models.BooleanField(default=False)

    class Meta(BackgroundJob.Meta):
        db_table = "annotators_importjob"

    def __str__(self) -> str:
        return f"import {self.pk} of {self.file_name} into {self.campaign} ({self.status})"

    @property
    def path(self) -> Path:
        """The uploaded file on this machine's disk (filesystem storage only)."""
        from common.storage import storage_local_path

        path = storage_local_path(self.stored_path)
        if path is None:
            raise NotImplementedError("the file storage is not a local directory")
        return path
