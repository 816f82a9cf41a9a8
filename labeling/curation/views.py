"""The data browser: find any solution of a campaign, see who labelled what, act on many at once.

Managers and reviewers browse; managers act. The filters are ``labeling.curation.filters``'
(declared once, shared with the API's solution list and exports); they live in the query string,
so a view can be bookmarked and shared. Bulk actions (requeue, archive, restore, make gold from
the consensus) go through ``labeling.curation.actions``: a few solutions at once in the request,
more as a background job the page follows. "Export this selection" hands the same filters to the
export page. The item page shows every annotator's ratings side by side, gold, reviews, the
active PRM's step scores (from the scorers ``learning`` registers with ``labeling.scores``: the
PRM lives above this app), the queue state and the solution's history; managers make it gold
or change its ground truth from there.
"""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from common.pages import query_id
from labeling.curation import actions, filters, selectors
from labeling.endpoints import sampler_endpoints
from labeling.gold import selectors as gold_selectors
from labeling.gold import services as gold_services
from labeling.models import (
    Solution,
    SolutionBulkAction,
    SolutionEvent,
)
from labeling.permissions import MANAGE, REVIEW, campaign_for, campaign_page

BULK_ACTIONS = (
    ("requeue", "Requeue for more labels"),
    ("archive", "Archive"),
    ("restore", "Restore"),
    ("gold_qc", "Make QC gold from the consensus"),
    ("gold_screening", "Make screening gold from the consensus"),
    ("adjudicate", "Send to adjudication"),
    ("review", "Send for review"),
    ("export", "Export"),
)


def _filter_from(request: HttpRequest) -> tuple[filters.SolutionFilter, str | None]:
    try:
        return filters.SolutionFilter.from_params(request.GET), None
    except filters.FilterError as error:
        return filters.SolutionFilter(), f"{error.field}: {error.message}"


@login_required
@require_GET
def solution_browser(request: HttpRequest, slug: str) -> HttpResponse:
    """Every solution of the campaign, searched, filtered and sorted as the query string says."""
    campaign, membership = campaign_for(request.user, slug, roles=REVIEW)
    solution_filter, error = _filter_from(request)
    cursor = request.GET.get("cursor")
    job_id = request.GET.get("job", "").strip()
    browse = selectors.solutions_browse(
        campaign=campaign,
        solution_filter=solution_filter,
        cursor=cursor,
        job_id=_int(job_id) if job_id else None,
        error=error,
    )
    query = solution_filter.querystring()
    next_url = None
    if browse.page.next_cursor:
        next_url = "?" + (query + "&" if query else "") + f"cursor={browse.page.next_cursor}"
    can_manage = request.user.is_superuser or (membership and membership.role in MANAGE)
    facets = browse.facets
    return campaign_page(
        request,
        "labeling/browser.html",
        campaign,
        membership,
        {
            "filter": solution_filter,
            "values": solution_filter.values,
            "error": browse.error,
            "page": browse.page,
            "count": browse.count,
            "more": browse.more,
            "query": solution_filter.querystring(with_sort=False),
            "view_query": query,
            "next_url": next_url,
            "specs": filters.FILTERS_BY_NAME,
            "choice_filters": [
                (
                    filters.FILTERS_BY_NAME[n],
                    solution_filter.values.get(n, []),
                    _with_counts(filters.FILTERS_BY_NAME[n], facets.get(n)),
                )
                for n in ("kind", "state", "answer", "review")
            ],
            "bool_filters": [
                (filters.FILTERS_BY_NAME[n], solution_filter.values.get(n))
                for n in ("negative", "flagged", "disagree")
            ],
            "sorts": filters.SORTS,
            "generators": browse.generators,
            "annotators": browse.annotators,
            "chips": filter_chips(solution_filter, annotators=dict(browse.annotators)),
            "job": browse.job,
            "actions": BULK_ACTIONS,
            "may_act": can_manage,
        },
        status=400 if browse.error else 200,
    )


def _with_counts(spec: filters.FilterSpec, counts: dict[str, int] | None) -> list[tuple]:
    """A facet's choices as ``(value, text, count or None)``."""
    return [
        (value, text, None if counts is None else counts.get(value, 0))
        for value, text in spec.choices
    ]


@dataclass(frozen=True)
class Chip:
    """One active filter on the browser: what it says, and the same page without it."""

    text: str
    remove_query: str


