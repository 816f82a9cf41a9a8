"""The manager's imports page: upload a file, follow its job until it is done or failed (each
job's row polls the one job status view while it runs: ``labeling.job_views``)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_http_methods, require_POST

from imports import services
from imports.forms import UploadForm
from imports.models import ImportJob
from labeling.permissions import (
    MANAGE,
    campaign_for,
    campaign_page,
)


@login_required
@require_http_methods(["GET", "POST"])
def import_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Upload a file (imported in the background) and follow the imports."""
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    status, refused = 200, None
    form = UploadForm()
    length = services.declared_length(request)
    if request.method == "POST" and length > services.upload_limit_bytes() + 65536:
        # Refused on the request's size, before the form reads the file.
        refused, status = services.upload_too_large_message(length), 413
    elif request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                services.import_job_create(
                    campaign=campaign,
                    created_by=request.user,
                    upload=form.cleaned_data["file"],
                    fmt=form.cleaned_data["format"],
                    as_gold=form.cleaned_data["as_gold"] or None,
                    generator=form.cleaned_data["generator"],
                    grade=form.cleaned_data["grade"],
                    split=form.cleaned_data["split"],
                )
            except services.ImportRefused as error:
                form.add_error(None, str(error))
                status = error.http_status
            else:
                return redirect("imports:list", slug=campaign.slug)
        status = max(status, 400)
    jobs = ImportJob.objects.filter(campaign=campaign).select_related("created_by")[:50]
    return campaign_page(
        request,
        "imports/import_list.html",
        campaign,
        membership,
        {
            "form": form,
            "refused": refused,
            "jobs": jobs,
            "limit_mb": settings.STEPWISE_MAX_UPLOAD_MB,
        },
        status=status,
    )


@login_required
@require_POST
def import_preview(request: HttpRequest, slug: str) -> HttpResponse:
    """The first solutions of the chosen file as they will be split (htmx; nothing is written)."""
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    form = UploadForm(request.POST, request.FILES)
    preview, status = None, 200
    if form.is_valid():
        try:
            preview = services.import_preview(
                upload=form.cleaned_data["file"],
                fmt=form.cleaned_data["format"],
                split=form.cleaned_data["split"],
                as_gold=form.cleaned_data["as_gold"] or None,
            )
        except services.ImportRefused as error:
            form.add_error(None, str(error))
            status = 400
    else:
        status = 400
    if request.htmx:
        template, context = "imports/import_list.html#preview", {}
    else:  # without JavaScript: the whole page, the preview under the form
        template, context = "imports/import_list.html", _list_context(campaign)
    context |= {"form": form, "preview": preview, "previewed": True}
    return campaign_page(request, template, campaign, membership, context, status=status)


def _list_context(campaign) -> dict:
    return {
        "jobs": ImportJob.objects.filter(campaign=campaign).select_related("created_by")[:50],
        "limit_mb": settings.STEPWISE_MAX_UPLOAD_MB,
        "refused": None,
    }


@login_required
@require_POST
def import_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Delete a failed import (its row and what is left of its file); back to the list."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(ImportJob, campaign=campaign, pk=pk)
    try:
        services.import_job_delete(job=job)
    except services.ImportRefused as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Failed import {pk} ({job.file_name}) deleted.")
    return redirect("imports:list", slug=campaign.slug)
