"""Candidate next steps for PRM800K's phase 1 mode, sampled from the campaign's chat endpoint.

``labeling.queue.phase1`` asks for candidates when an annotator's path reaches a prefix its
solution's tree has none for; this app owns the endpoints, so it answers (registered in
``machines.apps``) with a durable job (``Phase1Sampling``, the kind ``PHASE1_SAMPLING`` on the
default queue): the page returns at once and polls the job, so no model server holds a web
thread; the worker asks the endpoint within ``PAGE_TIMEOUT_S`` for all its requests together,
through ``machines.client.endpoint_post`` (answers bounded in size and nesting).

The request is the rollouts' (``machines.evidence``): the problem in the campaign's prompt
format (``default_template``: its last generation's, else PRM800K's) as the user's turn and the
steps so far as the beginning of the assistant's reply, continued (``continue_final_message``, as
vLLM's chat API reads it). Each completion's first step is a candidate: its text up to the first
blank line, with PRM800K's ``# Answer`` section kept when that step gives the answer.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from common.jobs import DONE, JobAttempt, JobKind, JobPage, job_run
from labeling.models import Assignment, Campaign, Problem, prefix_hash
from labeling.permissions import LABEL
from labeling.queue import candidates_store
from machines.chat import (
    CONTINUATION,
    ContinuationRefused,
    continuation_advice,
    continuation_refused,
)
from machines.client import endpoint_error_message, endpoint_post
from machines.deadline import deadline
from machines.endpoints import CHAT, EndpointRefused, endpoint_get
from machines.generation import default_template, prompt_values
from machines.models import Phase1Sampling
from machines.prompts import prompt_render

log = logging.getLogger(__name__)

ANSWER_MARK = "# Answer"
MAX_TOKENS = 512
TEMPERATURE = 1.0
# The annotator waits for the candidates (the page polls): the endpoint has this long for all
# of a prefix's requests together, whatever its own timeout.
PAGE_TIMEOUT_S = 30.0
# A failed (or empty) sampling is shown to the annotators of its prefix; after this long a page
# that shows the prefix again asks again.
ASK_AGAIN_AFTER_S = 300


def first_step(text: str) -> str:
    """The first step of a completion: up to the first blank line, or through the answer when
    the step is (or is followed by) PRM800K's ``# Answer`` section."""
    parts = [p.strip() for p in (text or "").strip().split("\n\n") if p.strip()]
    if not parts:
        return ""
    if parts[0].startswith(ANSWER_MARK):
        return "\n\n".join(parts[:2])
    if len(parts) > 1 and parts[1].startswith(ANSWER_MARK):
        return "\n\n".join(parts[:3] if parts[1] == ANSWER_MARK else parts[:2])
    return parts[0]


