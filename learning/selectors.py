"""Reads for the active-learning page: runs, PRM versions and the head of the queue."""

from __future__ import annotations

from dataclasses import dataclass

from labeling.models import Campaign, Solution


def active_learning_runs(*, campaign: Campaign, limit: int = 50):
    """The campaign's latest active-learning runs with their model, newest first."""
    from learning.models import ActiveLearningRun

    return list(
        ActiveLearningRun.objects.filter(campaign=campaign)
        .select_related("model", "requested_by")
        .order_by("-created_at", "-pk")[:limit]
    )


def strategy_estimates(
    *, campaign: Campaign, including: int | None = None
) -> list[tuple[int, dict]]:
    """``(run id, estimate)`` of the campaign's runs that stored one, newest first: the
    succeeded runs and the run ``including`` (the one now choosing for ``auto``). A run under
    ``auto`` stores, beside the estimate of the strategy it ordered by, one for each strategy it
    tried (``data_efficiency["trials"]``): each is listed, under the run's id."""
    from django.db.models import Q

    from learning.models import ActiveLearningRun

    done = Q(status=ActiveLearningRun.Status.SUCCEEDED)
    runs = ActiveLearningRun.objects.filter(
        done | Q(pk=including) if including else done, campaign=campaign
    ).exclude(data_efficiency={})
    return [
        (pk, estimate)
        for pk, stored in runs.order_by("-created_at", "-pk").values_list("pk", "data_efficiency")
        for estimate in (stored, *stored.get("trials", {}).values())
    ]


def scoring_job_latest(*, campaign: Campaign):
    """The campaign's latest scoring job with a served PRM, or None."""
    from machines.models import ScoringJob

    return ScoringJob.objects.filter(campaign=campaign).order_by("-created_at", "-pk").first()


def served_count(*, campaign: Campaign, served) -> int:
    """How many solutions the served PRM ``(endpoint, model)`` has scored (0 without one)."""
    from machines.served import served_scores

    return served_scores(campaign=campaign).count() if served else 0


def prm_models(*, campaign: Campaign):
    """The campaign's PRM versions, oldest first (the metrics chart reads them in order)."""
    from learning.models import PRMModel

    return list(PRMModel.objects.filter(campaign=campaign).order_by("version"))


@dataclass(frozen=True)
class QueueHead:
    size: int
    wrong: int
    correct: int
    ungraded: int
    scored: int
    histogram: list[tuple[str, int]]  # PRM score bins of the head, "0.0-0.1" -> count
    open_total: int


def queue_head(*, campaign: Campaign, size: int = 100, bins: int = 10) -> QueueHead:
    """The first ``size`` open regular solutions in queue order: what annotators get next.

    The queue order itself (priority, then id) is the claim's; a solution's labels are not read.
    """
    open_regular = Solution.objects.filter(
        campaign=campaign, kind=Solution.Kind.REGULAR, is_open=True
    )
    head = list(
        open_regular.order_by("-priority", "pk").values_list("answer_is_correct", "prm_score")[
            :size
        ]
    )
    counts = [0] * bins
    for _, score in head:
        if score is not None:
            counts[min(bins - 1, max(0, int(score * bins)))] += 1
    return QueueHead(
        size=len(head),
        wrong=sum(1 for correct, _ in head if correct is False),
        correct=sum(1 for correct, _ in head if correct is True),
        ungraded=sum(1 for correct, _ in head if correct is None),
        scored=sum(1 for _, score in head if score is not None),
        histogram=[(f"{i / bins:.1f}", counts[i]) for i in range(bins)],
        open_total=open_regular.count(),
    )


def campaign_arm_labels(*, campaign: Campaign) -> list:
    """Each submitted labelling of a regular solution that a run placed, as ``ArmLabels``: the
    steps rated, as the default export policy reads them (``exports.policy.LabelPolicy``:
    neutral positive, the path cut after its first negative step), the solution's arm and the
    strategy that placed it (``learning.efficiency.strategy_rows`` picks one strategy's)."""
    from exports.policy import LabelPolicy
    from labeling.models import StepLabel
    from learning.efficiency import ArmLabels

    policy = LabelPolicy()
    rows = (
        StepLabel.objects.submitted_rated()
        .filter(
            assignment__campaign=campaign,
            assignment__solution__kind=Solution.Kind.REGULAR,
            assignment__solution__al_arm__in=["strategy", "control"],
        )
        .order_by("assignment_id", "step__index")
        .values_list(
            "assignment_id",
            "assignment__solution__problem__text",
            "assignment__solution__al_arm",
            "assignment__solution__al_placed_by",
            "step__text",
            "rating",
        )
    )
    out: list = []
    steps: list[str] = []
    labels: list[bool] = []
    current, problem, arm, placed_by, cut = None, "", "", "", False

    def flush() -> None:
        if steps:
            out.append(ArmLabels(problem, tuple(steps), tuple(labels), arm, placed_by))

    for assignment_id, text, solution_arm, by, step, rating in rows.iterator(chunk_size=5000):
        if assignment_id != current:
            flush()
            current, problem, arm, placed_by, cut = assignment_id, text, solution_arm, by, False
            steps, labels = [], []
        if cut:
            continue
        label = policy.label(rating)
        steps.append(step)
        labels.append(bool(label))
        cut = policy.cut_after_first_negative and not label
    flush()
    return out
