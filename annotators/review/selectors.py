"""Reads behind the review and adjudication pages. No writes here.

The review queue grows with the labels: it is cut in the database with an indexed order and no
total count. A disputed step is one on which submitted annotators disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Exists, F, Max, Min, OuterRef, Subquery
from django.db.models.functions import Left

from annotators.models import CampaignSnapshot
from annotators.selectors import annotator_figures
from labeling.models import (
    Adjudication,
    AdjudicationRequest,
    Assignment,
    Campaign,
    Review,
    ReviewRequest,
    Solution,
    Step,
    StepEvidence,
    StepLabel,
    ratings_disagree,
)
from labeling.queue.review import REVIEWABLE
from labeling.templatetags.labeling_tags import EXCERPT_SOURCE_CHARS

REVIEW_PAGE = 25


ADJUDICATION_PAGE = 50


def review_queue(
    *,
    campaign: Campaign,
    state: str = "unreviewed",
    annotator_id: int | None = None,
    kind: str = "",
    annotator_ids: list[int] | None = None,
    disagreement: bool = False,
    oldest_first: bool = False,
    page: int = 1,
    per_page: int = REVIEW_PAGE,
) -> tuple[list[dict], bool]:
    """One page of submitted assignments to review, and whether another page follows.

    No total count: with a disagreement filter it would test every assignment of the campaign,
    while a page stops at its last row (ordered by the ``assignment_by_time`` index).
    """
    # Rejected work stays in the list (filter "rejected"): a reviewer may change their mind.
    qs = Assignment.objects.filter(campaign=campaign, status__in=REVIEWABLE)
    if state == "sent":
        # A manager sent the solution for review (``ReviewRequest``): its work that nobody has
        # reviewed since, reviewed before or not.
        request = ReviewRequest.objects.filter(solution_id=OuterRef("solution_id"))
        since = Review.objects.filter(
            assignment=OuterRef("pk"), created_at__gte=OuterRef("sent_at")
        )
        qs = (
            qs.filter(Exists(request))
            .annotate(sent_at=Subquery(request.values("requested_at")[:1]))
            .filter(~Exists(since))
        )
    elif state == "unreviewed":
        qs = qs.filter(~Exists(Review.objects.filter(assignment=OuterRef("pk"))))
    elif state in Review.Decision.values:
        qs = qs.filter(review__decision=state)
    if annotator_id is not None:
        qs = qs.filter(annotator_id=annotator_id)
    if kind:
        qs = qs.filter(solution__kind=kind)
    if annotator_ids is not None:
        qs = qs.filter(annotator_id__in=annotator_ids)
    if disagreement:
        # Its labels that another annotator's submitted work rates differently (the rule's home:
        # ``StepLabelQuerySet``; this assignment may be rejected work, compared with the rest).
        mine = StepLabel.objects.filter(assignment_id=OuterRef("pk"))
        qs = qs.filter(Exists(mine.contradicted()))
    order = ("submitted_at", "id") if oldest_first else ("-submitted_at", "-id")
    start = (max(page, 1) - 1) * per_page
    rows = list(
        qs.order_by(*order).values(
            "id",
            "solution_id",
            "submitted_at",
            "finish_reason",
            "total_time_ms",
            "annotator_id",
            annotator_name=F("annotator__username"),
            kind=F("solution__kind"),
            answer_is_correct=F("solution__answer_is_correct"),
            problem=Left("solution__problem__text", EXCERPT_SOURCE_CHARS),
            decision=F("review__decision"),
        )[start : start + per_page + 1]
    )
    return rows[:per_page], len(rows) > per_page


@dataclass(frozen=True)
class ReviewedStep:
    """One step as the reviewer sees it: gold, this annotator's label, the others' ratings."""

    index: int
    text: str
    gold: int | None
    rating: int | None
    flagged: bool
    correction: int | None  # the reviewer's, if any
    human_completion: str | None
    others: list[int | None]  # the other annotators' ratings, in ``ReviewDetail.others`` order


@dataclass(frozen=True)
class ReviewDetail:
    assignment: Assignment
    solution: Solution
    steps: list[ReviewedStep]
    others: list[str]  # usernames of the other annotators who submitted this solution
    review: Review | None

    @property
    def rated_indexes(self) -> list[int]:
        return [s.index for s in self.steps if s.rating is not None]


def review_detail(*, campaign: Campaign, assignment_id: int) -> ReviewDetail | None:
    """A submitted assignment as a reviewer sees it: the problem, every step with its gold
    rating, this annotator's ratings and the other annotators' ratings of the same steps."""
    assignment = (
        Assignment.objects.select_related("annotator", "solution__problem")
        .filter(campaign=campaign, pk=assignment_id, status__in=REVIEWABLE)
        .first()
    )
    if assignment is None:
        return None
    review = Review.objects.filter(assignment=assignment).select_related("reviewer").first()
    corrections = review.corrections if review else {}
    others = list(
        Assignment.objects.filter(
            solution_id=assignment.solution_id, status=Assignment.Status.SUBMITTED
        )
        .exclude(pk=assignment.pk)
        .select_related("annotator")
        .order_by("submitted_at", "id")
    )
    ratings: dict[tuple[int, int], StepLabel] = {
        (label.assignment_id, label.step_id): label
        for label in StepLabel.objects.filter(
            assignment_id__in=[assignment.pk, *(o.pk for o in others)]
        )
    }
    steps = []
    for step in Step.objects.filter(solution_id=assignment.solution_id).order_by("index"):
        own = ratings.get((assignment.pk, step.pk))
        correction = corrections.get(str(step.index))
        steps.append(
            ReviewedStep(
                index=step.index,
                text=step.text,
                gold=step.gold_rating,
                rating=own.rating if own else None,
                flagged=bool(own and own.flagged),
                correction=int(correction) if correction is not None else None,
                human_completion=(own.human_completion or {}).get("text") if own else None,
                others=[getattr(ratings.get((o.pk, step.pk)), "rating", None) for o in others],
            )
        )
    return ReviewDetail(
        assignment=assignment,
        solution=assignment.solution,
        steps=steps,
        others=[o.annotator.get_username() for o in others],
        review=review,
    )


def review_evidence(*, campaign: Campaign, solution: Solution) -> dict[int, list[StepEvidence]]:
    """step index -> what machines said about it, for the review page of a campaign that shows
    reviewers the evidence (``Campaign.reviewers_see_evidence``); empty when it does not. The
    labelling page never reads this: annotators see no model opinion."""
    if not campaign.reviewers_see_evidence:
        return {}
    evidence: dict[int, list[StepEvidence]] = {}
    for item in StepEvidence.objects.filter(solution=solution).select_related("step"):
        evidence.setdefault(item.step.index, []).append(item)
    return evidence


def disputed_steps(*, campaign: Campaign):
    """The steps of the campaign's regular solutions that annotators disagree on, one row per
    step with ``step_id``, ``n`` (submitted ratings) and ``low`` / ``high`` (the extreme
    ratings): ``StepLabelQuerySet.disputed_steps``, the rule's home."""
    # Only the solutions whose kept count says they have any (``solution_by_disputes``): the
    # GROUP BY then reads their labels alone, not the campaign's.
    disputed = Solution.objects.filter(
        campaign=campaign, kind=Solution.Kind.REGULAR, disputed_steps__gt=0
    )
    return StepLabel.objects.filter(
        assignment__campaign=campaign, assignment__solution__in=disputed.values("pk")
    ).disputed_steps()