def phase1_candidates_sample(
    *, campaign: Campaign, problem_id: int, prefix: list[str], k: int
) -> list[tuple[str, str]]:
    """Up to ``k`` candidate next steps after ``prefix``, each with the model that wrote it.

    Raises ``EndpointRefused`` with a message fit for an annotator (never the URL or the key).
    """
    endpoint = endpoint_get(campaign.phase1_endpoint, kind=CHAT)
    model = endpoint.model(campaign.phase1_model)
    problem = Problem.objects.get(pk=problem_id)
    messages: list[dict[str, str]] = [
        {
            "role": "user",
            "content": prompt_render(default_template(campaign), prompt_values(problem)),
        }
    ]
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": TEMPERATURE,
        "max_tokens": MAX_TOKENS,
    }
    if prefix:
        messages.append({"role": "assistant", "content": "\n\n".join(prefix) + "\n\n"})
        body |= CONTINUATION
    out: list[tuple[str, str]] = []
    seconds = min(endpoint.timeout_s, PAGE_TIMEOUT_S)
    url = endpoint.url("chat/completions")
    # One deadline for all the requests together: the annotator waits for them.
    with endpoint.client(timeout_s=seconds) as client, deadline(seconds):
        # A server may answer fewer choices than asked (``n`` is a hint to some): ask again for
        # the rest, at most ``k`` times in all.
        for _ in range(max(1, k)):
            if len(out) >= k:
                break
            asked = {**body, "n": k - len(out)}
            try:
                answer = endpoint_post(client, endpoint, url, asked, seconds=seconds)
            except Exception as error:
                raise EndpointRefused(
                    endpoint_error_message(endpoint, error, seconds=seconds)
                ) from None
            if not answer.ok:
                if continuation_refused(asked, answer):
                    raise ContinuationRefused(endpoint.scrub(continuation_advice(endpoint, answer)))
                raise EndpointRefused(answer.refusal(endpoint))
            try:
                choices = answer.data["choices"]
                texts = [(choice.get("message") or {}).get("content") or "" for choice in choices]
            except (KeyError, TypeError, AttributeError):
                raise EndpointRefused(
                    f"{endpoint.name}'s answer is not an OpenAI chat completion"
                ) from None
            for text in texts:
                step = first_step(text if isinstance(text, str) else "")
                if step:
                    out.append((step, model))
    return out[:k]


# --- the job -----------------------------------------------------------------------------------


def phase1_sampling_start(*, assignment: Assignment, prefix: list[str]) -> Phase1Sampling:
    """The sampling job for the assignment's solution after ``prefix``: the one waiting or
    running for it, or one finished less than ``ASK_AGAIN_AFTER_S`` ago, else a new one, queued.
    Returns at once (registered with ``labeling.queue.candidate_sampling_register``)."""
    digest = prefix_hash(prefix)
    jobs = Phase1Sampling.objects.filter(solution_id=assignment.solution_id, prefix_hash=digest)
    since = timezone.now() - timedelta(seconds=ASK_AGAIN_AFTER_S)
    latest = jobs.order_by("-created_at", "-id").first()
    if latest is not None and (not latest.is_finished or (latest.finished_at or since) > since):
        return latest
    try:
        with transaction.atomic():
            job = Phase1Sampling.objects.create(
                campaign_id=assignment.campaign_id,
                solution_id=assignment.solution_id,
                prefix=list(prefix),
                prefix_hash=digest,
                created_by_id=assignment.annotator_id,
            )
            PHASE1_SAMPLING.send(job.pk)
    except IntegrityError:  # another page queued it meanwhile
        return jobs.order_by("-created_at", "-id").first() or latest  # type: ignore[return-value]
    return job


def phase1_sampling_run(*, job: Phase1Sampling) -> Phase1Sampling:
    """Run a sampling job in this process, as its Celery task does (``common.jobs.job_run``)."""
    return job_run(PHASE1_SAMPLING, job) or job


def _sampling_work(job: Phase1Sampling, attempt: JobAttempt) -> None:
    """Ask the campaign's endpoint and store the candidates; a failure's reason (for the
    annotators, never the URL or the key) is the job's error."""
    campaign = job.campaign
    problem_id = job.solution.problem_id
    try:
        sampled = phase1_candidates_sample(
            campaign=campaign, problem_id=problem_id, prefix=job.prefix, k=campaign.phase1_samples
        )
    except EndpointRefused as refused:
        log.warning("phase 1 sampling %s failed: %s", job.pk, refused)
        attempt.fail(str(refused), job)
        return
    stored = candidates_store(solution_id=job.solution_id, prefix=job.prefix, sampled=sampled)
    attempt.finish(DONE, sampled=stored)


PHASE1_SAMPLING = JobKind(
    name="phase1-sampling",
    model=Phase1Sampling,
    task="machines.phase1_sample",
    work=_sampling_work,
    related=("campaign", "solution"),
    page=JobPage(
        template="machines/_phase1_sampling_job.html",
        url="labeling:label",
        viewers=LABEL,
        reload_when_done=True,
    ),
)
