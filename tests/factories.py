"""Small builders for test data. Keyword-only, with defaults that make a valid object."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model

from labeling.models import Campaign, Membership, Problem, Solution, Step

_seq = itertools.count(1)


def make_user(*, username: str | None = None, password: str = "pw", **extra):
    username = username or f"user{next(_seq)}"
    return get_user_model().objects.create_user(username=username, password=password, **extra)


def make_campaign(*, slug: str | None = None, **fields) -> Campaign:
    n = next(_seq)
    slug = slug or f"campaign-{n}"
    return Campaign.objects.create(slug=slug, name=fields.pop("name", slug.title()), **fields)


def make_member(
    *, campaign: Campaign, user=None, role: str = Membership.Role.ANNOTATOR, **fields
) -> Membership:
    user = user or make_user()
    return Membership.objects.create(user=user, campaign=campaign, role=role, **fields)


def make_problem(*, campaign: Campaign, text: str | None = None, **fields) -> Problem:
    text = text or f"What is {next(_seq)} + 1?"
    fields.setdefault("ground_truth_answer", "1")
    return Problem.objects.create(
        campaign=campaign, text=text, content_hash=Problem.hash_text(text), **fields
    )


def make_solution(
    *,
    campaign: Campaign,
    problem: Problem | None = None,
    steps: list[str] | None = None,
    gold: list[int] | None = None,
    **fields,
) -> Solution:
    """A solution with its steps; ``gold`` gives gold ratings (QC and screening solutions)."""
    problem = problem or make_problem(campaign=campaign)
    steps = steps or [f"Step {i} of solution {next(_seq)}." for i in range(3)]
    solution = Solution.objects.create(
        campaign=campaign,
        problem=problem,
        content_hash=Solution.hash_content(problem.text, steps, fields.get("answer")),
        **fields,
    )
    Step.objects.bulk_create(
        Step(solution=solution, index=i, text=t, gold_rating=gold[i] if gold else None)
        for i, t in enumerate(steps)
    )
    return solution


def make_labelled(
    *,
    solution: Solution,
    ratings: list[int | None],
    annotator=None,
    alternatives: dict[int, list[tuple[str, int | None]]] | None = None,
    human_completions: dict[int, str] | None = None,
    status: str = "submitted",
    finish_reason: str | None = None,
    **fields,
):
    """A submitted assignment labelling ``solution``'s first ``len(ratings)`` steps.

    ``alternatives`` maps a step index to other rated candidates ``(text, rating)`` (PRM800K's
    extra completions, the step's own one first); ``human_completions`` maps a step index to a
    correction written by the annotator.
    """
    from django.utils import timezone

    from labeling.models import Assignment, StepLabel

    alternatives = alternatives or {}
    human_completions = human_completions or {}
    if finish_reason is None:
        finish_reason = "found_error" if -1 in ratings else "solution"
    fields.setdefault("submitted_at", timezone.now())
    assignment = Assignment.objects.create(
        campaign=solution.campaign,
        solution=solution,
        annotator=annotator or make_user(),
        status=status,
        finish_reason=finish_reason,
        **fields,
    )
    steps = {s.index: s for s in solution.steps.all()}
    StepLabel.objects.bulk_create(
        StepLabel(
            assignment=assignment,
            step=steps[i],
            rating=rating,
            flagged=False,
            time_spent_ms=1000 + i,
            completion_index=0,
            alternatives=[
                {"text": text, "rating": r, "flagged": False} for text, r in alternatives.get(i, [])
            ],
            human_completion=(
                {"text": human_completions[i], "rating": None, "source": "human", "flagged": False}
                if i in human_completions
                else None
            ),
            chosen_completion=0 if rating is not None and rating >= 0 else None,
        )
        for i, rating in enumerate(ratings)
    )
    # What every writer of labels does (``SolutionQuerySet.disputes_recount``).
    type(solution).objects.filter(pk=solution.pk).disputes_recount()
    return assignment


def make_review(*, assignment, decision: str = "accepted", corrections=None, reviewer=None):
    """A reviewer's decision on a submitted assignment (``corrections``: step index -> rating)."""
    from labeling.models import Review

    return Review.objects.create(
        assignment=assignment,
        reviewer=reviewer or make_user(),
        decision=decision,
        corrections={str(k): v for k, v in (corrections or {}).items()},
    )


def make_gold_solution(*, campaign: Campaign, kind: str, gold: list[int], **fields) -> Solution:
    """A quality-control (``kind="qc"``) or screening solution with gold ratings, one per step."""
    steps = fields.pop("steps", None) or [
        f"Gold step {i} ({next(_seq)})." for i in range(len(gold))
    ]
    return make_solution(campaign=campaign, kind=kind, steps=steps, gold=gold, **fields)


def submit_ratings(*, assignment, annotator, ratings: list[int] | None = None, **extra):
    """Submit an assignment through the service with a fresh submission key (all +1 by default)."""
    from labeling import queue

    if ratings is None:
        ratings = [1] * assignment.solution.steps.count()
    return queue.assignment_submit(
        assignment=assignment,
        annotator=annotator,
        submission_key=extra.pop("submission_key", f"key-{next(_seq)}"),
        ratings=ratings,
        **extra,
    )


def make_token(*, user, name: str | None = None) -> str:
    """A live API key for ``user`` (the key itself; only its hash is stored)."""
    from annotators.services import api_token_create

    _, key = api_token_create(user=user, name=name or f"token-{next(_seq)}")
    return key


def api_client_for(user):
    """A DRF test client that authenticates as ``user`` with an API token."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {make_token(user=user)}")
    return client


def export_name(campaign: Campaign, user) -> str:
    """How exports name this annotator by default: their pseudonym in the campaign."""
    from exports.pseudonyms import annotator_pseudonym

    return annotator_pseudonym(campaign_id=campaign.pk, user_id=user.pk)


def make_evidence(
    solution: Solution, step: int, kind: str, value: float, *, samples: int = 4
) -> None:
    """A machine's word on step ``step`` of ``solution`` (a rollout value or a judge's verdict),
    with ``correct`` as the value implies."""
    from labeling.models import StepEvidence

    StepEvidence.objects.create(
        solution=solution,
        step=solution.steps.get(index=step),
        kind=kind,
        model="stub",
        value=value,
        samples=samples,
        correct=round(value * samples),
    )
