"""The labelling page.

The labelling page is one template with named partials: ``workspace`` (one solution, or why there
is none) and ``steps`` (the steps revealed so far and the controls of the current one). Every
action is a plain form that posts and redirects, so the page works without JavaScript; with htmx
the same forms post in the background and get back only the partial they change: a rating
returns ``steps``, a submission returns the *next* solution's ``workspace`` in the same
response (submit and claim in one round trip), so no extra request stands between two solutions.

Views only parse input and call ``labeling.queue`` (every labelling rule lives there) or
``labeling.selectors.labelling`` (which never reads gold ratings or other annotators' labels).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from functools import wraps

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import retarget

from labeling import queue
from labeling.forms import (
    STEP_TIME_MAX_MS,
    TOTAL_TIME_MAX_MS,
    CandidateChooseForm,
    CandidateForm,
    CandidateRateForm,
    FlagForm,
    RateForm,
    StepWriteForm,
    SubmitForm,
    UndoForm,
    clamp_ms,
)
from labeling.label_page import LabelPage
from labeling.models import Assignment, Campaign, FinishReason, Membership, Solution
from labeling.permissions import (
    campaign_for,
)
from labeling.selectors import home as home_selectors
from labeling.selectors import labelling

TEMPLATE = "labeling/label.html"

# --- The labelling page ------------------------------------------------------------------------


def _login_returns_to_label(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``login_required`` for the page's POST endpoints: after logging in again, the person is
    back on the labelling page (the endpoint itself answers only POST; a GET of it is a 405).
    The login page is told why it is shown (``session=ended``): an action, not a visit, found
    the session gone (expired, or a logout in another tab)."""

    @wraps(view)
    def wrapped(request: HttpRequest, slug: str, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            response = redirect_to_login(reverse("labeling:label", kwargs={"slug": slug}))
            response["Location"] += "&session=ended"
            return response
        return view(request, slug, *args, **kwargs)

    return wrapped


@login_required
@never_cache
@require_GET
def label(request: HttpRequest, slug: str) -> HttpResponse:
    """The annotator's current solution (their draft, after a reload) or the next one.

    Never cached: Back and Forward load it again rather than show a solution already submitted
    (whose next key would be refused).
    """
    try:
        campaign, _ = campaign_for(request.user, slug)
    except Http404:
        # A paused member hears why no work is served (the queue's refusal says it).
        paused = labelling.paused_campaign_for(user=request.user, slug=slug)
        if paused is None:
            raise
        campaign = paused
    return _render(request, _next_context(request, campaign=campaign))


def _draft_action(
    request: HttpRequest,
    *,
    slug: str,
    pk: int,
    form_class: type[forms.Form],
    unreadable: str,
    act: Callable[[Assignment, dict], object],
) -> HttpResponse:
    """What every draft action does: the holder's assignment, the form read (``unreadable``
    said when it cannot be), ``act(assignment, cleaned_data)`` (a queue service), then the
    steps again, or the refusal next to them."""
    assignment = _assignment(request, slug=slug, pk=pk)
    form = form_class(request.POST)
    if not form.is_valid():
        return _refused(request, assignment, unreadable)
    try:
        act(assignment, form.cleaned_data)
    except queue.LabelingError as error:
        return _refused(request, assignment, error)
    return _drafted(request, assignment)


@_login_returns_to_label
@require_POST
def step_rate(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Rate one step. Setting a rating is idempotent: a retried request rates it again, the same."""

    def act(assignment: Assignment, data: dict) -> None:
        time_ms = data["time_ms"]
        if time_ms is None:
            # No JavaScript: the time since the previous draft action (each renews the lease).
            time_ms = _since_last_action_ms(assignment, maximum=STEP_TIME_MAX_MS)
        queue.step_label_set(
            assignment=assignment,
            annotator=request.user,
            step_index=data["step_index"],
            rating=data["rating"],
            flagged=data["flagged"],
            time_spent_ms=time_ms,
        )

    return _draft_action(
        request,
        slug=slug,
        pk=pk,
        form_class=RateForm,
        unreadable="That rating could not be read.",
        act=act,
    )


@_login_returns_to_label
@require_POST
def step_undo(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Remove the last rating (only the one the page showed as last: retries are harmless)."""
    return _draft_action(
        request,
        slug=slug,
        pk=pk,
        form_class=UndoForm,
        unreadable="That undo could not be read.",
        act=lambda assignment, data: queue.step_label_undo(
            assignment=assignment, annotator=request.user, step_index=data["step_index"]
        ),
    )


@_login_returns_to_label
@require_POST
def step_flag(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Flag a rated step as unsure, or clear the flag (a set, so retries are harmless)."""
    return _draft_action(
        request,
        slug=slug,
        pk=pk,
        form_class=FlagForm,
        unreadable="That flag could not be read.",
        act=lambda assignment, data: queue.step_label_flag(
            assignment=assignment,
            annotator=request.user,
            step_index=data["step_index"],
            flagged=data["flagged"],
        ),
    )


# --- Phase 1 mode: candidates rated, chosen, written, taken back (labeling.queue.phase1) ------


@_login_returns_to_label
@require_POST
def candidate_rate(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Rate one candidate next step (setting a rating: a retried request rates it the same)."""
    return _draft_action(
        request,
        slug=slug,
        pk=pk,
        form_class=CandidateRateForm,
        unreadable="That rating could not be read.",
        act=lambda assignment, data: queue.candidate_rate(
            assignment=assignment,
            annotator=request.user,
            candidate_id=data["candidate"],
            rating=data["rating"],
            flagged=data["flagged"],
            time_spent_ms=data["time_ms"],
        ),
    )


@_login_returns_to_label
@require_POST
def candidate_choose(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Continue the solution with a candidate (choosing it again changes nothing)."""
    return _draft_action(
        request,
        slug=slug,
        pk=pk,
        form_class=CandidateChooseForm,
        unreadable="That choice could not be read.",
        act=lambda assignment, data: queue.candidate_choose(
            assignment=assignment, annotator=request.user, candidate_id=data["candidate"]
        ),
    )


@_login_returns_to_label
@require_POST
def step_write(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Continue the solution with a step the annotator wrote."""
    return _draft_action(
        request,
        slug=slug,
        pk=pk,
        form_class=StepWriteForm,
        unreadable="Write the step first (at most 5,000 characters).",
        act=lambda assignment, data: queue.step_write(
            assignment=assignment,
            annotator=request.user,
            position=data["position"],
            text=data["text"],
        ),
    )


@_login_returns_to_label
@require_POST
def phase1_undo(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Take back the last rating or choice (only the one the page named: retries are harmless)."""
    return _draft_action(
        request,
        slug=slug,
        pk=pk,
        form_class=CandidateForm,
        unreadable="That undo could not be read.",
        act=lambda assignment, data: queue.phase1_undo(
            assignment=assignment, annotator=request.user, candidate_id=data["candidate"]
        ),
    )


@_login_returns_to_label
@require_POST
def label_submit(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Submit the drafts (or give up, or report a bad problem) and serve the next solution.

    Idempotent on the submission key the page rendered: a retry changes nothing and still gets
    the next solution.
    """
    assignment = _assignment(request, slug=slug, pk=pk)
    form = SubmitForm(request.POST)
    if not form.is_valid():
        return _refused(request, assignment, "That submission could not be read.")
    data = form.cleaned_data
    total_ms = data["total_time_ms"]
    if total_ms is None:
        # No JavaScript: the time since the solution was served.
        elapsed = timezone.now() - assignment.leased_at
        total_ms = clamp_ms(int(elapsed.total_seconds() * 1000), maximum=TOTAL_TIME_MAX_MS)
    try:
        result = queue.assignment_submit(
            assignment=assignment,
            annotator=request.user,
            submission_key=data["submission_key"],
            human_completion=data["human_completion"] or None,
            finish_reason=data["finish_reason"] or None,
            total_time_ms=total_ms,
            outcome_rating=data["outcome_rating"],
            # Only a page sends it (a form posted by hand submits the drafts as they are).
            drafts_seen=data["drafts_seen"] if "drafts_seen" in request.POST else None,
        )
    except queue.LabelsInvalid as error:
        if (
            error.field == "ratings"
            and not data["finish_reason"]
            and not assignment.campaign.phase1_mode
        ):
            # A tab that fell behind (or a form posted by hand): say which steps are missing.
            page = LabelPage.build(labelling.assignment_view(assignment=assignment))
            return _refused(request, assignment, page.missing_text or error.detail)
        return _refused(request, assignment, error)
    except queue.LabelingError as error:
        return _refused(request, assignment, error)
    notice = _submitted_notice(result)
    if result.solution_kind == Solution.Kind.QUALITY_CONTROL:
        missed = labelling.qc_first_error_missed(
            assignment_id=result.assignment_id, user=request.user
        )
        if missed is not None:
            notice += QC_MISSED[missed]
    return _finished(request, assignment, notice=notice)


@_login_returns_to_label
@require_POST
def label_skip(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Hand the solution back unlabelled and serve the next one."""
    assignment = _assignment(request, slug=slug, pk=pk)
    try:
        queue.assignment_skip(assignment=assignment, annotator=request.user)
    except queue.LabelingError as error:
        return _refused(request, assignment, error)
    return _finished(request, assignment, notice="Skipped. It will not be shown to you again.")


# --- Helpers -----------------------------------------------------------------------------------


def _assignment(request: HttpRequest, *, slug: str, pk: int) -> Assignment:
    """The user's own assignment in this campaign; 404 for anything else (nothing is revealed).

    Superusers may read any assignment through the selector, but only the holder may act on it.
    """
    try:
        assignment = labelling.assignment_get(assignment_id=pk, user=request.user)
    except queue.NotLeaseHolder:
        raise Http404("No such assignment") from None
    except queue.MembershipInactive:
        raise PermissionDenied("You are no longer a member of this campaign.") from None
    if assignment.campaign.slug != slug or assignment.annotator_id != request.user.pk:
        raise Http404("No such assignment")
    return assignment


def _since_last_action_ms(assignment: Assignment, *, maximum: int) -> int | None:
    """Time since the last draft action: every one renews the lease to ``now + lease``."""
    if assignment.lease_expires_at is None:
        return None
    last = assignment.lease_expires_at - timedelta(seconds=assignment.campaign.lease_seconds)
    return clamp_ms(int((timezone.now() - last).total_seconds() * 1000), maximum=maximum)


# Where the session's start is kept: campaign id -> ISO time, in the Django session (which a
# login starts afresh and a logout ends).
SESSION_SINCE = "labeling:session-since"


def _session_since(request: HttpRequest, campaign: Campaign) -> datetime:
    """When this labelling session began: the first time the page was opened since logging in."""
    started = request.session.get(SESSION_SINCE, {})
    key = str(campaign.pk)
    if key in started:
        try:
            return datetime.fromisoformat(started[key])
        except (TypeError, ValueError):
            pass
    now = timezone.now()
    request.session[SESSION_SINCE] = {**started, key: now.isoformat()}
    return now


def _next_context(request: HttpRequest, *, campaign: Campaign, notice: str | None = None) -> dict:
    """The context of the workspace: the annotator's next solution, or why there is none; with
    the campaign's progress and what the annotator did in this session (the page's head)."""
    context: dict = {"campaign": campaign, "notice": notice}
    refusal: str | None = None
    try:
        assignment = queue.assignment_next(campaign=campaign, annotator=request.user)
    except queue.LabelingError as error:
        assignment, refusal = None, error.detail
        # Said, with the score and the pass mark, instead of the work left.
        context["screening_failed"] = isinstance(error, queue.ScreeningFailed)
    # After the claim, as Home would count now (the served solution is no longer "left").
    # One query for the page's head: what is left, today, this session, and any rejections.
    mine = home_selectors.my_figures(
        user=request.user, campaigns=[campaign], session_since=_session_since(request, campaign)
    )[campaign.pk]
    context["mine"] = mine
    context["session"] = mine.session
    context["rejections"] = (
        labelling.my_recent_rejections(campaign=campaign, user=request.user)
        if mine.rejected_recently
        else []
    )
    if refusal is not None:
        return {**context, "refusal": refusal}
    if assignment is None:
        nothing = labelling.queue_no_work(campaign=campaign, annotator=request.user)
        # The page looks again by itself when a lease is due to expire, at least once a minute.
        retry_in = min(nothing.retry_after, 60) if nothing.retry_after else None
        return {**context, "no_work": nothing, "retry_in": retry_in}
    assignment.campaign = campaign
    return {
        **context,
        "page": LabelPage.build(labelling.assignment_view(assignment=assignment)),
        "p1": queue.phase1_page(assignment=assignment),
    }


def _page_context(assignment: Assignment, *, error: str | None = None) -> dict:
    view = labelling.assignment_view(assignment=assignment)
    return {
        "campaign": assignment.campaign,
        "page": LabelPage.build(view),
        "p1": queue.phase1_page(assignment=assignment),
        "error": error,
    }


def _render(request: HttpRequest, context: dict, *, status: int = 200) -> HttpResponse:
    """The whole page, or only the workspace for htmx."""
    name = f"{TEMPLATE}#workspace" if request.htmx else TEMPLATE
    return render(request, name, context, status=status)


def _label_url(assignment: Assignment) -> str:
    return reverse("labeling:label", kwargs={"slug": assignment.campaign.slug})


def _drafted(request: HttpRequest, assignment: Assignment) -> HttpResponse:
    """After a draft change: htmx gets the new steps partial, a plain form the page again."""
    if not request.htmx:
        return redirect(_label_url(assignment))
    context = _page_context(assignment)
    return render(request, _steps_partial(context), context)


def _steps_partial(context: dict) -> str:
    """The partial that holds the steps: phase 1 mode's candidates, or the steps to rate."""
    return f"{TEMPLATE}#{'phase1' if context['p1'] is not None else 'steps'}"


def _finished(request: HttpRequest, assignment: Assignment, *, notice: str) -> HttpResponse:
    """After a submission or a skip: the next solution (htmx) or a redirect to it."""
    if not request.htmx:
        messages.success(request, notice)
        return redirect(_label_url(assignment))
    return _render(request, _next_context(request, campaign=assignment.campaign, notice=notice))


def _refused(
    request: HttpRequest, assignment: Assignment, error: queue.LabelingError | str
) -> HttpResponse:
    """Say why an action was refused, next to the steps (htmx) or as a message (plain forms).

    An assignment that is no longer the annotator's to change (submitted elsewhere, or its
    lease taken by someone else) cannot be shown again: the next solution is, with the reason.
    """
    if isinstance(error, queue.NotLeaseHolder | queue.NotAMember):
        raise Http404("No such assignment")
    if isinstance(error, queue.MembershipInactive):
        raise PermissionDenied(error.detail)
    message = error if isinstance(error, str) else error.detail
    closed = isinstance(error, queue.LeaseTaken | queue.AssignmentClosed)
    # 409: the page is behind the server (closed, or drafts changed in another tab).
    status = 409 if closed or isinstance(error, queue.DraftsChanged) else 400
    if not request.htmx:
        messages.error(request, message)
        return redirect(_label_url(assignment))
    if closed:
        context = _next_context(request, campaign=assignment.campaign, notice=message)
        return retarget(_render(request, context, status=status), "#workspace")
    context = _page_context(assignment, error=message)
    # The steps with the reason, where they are, whichever element the form targeted (a
    # submission targets the workspace).
    return retarget(render(request, _steps_partial(context), context, status=status), "#steps")


# Said after a quality-control question is submitted (never before), without the step: the
# annotator can still amend their work, and the notice must not hand them the answer. Keyed by
# how it was missed (``labelling.qc_first_error_missed``).
QC_MISSED = {
    "elsewhere": (
        " That was a quality-control question, and you missed its first error: your first −1"
        " was not on the step the reference marks as the first wrong one."
    ),
    "no_negative": (
        " That was a quality-control question, and you missed its first error: you rated no"
        " step −1, and the reference marks one of its steps as wrong."
    ),
}


def _submitted_notice(result: queue.SubmitResult) -> str:
    said = {
        FinishReason.SOLUTION: "Submitted.",
        FinishReason.FOUND_ERROR: "Submitted: error found.",
        FinishReason.GIVE_UP: "You gave up on that one; your ratings are kept.",
        FinishReason.BAD_PROBLEM: "Reported as a bad problem. Thank you.",
    }[FinishReason(result.finish_reason)]
    if result.screening == Membership.Screening.PASSED:
        said += " You passed the screening: welcome aboard."
    return said
