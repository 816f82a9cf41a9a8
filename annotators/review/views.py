"""Review pages: the review queue and one submission (accept, correct, reject), adjudication of
steps annotators disagree on, and the annotator's own reviews (My reviews).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods

from annotators import snapshots
from annotators.review import selectors, services
from annotators.review.forms import (
    AdjudicationFilterForm,
    AdjudicationForm,
    ReviewFilterForm,
    ReviewForm,
)
from annotators.services import ManageError
from annotators.views import imported_switch
from common.pages import page_number, posted
from labeling.models import Assignment, Membership, Review
from labeling.permissions import (
    LABEL,
    REVIEW,
    campaign_for,
    campaign_page,
)
from labeling.selectors import my_work as my_work_selectors


@login_required
@require_GET
def review_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Submitted assignments to review, filtered by annotator, kind, QC agreement, disagreement."""
    campaign, membership = campaign_for(request.user, slug, roles=REVIEW)
    switch = imported_switch(request, campaign)
    members = Membership.objects.filter(campaign=campaign).order_by("user__username")
    if not switch["show_imported"]:
        members = members.filter(is_imported=False)
    people = [
        (uid, Membership.short_name(name, imported=imported))
        for uid, name, imported in members.values_list("user_id", "user__username", "is_imported")
    ]
    filters = ReviewFilterForm(request.GET or None, annotators=people)
    data = filters.cleaned_data if filters.is_valid() else {}
    snapshot = None
    annotator_ids = None
    if data.get("low_qc"):
        snapshot = snapshots.snapshot_current(campaign=campaign)
        annotator_ids = selectors.low_qc_annotators(campaign=campaign, snapshot=snapshot)
    page = page_number(request)
    rows, has_next = selectors.review_queue(
        campaign=campaign,
        state=data.get("state") or "unreviewed",
        annotator_id=data.get("annotator"),
        kind=data.get("kind") or "",
        annotator_ids=annotator_ids,
        disagreement=bool(data.get("disagreement")),
        oldest_first=data.get("sort") == "submitted",
        page=page,
    )
    for row in rows:
        if row["annotator_id"] in switch["imported_ids"]:
            row["annotator_name"] = Membership.short_name(row["annotator_name"], imported=True)
    query = request.GET.copy()
    query.pop("page", None)
    return campaign_page(
        request,
        "annotators/review_list.html",
        campaign,
        membership,
        switch
        | {
            "filters": filters,
            "rows": rows,
            "page": page,
            "has_next": has_next,
            "query": query.urlencode(),
            "snapshot": snapshot,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def review_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """One submitted assignment: steps, the annotator's and others' ratings; accept or reject."""
    campaign, membership = campaign_for(request.user, slug, roles=REVIEW)
    detail = selectors.review_detail(campaign=campaign, assignment_id=pk)
    if detail is None:
        raise Http404("No such submitted assignment")
    review = detail.review
    initial = {}
    if review is not None:
        initial = {"decision": review.decision, "comment": review.comment} | {
            f"step_{i}": str(r) for i, r in review.corrections.items()
        }
    form = ReviewForm(posted(request), initial=initial, step_indexes=detail.rated_indexes)
    own = detail.assignment.annotator_id == request.user.pk
    # Only where the campaign shows reviewers the machine evidence (off by default).
    evidence = selectors.review_evidence(campaign=campaign, solution=detail.solution)
    if request.method == "POST" and form.is_valid():
        try:
            services.review_submit(
                assignment=detail.assignment,
                reviewer=request.user,
                decision=form.cleaned_data["decision"],
                comment=form.cleaned_data["comment"],
                corrections=form.corrections(),
            )
        except ManageError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Review of assignment {pk} saved.")
            return redirect("annotators:reviews", slug=campaign.slug)
    return campaign_page(
        request,
        "annotators/review_detail.html",
        campaign,
        membership,
        {
            "detail": detail,
            "form": form,
            "own": own,
            "evidence": bool(evidence),
            "rows": [
                (
                    step,
                    form[f"step_{step.index}"] if step.rating is not None else None,
                    evidence.get(step.index, []),
                )
                for step in detail.steps
            ],
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def adjudication_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Steps on which annotators disagree, to decide (or decided): the reviewers' queue."""
    campaign, membership = campaign_for(request.user, slug, roles=REVIEW)
    filters = AdjudicationFilterForm(request.GET or None)
    state = (filters.cleaned_data.get("state") if filters.is_valid() else "") or "open"
    page = page_number(request)
    rows, has_next = selectors.adjudication_queue(campaign=campaign, state=state, page=page)
    query = request.GET.copy()
    query.pop("page", None)
    return campaign_page(
        request,
        "annotators/adjudication_list.html",
        campaign,
        membership,
        {
            "filters": filters,
            "rows": rows,
            "page": page,
            "has_next": has_next,
            "query": query.urlencode(),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def adjudication_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """One step: every annotator's label of it side by side; the reviewer sets the final rating."""
    campaign, membership = campaign_for(request.user, slug, roles=REVIEW)
    detail = selectors.adjudication_detail(campaign=campaign, step_id=pk)
    if detail is None:
        raise Http404("No such step")
    initial = {"rating": detail.current.rating} if detail.current else {}
    form = AdjudicationForm(posted(request), initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.adjudication_decide(
                campaign=campaign,
                step=detail.step,
                decided_by=request.user,
                rating=form.cleaned_data["rating"],
                note=form.cleaned_data["note"],
            )
        except ManageError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Step {detail.step.index + 1} decided.")
            return redirect("annotators:adjudications", slug=campaign.slug)
    return campaign_page(
        request,
        "annotators/adjudication_detail.html",
        campaign,
        membership,
        {"detail": detail, "form": form},
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def my_reviews(request: HttpRequest, slug: str) -> HttpResponse:
    """An annotator's reviewed work: accepted or rejected, the comment, corrected ratings."""
    campaign, membership = campaign_for(request.user, slug, roles=LABEL)
    page = page_number(request)
    reviews, has_next = my_work_selectors.my_reviews(
        campaign=campaign, user=request.user, page=page
    )
    return campaign_page(
        request,
        "annotators/my_reviews.html",
        campaign,
        membership,
        {
            "reviews": reviews,
            "page": page,
            "has_next": has_next,
            "query": "",
            "reviewed": Review.objects.filter(
                assignment__campaign=campaign, assignment__annotator=request.user
            ).count(),
            "submitted": Assignment.objects.filter(
                campaign=campaign,
                annotator=request.user,
                status__in=Assignment.DONE_STATUSES,
            ).count(),
        },
    )
