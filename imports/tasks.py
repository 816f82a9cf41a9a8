"""Celery tasks of imports: take an id, load the row, call one service."""

from __future__ import annotations

from celery import shared_task

from imports import services
from imports.models import GenerationJob, ImportJob


# Late acknowledgement: a broker that redelivers (Redis, after its visibility timeout; a prefork
# child that died) sends the message again; the sweep (common.jobs) recovers it on any broker.
@shared_task(name="imports.import_run", acks_late=True, reject_on_worker_lost=True)
def import_run_task(job_id: int) -> str:
    """Run an uploaded import. A message for a job that no longer exists is dropped."""
    job = ImportJob.objects.select_related("campaign").filter(pk=job_id).first()
    if job is None:
        return "missing"
    return services.import_job_run(job=job).status


@shared_task(name="imports.generation_run")
def generation_run_task(job_id: int) -> str:
    """Run a generation job. A message for a job that no longer exists is dropped."""
    from imports.generation import generation_job_run

    job = GenerationJob.objects.select_related("campaign").filter(pk=job_id).first()
    if job is None:
        return "missing"
    return generation_job_run(job=job).status
