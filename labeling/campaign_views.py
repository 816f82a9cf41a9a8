"""Campaign pages: my campaigns, a new campaign, a campaign's home, its settings, pause; and
an annotator's own history (My work: what I submitted, as I rated it, and amending it).

Each view checks the role (``campaign_for``), calls one service or selector, and renders.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from common.pages import page_number, posted
from labeling import queue, services
from labeling.forms import (
    AmendForm,
    CampaignForm,
)
from labeling.models import Campaign, Membership, SolutionBulkAction
from labeling.permissions import (
    LABEL,
    MANAGE,
    campaign_for,
    campaign_page,
    campaigns_visible_to,
    may_create_campaigns,
)
from labeling.selectors import home as home_selectors
from labeling.selectors import my_work as my_work_selectors


@login_required
@never_cache
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The campaigns this person belongs to, with what is left for them and what they did today."""
    campaigns = list(home_selectors.campaigns_progress(user=request.user))
    figures = home_selectors.my_figures(user=request.user, campaigns=campaigns)
    for campaign in campaigns:
        campaign.mine = figures[campaign.pk]
        # Failed screening: said instead of the work left and a button to no work.
        campaign.screening_failed = Membership.screening_failed_notice(
            campaign=campaign, screening=campaign.my_screening, score=campaign.my_screening_score
        )
    return render(
        request,
        "labeling/home.html",
        {"campaigns": campaigns, "pauses": home_selectors.my_pauses(user=request.user)},
    )


@login_required
@require_GET
def campaign_list(request: HttpRequest) -> HttpResponse:
    """The campaigns this person belongs to, with their role, and a way to create one."""
    roles = Membership.objects.roles_of(request.user)
    campaigns = [
        {"campaign": c, "role": roles.get(c.pk, "site admin")}
        for c in campaigns_visible_to(request.user).order_by("name")
    ]
    return render(
        request,
        "labeling/campaign_list.html",
        {"campaigns": campaigns, "may_create": may_create_campaigns(request.user)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def campaign_create(request: HttpRequest) -> HttpResponse:
    if not may_create_campaigns(request.user):
        raise PermissionDenied("Only staff create campaigns on this site.")
    form = CampaignForm(posted(request))
    if request.method == "POST" and form.is_valid():
        campaign = services.campaign_create(creator=request.user, **form.settings())
        messages.success(request, f"Campaign “{campaign.name}” created. Next: import solutions.")
        return redirect("imports:list", slug=campaign.slug)
    return render(
        request,
        "labeling/campaign_form.html",
        {"form": form, "creating": True},
        status=400 if form.errors else 200,
    )


@login_required
@never_cache
@require_GET
def campaign_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The campaign's home: instructions, the viewer's standing (screening), links by role."""
    campaign, membership = campaign_for(request.user, slug, roles=LABEL)
    reviewed = (
        my_work_selectors.my_reviews(campaign=campaign, user=request.user, per_page=5)[0]
        if membership
        else []
    )
    # The latest regrade after a change of grading rule, for the managers' summary.
    regrade = (
        SolutionBulkAction.objects.filter(
            campaign=campaign, action=SolutionBulkAction.Action.REGRADE
        )
        .order_by("-pk")
        .first()
    )
    return campaign_page(
        request,
        "labeling/campaign_detail.html",
        campaign,
        membership,
        {"recent_reviews": reviewed, "regrade": regrade},
    )


@login_required
@require_http_methods(["GET", "POST"])
def campaign_settings(request: HttpRequest, slug: str) -> HttpResponse:
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    form = CampaignForm(posted(request), instance=Campaign.objects.get(pk=campaign.pk))
    if request.method == "POST" and form.is_valid():
        rule_before = campaign.grading_rule
        services.campaign_update(campaign=campaign, actor=request.user, **form.settings())
        if campaign.grading_rule != rule_before:
            messages.success(
                request,
                "Settings saved. Every final answer is graded again under the new rule: the "
                "campaign's page shows how far it is.",
            )
        else:
            messages.success(request, "Settings saved.")
        return redirect("labeling:campaign-settings", slug=campaign.slug)
    return campaign_page(
        request,
        "labeling/campaign_form.html",
        campaign,
        membership,
        {"form": form, "creating": False},
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def campaign_pause(request: HttpRequest, slug: str) -> HttpResponse:
    """Pause or resume (``paused=1`` / ``paused=0``)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    paused = request.POST.get("paused") == "1"
    services.campaign_pause_set(campaign=campaign, paused=paused)
    messages.success(request, "Campaign paused: no work is served." if paused else "Resumed.")
    return redirect("labeling:campaign", slug=campaign.slug)


@login_required
@never_cache
@require_GET
def my_work(request: HttpRequest, slug: str) -> HttpResponse:
    """The solutions I submitted: my ratings, the review's outcome and comment, newest first."""
    campaign, membership = campaign_for(request.user, slug, roles=LABEL)
    page = page_number(request)
    rows, has_next = my_work_selectors.my_work(campaign=campaign, user=request.user, page=page)
    return campaign_page(
        request,
        "labeling/my_work.html",
        campaign,
        membership,
        {"rows": rows, "page": page, "has_next": has_next, "query": ""},
    )


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def my_work_item(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """One solution as I rated it (read-only), its review; before review, an amendment."""
    campaign, membership = campaign_for(request.user, slug, roles=LABEL)
    item = my_work_selectors.my_work_item(campaign=campaign, user=request.user, assignment_id=pk)
    if item is None:
        raise Http404("No such work of yours")
    rated = {label.step_index: label for label in item.view.labels}
    initial = {f"step_{i}": str(label.rating) for i, label in rated.items()} | {
        f"flag_{i}": label.flagged for i, label in rated.items()
    }
    first_correction = next(
        (label.human_completion for label in item.view.labels if label.human_completion), ""
    )
    initial["human_completion"] = first_correction
    step_indexes = [step.index for step in item.view.steps]
    form = AmendForm(posted(request), initial=initial, step_indexes=step_indexes)
    if request.method == "POST":
        if not item.can_amend:
            form.is_valid()
            form.add_error(None, "Reviewed work can no longer be amended.")
        elif form.is_valid():
            try:
                amended = queue.assignment_amend(
                    assignment=item.assignment,
                    annotator=request.user,
                    ratings=form.cleaned_data["ratings"],
                    flags=form.cleaned_data["flags"],
                    human_completion=form.cleaned_data["human_completion"] or None,
                )
            except queue.LabelingError as error:
                form.add_error(None, str(error))
            else:
                messages.success(request, "Amended: your earlier version is kept.")
                return redirect("labeling:my-work-item", slug=campaign.slug, pk=amended.pk)
    corrections = (item.review or {}).get("corrections") or {}
    steps = [
        {
            "index": step.index,
            "text": step.text,
            "label": rated.get(step.index),
            "corrected": corrections.get(str(step.index)),
        }
        for step in item.view.steps
    ]
    return campaign_page(
        request,
        "labeling/my_work_item.html",
        campaign,
        membership,
        {"item": item, "steps": steps, "form": form},
        status=400 if form.errors else 200,
    )
