"""An OpenAI-compatible endpoint as a generation job talks to it: the checks of its URL and of
the environment variable holding its key, and a client with a timeout per request, bounded
concurrency and retries with backoff (``Retry-After`` honoured) on 408/409/429/5xx.

The key is read from the environment when a job runs and never stored or shown.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from imports.models import GenerationJob

MAX_BACKOFF_S = 60.0


RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504}


class GenerationRefused(Exception):
    """A generation request that cannot become a job; the text is shown to the person."""


def check_base_url(url: str) -> str:
    """An endpoint the worker may call: http(s), a host, no credentials, no query; or refused."""
    url = (url or "").strip().rstrip("/")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise GenerationRefused("The endpoint is not a valid URL.") from None
    if parts.scheme not in ("http", "https"):
        raise GenerationRefused("The endpoint must be an http:// or https:// URL.")
    if not parts.hostname:
        raise GenerationRefused("The endpoint URL has no host.")
    if parts.username or parts.password:
        raise GenerationRefused(
            "Put no credentials in the URL: the API key comes from an environment variable."
        )
    if parts.query or parts.fragment:
        raise GenerationRefused("The endpoint URL takes no query or fragment.")
    allowed = settings.STEPWISE_GENERATION_HOSTS
    if allowed and parts.hostname not in allowed:
        raise GenerationRefused(
            f"Endpoints are limited to these hosts (STEPWISE_GENERATION_HOSTS): "
            f"{', '.join(allowed)}."
        )
    if port is not None and not 0 < port < 65536:
        raise GenerationRefused("The endpoint's port is not valid.")
    return url


def check_key_env(name: str) -> str:
    name = (name or "").strip()
    if name and name not in settings.STEPWISE_GENERATION_KEY_VARS:
        choices = ", ".join(settings.STEPWISE_GENERATION_KEY_VARS) or "none configured"
        raise GenerationRefused(
            f"The API key variable must be one of STEPWISE_GENERATION_KEY_VARS ({choices})."
        )
    return name


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


class Endpoint:
    """One OpenAI-compatible chat endpoint: POSTs with retries and backoff on 429 and 5xx.

    ``sleep`` is injectable so that tests and the overhead benchmark do not wait.
    """

    def __init__(
        self,
        job: GenerationJob,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.job = job
        self.key = os.environ.get(job.api_key_env, "") if job.api_key_env else ""
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        self.client = client or httpx.Client(
            timeout=httpx.Timeout(job.timeout_s),
            headers=headers,
            follow_redirects=False,  # a redirect could point the worker anywhere
            limits=httpx.Limits(max_connections=job.concurrency),
            trust_env=False,
        )
        if client is not None:
            self.client.headers.update(headers)
        self.url = f"{job.base_url}/chat/completions"
        self.sleep = sleep
        self.backoff_s = settings.STEPWISE_GENERATION_BACKOFF_MS / 1000

    def close(self) -> None:
        self.client.close()

    def scrub(self, message: str) -> str:
        """A message safe to keep and show: never the key."""
        message = str(message)[:500]
        return message.replace(self.key, "[key]") if self.key else message

    def body(self, problem_text: str) -> dict[str, Any]:
        return {
            "model": self.job.model,
            "messages": [
                {"role": "user", "content": render_prompt(self.job.prompt_template, problem_text)}
            ],
            "temperature": self.job.temperature,
            "top_p": self.job.top_p,
            "max_tokens": self.job.max_tokens,
            "n": 1,
        }

    def complete(self, sample: Sample, problem_text: str) -> Sample:
        body = self.body(problem_text)
        for attempt in range(self.job.max_retries + 1):
            wait_s = None
            try:
                response = self.client.post(self.url, json=body)
            except httpx.TimeoutException:
                sample.error = f"no answer within {self.job.timeout_s:g} s"
            except httpx.HTTPError as e:
                sample.error = f"request failed ({type(e).__name__})"
            else:
                if response.status_code == 200:
                    return self._read(sample, response)
                sample.error = f"the endpoint answered {response.status_code}" + _detail(response)
                if response.status_code not in RETRY_STATUSES:
                    break
                wait_s = _retry_after(response)
            if attempt == self.job.max_retries:
                break
            sample.retries += 1
            backoff = self.backoff_s * 2**attempt * (1 + random.random() / 4)
            self.sleep(min(MAX_BACKOFF_S, wait_s if wait_s is not None else backoff))
        sample.error = self.scrub(sample.error)
        return sample

    def _read(self, sample: Sample, response: httpx.Response) -> Sample:
        try:
            data = response.json()
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


def _detail(response: httpx.Response) -> str:
    try:
        data = response.json()
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
    except ValueError:
        message = None
    return f": {str(message)[:200]}" if message else ""


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def render_prompt(template: str, problem: str) -> str:
    return template.format_map({"problem": problem})
