"""Django admin actions for every kind of job (``common.jobs``): retry a failed job, fail a
waiting or running one. A job model's admin adds them with ``actions = JOB_ACTIONS``."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import IntegrityError
from django.db.models import QuerySet
from django.http import HttpRequest

from common.job_recovery import job_fail, job_retry
from common.jobs import job_kind_for_model
from common.models import RecoverableJob


@admin.action(description="Retry the selected failed jobs (all attempts again)")
def retry_jobs(
    modeladmin: admin.ModelAdmin[RecoverableJob],
    request: HttpRequest,
    queryset: QuerySet[RecoverableJob],
) -> None:
    kind = job_kind_for_model(queryset.model)
    retried, refused = 0, []
    for pk in queryset.values_list("pk", flat=True):
        try:
            if job_retry(kind, pk):
                retried += 1
            else:
                refused.append(f"#{pk} (not failed)")
        except IntegrityError:  # e.g. another run of the campaign is already waiting
            refused.append(f"#{pk} (another job of its campaign is waiting or running)")
    modeladmin.message_user(request, f"{retried} job(s) sent again.", messages.SUCCESS)
    if refused:
        modeladmin.message_user(request, "Not retried: " + ", ".join(refused), messages.WARNING)


@admin.action(description="Fail the selected waiting or running jobs")
def fail_jobs(
    modeladmin: admin.ModelAdmin[RecoverableJob],
    request: HttpRequest,
    queryset: QuerySet[RecoverableJob],
) -> None:
    kind = job_kind_for_model(queryset.model)
    reason = f"failed by {request.user.get_username()} from the admin"
    failed, refused = 0, []
    for pk in queryset.values_list("pk", flat=True):
        if job_fail(kind, pk, reason):
            failed += 1
        else:
            refused.append(f"#{pk}")
    modeladmin.message_user(request, f"{failed} job(s) failed.", messages.SUCCESS)
    if refused:
        modeladmin.message_user(
            request, "Already finished: " + ", ".join(refused), messages.WARNING
        )


JOB_ACTIONS = [retry_jobs, fail_jobs]
