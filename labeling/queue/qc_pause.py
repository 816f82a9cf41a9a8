"""The campaign's QC pause rule: stop serving an annotator whose recent QC answers are careless.

With ``Campaign.qc_pause`` on, every submission of a quality-control question scores the
annotator's last ``qc_pause_window`` (N) submitted QC questions with the screening gate's own
score (``labeling.gold.scores``: Cohen's kappa with the gold ratings and the share of gold first
errors found); under ``qc_pause_threshold`` their membership is paused, with the reason and the
figures recorded on it. It runs inside the submit's transaction, on the membership row the submit
already holds locked, and only for QC submissions, so regular work pays nothing for it.

Who: annotators only. Managers are never paused, nor reviewers (a paused membership lets nobody
into the campaign's pages, and a reviewer's work is reviewing). Nobody is paused before N
answers: fewer would be too noisy to stop someone's work on. After a manager resumes someone,
only QC questions answered after that count (``Membership.resumed_at``).
"""

from __future__ import annotations

from django.utils import timezone

from labeling.gold.scores import GoldScore, gold_score
from labeling.models import Assignment, Campaign, Membership, Solution, Step, StepLabel
from labeling.queue.leases import membership_pause


def qc_window_score(*, campaign: Campaign, membership: Membership) -> tuple[GoldScore, int]:
    """The score of the annotator's last ``campaign.qc_pause_window`` submitted QC questions
    (answered after ``membership.resumed_at``, if set), and how many there were (at most N)."""
    recent = Assignment.objects.filter(
        campaign=campaign,
        annotator_id=membership.user_id,
        status__in=Assignment.DONE_STATUSES,
        solution__kind=Solution.Kind.QUALITY_CONTROL,
    )
    if membership.resumed_at is not None:
        recent = recent.filter(submitted_at__gt=membership.resumed_at)
    window = max(1, campaign.qc_pause_window)
    meta = list(recent.order_by("-submitted_at", "-pk").values_list("pk", "solution_id")[:window])
    gold: dict[int, list[tuple[int, int | None]]] = {}
    for solution_id, index, rating in (
        Step.objects.filter(solution_id__in={sid for _, sid in meta})
        .order_by("solution_id", "index")
        .values_list("solution_id", "index", "gold_rating")
    ):
        gold.setdefault(solution_id, []).append((index, rating))
    given: dict[int, dict[int, int]] = {}
    for assignment_id, index, rating in (
        StepLabel.objects.filter(assignment_id__in=[pk for pk, _ in meta], rating__isnull=False)
        .order_by()
        .values_list("assignment_id", "step__index", "rating")
    ):
        if rating is not None:  # filtered above; for the type checker
            given.setdefault(assignment_id, {})[index] = rating
    score = gold_score(
        ((gold.get(sid, []), given.get(pk, {})) for pk, sid in meta),
        stop_at_first_error=campaign.stop_at_first_error,
    )
    return score, len(meta)


def pause_reason_text(*, score: GoldScore, questions: int, threshold: float, when) -> str:
    """The reason recorded on a paused membership, as the annotator and the manager read it."""
    found = (
        f"; you found the first error in {score.found} of the {score.errors} with one"
        if score.errors
        else ""
    )
    kappa = "undefined" if score.kappa is None else f"{score.kappa:.2f}"
    return (
        f"Paused on {when:%Y-%m-%d %H:%M} UTC by the campaign's quality rule: your score on your "
        f"last {questions} quality-control questions was {score.score:.2f}, under the "
        f"campaign's {threshold:.2f} (agreement with the reference ratings beyond chance, "
        f"kappa, {kappa}{found})."
    )


def qc_pause_evaluate(*, campaign: Campaign, membership: Membership) -> bool:
    """Pause the annotator if the rule says so; True when it did (see the module docstring).

    ``membership`` is the row the submit locked. The pause is ``membership_pause``, as a
    manager's: their leases end and the solutions they held go back to the queue at once.
    """
    if (
        not campaign.qc_pause
        or membership.role != Membership.Role.ANNOTATOR
        or not membership.is_active
    ):
        return False
    score, questions = qc_window_score(campaign=campaign, membership=membership)
    threshold = campaign.qc_pause_threshold
    if questions < max(1, campaign.qc_pause_window) or score.score is None:
        return False
    if score.score >= threshold:
        return False
    now = timezone.now()
    membership_pause(
        membership=membership,
        reason=pause_reason_text(score=score, questions=questions, threshold=threshold, when=now),
        figures=score.as_dict() | {"questions": questions, "threshold": threshold},
        now=now,
    )
    return True
