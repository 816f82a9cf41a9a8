"""Candidates for a prefix the tree lacks, sampled from the campaign's chat endpoint by a worker.

A model server may take seconds, or drip its answer: the labelling page never waits for one. The
app that owns the endpoints (``machines``) registers a *starter* here, as ``learning`` registers
its step scorers with ``labeling.scores``: ``sampling_start`` hands it the assignment's prefix and
gets back a durable job (``machines.phase1_sampling``) that a Celery worker runs; the page shows
the job's status (``{% job_status %}``, polled) and reloads once it has finished. The job stores
what it sampled with ``candidates_store``, once per prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

from labeling.models import Assignment, Solution, StepCandidate, prefix_hash
from labeling.queue.phase1.tree import shared_candidates

log = logging.getLogger(__name__)

# ``start(assignment=..., prefix=[step texts])`` -> the sampling job for that prefix (a new one,
# or the one already waiting, running, or just finished): its ``status`` and ``error`` say how it
# went.
SamplingStart = Callable[..., Any]

_STARTERS: list[SamplingStart] = []

NO_SAMPLER = "No sampler is installed on this site: write the next step."


def candidate_sampling_register(start: SamplingStart) -> None:
    """Have phase 1 mode sample candidates through ``start`` (one starter: the last wins)."""
    _STARTERS[:] = [start]


def sampling_start(*, assignment: Assignment, prefix: list[str]) -> Any:
    """The sampling job for the assignment's solution after ``prefix`` (None: no starter is
    registered). Returns at once: a worker asks the endpoint."""
    if not _STARTERS:
        return None
    return _STARTERS[0](assignment=assignment, prefix=prefix)


def candidates_store(*, solution_id: int, prefix: list[str], sampled: list[tuple[str, str]]) -> int:
    """Store ``sampled`` (``(text, model)`` pairs) as the candidates after ``prefix``, unless
    someone stored candidates for that prefix meanwhile; blank and repeated texts are dropped.
    Returns how many were stored."""
    digest = prefix_hash(prefix)
    texts: list[tuple[str, str]] = []
    for text, model in sampled:
        text = (text or "").strip()
        if text and text not in [t for t, _ in texts]:
            texts.append((text, model))
    with transaction.atomic():
        list(
            Solution.objects.select_for_update(no_key=True)
            .filter(pk=solution_id)
            .values_list("pk", flat=True)
        )
        if shared_candidates(solution_id, len(prefix), digest):
            return 0
        StepCandidate.objects.bulk_create(
            StepCandidate(
                solution_id=solution_id,
                position=len(prefix),
                prefix_hash=digest,
                order=order,
                text=text,
                source=StepCandidate.Source.SAMPLED,
                model=model[:200],
            )
            for order, (text, model) in enumerate(texts)
        )
    return len(texts)
