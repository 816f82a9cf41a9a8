"""A generation job's chat endpoint: which declared endpoint (``machines.endpoints``) a job
talks to, and a client for it with a timeout per request, bounded concurrency and retries with
backoff (``Retry-After`` honoured) on 408/409/429/5xx.

The endpoint, its URL and its key are the operator's (``STEPWISE_ENDPOINTS``); a job names the
endpoint. The key is read from the environment when a job runs, sent to that endpoint alone, and
never stored or shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings
from django.db.models import F

from machines.client import (
    RETRY_STATUSES,
    Answer,
    AnswerRefused,
    endpoint_error_message,
    endpoint_post,
    retry_wait,
)
from machines.endpoints import (
    CHAT,
    Endpoint,
    EndpointRefused,
    endpoint_by_url,
    endpoint_for_url,
    endpoint_get,
)
from machines.models import GenerationJob
from machines.prompts import PromptTemplate, TemplateError


class GenerationRefused(Exception):
    """A generation request that cannot become a job (or a job that cannot run); the text is
    shown to the person. ``field``: the form or API field at fault, if one is."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def endpoint_choose(*, endpoint: str = "", base_url: str = "") -> Endpoint:
    """The chat endpoint a new job asks: a declared one by name, or a free-form URL where the
    operator allows them (``machines.endpoints``); refused with the reason otherwise."""
    try:
        if (endpoint or "").strip():
            return endpoint_get(endpoint, kind=CHAT)
        if (base_url or "").strip():
            return endpoint_for_url(base_url, kind=CHAT)
    except EndpointRefused as e:
        raise GenerationRefused(
            str(e), field="base_url" if base_url and not endpoint else "endpoint"
        ) from None
    raise GenerationRefused("Choose the endpoint to ask.", field="endpoint")


def job_endpoint(job: GenerationJob) -> Endpoint:
    """The endpoint a job asks when it runs: its declared endpoint by name; for a job made
    before endpoints were declared (it has only a URL), the declared endpoint with that URL, or
    the URL itself where free-form URLs are allowed. Refused with a reason for the job's page
    when none of these holds: nothing is asked then."""
    try:
        if job.endpoint:
            return endpoint_get(job.endpoint, kind=CHAT)
        if declared := endpoint_by_url(job.base_url, kind=CHAT):
            return declared
        return endpoint_for_url(job.base_url, kind=CHAT)
    except EndpointRefused as e:
        if job.endpoint:
            raise GenerationRefused(
                f"the endpoint {job.endpoint!r} is no longer declared on this site: nothing "
                "was asked (start a new job with a declared endpoint)"
            ) from e
        raise GenerationRefused(
            "this job's endpoint URL is not a declared endpoint (STEPWISE_ENDPOINTS) and "
            "free-form URLs to it are not allowed: nothing was asked (start a new job with a "
            "declared endpoint)"
        ) from e


@dataclass
class Sample:
    key: str
    problem_id: int
    text: str = ""
    finish_reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    error: str = ""


