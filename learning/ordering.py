"""The queue order of PRM800K's selection rule, what its head holds, and writing it to the queue.

The queue serves by ``Solution.priority`` (highest first), so a run rewrites ``priority`` (and
``prm_score``) of every scored solution in bulk with ``solutions_rewrite``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection

HEAD_SIZE = 100  # the queue head a run describes (and the page shows)
WRITE_BATCH = 20000  # rows per bulk UPDATE


@dataclass(frozen=True)
class Scored:
    solution_id: int
    score: float
    answer_is_correct: bool | None
    # what the other selection strategies order by (``learning.strategies``)
    uncertainty: float | None = None  # mean step entropy of the PRM's P(correct)
    verifier_score: float | None = None  # imported with the solution
    served_score: float | None = None  # a served PRM's (``machines.served``), where it scored it
    disagreement: float | None = None  # of an ensemble on bootstrap resamples (``ensemble``)
    # of the PRM and the machine evidence on its steps (``machines-disagree``)
    machine_conflict: float | None = None

    @property
    def wrong(self) -> bool:
        """Convincing wrong-answer candidates: graded wrong. Ungraded ones are "the rest"."""
        return self.answer_is_correct is False


def queue_order(items: Sequence[Scored], *, wrong_share: float) -> list[Scored]:
    """The queue order of PRM800K's selection rule, best first.

    Wrong-answer solutions in decreasing PRM score (the most convincing first) take ``wrong_share``
    of every prefix, the others (right or ungraded) in decreasing score the rest: position ``k``
    (from 0) is a wrong one when fewer than ``round(wrong_share * (k + 1))`` wrong ones came before,
    so any prefix holds the ratio to within one solution. When one kind runs out the other follows
    in score order. Ties go to the older solution (lower id), as in the queue itself.
    """
    share = min(1.0, max(0.0, wrong_share))

    def key(s: Scored) -> tuple[float, int]:
        return (-s.score if math.isfinite(s.score) else math.inf, s.solution_id)

    wrong = sorted((s for s in items if s.wrong), key=key)
    rest = sorted((s for s in items if not s.wrong), key=key)
    ordered: list[Scored] = []
    i = j = 0
    while i < len(wrong) or j < len(rest):
        due = math.floor(share * (len(ordered) + 1) + 0.5)
        if j >= len(rest) or (i < len(wrong) and i < due):
            ordered.append(wrong[i])
            i += 1
        else:
            ordered.append(rest[j])
            j += 1
    return ordered


def head_summary(order: Sequence[Scored], *, size: int = HEAD_SIZE) -> dict:
    """What the head of the queue is made of (recorded on the run, shown on the page)."""
    head = order[:size]
    scores = [s.score for s in head]
    return {
        "size": len(head),
        "wrong": sum(1 for s in head if s.answer_is_correct is False),
        "correct": sum(1 for s in head if s.answer_is_correct is True),
        "ungraded": sum(1 for s in head if s.answer_is_correct is None),
        "score_min": min(scores) if scores else None,
        "score_max": max(scores) if scores else None,
        "scored": len(order),
        "wrong_total": sum(1 for s in order if s.wrong),
    }


def solutions_rewrite(
    *,
    ids: Sequence[int],
    scores: Sequence[float],
    priorities: Sequence[float],
    arms: Sequence[tuple[str, str]] | None = None,
) -> None:
    """Set ``prm_score``, ``priority`` and (given ``arms``: ``(arm, strategy that placed it)``
    per solution) ``al_arm`` and ``al_placed_by`` of many solutions in bulk.

    PostgreSQL: one ``UPDATE ... FROM unnest(arrays)`` per batch (a join, no per-row statement);
    SQLite: ``executemany`` of a prepared UPDATE, which SQLite runs in C. Both inside the caller's
    transaction.
    """
    if arms is not None:
        _arms_rewrite(ids=ids, arms=arms)
    with connection.cursor() as cursor:
        for start in range(0, len(ids), WRITE_BATCH):
            chunk = slice(start, start + WRITE_BATCH)
            if connection.vendor == "postgresql":
                cursor.execute(
                    "UPDATE labeling_solution AS s SET prm_score = v.score, priority = v.priority"
                    " FROM unnest(%s::bigint[], %s::float8[], %s::float8[])"
                    " AS v(id, score, priority) WHERE s.id = v.id",
                    [list(ids[chunk]), list(scores[chunk]), list(priorities[chunk])],
                )
            else:
                cursor.executemany(
                    "UPDATE labeling_solution SET prm_score = %s, priority = %s WHERE id = %s",
                    list(zip(scores[chunk], priorities[chunk], ids[chunk], strict=True)),
                )


def _arms_rewrite(*, ids: Sequence[int], arms: Sequence[tuple[str, str]]) -> None:
    """``al_arm`` and ``al_placed_by`` of many solutions: one UPDATE per pair and batch (the
    control arm and a few strategies)."""
    from labeling.models import Solution

    by_arm: dict[tuple[str, str], list[int]] = {}
    for sid, pair in zip(ids, arms, strict=True):
        by_arm.setdefault(pair, []).append(sid)
    for (arm, placed_by), members in by_arm.items():
        for start in range(0, len(members), WRITE_BATCH):
            Solution.objects.filter(pk__in=members[start : start + WRITE_BATCH]).update(
                al_arm=arm, al_placed_by=placed_by
            )
