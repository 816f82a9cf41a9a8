"""The manager's, reviewer's and invitee's pages. Each view checks the role, calls one service
or selector, and renders (``campaign_for``: 404 for outsiders, 403 for a role that is not enough).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotators import selectors, services, snapshots
from annotators.dashboard import (
    dashboard_context,
    quality_charts,
    quality_latest,
    with_quality_trends,
)
from annotators.forms import (
    GoldForm,
    InvitationForm,
    MemberForm,
    SignUpForm,
)
from annotators.models import ApiToken
from annotators.stats import qc_agreement
from common import charts
from common.pages import page_number, posted, query_id
from common.tables import Column, table
from labeling import queue
from labeling.gold import selectors as gold_selectors
from labeling.gold.services import GoldError, solution_gold_set
from labeling.models import Campaign, Invitation, Membership, Solution, Step
from labeling.permissions import (
    MANAGE,
    REVIEW,
    campaign_for,
    campaign_page,
)

# --- Members and invitations -------------------------------------------------------------------

MEMBER_COLUMNS = [
    Column("username", "member", link=True),
    Column("role", "role"),
    Column("status", "state"),
    Column("screening", "screening"),
    Column("screening_score", "screening score", numeric=True, fmt="num"),
    Column("assignments", "solutions", numeric=True, fmt="int"),
    Column("labels", "step labels", numeric=True, fmt="int"),
    Column("median_seconds_per_step", "median s / step", numeric=True, fmt="num"),
    Column("qc_score", "QC score", numeric=True, fmt="num"),
    Column("qc_agreement", "QC steps alike", numeric=True, fmt="pct"),
    Column("qc_score_latest", "QC score, latest block", numeric=True, fmt="num"),
    Column("qc_score_trend", "QC trend", fmt="html"),
    Column("consensus_latest", "consensus agreement, latest", numeric=True, fmt="pct"),
    Column("consensus_trend", "consensus trend", fmt="html"),
    Column("kappa", "kappa", numeric=True, fmt="num"),
    Column("last", "last submitted", fmt="time"),
    Column("paused_why", "paused"),
]
# A campaign without screening has nothing pending: its members list has no screening columns.
MEMBER_COLUMNS_UNSCREENED = [c for c in MEMBER_COLUMNS if not c.key.startswith("screening")]


def imported_switch(request: HttpRequest, campaign: Campaign) -> dict:
    """The one switch (``?show_imported=1``) that shows the accounts an import made.

    They are the labelers named in imported files (PRM800K's): nobody logs in with them, so
    lists, filters and charts leave them out unless asked. The context says how many there are
    and links to the page with the switch flipped.
    """
    show = request.GET.get("show_imported") == "1"
    query = request.GET.copy()
    query.pop("page", None)
    if show:
        query.pop("show_imported", None)
    else:
        query["show_imported"] = "1"
    ids = selectors.imported_user_ids(campaign=campaign)
    return {
        "show_imported": show,
        "imported_ids": ids,
        "imported_count": len(ids),
        "imported_toggle": f"{request.path}?{query.urlencode()}" if query else request.path,
    }


@login_required
@require_GET
def member_list(request: HttpRequest, slug: str) -> HttpResponse:
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    context = _snapshot_context(campaign) | imported_switch(request, campaign)
    rows = selectors.members_rows(
        campaign=campaign, snapshot=context["snapshot"], show_imported=context["show_imported"]
    )
    for row in rows:
        row["url"] = reverse("annotators:member", kwargs={"slug": campaign.slug, "pk": row["id"]})
        row |= quality_latest(row["quality"])
    columns = MEMBER_COLUMNS if campaign.requires_screening else MEMBER_COLUMNS_UNSCREENED
    context["members"] = with_quality_trends(
        table(rows, columns, query=request.GET, default_sort="username")
    )
    return campaign_page(request, "annotators/member_list.html", campaign, membership, context)


@login_required
@require_http_methods(["GET", "POST"])
def member_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """One member: change role or state; their screening and QC scores over time (read live)."""
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    member = get_object_or_404(
        Membership.objects.select_related("user", "invitation"), campaign=campaign, pk=pk
    )
    form = MemberForm(posted(request), initial={"role": member.role, "status": member.status})
    if request.method == "POST" and form.is_valid():
        try:
            services.membership_update(
                membership=member,
                role=form.cleaned_data["role"],
                status=form.cleaned_data["status"],
            )
        except services.ManageError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"{member.user.get_username()} updated.")
            return redirect("annotators:member", slug=campaign.slug, pk=member.pk)
    qc = qc_agreement(campaign=campaign, annotator_id=member.user_id)
    chart = charts.line(
        title=f"{member.user.get_username()}: QC score by day (UTC)",
        points=[(d["day"][5:], charts.floor0(d["score"])) for d in qc["days"]],
        fmt=lambda v: f"{v:.2f}",
    )
    screening = (
        queue.screening_score(campaign=campaign, annotator_id=member.user_id).as_dict()
        if member.role == Membership.Role.ANNOTATOR and campaign.requires_screening
        else None
    )
    snapshot = snapshots.snapshot_current(campaign=campaign)
    figures = selectors.annotator_figures(snapshot).get(member.user_id)
    # What the pause rule sees now (three small queries; the rule's own function).
    rule_now = None
    if campaign.qc_pause and member.role == Membership.Role.ANNOTATOR:
        score, questions = queue.qc_window_score(campaign=campaign, membership=member)
        rule_now = {"score": score.score, "questions": questions}
    quality = selectors.snapshot_quality(snapshot, user_id=member.user_id) if figures else None
    return campaign_page(
        request,
        "annotators/member_detail.html",
        campaign,
        membership,
        {
            "member": member,
            "form": form,
            "qc": qc,
            "screening_detail": screening,
            "qc_chart": chart,
            "figures": figures,
            "quality": quality,
            "quality_charts": quality_charts(quality, name=member.display_name),
            "rule_now": rule_now,
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def invitation_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Create invitation links (the new link is shown once, on this response) and list them."""
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    form = InvitationForm(posted(request))
    new_link = None
    if request.method == "POST" and form.is_valid():
        _, token = services.invitation_create(
            campaign=campaign,
            created_by=request.user,
            role=form.cleaned_data["role"],
            max_uses=form.cleaned_data["max_uses"],
            expires_in=form.expires_in,
            note=form.cleaned_data["note"],
        )
        new_link = request.build_absolute_uri(reverse("annotators:join", kwargs={"token": token}))
        form = InvitationForm()
    return campaign_page(
        request,
        "annotators/invitation_list.html",
        campaign,
        membership,
        {
            "form": form,
            "new_link": new_link,
            "invitations": selectors.invitations_list(campaign=campaign),
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    invitation = get_object_or_404(Invitation, campaign=campaign, pk=pk)
    services.invitation_revoke(invitation=invitation)
    messages.success(request, f"Invitation {invitation.token_hint}… revoked.")
    return redirect("annotators:invitations", slug=campaign.slug)


@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link: sign up (or log in) and join the campaign with the invited role."""
    try:
        invitation = services.invitation_find(token=token)
    except services.InvitationRefused as error:
        return render(request, "annotators/join.html", {"error": error}, status=404)
    state = invitation.state()
    campaign = invitation.campaign
    member = None
    if request.user.is_authenticated:
        member = Membership.objects.filter(user=request.user, campaign=campaign).first()
    if state != Invitation.State.ACTIVE and member is None:
        error = services.InvitationRefused(state)
        return render(request, "annotators/join.html", {"error": error}, status=410)
    form = SignUpForm(posted(request)) if not request.user.is_authenticated else None
    if request.method == "POST" and (form is None or form.is_valid()):
        try:
            if form is None:
                member = services.invitation_redeem(token=token, user=request.user)
            else:
                member = services.user_signup(
                    token=token,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password1"],
                    email=form.cleaned_data.get("email") or "",
                )
                login(request, member.user, backend="django.contrib.auth.backends.ModelBackend")
        except services.InvitationRefused as error:
            return render(request, "annotators/join.html", {"error": error}, status=410)
        messages.success(request, f"Welcome to {campaign.name}: you joined as {member.role}.")
        return redirect("labeling:campaign", slug=campaign.slug)
    return render(
        request,
        "annotators/join.html",
        {"invitation": invitation, "campaign": campaign, "form": form, "member": member},
        status=400 if form is not None and form.errors else 200,
    )


# --- Gold ratings ----------------------------------------------------------------------------


@login_required
@require_GET
def gold_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Quality-control and screening solutions; open any solution by id to mark it."""
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    wanted = request.GET.get("solution", "").strip()
    if wanted:
        pk = query_id(wanted)
        if pk is not None and Solution.objects.filter(campaign=campaign, pk=pk).exists():
            return redirect("annotators:gold-edit", slug=campaign.slug, pk=pk)
        messages.error(request, f"This campaign has no solution {wanted}.")
    page = page_number(request)
    solutions, has_next = gold_selectors.gold_solutions(campaign=campaign, page=page)
    return campaign_page(
        request,
        "annotators/gold_list.html",
        campaign,
        membership,
        {
            "solutions": solutions,
            "page": page,
            "has_next": has_next,
            "query": "",
            "gold_warnings": gold_selectors.gold_warnings(campaign=campaign),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def gold_edit(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    solution = get_object_or_404(
        Solution.objects.select_related("problem"), campaign=campaign, pk=pk
    )
    steps = list(Step.objects.filter(solution=solution).order_by("index"))
    initial = {"kind": solution.kind} | {
        f"gold_{s.index}": "" if s.gold_rating is None else str(s.gold_rating) for s in steps
    }
    form = GoldForm(posted(request), initial=initial, step_indexes=[s.index for s in steps])
    if request.method == "POST" and form.is_valid():
        try:
            solution_gold_set(solution=solution, kind=form.cleaned_data["kind"], gold=form.gold())
        except GoldError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Solution {solution.pk} saved.")
            return redirect("annotators:gold", slug=campaign.slug)
    return campaign_page(
        request,
        "annotators/gold_edit.html",
        campaign,
        membership,
        {
            "solution": solution,
            "rows": [(s, form[f"gold_{s.index}"]) for s in steps],
            "form": form,
            "gold_warnings": gold_selectors.gold_warnings(campaign=campaign),
        },
        status=400 if form.errors else 200,
    )


# --- Figures ---------------------------------------------------------------------------------


def _snapshot_context(campaign: Campaign) -> dict:
    """The figures to show, how old they really are (from when their reading began, and the
    solutions submitted since), and whether fresher ones are being computed (the page polls)."""
    snapshot = snapshots.snapshot_current(campaign=campaign)
    pending = snapshots.snapshot_pending(campaign=campaign)
    return {
        "snapshot": snapshot,
        "as_of": (snapshot.started_at or snapshot.computed_at) if snapshot else None,
        "submitted_since": selectors.snapshot_submitted_since(snapshot) if snapshot else 0,
        # The figures' job the page follows (labeling.job_views): the one being computed, else
        # the one shown.
        "figures_job": pending or snapshot,
    }


@login_required
@require_GET
def dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    """Progress, throughput, time, ratings, QC, agreement and the queue, from the snapshot."""
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    context = _snapshot_context(campaign) | imported_switch(request, campaign)
    if context["snapshot"] is not None:
        context |= dashboard_context(
            context["snapshot"].data,
            query=request.GET,
            show_imported=context["show_imported"],
        )
    # Live, not from the snapshot: a pause must show at once (one query).
    context["paused"] = selectors.paused_members(campaign=campaign)
    return campaign_page(request, "annotators/dashboard.html", campaign, membership, context)


@login_required
@require_POST
def snapshot_refresh(request: HttpRequest, slug: str) -> HttpResponse:
    """Ask a worker for fresh figures now; back to the page that asked."""
    campaign, _ = campaign_for(request.user, slug, roles=REVIEW)
    snapshots.snapshot_request(campaign=campaign)
    back = request.POST.get("next", "")
    if not back.startswith(f"/campaigns/{campaign.slug}/"):
        back = reverse("annotators:dashboard", kwargs={"slug": campaign.slug})
    return redirect(back)


AGREEMENT_COLUMNS = [
    Column("username", "annotator"),
    Column("shared", "shared steps", numeric=True, fmt="int"),
    Column("percent", "agreement", numeric=True, fmt="pct"),
    Column("kappa", "Cohen's kappa (mean)", numeric=True, fmt="num"),
    Column("alpha", "alpha on their steps", numeric=True, fmt="num"),
    Column("qc_score", "QC score", numeric=True, fmt="num"),
    Column("qc_agreement", "QC steps alike", numeric=True, fmt="pct"),
]
PAIR_COLUMNS = [
    Column("a", "annotator"),
    Column("b", "annotator"),
    Column("shared", "shared steps", numeric=True, fmt="int"),
    Column("percent", "agreement", numeric=True, fmt="pct"),
    Column("kappa", "Cohen's kappa", numeric=True, fmt="num"),
]


@login_required
@require_GET
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    """Inter-annotator agreement: alpha (nominal, interval), kappa per annotator and per pair."""
    campaign, membership = campaign_for(request.user, slug, roles=REVIEW)
    context = _snapshot_context(campaign) | imported_switch(request, campaign)
    if (snapshot := context["snapshot"]) is not None:
        data = snapshot.data
        shown = context["show_imported"]
        context |= {
            "figures": data["agreement"],
            "annotators": table(
                [
                    r
                    for r in data["annotators"]
                    if r.get("shared") and (shown or not r.get("imported"))
                ],
                AGREEMENT_COLUMNS,
                query=request.GET,
                default_sort="kappa",
                prefix="a_",
            ),
            "pairs": table(
                [p for p in data["agreement"]["pairs"] if shown or not p.get("imported")],
                PAIR_COLUMNS,
                query=request.GET,
                default_sort="-shared",
                prefix="p_",
            ),
        }
    return campaign_page(request, "annotators/agreement.html", campaign, membership, context)


# --- Profile: API tokens -----------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
    """The person's API tokens: create one (its key shown on this response only), list, revoke."""
    new_key, error, status = None, None, 200
    if request.method == "POST":
        try:
            _, new_key = services.api_token_create(
                user=request.user, name=request.POST.get("name", "")
            )
        except services.ManageError as refused:
            error, status = str(refused), 400
    tokens = ApiToken.objects.filter(user=request.user)
    response = render(
        request,
        "annotators/profile.html",
        {"tokens": tokens, "new_key": new_key, "error": error},
        status=status,
    )
    # The key is on this page only: keep it out of every cache.
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, user=request.user, pk=pk)
    services.api_token_revoke(token=token)
    messages.success(request, f"Token “{token.name}” revoked: it is refused from now on.")
    return redirect("annotators:profile")
