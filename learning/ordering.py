"""A scored open solution (``Scored``), the queue order of PRM800K's selection rule, and what the
head of an order holds.

The queue serves by ``Solution.priority`` (highest first); a run turns its order into priorities
and hands them to the queue's owner (``labeling.queue.order.queue_reorder``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

HEAD_SIZE = 100  # the queue head a run describes (and the page shows)


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


def interleave(orders: Sequence[Sequence[Scored]], shares: Sequence[float]) -> list[Scored]:
    """One order from several: position ``k`` goes to the order furthest below its share of the
    prefix (as ``queue_order`` does for two kinds), which gives its best item not yet placed."""
    return [s for s, _ in interleave_placed(orders, shares)]


def interleave_placed(
    orders: Sequence[Sequence[Scored]], shares: Sequence[float]
) -> list[tuple[Scored, int]]:
    """``interleave``, with the order that placed each item (its index in ``orders``)."""
    placed: set[int] = set()
    taken = [0] * len(orders)
    cursor = [0] * len(orders)
    out: list[tuple[Scored, int]] = []
    total = len({s.solution_id for order in orders for s in order})
    while len(out) < total:
        k = len(out) + 1
        live = [i for i in range(len(orders)) if cursor[i] < len(orders[i])]
        i = max(live, key=lambda i: (shares[i] * k - taken[i], -i))
        while cursor[i] < len(orders[i]) and orders[i][cursor[i]].solution_id in placed:
            cursor[i] += 1
        if cursor[i] >= len(orders[i]):
            continue
        s = orders[i][cursor[i]]
        placed.add(s.solution_id)
        out.append((s, i))
        taken[i] += 1
    return out
