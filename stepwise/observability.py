"""What an operator watches: liveness (``/healthz``), readiness (``/readyz``) and Prometheus
metrics (``/metrics``).

- ``/healthz`` answers 200 while the process serves requests; it reads nothing else.
- ``/readyz`` checks every part the app needs (the database, the broker, the file storage, a
  worker on every queue of ``STEPWISE_QUEUES``, the key variable of every declared model
  endpoint) and answers 200, or 503 naming the parts that
  failed. Anyone may ask, but cheaply: an anonymous address gets ``STEPWISE_READYZ_PER_MINUTE``
  answers a minute, the storage is written at most every ``STEPWISE_READYZ_SECONDS``, the
  workers' answer is served from the cache (refreshed in the background, ``common.queues``).
  Why a part failed (the error's text) and the workers' host names are shown only to those who
  may read the metrics.
- ``/metrics`` is Prometheus's text format (the figures: ``stepwise/metrics.py``). Readable by
  the bearer of ``STEPWISE_METRICS_TOKEN`` (checked first: it needs no database) or staff (a
  session); nobody else (404, so that its existence is not advertised).
"""

from __future__ import annotations

import hmac
import logging
import os
import socket
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.signals import setting_changed
from django.db import DatabaseError, connection
from django.dispatch import receiver
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotFound, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from common.queues import queue_consumers
from common.throttle import client_ip
from stepwise.metrics import REQUEST_SECONDS, metrics_registry

log = logging.getLogger(__name__)

# Methods a caller may send that get a label of their own; any other is "other", so that no
# caller can add series (18,000 made-up methods once grew one web worker's metrics to 8.3 MB).
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMetricsMiddleware:
    """Times every request into ``stepwise_request_seconds``, labelled by the view's URL name
    (never the path: ids would make a series per object; a path no route takes is
    ``unresolved``), method (``other`` for any but the seven HTTP methods the app knows) and
    status class (``2xx``): every label has a bounded set of values whatever callers send."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = (match.view_name if match else "") or "unresolved"
        method = request.method if request.method in KNOWN_METHODS else "other"
        REQUEST_SECONDS.labels(
            view=view, method=method, status=f"{response.status_code // 100}xx"
        ).observe(time.perf_counter() - started)
        return response


# --- Readiness ------------------------------------------------------------------------------------


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _check_broker() -> str:
    from celery import current_app

    with current_app.connection_for_read() as conn:
        # ignore[arg-type]: kombu's stub says int; kombu takes seconds as a float.
        conn.ensure_connection(
            max_retries=1,
            timeout=settings.STEPWISE_INSPECT_TIMEOUT,  # type: ignore[arg-type]
        )
    return "ok"


_storage_checked: dict[str, float] = {}
_storage_lock = threading.Lock()


def _check_storage() -> str:
    """Write, read back and delete a small file where uploads and exports go: at most once
    every ``STEPWISE_READYZ_SECONDS`` per process (a probe every second must not write a file
    every second); a failure is checked again at the next call."""
    with _storage_lock:
        at = _storage_checked.get("ok")
        if at is not None and time.monotonic() - at < settings.STEPWISE_READYZ_SECONDS:
            return "ok"
        name = default_storage.save(
            f"readyz/{socket.gethostname()}-{os.getpid()}.txt", ContentFile(b"ready")
        )
        try:
            with default_storage.open(name, "rb") as fh:
                if fh.read() != b"ready":
                    raise OSError("read back something else than was written")
        finally:
            default_storage.delete(name)
        _storage_checked["ok"] = time.monotonic()
    return "ok"


@receiver(setting_changed)
def _storage_settings_changed(setting: str, **kwargs: object) -> None:
    """Another media folder or storage: check it at the next call."""
    if setting in ("MEDIA_ROOT", "STORAGES", "STEPWISE_READYZ_SECONDS"):
        _storage_checked.clear()


def _check_workers() -> dict[str, list[str]]:
    consumers = queue_consumers()
    if not consumers.known:
        raise ConnectionError(f"could not ask the workers ({consumers.error})")
    by_queue = {queue: consumers.of(queue) for queue in settings.STEPWISE_QUEUES}
    missing = [queue for queue, workers in by_queue.items() if not workers]
    if missing:
        raise LookupError(f"no worker consumes {', '.join(missing)}")
    return by_queue


def _check_endpoint_keys() -> str:
    """Every declared model endpoint's key variable is set here (a job would fail without it)."""
    from machines.endpoints import endpoint_keys_missing

    if missing := endpoint_keys_missing():
        raise LookupError(f"key variables not set for: {', '.join(missing)}")
    return "ok"


