"""Celery's queues as the app sees them: which queue a task goes to, and who consumes each.

The routes (``CELERY_TASK_ROUTES``) send each task to a queue; a queue that no worker consumes
keeps its messages for ever, silently. So the app asks the workers (one ``inspect
active_queues`` broadcast, answered by every live worker within ``STEPWISE_INSPECT_TIMEOUT``)
and keeps the answer ``STEPWISE_QUEUE_CONSUMERS_SECONDS`` in the cache, so that pages polling a
waiting job, readiness and the metrics ask at most that often. This module is the one place that
asks; a job's page (``labeling.templatetags.jobs``), ``/readyz`` and ``/metrics`` read it.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)

CACHE_KEY = "stepwise:queue-consumers"


@dataclass(frozen=True)
class Consumers:
    """The workers that answered, by queue (``None`` for ``by_queue``: the broker could not be
    asked, so nothing is known; ``error`` says why)."""

    by_queue: dict[str, list[str]] | None
    error: str = ""

    @property
    def known(self) -> bool:
        return self.by_queue is not None

    def of(self, queue: str) -> list[str]:
        return list((self.by_queue or {}).get(queue, []))

    def unconsumed(self, queue: str) -> bool:
        """Known to have no worker: the broker answered, and no worker said it takes ``queue``."""
        return self.by_queue is not None and not self.by_queue.get(queue)


def task_queue(task_name: str) -> str:
    """The queue ``task_name`` is sent to, by the app's routes (the default queue otherwise)."""
    from celery import current_app

    queue: str = current_app.amqp.router.route({}, task_name)["queue"].name
    return queue


def queue_consumers(*, refresh: bool = False) -> Consumers:
    """Which workers consume which queue, as they said at most
    ``STEPWISE_QUEUE_CONSUMERS_SECONDS`` ago (``refresh``: ask now).

    Asking waits ``STEPWISE_INSPECT_TIMEOUT`` for the replies, so once the answer is older than
    that it is still served (for up to ``STALE_FACTOR`` times as long) while one thread of this
    process asks again: a page, ``/readyz`` or a scrape never waits for the workers, except the
    first in a process that finds nothing cached."""
    from celery import current_app

    if current_app.conf.task_always_eager:  # every task runs in the process that sends it
        return Consumers({queue: ["eager"] for queue in settings.STEPWISE_QUEUES})
    cached = None if refresh else cache.get(CACHE_KEY)
    if cached is None:
        return _ask_and_keep()
    if time.time() - float(cached.get("at", 0)) > settings.STEPWISE_QUEUE_CONSUMERS_SECONDS:
        _ask_in_background()
    return Consumers(cached["by_queue"], cached.get("error", ""))


STALE_FACTOR = 4  # a stale answer is served for at most this many times its age bound
_asking = threading.Lock()


def _ask_and_keep() -> Consumers:
    consumers = _ask_workers()
    cache.set(
        CACHE_KEY,
        {"by_queue": consumers.by_queue, "error": consumers.error, "at": time.time()},
        max(1, settings.STEPWISE_QUEUE_CONSUMERS_SECONDS * STALE_FACTOR),
    )
    return consumers


def _ask_in_background() -> None:
    """Ask the workers again from a thread, one at a time in this process."""
    if not _asking.acquire(blocking=False):
        return

    def ask() -> None:
        try:
            _ask_and_keep()
        except Exception:  # a thread's failure is logged, never raised into a request
            log.exception("could not refresh the workers' queues")
        finally:
            _asking.release()

    threading.Thread(target=ask, name="queue-consumers", daemon=True).start()


def _ask_workers() -> Consumers:
    from celery import current_app

    timeout = settings.STEPWISE_INSPECT_TIMEOUT
    try:
        with current_app.connection_for_read() as conn:
            # Fail at once on a broker that is down, instead of retrying for ever.
            # ignore[arg-type]: kombu's stub says int; kombu takes seconds as a float.
            conn.ensure_connection(max_retries=1, timeout=timeout)  # type: ignore[arg-type]
            replies = current_app.control.inspect(timeout=timeout, connection=conn).active_queues()
    except Exception as error:  # any broker trouble: unknown, said as such
        log.warning("could not ask the workers for their queues: %s", error)
        return Consumers(None, error=f"{type(error).__name__}: {error}")
    by_queue: dict[str, list[str]] = {queue: [] for queue in settings.STEPWISE_QUEUES}
    for worker, queues in sorted((replies or {}).items()):
        for queue in queues or []:
            by_queue.setdefault(queue["name"], []).append(worker)
    return Consumers(by_queue)