def adjudication_queue(
    *, campaign: Campaign, state: str = "open", page: int = 1, per_page: int = ADJUDICATION_PAGE
) -> tuple[list[dict], bool]:
    """A page of disputed steps (``open``: not decided yet; ``decided``; ``all``), oldest first,
    with the steps a manager sent (``AdjudicationRequest``) among them, in solution order.

    Each row: the step, its solution and problem, how many ratings and their range, and the
    current decision if any.

    The page is found from the solutions' kept counts (``Solution.disputed_steps``, less the
    steps already decided): only the solutions the page covers have their labels grouped, so a
    page reads a few dozen solutions' labels, not the campaign's.
    """
    solutions = Solution.objects.filter(
        campaign=campaign, kind=Solution.Kind.REGULAR, disputed_steps__gt=0
    )
    per_solution = list(solutions.order_by("pk").values_list("pk", "disputed_steps"))
    if state in ("open", "decided"):
        decided = _decided_disputes(solutions=solutions)
        per_solution = [
            (pk, decided.get(pk, 0) if state == "decided" else n - decided.get(pk, 0))
            for pk, n in per_solution
        ]
    requested, sent = _sent_steps(campaign=campaign, state=state)
    if sent:
        counts = dict(per_solution)
        for solution_id in sent.values():
            counts[solution_id] = counts.get(solution_id, 0) + 1
        per_solution = sorted(counts.items())
    start = (max(page, 1) - 1) * per_page
    wanted = per_page + 1
    before, covered = 0, 0
    window: list[int] = []
    for pk, n in per_solution:
        if not window and before + n <= start:
            before += n
            continue
        if n:
            window.append(pk)
            covered += n
        if before + covered >= start + wanted:
            break
    if not window:
        return [], False
    current = Adjudication.objects.filter(step_id=OuterRef("step_id"), replaced_at__isnull=True)
    rows = (
        StepLabel.objects.filter(assignment__campaign=campaign, assignment__solution_id__in=window)
        .disputed_steps()
        .annotate(
            decided=Subquery(current.values("rating")[:1]),
            solution_id=F("step__solution_id"),
            index=F("step__index"),
            problem=Left("step__solution__problem__text", EXCERPT_SOURCE_CHARS),
        )
    )
    if state == "open":
        rows = rows.filter(decided__isnull=True)
    elif state == "decided":
        rows = rows.filter(decided__isnull=False)
    found = list(rows.order_by("step__solution_id", "step__index"))
    in_window = set(window)
    extra = [step_id for step_id, solution_id in sent.items() if solution_id in in_window]
    if extra:
        found += _sent_rows(step_ids=extra)
        found.sort(key=lambda r: (r["solution_id"], r["index"]))
    for row in found:
        row["requested"] = row["step_id"] in requested
    found = found[start - before : start - before + wanted]
    return found[:per_page], len(found) > per_page