def filter_chips(solution_filter: filters.SolutionFilter, *, annotators: dict) -> list[Chip]:
    """The filters set, one chip a value (``Queue state: open``), each with the query string
    that drops only it; people named as the "Labelled by" list names them."""
    chips = []
    for name, value in solution_filter.values.items():
        spec = filters.FILTERS_BY_NAME[name]
        if name == "id":
            text = f"{len(value)} selected solution{'s' if len(value) != 1 else ''}"
            chips.append(Chip(text, solution_filter.without(name).querystring()))
            continue
        words = dict(spec.choices)
        for item in value if isinstance(value, list) else [value]:
            if name == "annotator":
                shown = annotators.get(item, f"account {item}")
            elif isinstance(item, bool):
                shown = "yes" if item else "no"
            else:
                shown = words.get(item, str(item)).split(":")[0]
            remove = solution_filter.without(name, item if spec.many else None)
            chips.append(Chip(f"{spec.label}: {shown}", remove.querystring()))
    return chips


def _int(raw: str) -> int:
    return int(raw) if is_db_id(raw) else 0


def is_db_id(value: object) -> bool:
    """A database id as a form sends it (``common.pages.query_id``: ASCII digits, at most 18;
    ``"²".isdigit()`` is true, and a 20-digit number is no 64-bit id: both are refused here,
    before any work starts)."""
    return isinstance(value, str) and query_id(value) is not None