@dataclass
class Tally:
    """What a chat job's samples cost since its counters were last written: the tokens the
    endpoint reported and the retries. ``take()`` gives them as increments of the job's columns
    (``prompt_tokens``, ``completion_tokens``, ``retries``) and starts again from zero."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0

    def add(self, sample: Sample) -> None:
        self.prompt_tokens += sample.prompt_tokens
        self.completion_tokens += sample.completion_tokens
        self.retries += sample.retries

    def take(self) -> dict[str, Any]:
        fields = {name: F(name) + getattr(self, name) for name in _TALLIED}
        self.prompt_tokens = self.completion_tokens = self.retries = 0
        return fields


_TALLIED = ("prompt_tokens", "completion_tokens", "retries")


class ChatClient:
    """POSTs chat completions to one job's endpoint, with retries and backoff on 429 and 5xx.

    ``client`` and ``sleep`` are injectable so that tests and the overhead benchmark do not
    wait (an injected client is used as it is: it gets no key).
    """

    def __init__(
        self,
        job: GenerationJob,
        endpoint: Endpoint,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.job = job
        self.endpoint = endpoint
        self.template = PromptTemplate.parse(job.prompt_template)
        self.client = client or endpoint.client(
            timeout_s=job.timeout_s, max_connections=job.concurrency
        )
        self.url = endpoint.url("chat/completions")
        self.sleep = sleep
        self.backoff_s = settings.STEPWISE_GENERATION_BACKOFF_MS / 1000

    def close(self) -> None:
        self.client.close()

    def scrub(self, message: str) -> str:
        """A message safe to keep and show: never the key, nor a part of it."""
        return self.endpoint.scrub(message)

    def body(self, values: dict[str, str]) -> dict[str, Any]:
        return {
            "model": self.job.model,
            "messages": [{"role": "user", "content": self.template.render(values)}],
            "temperature": self.job.temperature,
            "top_p": self.job.top_p,
            "max_tokens": self.job.max_tokens,
            "n": 1,
        }

    def complete(self, sample: Sample, values: dict[str, str]) -> Sample:
        """Ask for one sample of the problem whose fields are ``values`` (``endpoint_post``:
        the answer bounded in size, time and nesting; a refusal's own words kept)."""
        try:
            body = self.body(values)
        except TemplateError as e:
            sample.error = str(e)
            return sample
        seconds = float(self.job.timeout_s or self.endpoint.timeout_s)
        for attempt in range(self.job.max_retries + 1):
            wait_s = None
            try:
                answer = endpoint_post(self.client, self.endpoint, self.url, body, seconds=seconds)
            except (EndpointRefused, AnswerRefused) as e:  # asking again would not help
                sample.error = endpoint_error_message(self.endpoint, e, seconds=seconds)
                break
            except httpx.HTTPError as e:
                sample.error = endpoint_error_message(self.endpoint, e, seconds=seconds)
            else:
                if answer.ok:
                    return self._read(sample, answer.data)
                sample.error = answer.refusal(self.endpoint)
                if continuation_refused(body, answer):
                    advice = continuation_advice(self.endpoint, answer)
                    raise ContinuationRefused(self.scrub(advice))
                if answer.status not in RETRY_STATUSES:
                    break
                wait_s = answer.retry_after_s
            if attempt == self.job.max_retries:
                break
            sample.retries += 1
            self.sleep(retry_wait(attempt, backoff_s=self.backoff_s, asked_s=wait_s))
        sample.error = self.scrub(sample.error)
        return sample

    def _read(self, sample: Sample, data: Any) -> Sample:
        try:
            choice = data["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content") or choice.get("text") or ""
            thinking = message.get("reasoning_content") or message.get("reasoning") or ""
            usage = data.get("usage") or {}
            sample.prompt_tokens = int(usage.get("prompt_tokens") or 0)
            sample.completion_tokens = int(usage.get("completion_tokens") or 0)
            sample.finish_reason = str(choice.get("finish_reason") or "")[:40]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            sample.error = "the endpoint's answer is not an OpenAI chat completion"
            return sample
        if not isinstance(text, str) or not isinstance(thinking, str):
            sample.error = "the endpoint's answer is not an OpenAI chat completion"
            return sample
        if thinking and "<think>" not in text:
            text = f"<think>\n{thinking}\n</think>\n\n{text}"
        sample.text = text.replace("\x00", "")
        sample.error = ""
        return sample


# --- continuing a reply -----------------------------------------------------------------------

# The fields that ask a chat server to continue the assistant's last message (vLLM's chat API
# reads them); rollouts and phase 1 sampling send them.
CONTINUATION = {"continue_final_message": True, "add_generation_prompt": False}


class ContinuationRefused(EndpointRefused):
    """The endpoint refuses the fields that continue a reply: every rollout would be refused
    the same, so the job (or the page's sampling) stops at once with what to do."""


def continuation_refused(body: dict[str, Any], answer: Answer) -> bool:
    """A 400 or 422 to a request that asked to continue a reply, naming one of those fields (a
    strict server, ``transformers serve``: "Unexpected fields in the request: {...}")."""
    return (
        body.get("continue_final_message") is True
        and answer.status in (400, 422)
        and any(name in answer.words for name in CONTINUATION)
    )


def continuation_advice(endpoint: Endpoint, answer: Answer) -> str:
    """Why nothing can be continued on ``endpoint``, and what to do about it."""
    return (
        f"{answer.refusal(endpoint)}. This server refuses the fields that continue a reply "
        "(continue_final_message, add_generation_prompt), which rollouts and phase 1 sampling "
        "need: serve the model with vLLM (`vllm serve MODEL`, whose chat API reads them) and "
        "declare that endpoint for rollouts and phase 1 mode; this one can still serve the "
        "judge and generation."
    )