def _sent_steps(*, campaign: Campaign, state: str) -> tuple[set[int], dict[int, int]]:
    """The steps a manager sent to adjudication, and of them (step id -> solution id) those
    that annotators do not disagree on (the others are listed as disputed already) in the
    queue's ``state``. One query when nothing was sent."""
    sent = dict(
        AdjudicationRequest.objects.filter(
            campaign=campaign, solution__kind=Solution.Kind.REGULAR
        ).values_list("step_id", "solution_id")
    )
    requested = set(sent)
    if not sent:
        return requested, {}
    disputed = StepLabel.objects.filter(step_id__in=list(sent)).disputed_steps()
    for row in disputed:
        del sent[row["step_id"]]
    if state in ("open", "decided"):
        decided = set(
            Adjudication.objects.filter(
                step_id__in=list(sent), replaced_at__isnull=True
            ).values_list("step_id", flat=True)
        )
        sent = {k: v for k, v in sent.items() if (k in decided) == (state == "decided")}
    return requested, sent


def _sent_rows(*, step_ids: list[int]) -> list[dict]:
    """The adjudication queue's rows of steps a manager sent, shaped as the disputed ones."""
    rated = StepLabel.submitted_q(through="labels__", rated=True)
    current = Adjudication.objects.filter(step_id=OuterRef("pk"), replaced_at__isnull=True)
    return [
        dict(row)
        for row in Step.objects.filter(pk__in=step_ids)
        .order_by()
        .values("index", "solution_id", step_id=F("pk"))
        .annotate(
            n=Count("labels", filter=rated),
            low=Min("labels__rating", filter=rated),
            high=Max("labels__rating", filter=rated),
            decided=Subquery(current.values("rating")[:1]),
            problem=Left("solution__problem__text", EXCERPT_SOURCE_CHARS),
        )
    ]


