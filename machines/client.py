"""Talking to the model endpoints (``machines.endpoints``): what to ask again, how many requests
at once, and what a manager is told when one fails.

Every caller of a model endpoint (generation's chat completions, rollouts and the judge, phase 1
mode's sampler, a served PRM) retries the same answers with the same backoff
(``RETRY_STATUSES``, ``retry_wait``; ``Retry-After`` honoured), runs its many requests through
the one loop :func:`requests_bounded`, and words its failures with :func:`endpoint_error_message`.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

import httpx

from machines.endpoints import Endpoint, EndpointRefused

log = logging.getLogger(__name__)

UNREACHABLE = "the endpoint could not be reached or did not answer over HTTP"
# Answers worth asking again after a pause (every client of a model endpoint: generation,
# scoring): timeouts, conflicts, rate limits and server errors; ``Retry-After`` is honoured.
RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504}
MAX_BACKOFF_S = 60.0


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
) -> Iterator[_Result]:
    """``ask(request)`` for each of ``requests``, at most ``concurrency`` at a time, the results
    yielded in the order of ``requests``: the one loop every caller of a model endpoint runs
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
            if not order[0].done():
                wait(running, return_when=FIRST_COMPLETED)
            finished = {f for f in running if f.done()}
            running -= finished
            stopped = stopped or any(f.exception() is not None for f in finished)
            while order and order[0].done():
                yield order.popleft().result()


# --- what managers are told -----------------------------------------------------------------------


def endpoint_error_message(endpoint: Endpoint, error: BaseException) -> str:
    """Words for a failed request that a manager may see, scrubbed of the key. A declared
    endpoint's failure says what kind it was (timeout, no connection, broken answer); a
    free-form URL's says one thing for all of them, so the answers cannot map the network.
    The detail goes to the operator's log."""
    log.warning(
        "endpoint %s: %s: %r", endpoint.name or endpoint.base_url, type(error).__name__, error
    )
    if isinstance(error, EndpointRefused):
        return str(error)
    if not endpoint.declared:
        return UNREACHABLE
    if isinstance(error, httpx.TimeoutException):
        return f"no answer from {endpoint.name} within {endpoint.timeout_s:g} s"
    if isinstance(error, httpx.ConnectError):
        return f"could not connect to {endpoint.name}"
    return endpoint.scrub(f"the request to {endpoint.name} failed ({type(error).__name__})")
