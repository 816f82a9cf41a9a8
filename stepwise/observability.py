"""What an operator watches: liveness (``/healthz``), readiness (``/readyz``) and Prometheus
metrics (``/metrics``).

- ``/healthz`` answers 200 while the process serves requests; it reads nothing else.
- ``/readyz`` checks every part the app needs (the database, the broker, the file storage, a
  worker on every queue of ``STEPWISE_QUEUES``, the key variable of every declared model
  endpoint) and answers 200, or 503 naming the parts that
  failed. Anyone may ask; why a part failed (the error's text) is shown only to those who may read
  the metrics.
- ``/metrics`` is Prometheus's text format: request latency by view, queue depth and consumers
  per queue, job counts and the oldest job's age by kind and state, step labels in the last
  minute. Readable by staff (a session) or with ``Authorization: Bearer <STEPWISE_METRICS_TOKEN>``;
  nobody else (404, so that its existence is not advertised).

The figures that live in the database or the broker are read when Prometheus scrapes
(``StepwiseCollector``), so every web process answers the same; only request latency is the
process's own (``PROMETHEUS_MULTIPROC_DIR`` joins a gunicorn's worker processes: see
docs/operations.md).
"""

from __future__ import annotations

import hmac
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection
from django.db.models import Count, Min
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from common.jobs import FINISHED, job_kinds
from common.queues import queue_consumers

log = logging.getLogger(__name__)

REQUEST_SECONDS = Histogram(
    "stepwise_request_seconds",
    "Time to answer a request, by view (URL name), method and status class.",
    ["view", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


class RequestMetricsMiddleware:
    """Times every request into ``stepwise_request_seconds``, labelled by the view's URL name
    (never the path: ids would make a series per object), method and status class (``2xx``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = (match.view_name if match else "") or "unresolved"
        REQUEST_SECONDS.labels(
            view=view, method=request.method, status=f"{response.status_code // 100}xx"
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
        conn.ensure_connection(max_retries=1, timeout=settings.STEPWISE_INSPECT_TIMEOUT)
    return "ok"


def _check_storage() -> str:
    """Write, read back and delete a small file where uploads and exports go."""
    name = default_storage.save(
        f"readyz/{socket.gethostname()}-{os.getpid()}.txt", ContentFile(b"ready")
    )
    try:
        with default_storage.open(name, "rb") as fh:
            if fh.read() != b"ready":
                raise OSError("read back something else than was written")
    finally:
        default_storage.delete(name)
    return "ok"


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
    """Staff, or the bearer of ``STEPWISE_METRICS_TOKEN`` (when one is set)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return True
    token = settings.STEPWISE_METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


# --- Views ----------------------------------------------------------------------------------------


@never_cache
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness: this process answers. Reads nothing (a database outage is readiness's)."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> HttpResponse:
    """Readiness: 200 when every part works, else 503 naming the parts that failed."""
    ready, results, errors = readiness()
    body: dict[str, object] = {
        "status": "ready" if ready else "not ready",
        "checks": results,
        "failed": sorted(errors),
    }
    if errors and may_read_metrics(request):
        body["errors"] = errors
    return JsonResponse(body, status=200 if ready else 503)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus's text format, for staff or the metrics token's bearer."""
    if not may_read_metrics(request):
        raise Http404()
    return HttpResponse(generate_latest(metrics_registry()), content_type=CONTENT_TYPE_LATEST)


# --- Figures read at scrape time ------------------------------------------------------------------


class StepwiseCollector(Collector):
    """Queue depth and consumers per queue, jobs by kind and state with the oldest's age, jobs
    waiting on a queue nobody consumes, step labels in the last minute. One scrape reads the job
    tables grouped by status (small tables), asks the broker each queue's depth and reads the
    cached consumers (``common.queues``)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        consumers = queue_consumers()
        depth = GaugeMetricFamily(
            "stepwise_queue_depth", "Messages waiting on the queue.", labels=["queue"]
        )
        workers = GaugeMetricFamily(
            "stepwise_queue_consumers", "Workers that consume the queue.", labels=["queue"]
        )
        known = GaugeMetricFamily(
            "stepwise_queue_consumers_known",
            "1 when the workers could be asked which queues they consume.",
        )
        known.add_metric([], 1 if consumers.known else 0)
        for queue, size in _queue_depths().items():
            depth.add_metric([queue], size)
        for queue in settings.STEPWISE_QUEUES:
            workers.add_metric([queue], len(consumers.of(queue)))
        yield from (depth, workers, known)

        jobs = GaugeMetricFamily(
            "stepwise_jobs", "Jobs by kind and state.", labels=["kind", "state"]
        )
        oldest = GaugeMetricFamily(
            "stepwise_job_oldest_seconds",
            "Age of the oldest waiting or running job, by kind and state (since it was created).",
            labels=["kind", "state"],
        )
        stranded = GaugeMetricFamily(
            "stepwise_jobs_unconsumed",
            "Waiting jobs whose queue no worker consumes, by kind and queue.",
            labels=["kind", "queue"],
        )
        now = timezone.now()
        for kind in job_kinds().values():
            counts = dict.fromkeys(("pending", "running", "done", "failed"), 0)
            rows = kind.model.objects.values("status").annotate(
                n=Count("pk"), first=Min(kind.created_field)
            )
            for row in rows:
                state = kind.state(kind.model(status=row["status"]))
                counts[state] += row["n"]
                if state not in FINISHED and row["first"] is not None:
                    oldest.add_metric([kind.name, state], (now - row["first"]).total_seconds())
            for state, n in counts.items():
                jobs.add_metric([kind.name, state], n)
            if consumers.unconsumed(kind.queue):
                stranded.add_metric([kind.name, kind.queue], counts["pending"])
            else:
                stranded.add_metric([kind.name, kind.queue], 0)
        yield from (jobs, oldest, stranded)

        from labeling.models import StepLabel

        labels = GaugeMetricFamily(
            "stepwise_step_labels_last_minute", "Step labels written in the last 60 seconds."
        )
        labels.add_metric(
            [], StepLabel.objects.filter(created_at__gte=now - timedelta(seconds=60)).count()
        )
        yield labels


def _queue_depths() -> dict[str, int]:
    """Messages waiting on each queue, as the broker counts them (-1: the broker did not say)."""
    from celery import current_app

    out = dict.fromkeys(settings.STEPWISE_QUEUES, -1)
    try:
        with current_app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, timeout=settings.STEPWISE_INSPECT_TIMEOUT)
            for queue in settings.STEPWISE_QUEUES:
                channel = conn.channel()
                try:
                    out[queue] = channel.queue_declare(queue=queue, passive=True).message_count
                except Exception:  # never declared (nothing sent or consumed yet): empty
                    out[queue] = 0
                finally:
                    channel.close()
    except Exception as error:
        log.warning("metrics: could not read the queues' depth: %s", error)
    return out


def metrics_registry() -> CollectorRegistry:
    """The registry a scrape reads: this process's request latency (or every gunicorn worker's,
    with ``PROMETHEUS_MULTIPROC_DIR``) and the figures read now."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REQUEST_SECONDS)
    registry.register(StepwiseCollector())
    return registry
