"""Final-answer grading: pull the answer out of a solution, decide whether it equals the truth.

``math-verify`` does the mathematics, with precautions learnt the hard way (NOTES.md):

- both sides are wrapped in ``$...$``: on a bare string ``parse()`` silently fails on answers
  such as ``\\dfrac{1}{9}`` or ``900,\\!000``;
- its work is bounded by what it is given, not by time (``bounds``): an answer too long, too
  deeply nested, standing for too large a number or expanding to too many terms is undecided
  before math-verify sees it, so a pair gets the same result on an idle machine and a busy one.
  math-verify's own ``signal.alarm`` timeouts are off;
- it runs in worker processes (``workers``: plain subprocesses, so that this also works inside a
  daemonic Celery worker), each with a CPU-time backstop that no real answer comes near;
- pairs are graded once: a campaign has many solutions but few distinct (answer, truth) pairs.

A pair grades ``True``/``False``; ``None`` means it could not be decided: no answer, no truth,
an answer math-verify cannot parse, or one outside the bounds.

What "equal" means is the campaign's grading rule (``rules``): mathematically equal
(math-verify), or as PRM800K's reference grader graded (``as_prm800k``). Under both, words and
letter sequences are text and clock times are times (``readings``).

Nothing here imports Django except :func:`solutions_grade`, which does so lazily: the worker
processes import this package without settings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from labeling.grading.answers import extract_answer, normalise
from labeling.grading.bounds import Limits
from labeling.grading.rules import MATHEMATICAL, PRM800K, RULES
from labeling.grading.workers import Grader

if TYPE_CHECKING:
    from django.db.models import QuerySet

__all__ = [
    "MATHEMATICAL",
    "PRM800K",
    "RULES",
    "Grader",
    "GradingResult",
    "Limits",
    "extract_answer",
    "grade",
    "normalise",
    "solutions_grade",
]


def grade(answer: str | None, truth: str | None, rule: str = MATHEMATICAL) -> bool | None:
    """Whether ``answer`` equals ``truth`` under ``rule`` (``None``: undecidable)."""
    return Grader.shared().grade_many([(answer, truth)], rule=rule)[(answer, truth)]


@dataclass
class GradingResult:
    solutions: int = 0  # solutions looked at
    graded: int = 0  # of which now True or False
    pairs: int = 0  # distinct (answer, truth) pairs
    seconds: float = 0.0


def solutions_grade(
    *,
    solutions: QuerySet,
    regrade: bool = False,
    progress: bool = False,
    chunk: int = 2000,
    rule: str | None = None,
) -> GradingResult:
    """Set ``answer_is_correct`` on these solutions from their answer and problem's truth,
    under their campaign's grading rule (or ``rule``, for all of them).

    Only ungraded ones unless ``regrade``. A solution without an answer, or whose problem has no
    ground-truth answer, stays null; so does one whose pair cannot be decided. The rule is read
    with the rows, so every caller (an import, a new ground truth, a rule change) grades as the
    campaign says without passing it.
    """
    from labeling.models import Solution

    started = time.monotonic()
    if not regrade:
        solutions = solutions.filter(answer_is_correct__isnull=True)
    rows = (
        solutions.exclude(answer__isnull=True)
        .exclude(answer="")
        .exclude(problem__ground_truth_answer="")
        .values_list("pk", "answer", "problem__ground_truth_answer", "campaign__grading_rule")
        .order_by()
    )
    by_rule: dict[str, dict[tuple[str, str], list[int]]] = {}
    n = 0
    for pk, answer, truth, campaign_rule in rows.iterator(chunk_size=chunk):
        by_pair = by_rule.setdefault(rule or campaign_rule, {})
        by_pair.setdefault((answer, truth), []).append(pk)
        n += 1
    results = {
        pair_rule: Grader.shared().grade_many(by_pair, rule=pair_rule, progress=progress)
        for pair_rule, by_pair in by_rule.items()
    }
    graded = 0
    for value in (True, False, None):
        ids = [
            pk
            for pair_rule, by_pair in by_rule.items()
            for pair, pks in by_pair.items()
            if results[pair_rule][pair] is value
            for pk in pks
        ]
        if value is not None:
            graded += len(ids)
        elif not regrade:
            continue  # already null
        for i in range(0, len(ids), chunk):
            Solution.objects.filter(pk__in=ids[i : i + chunk]).update(answer_is_correct=value)
    return GradingResult(
        solutions=n,
        graded=graded,
        pairs=sum(len(by_pair) for by_pair in by_rule.values()),
        seconds=time.monotonic() - started,
    )