READINESS_CHECKS: dict[str, Callable[[], object]] = {
    "database": _check_database,
    "broker": _check_broker,
    "storage": _check_storage,
    "workers": _check_workers,
    "endpoint_keys": _check_endpoint_keys,
}


def readiness() -> tuple[bool, dict[str, object], dict[str, str]]:
    """Run every readiness check: (all passed, each part's result, each failed part's error)."""
    results: dict[str, object] = {}
    errors: dict[str, str] = {}
    for part, check in READINESS_CHECKS.items():
        try:
            results[part] = check()
        except Exception as error:  # a failed part is an answer, not a crash
            results[part] = "failed"
            errors[part] = f"{type(error).__name__}: {error}"
            log.warning("readiness: %s failed: %s", part, errors[part])
    return not errors, results, errors


# --- Who may read the figures ---------------------------------------------------------------------


def may_read_metrics(request: HttpRequest) -> bool:
    """The bearer of ``STEPWISE_METRICS_TOKEN`` (when one is set), or staff."""
    return _bearer_may_read(request) or bool(_is_staff(request))


def _bearer_may_read(request: HttpRequest) -> bool:
    """The metrics token: checked first, since it needs no database, so Prometheus still reads
    the metrics while the database is down."""
    token = settings.STEPWISE_METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


def _is_staff(request: HttpRequest) -> bool | None:
    """Whether the session's user is staff; None when the session cannot be read (the
    database is down)."""
    user = getattr(request, "user", None)
    try:
        return bool(user is not None and user.is_active and user.is_staff)
    except DatabaseError as error:
        log.warning("metrics: the session could not be read: %s", error)
        return None


# --- Views ----------------------------------------------------------------------------------------


@never_cache
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness: this process answers. Reads nothing (a database outage is readiness's)."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> HttpResponse:
    """Readiness: 200 when every part works, else 503 naming the parts that failed. Anonymous
    callers get at most ``STEPWISE_READYZ_PER_MINUTE`` answers a minute per address (429 past
    it) and never the workers' host names or the errors: those are for who may read the
    metrics."""
    insider = may_read_metrics(request)
    if not insider and (wait := _readyz_throttle.wait(client_ip(request))) is not None:
        response = JsonResponse({"status": "throttled", "retry_after": wait}, status=429)
        response["Retry-After"] = str(wait)
        return response
    ready, results, errors = readiness()
    if not insider and isinstance(results.get("workers"), dict):
        results["workers"] = "ok"
    body: dict[str, object] = {
        "status": "ready" if ready else "not ready",
        "checks": results,
        "failed": sorted(errors),
    }
    if errors and insider:
        body["errors"] = errors
    return JsonResponse(body, status=200 if ready else 503)


class _PerMinute:
    """Calls per address in the current minute, in this process's memory: readiness must not
    depend on the cache it may be reporting as down. Bounded: past ``MAX_ADDRESSES`` addresses
    in one minute the oldest minute's counts are dropped."""

    MAX_ADDRESSES = 10_000

    def __init__(self) -> None:
        self.minute = 0
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def wait(self, address: str) -> int | None:
        """Seconds to wait before the next call from ``address``, or None: it is served."""
        now = time.time()
        minute = int(now // 60)
        with self.lock:
            if minute != self.minute or len(self.counts) > self.MAX_ADDRESSES:
                self.minute, self.counts = minute, {}
            self.counts[address] = self.counts.get(address, 0) + 1
            if self.counts[address] <= settings.STEPWISE_READYZ_PER_MINUTE:
                return None
        return max(1, int((minute + 1) * 60 - now))


_readyz_throttle = _PerMinute()


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus's text format, for staff or the metrics token's bearer. Anyone else gets the
    site's 404, or a bare one while the database is down (the 404 page reads the session)."""
    if not _bearer_may_read(request):
        staff = _is_staff(request)
        if staff is None:
            return HttpResponseNotFound(b"Not Found", content_type="text/plain")
        if not staff:
            raise Http404()
    return HttpResponse(generate_latest(metrics_registry()), content_type=CONTENT_TYPE_LATEST)
