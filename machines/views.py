"""The manager's pages of the machines: generation jobs (K solutions per problem from a chat
endpoint) and machine evidence jobs (rollouts, a judge), each followed until it is done or failed
(each job's row polls the one job status view while it runs: ``labeling.job_views``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_http_methods, require_POST

from labeling.permissions import MANAGE, campaign_for, campaign_page
from machines.forms import EvidenceForm, GenerationForm
from machines.models import EvidenceJob, GenerationJob


@login_required
@require_http_methods(["GET", "POST"])
def generation_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Ask a model endpoint for K solutions per problem (a background job) and follow the jobs."""
    from machines import generation

    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    status = 200
    if request.method == "POST":
        form = GenerationForm(request.POST)
        if form.is_valid():
            try:
                generation.generation_job_create(
                    campaign=campaign, created_by=request.user, **form.job_kwargs()
                )
            except generation.GenerationRefused as error:
                field = "model" if error.field == "endpoint" else error.field
                form.add_error(field if field in form.fields else None, str(error))
            else:
                return redirect("machines:generations", slug=campaign.slug)
        status = 400
    else:
        jobs = GenerationJob.objects.filter(campaign=campaign)
        last = jobs.order_by("-created_at", "-id").first()
        form = GenerationForm(
            initial=GenerationForm.initial_after(last)
            | {"prompt_template": generation.default_template(campaign)}
        )
    jobs = GenerationJob.objects.filter(campaign=campaign).select_related("created_by")[:50]
    return campaign_page(
        request,
        "machines/generation_list.html",
        campaign,
        membership,
        {"form": form, "jobs": jobs},
        status=status,
    )


@login_required
@require_POST
def generation_resume(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Queue a finished job with samples missing, or a failed one, again: it asks only for the
    samples still missing."""
    from machines import generation

    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(GenerationJob, campaign=campaign, pk=pk)
    try:
        generation.generation_job_resume(job=job)
    except generation.GenerationRefused as error:
        messages.error(request, str(error))
    return redirect("machines:generations", slug=campaign.slug)


@login_required
@require_http_methods(["GET", "POST"])
def evidence_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Ask machines about steps (rollouts, a judge) for the solutions of a data-browser filter
    (the query string) or one solution (the item page's forms), and follow the jobs."""
    from labeling.curation.filters import FilterError, SolutionFilter
    from machines import evidence

    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    status = 200
    try:
        solution = request.POST.get("solution", "")
        chosen = SolutionFilter.from_params({"id": solution} if solution else request.GET)
    except FilterError as error:
        chosen, status = SolutionFilter(), 400
        messages.error(request, f"{error.field}: {error.message}")
    form = EvidenceForm(request.POST or None)
    if request.method == "POST":
        back = request.POST.get("next", "")
        if form.is_valid():
            try:
                job = evidence.evidence_job_create(
                    campaign=campaign,
                    created_by=request.user,
                    selection=chosen.to_params(with_sort=False),
                    **form.job_kwargs(),
                )
            except evidence.EvidenceRefused as error:
                form.add_error(error.field if error.field in form.fields else None, str(error))
            else:
                messages.success(
                    request, f"Evidence job {job.pk} queued: {job.get_kind_display()}."
                )
                if back.startswith("/") and not back.startswith("//"):
                    return redirect(back)
                return redirect("machines:evidence", slug=campaign.slug)
        if back.startswith("/") and not back.startswith("//"):
            for errors in form.errors.values():
                messages.error(request, " ".join(errors))
            return redirect(back)
        status = 400
    jobs = EvidenceJob.objects.filter(campaign=campaign).select_related("created_by")[:50]
    return campaign_page(
        request,
        "machines/evidence_list.html",
        campaign,
        membership,
        {
            "form": form,
            "jobs": jobs,
            "selection": chosen.describe(),
            "query": chosen.querystring(with_sort=False),
            "matching": chosen.apply(campaign.solutions.all()).count() if chosen else 0,
        },
        status=status,
    )
