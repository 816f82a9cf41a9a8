"""The one status view of every kind of job (``common.jobs``): what htmx polls while a job runs.

Every job belongs to a campaign, so the campaign's roles decide who sees it (each kind says
which: ``JobPage.viewers``). Pages show a job with ``{% job_status job %}``
(``labeling.templatetags.jobs``); the element it renders polls this view every
``STEPWISE_JOB_POLL_SECONDS`` until the job has finished, and swaps itself for the answer, or
reloads the page when the kind's outcome is the rest of the page (``JobPage.reload_when_done``).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseClientRefresh

from common.jobs import FINISHED, job_kinds
from labeling.permissions import campaign_for, campaign_page


@login_required
@require_GET
def job_status(request: HttpRequest, slug: str, kind: str, pk: int) -> HttpResponse:
    """One job's status partial (htmx); without htmx, the page that lists the kind's jobs.

    ``?state=`` is the state the page shows: a job of a ``reload_when_done`` kind that has
    finished since (or been followed by a newer one that has) reloads the page.
    """
    job_kind = job_kinds().get(kind)
    if job_kind is None:
        raise Http404("No such kind of job")
    campaign, membership = campaign_for(request.user, slug, roles=job_kind.page.viewers)
    job = get_object_or_404(job_kind.model, campaign=campaign, pk=pk)
    if not request.htmx:
        return redirect(job_kind.page.url, slug=campaign.slug)
    if job_kind.page.follow is not None:
        job = job_kind.page.follow(job)
    finished = job_kind.state(job) in FINISHED
    was_finished = request.GET.get("state") in FINISHED
    if job_kind.page.reload_when_done and finished and (job.pk != pk or not was_finished):
        return HttpResponseClientRefresh()
    return campaign_page(request, "labeling/job_status.html", campaign, membership, {"job": job})