class BulkActionForm(forms.Form):
    """What to do, and to what: the ticked solutions (``id``) or all the filter matches."""

    action = forms.ChoiceField(choices=BULK_ACTIONS)
    scope = forms.ChoiceField(choices=(("selected", "selected"), ("all", "all matching")))
    query = forms.CharField(required=False, max_length=20_000)
    # The page's sort, kept for the page the action returns to (the selection has none).
    sort = forms.ChoiceField(required=False, choices=[(name, name) for name, _ in filters.SORTS])
    id = forms.TypedMultipleChoiceField(
        required=False,
        coerce=int,
        choices=(),
        error_messages={"invalid_choice": "%(value)s is not a solution id."},
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Ids are checked against the campaign when the filter is applied, not listed here.
        self.fields["id"].valid_value = is_db_id

    def problems(self) -> str:
        """What is wrong with the request, in words (for the 400)."""
        return " ".join(f"{name}: {' '.join(errors)}" for name, errors in self.errors.items())

    def selection(self) -> filters.SolutionFilter:
        """The solutions the action applies to, as a filter (a list of ids is one too)."""
        if self.cleaned_data["scope"] == "selected":
            ids = self.cleaned_data["id"]
            if not ids:
                raise filters.FilterError("id", "Tick the solutions to act on first.")
            return filters.SolutionFilter(values={"id": ids[: filters.MAX_IDS]})
        return filters.SolutionFilter.from_params(QueryDict(self.cleaned_data["query"]))


@login_required
@require_POST
def solution_browser_action(request: HttpRequest, slug: str) -> HttpResponse:
    """A bulk action on the ticked solutions or on all that match the filter (managers)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    form = BulkActionForm(request.POST)
    back = reverse("labeling:browser", kwargs={"slug": campaign.slug})
    if not form.is_valid():
        return HttpResponse(
            f"Choose an action and the solutions to apply it to ({form.problems()})",
            status=400,
            content_type="text/plain",
        )
    query = form.cleaned_data["query"]
    try:
        selection = form.selection()
    except filters.FilterError as error:
        messages.error(request, error.message)
        return redirect(f"{back}?{_with_sort(query, form.cleaned_data['sort'])}")
    action = form.cleaned_data["action"]
    if action == "export":
        export_url = reverse("exports:list", kwargs={"slug": campaign.slug})
        return redirect(f"{export_url}?{selection.querystring(with_sort=False)}")
    job = actions.bulk_action_create(
        campaign=campaign, action=action, solution_filter=selection, created_by=request.user
    )
    if job.status == SolutionBulkAction.Status.DONE:
        messages.success(request, f"{job.get_action_display()}: {job.changed} solution(s).")
    elif job.status == SolutionBulkAction.Status.FAILED:
        messages.error(request, job.error)
    return redirect(f"{back}?{_with_sort(query, form.cleaned_data['sort'], job=str(job.pk))}")


def _with_sort(query: str, sort: str, **more: str) -> str:
    """The browser's query string again, with the sort the page had (and ``more``)."""
    again = QueryDict(query, mutable=True)
    if sort:
        again["sort"] = sort
    for name, value in more.items():
        again[name] = value
    return again.urlencode()


# --- The item page ---------------------------------------------------------------------------


class GoldFromLabelsForm(forms.Form):
    kind = forms.ChoiceField(choices=[c for c in Solution.Kind.choices if c[0] != "regular"])
    source = forms.CharField(
        max_length=20, help_text="An assignment id (that annotator's ratings) or 'consensus'."
    )

    def clean_source(self) -> str:
        source = self.cleaned_data["source"]
        if source != "consensus" and not is_db_id(source):
            raise forms.ValidationError("source is an assignment id or 'consensus'.")
        return source


class GroundTruthForm(forms.Form):
    ground_truth_answer = forms.CharField(max_length=2000, required=False, strip=True)


@login_required
@require_GET
def solution_item(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """One solution with every label on it (managers and reviewers)."""
    campaign, membership = campaign_for(request.user, slug, roles=REVIEW)
    # The PRM's step scores cost a model load on a process's first page (seconds): the page
    # comes without them and asks for them once shown (``?scores=now``, the steps table alone).
    scores_now = request.GET.get("scores") == "now"
    context = selectors.solution_item(campaign=campaign, pk=pk, scores_now=scores_now)
    solution = context["solution"]
    context["back_query"] = request.GET.get("back", "")
    context["may_act"] = request.user.is_superuser or (
        membership is not None and membership.role in MANAGE
    )
    context["evidence_models"] = (
        [(f"{e.name}:{m}", f"{m} ({e.title})") for e in sampler_endpoints() for m in e.models]
        if context["may_act"]
        else []
    )
    context["gold_form"] = GoldFromLabelsForm()
    context["truth_form"] = GroundTruthForm(
        initial={"ground_truth_answer": solution.problem.ground_truth_answer}
    )
    template = "labeling/browser_item.html"
    if scores_now and getattr(request, "htmx", False):
        template += "#steps-table"
    return campaign_page(request, template, campaign, membership, context)


ITEM_ACTIONS = {"requeue", "archive", "restore", "gold", "ground_truth"}


@login_required
@require_POST
def solution_item_action(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """One action on one solution (managers): requeue, archive, restore, make gold, ground truth."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    solution = selectors.campaign_solution(campaign=campaign, pk=pk)
    action = request.POST.get("action", "")
    item_url = reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": pk})
    if back := request.POST.get("back", ""):
        # The browser's filters, so "Back to the browser" still returns to the same view.
        query = QueryDict(mutable=True)
        query["back"] = back
        item_url += "?" + query.urlencode()
    if action not in ITEM_ACTIONS:
        return HttpResponse("Unknown action.", status=400)
    one = selectors.solution_selection(solution=solution)
    if action == "requeue":
        n = actions.solutions_requeue(campaign=campaign, solutions=one, actor=request.user)
        _say(request, n, "Requeued for one more label.", "An archived solution: restore it first.")
    elif action == "archive":
        n = actions.solutions_archive(campaign=campaign, solutions=one, actor=request.user)
        _say(request, n, "Archived: it left the queue; its labels are kept.", "Already archived.")
    elif action == "restore":
        n = actions.solutions_restore(campaign=campaign, solutions=one, actor=request.user)
        _say(request, n, "Restored.", "It was not archived.")
    elif action == "ground_truth":
        form = GroundTruthForm(request.POST)
        if not form.is_valid():
            return HttpResponse("A ground-truth answer is at most 2,000 characters.", status=400)
        graded = actions.problem_ground_truth_set(
            problem=solution.problem,
            answer=form.cleaned_data["ground_truth_answer"],
            actor=request.user,
        )
        messages.success(request, f"Ground truth saved; {graded} solution(s) graded again.")
    else:
        form = GoldFromLabelsForm(request.POST)
        if not form.is_valid():
            problems = " ".join(" ".join(errors) for errors in form.errors.values())
            return HttpResponse(
                f"Choose the kind and whose ratings to use ({problems})",
                status=400,
                content_type="text/plain",
            )
        try:
            gold = gold_selectors.gold_from_labels(
                solution=solution, source=form.cleaned_data["source"]
            )
            gold_services.solution_gold_set(
                solution=solution, kind=form.cleaned_data["kind"], gold=gold
            )
        except gold_services.GoldError as error:
            messages.error(request, str(error))
        else:
            actions.solution_event_add(
                solution=solution,
                action=SolutionEvent.Action.MADE_GOLD,
                actor=request.user,
                detail={"kind": form.cleaned_data["kind"], "from": form.cleaned_data["source"]},
            )
            messages.success(request, f"Now a {solution.get_kind_display()} question.")
    return redirect(item_url)


def _say(request: HttpRequest, n: int, done: str, nothing: str) -> None:
    if n:
        messages.success(request, done)
    else:
        messages.info(request, nothing)