def _decided_disputes(*, solutions) -> dict[int, int]:
    """solution id -> its disputed steps that carry a current decision (few: people decide)."""
    decided = Adjudication.objects.filter(
        replaced_at__isnull=True, step__solution__in=solutions.values("pk")
    ).values("step_id")
    still = StepLabel.objects.filter(step_id__in=decided).disputed_steps()
    disputed = [r["step_id"] for r in still]
    counts: dict[int, int] = {}
    for solution_id in Step.objects.filter(pk__in=disputed).values_list("solution_id", flat=True):
        counts[solution_id] = counts.get(solution_id, 0) + 1
    return counts


@dataclass(frozen=True)
class StepRating:
    """One annotator's label of the disputed step, as the reviewer compares them."""

    assignment_id: int
    annotator: str
    rating: int | None
    flagged: bool
    human_completion: str | None
    correction: int | None  # a reviewer's correction of this rating, if any


@dataclass(frozen=True)
class DisputedStep:
    step: Step
    solution: Solution
    steps: list[Step]  # the whole solution, for context
    ratings: list[StepRating]
    current: Adjudication | None
    history: list[Adjudication]  # earlier decisions, newest first

    @property
    def disputed(self) -> bool:
        return ratings_disagree(r.rating for r in self.ratings)


def adjudication_detail(*, campaign: Campaign, step_id: int) -> DisputedStep | None:
    """A step of a regular solution with every current annotator's label of it side by side."""
    step = (
        Step.objects.select_related("solution__problem")
        .filter(pk=step_id, solution__campaign=campaign, solution__kind=Solution.Kind.REGULAR)
        .first()
    )
    if step is None:
        return None
    labels = (
        StepLabel.objects.submitted()
        .filter(step=step)
        .select_related("assignment__annotator")
        .order_by("assignment__submitted_at", "assignment_id")
    )
    corrections = dict(
        Review.objects.filter(assignment__in=labels.values("assignment_id")).values_list(
            "assignment_id", "corrections"
        )
    )
    ratings = []
    for label in labels:
        corrected = (corrections.get(label.assignment_id) or {}).get(str(step.index))
        ratings.append(
            StepRating(
                assignment_id=label.assignment_id,
                annotator=label.assignment.annotator.get_username(),
                rating=label.rating,
                flagged=bool(label.flagged),
                human_completion=(label.human_completion or {}).get("text"),
                correction=int(corrected) if corrected is not None else None,
            )
        )
    decisions = list(Adjudication.objects.filter(step=step).select_related("decided_by"))
    current = next((d for d in decisions if d.replaced_at is None), None)
    return DisputedStep(
        step=step,
        solution=step.solution,
        steps=list(Step.objects.filter(solution_id=step.solution_id).order_by("index")),
        ratings=ratings,
        current=current,
        history=[d for d in decisions if d is not current],
    )


def low_qc_annotators(*, campaign: Campaign, snapshot: CampaignSnapshot | None) -> list[int]:
    """Annotators whose QC score in the snapshot's figures (``labeling.gold.scores``, what
    screening passes on) is below the campaign's screening threshold: the review list's filter."""
    return [
        uid
        for uid, row in annotator_figures(snapshot).items()
        if row.get("qc_score") is not None and row["qc_score"] < campaign.screening_threshold
    ]
