"""Talking to the model endpoints (``machines.endpoints``): what to ask again, how many requests
at once, and what a manager is told when one fails.

Every caller of a model endpoint (generation's chat completions, rollouts and the judge, phase 1
mode's sampler, a served PRM) sends each request through :func:`endpoint_post`, the one place
that bounds an answer (its size after decompression, its whole time, its JSON nesting) and keeps
the server's own words of a refusal; retries the same answers with the same backoff
(``RETRY_STATUSES``, ``retry_wait``; ``Retry-After`` honoured), runs its many requests through
the one loop :func:`requests_bounded`, and words its failures with :func:`endpoint_error_message`.
"""

from __future__ import annotations

import json
import logging
import random
import re
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from django.conf import settings

from machines.deadline import deadline, deadline_passed
from machines.endpoints import Endpoint, EndpointRefused

log = logging.getLogger(__name__)

UNREACHABLE = "the endpoint could not be reached or did not answer over HTTP"
# Answers worth asking again after a pause (every client of a model endpoint: generation,
# scoring): timeouts, conflicts, rate limits and server errors; ``Retry-After`` is honoured.
RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504}
MAX_BACKOFF_S = 60.0
# What an answer may be (``endpoint_post``): JSON nested at most this deep, with at most this
# many values (each costs a Python object once parsed, whatever its size in bytes); its size after
# decompression is ``STEPWISE_ENDPOINT_MAX_BYTES``. A refusal's text is read up to ERROR_BYTES
# and kept up to ERROR_CHARS.
MAX_DEPTH = 64
MAX_VALUES = 200_000
ERROR_BYTES = 65_536
ERROR_CHARS = 300


# --- one request ----------------------------------------------------------------------------------


class AnswerRefused(Exception):
    """An answer read no further: larger than allowed, nested too deep, in an encoding that was
    not asked for, or not JSON. Not worth asking again: the server would answer the same."""


@dataclass(frozen=True)
class Answer:
    """An endpoint's answer: ``data`` is its JSON when ``status`` is 200; otherwise ``words``
    is what the server said (trimmed, the key scrubbed) and ``retry_after_s`` what it asked."""

    status: int
    data: Any = None
    words: str = ""
    retry_after_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200

    def refusal(self, endpoint: Endpoint) -> str:
        """ "<name> answered 422: <its words>", for a job's errors and the worker's log."""
        said = f": {self.words}" if self.words else ""
        return f"{endpoint.name or 'the endpoint'} answered {self.status}{said}"


def endpoint_post(
    client: httpx.Client, endpoint: Endpoint, url: str, body: dict[str, Any], *, seconds: float
) -> Answer:
    """POST ``body`` to ``url`` and read the answer within ``seconds`` all told (a server that
    drips its answer is cut off: ``machines.deadline``), at most ``STEPWISE_ENDPOINT_MAX_BYTES``
    of it after decompression (read in pieces and counted, so a gzip bomb is refused before it
    unpacks), its JSON checked for depth and size before it is parsed. Raises httpx's errors
    (a ``TimeoutException`` at the deadline) and :class:`AnswerRefused`."""
    limit = int(settings.STEPWISE_ENDPOINT_MAX_BYTES)
    try:
        with (
            deadline(seconds),
            client.stream(
                "POST", url, json=body, headers={"Accept-Encoding": "gzip, deflate"}
            ) as response,
        ):
            ok = response.status_code == 200
            raw = _read_bounded(response, limit if ok else ERROR_BYTES, truncate=not ok)
    except httpx.TransportError as error:
        if deadline_passed() and not isinstance(error, httpx.TimeoutException):
            raise httpx.ReadTimeout("the request's deadline passed") from error
        raise
    if not ok:
        words = endpoint.scrub(server_words(raw))
        if words:
            log.warning(
                "endpoint %s answered %s: %s",
                endpoint.name or "(free-form URL)",
                response.status_code,
                words,
            )
        return Answer(response.status_code, words=words, retry_after_s=retry_after(response))
    return Answer(200, data=json_bounded(raw))


