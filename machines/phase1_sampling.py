"""Candidate next steps for PRM800K's phase 1 mode, sampled from the campaign's chat endpoint.

``labeling.queue.phase1`` asks for candidates when an annotator's path reaches a prefix its
solution's tree has none for; this app owns generation, so it answers (registered in
``imports.apps``). The request is the rollouts' (``machines.evidence``): the problem in the
campaign's prompt format (``default_template``: its last generation's, else PRM800K's) as the
user's turn and the steps so far as the beginning of the assistant's reply, continued
(``continue_final_message``, as vLLM's chat API reads it). Each completion's first step is a
candidate: its text up to the first blank line, with PRM800K's ``# Answer`` section kept when
that step gives the answer.
"""

from __future__ import annotations

from typing import Any

from labeling.models import Campaign, Problem
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
from machines.prompts import prompt_render

ANSWER_MARK = "# Answer"
MAX_TOKENS = 512
TEMPERATURE = 1.0
# The annotator's page waits for the answer: never longer than this, whatever the endpoint's.
PAGE_TIMEOUT_S = 30.0


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
