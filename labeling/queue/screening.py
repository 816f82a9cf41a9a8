"""Membership and screening: the lock on an annotator's membership, and the screening gate."""

from __future__ import annotations

from labeling.gold.scores import GoldScore, gold_score
from labeling.models import Assignment, Campaign, Membership, Solution, Step, StepLabel
from labeling.queue.errors import MembershipInactive, NotAMember, ScreeningFailed
from labeling.queue.shared import for_update_clause, model_columns, model_fetch


def membership_lock_sql() -> str:
    """The lock on one membership row (``campaign_id``, ``user_id``), read by ``model_fetch``."""
    return (
        f"SELECT {model_columns(Membership)} FROM annotators_membership"
        " WHERE campaign_id = %s AND user_id = %s" + for_update_clause()
    )


def membership_lock(*, campaign_id: int, annotator) -> Membership:
    """Lock the annotator's membership row: it serialises that person's writes in the campaign."""
    membership = model_fetch(Membership, membership_lock_sql(), [campaign_id, annotator.pk])
    if membership is None:
        raise NotAMember()
    return membership


def may_work_check(*, campaign: Campaign, membership: Membership) -> None:
    """Refuse a member who may not be served now (paused, or failed screening): the claim asks
    before it serves anything, so the refusal says why instead of "no work"."""
    if not membership.is_active:
        # Paused by the QC pause rule: the reason and its figures, not just "ask a manager".
        raise MembershipInactive(membership.pause_notice or None)
    failed = Membership.screening_failed_notice(
        campaign=campaign, screening=membership.screening, score=membership.screening_score
    )
    if failed:
        raise ScreeningFailed(failed)


def screening_score(*, campaign: Campaign, annotator_id: int) -> GoldScore:
    """The annotator's score (``labeling.gold.scores``) over their submitted screening solutions."""
    done = Assignment.objects.filter(
        campaign=campaign,
        annotator_id=annotator_id,
        status__in=Assignment.DONE_STATUSES,
        solution__kind=Solution.Kind.SCREENING,
    )
    gold: dict[int, list[tuple[int, int | None]]] = {}
    for solution_id, index, rating in (
        Step.objects.filter(solution__in=done.values("solution_id"))
        .order_by("solution_id", "index")
        .values_list("solution_id", "index", "gold_rating")
    ):
        gold.setdefault(solution_id, []).append((index, rating))
    given: dict[int, dict[int, int]] = {}
    for solution_id, index, rating in StepLabel.objects.filter(
        assignment__in=done, rating__isnull=False
    ).values_list("step__solution_id", "step__index", "rating"):
        given.setdefault(solution_id, {})[index] = rating
    return gold_score(
        ((steps, given.get(solution_id, {})) for solution_id, steps in gold.items()),
        stop_at_first_error=campaign.stop_at_first_error,
    )


def screening_evaluate(*, campaign: Campaign, membership: Membership) -> str:
    """Score the annotator once no screening solution is left for them; returns the state.

    Score: ``screening_score(...).score`` (kappa with gold and the share of first errors found,
    ``labeling.gold.scores``) over all their submitted screening solutions; passed when it reaches
    ``campaign.screening_threshold``. Stays pending while a screening solution is left for them,
    and while they have submitted none (a campaign without screening solutions has no gate to
    pass). With no scored step at all the gate passes.
    """
    if membership.screening != Membership.Screening.PENDING:
        return membership.screening
    done = Assignment.objects.filter(
        campaign=campaign,
        annotator_id=membership.user_id,
        status__in=Assignment.DONE_STATUSES,
        solution__kind=Solution.Kind.SCREENING,
    )
    left = (
        Solution.objects.filter(campaign=campaign, kind=Solution.Kind.SCREENING, is_open=True)
        .exclude(pk__in=done.values("solution_id"))
        .exists()
    )
    if left or not done.exists():
        return membership.screening
    score = screening_score(campaign=campaign, annotator_id=membership.user_id).score
    passed = score is None or score >= campaign.screening_threshold
    membership.screening = Membership.Screening.PASSED if passed else Membership.Screening.FAILED
    membership.screening_score = score
    membership.save(update_fields=["screening", "screening_score"])
    return membership.screening