def _decoder(response: httpx.Response) -> Any:
    """A bounded decompressor for the answer's encoding (None: none), or refused."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj(zlib.MAX_WBITS)
    raise AnswerRefused(f"the answer is in an encoding that was not asked for ({encoding[:40]})")


def _read_bounded(response: httpx.Response, limit: int, *, truncate: bool) -> bytes:
    """The answer's body, decompressed piece by piece, at most ``limit`` bytes of it:
    ``truncate`` keeps the first ``limit`` (a refusal's words), else a longer one is refused."""
    decoder = _decoder(response)
    out = bytearray()
    try:
        for chunk in _raw_chunks(response):
            piece = chunk
            while piece:
                if decoder is None:
                    out += piece
                    piece = b""
                else:
                    out += decoder.decompress(piece, limit - len(out) + 1)
                    piece = decoder.unconsumed_tail
                if len(out) > limit:
                    if truncate:
                        return bytes(out[:limit])
                    raise AnswerRefused(f"the answer is larger than {limit:,} bytes")
    except zlib.error:
        raise AnswerRefused("the answer's compression is broken") from None
    return bytes(out)


def _raw_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The body as it came over the wire; one made in memory (an injected transport's, already
    read) as it is."""
    try:
        yield from response.iter_raw()
    except httpx.StreamConsumed:
        yield response.content


# A JSON string (possessive: no backtracking), or one of the characters that open, close or
# separate values.
_JSON_TOKENS = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[\[\]{},]')


def json_bounded(raw: bytes) -> Any:
    """``raw`` parsed as JSON, once a scan has found it nested at most ``MAX_DEPTH`` deep with
    at most ``MAX_VALUES`` values: 100,000 nested brackets are refused here, not a
    ``RecursionError`` of the parser, and a small answer cannot become millions of objects."""
    depth = 0
    for values, token in enumerate(_JSON_TOKENS.finditer(raw), start=1):
        first = raw[token.start()]
        if first in b"[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise AnswerRefused(f"the answer's JSON is nested deeper than {MAX_DEPTH}")
        elif first in b"]}":
            depth -= 1
        if values > MAX_VALUES:
            raise AnswerRefused(f"the answer's JSON holds more than {MAX_VALUES:,} values")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise AnswerRefused("the answer is not JSON") from None


def server_words(raw: bytes) -> str:
    """What a server said when it refused a request, on one line, at most ``ERROR_CHARS``:
    OpenAI's ``{"error": {"message"}}``, FastAPI's ``{"detail": ...}`` (``transformers
    serve``'s 422), a ``message``, or the text itself."""
    try:
        data = json_bounded(raw)
    except AnswerRefused:
        data = None
    said: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        said = error.get("message") if isinstance(error, dict) else error
        said = said or data.get("detail") or data.get("message")
        if isinstance(said, list):  # FastAPI's validation errors
            said = "; ".join(
                str(item.get("msg", item)) if isinstance(item, dict) else str(item)
                for item in said[:5]
            )
    text = str(said) if said else raw.decode("utf-8", "replace")
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text[: ERROR_CHARS - 1] + "…" if len(text) > ERROR_CHARS else text


# --- retries ------------------------------------------------------------------------------------


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a ``Retry-After`` header asks for (in seconds form), or None."""
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def retry_wait(attempt: int, *, backoff_s: float, asked_s: float | None = None) -> float:
    """How long to wait before retry ``attempt + 1``: what the server asked for, else an
    exponential backoff from ``backoff_s`` with up to a quarter of jitter; at most
    ``MAX_BACKOFF_S``."""
    if asked_s is not None:
        return min(MAX_BACKOFF_S, asked_s)
    growth: int = 2**attempt  # (typeshed: an int's power is Any, for a negative exponent)
    return min(MAX_BACKOFF_S, backoff_s * growth * (1 + random.random() / 4))


# --- many requests ------------------------------------------------------------------------------

_Request = TypeVar("_Request")
_Result = TypeVar("_Result")


def requests_bounded(
    ask: Callable[[_Request], _Result],
    requests: Iterable[_Request],
    *,
    concurrency: int,
    name: str = "endpoint",
    ordered: bool = True,
) -> Iterator[_Result]:
    """``ask(request)`` for each of ``requests``, at most ``concurrency`` at a time, the results
    yielded in the order of ``requests`` (``ordered=False``: each as soon as it is back, for a
    caller that keeps every answer the moment it arrives, so that none it received is lost
    while it waits for a slower one): the one loop every caller of a model endpoint runs
    (generation, rollouts and a judge, a served PRM), so none floods an endpoint beyond what its
    declaration allows and none waits for one request at a time.

    ``requests`` is read lazily, one each time a request may start, so a generator that stops
    (a token budget spent) stops the asking. Requests are started again before a result is
    handed over, so the endpoint stays busy while the caller writes what came back. ``ask``
    turns the failures its caller keeps (a refused sample) into results; an exception it raises
    is fatal: no request starts after it is seen, the results before it are still yielded, and
    it is raised in its place, once the requests in flight have ended (a thread cannot be
    stopped half way).
    """
    if concurrency < 1:
        raise ValueError("concurrency must be 1 or more")
    pending = iter(requests)
    order: deque[Future[_Result]] = deque()
    running: set[Future[_Result]] = set()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=name) as pool:
        stopped = False
        while True:
            while not stopped and len(running) < concurrency:
                try:
                    request = next(pending)
                except StopIteration:
                    stopped = True
                    break
                future = pool.submit(ask, request)
                running.add(future)
                order.append(future)
            if not order:
                return
            if not _ready(order, running, ordered):
                wait(running, return_when=FIRST_COMPLETED)
            finished = {f for f in running if f.done()}
            running -= finished
            stopped = stopped or any(f.exception() is not None for f in finished)
            while (ready := _ready(order, running, ordered)) is not None:
                order.remove(ready)
                yield ready.result()


def _ready(
    order: deque[Future[_Result]], running: set[Future[_Result]], ordered: bool
) -> Future[_Result] | None:
    """The next result to hand over: the first request's once it is back (``ordered``), else
    the first that is back; a failed one only once no request is in flight (its error is raised
    after the results of the requests that were running beside it)."""
    if ordered:
        return order[0] if order and order[0].done() else None
    done = [f for f in order if f.done()]
    fine = next((f for f in done if f.exception() is None), None)
    if fine is not None or running:
        return fine
    return done[0] if done else None


# --- what managers are told -----------------------------------------------------------------------


def endpoint_error_message(
    endpoint: Endpoint, error: BaseException, *, seconds: float | None = None
) -> str:
    """Words for a failed request that a manager may see, scrubbed of the key. A declared
    endpoint's failure says what kind it was (timeout, no connection, broken answer); a
    free-form URL's says one thing for all of them, so the answers cannot map the network.
    The detail goes to the operator's log. ``seconds``: the request's deadline (the
    endpoint's ``timeout_s`` unless the caller's was shorter)."""
    log.warning(
        "endpoint %s: %s: %r", endpoint.name or endpoint.base_url, type(error).__name__, error
    )
    if isinstance(error, EndpointRefused):
        return str(error)
    if not endpoint.declared:
        return UNREACHABLE
    if isinstance(error, AnswerRefused):
        return endpoint.scrub(f"{endpoint.name}: {error}")
    if isinstance(error, httpx.TimeoutException):
        within = endpoint.timeout_s if seconds is None else seconds
        return f"no answer from {endpoint.name} within {within:g} s"
    if isinstance(error, httpx.ConnectError):
        return f"could not connect to {endpoint.name}"
    return endpoint.scrub(f"the request to {endpoint.name} failed ({type(error).__name__})")
