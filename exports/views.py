"""The managers' export page: list, create, download when done (each export's row polls the
one job status view while it runs: ``labeling.job_views``)."""

from __future__ import annotations

import csv

from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods

from exports.forms import ExportForm
from exports.models import Export
from exports.policy import ExportError
from exports.pseudonyms import annotator_pseudonyms
from exports.services import export_create
from labeling.curation.filters import FilterError, SolutionFilter, count_capped
from labeling.models import Campaign, Solution
from labeling.permissions import MANAGE, campaign_for, campaign_page


def _get_campaign_for_manager(request: HttpRequest, slug: str) -> Campaign:
    """The campaign, if this person manages it: 404 for outsiders, 403 for other roles."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    return campaign


@login_required
@require_http_methods(["GET", "POST"])
def export_list(request: HttpRequest, slug: str) -> HttpResponse:
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    selection = _selection_from_query(request)
    initial = {"selection": selection.querystring(with_sort=False)} if selection else {}
    form = ExportForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            export_create(
                campaign=campaign,
                fmt=form.cleaned_data["format"],
                policy=form.policy(),
                options=form.options(),
                created_by=request.user,
                selection=form.cleaned_data["selection"],
            )
        except ExportError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("exports:list", slug=campaign.slug)
    exports = Export.objects.filter(campaign=campaign).select_related("created_by")[:50]
    return campaign_page(
        request,
        "exports/export_list.html",
        campaign,
        membership,
        {
            "form": form,
            "exports": exports,
            "selection": selection,
            "selection_count": _selection_count(campaign, selection),
        },
        status=400 if form.errors else 200,
    )


def _selection_from_query(request: HttpRequest) -> SolutionFilter | None:
    """The data browser's filters when it sent the manager here to export a selection."""
    try:
        return SolutionFilter.from_params(request.GET) or None
    except FilterError:
        return None


def _selection_count(campaign: Campaign, selection: SolutionFilter | None) -> tuple[int, bool]:
    if selection is None:
        return (0, False)
    return count_capped(selection.apply(Solution.objects.filter(campaign=campaign)))


@login_required
@require_GET
def annotator_pseudonyms_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """The exports' annotator pseudonyms and who they are, only to the campaign's managers."""
    campaign = _get_campaign_for_manager(request, slug)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="{campaign.slug}-annotator-pseudonyms.csv"'
    )
    response["Cache-Control"] = "private, no-store"
    writer = csv.writer(response)
    writer.writerow(["pseudonym", "username"])
    writer.writerows(annotator_pseudonyms(campaign=campaign))
    return response


@login_required
@require_GET
def export_download(request: HttpRequest, slug: str, pk: int, name: str) -> FileResponse:
    """One of the export's files (or its manifest), only to the campaign's managers."""
    campaign = _get_campaign_for_manager(request, slug)
    export = get_object_or_404(Export, campaign=campaign, pk=pk, status=Export.Status.DONE)
    stored = export.stored_file(name)
    if stored is None or not default_storage.exists(stored):
        raise Http404("No such file")
    return FileResponse(default_storage.open(stored, "rb"), as_attachment=True, filename=name)
