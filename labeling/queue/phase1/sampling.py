"""Candidates for a prefix the tree lacks, sampled from the campaign's chat endpoint.

The app that owns generation (``imports``) registers the sampler here, as ``learning`` registers
its step scorers with ``labeling.scores``: a lower layer calls what a higher one registered."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

from labeling.models import Assignment, Solution, StepCandidate, prefix_hash
from labeling.queue.phase1.tree import shared_candidates

log = logging.getLogger(__name__)

# ``sampler(campaign=..., problem_id=..., prefix=[step texts], k=...)`` -> [(text, model)]:
# the candidate next steps for that prefix, or raises with a message fit for the annotator.
CandidateSampler = Callable[..., "list[tuple[str, str]]"]

_SAMPLERS: list[CandidateSampler] = []


def candidate_sampler_register(sampler: CandidateSampler) -> None:
    """Have phase 1 mode sample candidates with ``sampler`` (one sampler: the last wins)."""
    _SAMPLERS[:] = [sampler]


def candidates_sample(*, assignment: Assignment, prefix: list[str]) -> str | None:
    """Sample candidates for the assignment's solution after ``prefix`` and store them, unless
    someone stored candidates for that prefix meanwhile. Asked outside a transaction (a model
    takes seconds); returns what to tell the annotator when it failed, else None."""
    if not _SAMPLERS:
        return "No sampler is installed on this site: write the next step."
    campaign = assignment.campaign
    problem_id = (
        Solution.objects.filter(pk=assignment.solution_id)
        .values_list("problem_id", flat=True)
        .get()
    )
    try:
        sampled = _SAMPLERS[0](
            campaign=campaign, problem_id=problem_id, prefix=prefix, k=campaign.phase1_samples
        )
    except Exception as error:
        log.warning("phase 1 sampling failed for assignment %s: %s", assignment.pk, error)
        return f"Candidates could not be sampled ({error}): write the next step."
    digest = prefix_hash(prefix)
    texts: list[tuple[str, str]] = []
    for text, model in sampled:
        text = (text or "").strip()
        if text and text not in [t for t, _ in texts]:
            texts.append((text, model))
    with transaction.atomic():
        list(
            Solution.objects.select_for_update(no_key=True)
            .filter(pk=assignment.solution_id)
            .values_list("pk", flat=True)
        )
        if shared_candidates(assignment.solution_id, len(prefix), digest):
            return None
        StepCandidate.objects.bulk_create(
            StepCandidate(
                solution_id=assignment.solution_id,
                position=len(prefix),
                prefix_hash=digest,
                order=order,
                text=text,
                source=StepCandidate.Source.SAMPLED,
                model=model[:200],
            )
            for order, (text, model) in enumerate(texts)
        )
    return None if texts else "The endpoint sampled no candidate: write the next step."
