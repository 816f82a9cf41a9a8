"""The figures ``/metrics`` serves (stepwise/observability.py has the view and who may read it).

Request latency is each web process's own (``REQUEST_SECONDS``; ``PROMETHEUS_MULTIPROC_DIR``
joins a gunicorn's worker processes). Everything else is read when Prometheus scrapes
(``StepwiseCollector``), from where the truth is, so that every web process answers the same and
one scrape of any of them covers the workers too, on any number of machines: the broker (queue
depth, who consumes each queue), the database (jobs by kind and state, the oldest one's age, the
jobs finished in the last ``STEPWISE_METRICS_WINDOW_SECONDS`` by kind and outcome with their
durations: what the workers did, active-learning runs included), and the file storage (the
media's disk use by area, kept ``STEPWISE_DISK_METRICS_SECONDS`` in the process). The workers
export nothing themselves: a job's row already records when it started, when it finished and
how; no metrics port per worker and no shared folder across machines is needed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.db.models import Count, F, Min
from django.dispatch import receiver
from django.utils import timezone
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
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


class StepwiseCollector(Collector):
    """Queue depth and consumers per queue, jobs by kind and state with the oldest's age, jobs
    waiting on a queue nobody consumes, step labels in the last minute. One scrape reads the job
    tables grouped by status (small tables), asks the broker each queue's depth and reads the
    cached consumers (``common.queues``).

    Each part (``broker``: the queues; ``database``: the jobs and labels) is read on its own:
    a part that fails is left out, logged, and said by ``stepwise_metrics_part_ok{part}`` 0, so
    a scrape while the database or Redis is down still answers 200 with what it could read."""

    def collect(self) -> Iterator[Metric]:
        ok = GaugeMetricFamily(
            "stepwise_metrics_part_ok",
            "1 when this part of the figures could be read at this scrape (0: its figures are "
            "missing; the web process's log says why).",
            labels=["part"],
        )
        parts: tuple[tuple[str, Callable[[], list[Metric]]], ...] = (
            ("broker", _queue_figures),
            ("database", _job_figures),
            ("database", _finished_job_figures),
            ("storage", _media_figures),
        )
        failed: dict[str, bool] = {}
        for part, read in parts:
            if failed.get(part):
                continue  # one failure a part: a database that is down is not asked twice
            try:
                families = read()
            except Exception as error:  # a part that fails is an answer, not a 500
                log.warning("metrics: the %s figures could not be read: %s", part, error)
                failed[part] = True
                continue
            failed.setdefault(part, False)
            yield from families
        for part, bad in failed.items():
            ok.add_metric([part], 0 if bad else 1)
        yield ok


def _queue_figures() -> list[Metric]:
    consumers = queue_consumers()
    depth = GaugeMetricFamily(
        "stepwise_queue_depth",
        "Messages waiting on the queue (-1: the broker did not answer).",
        labels=["queue"],
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
    return [depth, workers, known]


def _job_figures() -> list[Metric]:
    """Jobs by kind and state, the oldest waiting or running one's age, the waiting ones
    nobody consumes, step labels in the last minute: read from the database."""
    consumers = queue_consumers()
    jobs = GaugeMetricFamily("stepwise_jobs", "Jobs by kind and state.", labels=["kind", "state"])
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
        waiting = counts["pending"] if consumers.unconsumed(kind.queue) else 0
        stranded.add_metric([kind.name, kind.queue], waiting)

    from labeling.models import StepLabel

    labels = GaugeMetricFamily(
        "stepwise_step_labels_last_minute", "Step labels written in the last 60 seconds."
    )
    labels.add_metric(
        [], StepLabel.objects.filter(created_at__gte=now - timedelta(seconds=60)).count()
    )
    return [jobs, oldest, stranded, labels]


QUANTILES = (0.5, 0.9, 1.0)


def _finished_job_figures() -> list[Metric]:
    """What the workers did in the last ``STEPWISE_METRICS_WINDOW_SECONDS``: jobs finished by
    kind and outcome, and their durations (started to finished, the last attempt) as quantiles,
    by kind, active-learning runs included. Read from the jobs' rows, so every worker on every
    machine is counted without exporting anything itself."""
    window = settings.STEPWISE_METRICS_WINDOW_SECONDS
    since = timezone.now() - timedelta(seconds=window)
    finished = GaugeMetricFamily(
        "stepwise_jobs_finished_recent",
        f"Jobs finished in the last {window} s, by kind and outcome (done or failed).",
        labels=["kind", "state"],
    )
    durations = GaugeMetricFamily(
        "stepwise_job_duration_seconds",
        f"Durations of the jobs finished in the last {window} s (started to finished), by kind, "
        "as quantiles (1: the longest).",
        labels=["kind", "quantile"],
    )
    for kind in job_kinds().values():
        field = kind.finished_field
        fields = {f.name for f in kind.model._meta.get_fields()}
        if field is None or "started_at" not in fields:
            continue
        rows = kind.model.objects.filter(**{f"{field}__gte": since})
        counts = dict.fromkeys(("done", "failed"), 0)
        for row in rows.values("status").annotate(n=Count("pk")):
            state = kind.state(kind.model(status=row["status"]))
            if state in counts:
                counts[state] += row["n"]
        for state, n in counts.items():
            finished.add_metric([kind.name, state], n)
        spans = sorted(
            (end - start).total_seconds()
            for start, end in rows.exclude(started_at=None)
            .order_by(F(field).desc())
            .values_list("started_at", field)[:10_000]
        )
        for q in QUANTILES if spans else ():
            durations.add_metric(
                [kind.name, f"{q:g}"], spans[min(len(spans) - 1, int(q * len(spans)))]
            )
    return [finished, durations]


_media_cache: dict[str, object] = {}
_media_lock = threading.Lock()


@receiver(setting_changed)
def _media_settings_changed(setting: str, **kwargs: object) -> None:
    """Another media folder or storage: walk it at the next scrape."""
    if setting in ("MEDIA_ROOT", "STORAGES", "STEPWISE_DISK_METRICS_SECONDS"):
        _media_cache.clear()


def _media_figures() -> list[Metric]:
    """The media's disk use by area (``learning.disk``), and what the retention rule and the
    orphans would free: walked at most every ``STEPWISE_DISK_METRICS_SECONDS`` per process (a
    walk of a large media folder takes a while; one scrape at a time does it)."""
    from learning.disk import disk_usage

    with _media_lock:
        at = _media_cache.get("at")
        if (
            not isinstance(at, float)
            or time.monotonic() - at > settings.STEPWISE_DISK_METRICS_SECONDS
        ):
            by_area: dict[str, int] = {}
            reclaimable = 0
            for row in disk_usage():
                by_area[row.area] = by_area.get(row.area, 0) + row.bytes
                reclaimable += row.reclaimable_bytes
            _media_cache.update(at=time.monotonic(), by_area=by_area, reclaimable=reclaimable)
        by_area = dict(_media_cache["by_area"])  # type: ignore[call-overload]
        reclaimable = int(_media_cache["reclaimable"])  # type: ignore[call-overload]
    used = GaugeMetricFamily(
        "stepwise_media_bytes",
        "Bytes of the media (the file storage) by area: prm, exports, uploads, orphans.",
        labels=["area"],
    )
    for area, size in sorted(by_area.items()):
        used.add_metric([area], size)
    free = GaugeMetricFamily(
        "stepwise_media_reclaimable_bytes",
        "Bytes that the retention rule and the orphans would free (disk_usage --reclaim).",
    )
    free.add_metric([], reclaimable)
    return [used, free]


def _queue_depths() -> dict[str, int]:
    """Messages waiting on each queue, as the broker counts them (-1: the broker did not say)."""
    from celery import current_app

    out = dict.fromkeys(settings.STEPWISE_QUEUES, -1)
    try:
        with current_app.connection_for_read() as conn:
            # ignore[arg-type]: kombu's stub says int; kombu takes seconds as a float.
            conn.ensure_connection(
                max_retries=1,
                timeout=settings.STEPWISE_INSPECT_TIMEOUT,  # type: ignore[arg-type]
            )
            for queue in settings.STEPWISE_QUEUES:
                channel: Any = conn.channel()  # a transport's channel: kombu's stub has less
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
