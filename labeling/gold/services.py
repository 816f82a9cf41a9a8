"""Making solutions gold: a solution's kind and its steps' gold ratings, written together.

The gold editor (``annotators:gold-edit``) and the data browser's item page set one solution's
gold from ratings (``solution_gold_set``); the browser's bulk action makes many gold from the
consensus of their submitted ratings (``solutions_gold_from_consensus``, inside the action's
transaction, which locks and records them). Either way the queue state is recounted: gold
solutions are open to everyone, regular ones up to the overlap.
"""

from __future__ import annotations

from django.db import transaction

from labeling.consensus import plurality_rating
from labeling.models import Rating, Solution, Step, StepLabel


class GoldError(ValueError):
    """A gold request that breaks a rule; the text is shown to the person."""

    code = "refused"


def solution_gold_set(*, solution: Solution, kind: str, gold: list[int | None]) -> Solution:
    """Make a solution a quality-control or screening question with these gold step ratings,
    or a regular one again (gold ratings cleared).

    ``gold`` has one entry per step, -1/0/1 or None (not scored). A gold solution needs at least
    one gold rating, or it would score nobody.
    """
    steps = list(Step.objects.filter(solution=solution).order_by("index"))
    if kind not in Solution.Kind.values:
        raise GoldError(f"Unknown kind {kind!r}.")
    if len(gold) != len(steps):
        raise GoldError(f"The solution has {len(steps)} steps; {len(gold)} ratings were given.")
    if any(g not in (None, *Rating.values) for g in gold):
        raise GoldError("A gold rating is -1, 0, 1 or empty.")
    if kind == Solution.Kind.REGULAR:
        gold = [None] * len(steps)
    elif all(g is None for g in gold):
        raise GoldError("A quality-control or screening solution needs at least one gold rating.")
    with transaction.atomic():
        for step, rating in zip(steps, gold, strict=True):
            step.gold_rating = rating
        Step.objects.bulk_update(steps, ["gold_rating"])
        Solution.objects.filter(pk=solution.pk).update(kind=kind)
        # Gold solutions are open to everyone, regular ones up to the overlap: recount.
        Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    solution.refresh_from_db()
    return solution


def solutions_gold_from_consensus(*, solution_ids: list[int], kind: str) -> list[int]:
    """Make these solutions ``kind`` gold whose gold is the consensus of their submitted ratings
    (``labeling.consensus.plurality_rating`` per step; a step nobody rated has no gold). A solution
    nobody rated is left as it is. Returns the ids of those that became gold.

    Called inside the caller's transaction with the solutions locked (the bulk action's), a
    chunk at a time.
    """
    ratings: dict[int, list[int | None]] = {}
    for step_id, rating in (
        StepLabel.objects.submitted()
        .filter(assignment__solution_id__in=solution_ids)
        .values_list("step_id", "rating")
    ):
        ratings.setdefault(step_id, []).append(rating)
    steps = list(Step.objects.filter(solution_id__in=solution_ids))
    gold = {}
    for step in steps:
        step.gold_rating = plurality_rating(ratings.get(step.pk, []))
        if step.gold_rating is not None:
            gold[step.solution_id] = True
    Step.objects.bulk_update(
        [s for s in steps if s.solution_id in gold], ["gold_rating"], batch_size=1000
    )
    rows = Solution.objects.filter(pk__in=list(gold))
    rows.update(kind=kind)
    rows.refresh_queue_state()
    return list(gold)
