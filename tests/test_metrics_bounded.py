"""Metrics that callers cannot grow, readiness that is cheap for anyone, and the workers'
figures (issue 41): made-up methods and routes fold into one label each; ``/readyz`` is
throttled for anonymous callers, names no host to them, writes the storage at most every
``STEPWISE_READYZ_SECONDS`` and never waits for the workers once it has an answer; ``/metrics``
has what the workers did (jobs finished by kind and outcome, their durations, active-learning
runs included) and the media's disk use."""

from __future__ import annotations

import random
import string
import threading
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.utils import timezone

from common import queues
from exports.models import Export
from learning.models import ActiveLearningRun
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


def _series(text: str) -> set[str]:
    """Each sample's name and labels (its value left out)."""
    return {line.rsplit(" ", 1)[0] for line in text.splitlines() if not line.startswith("#")}


def test_a_thousand_requests_with_random_methods_and_routes_leave_the_metrics_size_unchanged(
    client,
):
    staff = make_user(is_staff=True)
    rng = random.Random(41)

    def junk() -> str:
        return "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(3, 12)))

    client.generic("BREW", "/login/")  # the folded series exist once
    client.generic("BREW", f"/{junk()}/")
    client.force_login(staff)
    client.get("/metrics")  # the scrape's own series exist once too
    before = client.get("/metrics").content.decode()
    client.logout()
    for k in range(1000):
        path = "/login/" if k % 2 else f"/{junk().lower()}/{k}/"
        response = client.generic(junk(), path)
        assert response.status_code < 500
    client.force_login(staff)
    after = client.get("/metrics").content.decode()

    assert _series(after) == _series(before)
    assert len(after) - len(before) < 200  # only the counts' digits grew
    assert 'method="other",status="4xx",view="unresolved"' in after
    assert 'method="other",status="4xx",view="login"' in after


def test_readyz_names_no_host_to_anonymous_callers_and_throttles_them(client, settings):
    settings.STEPWISE_READYZ_PER_MINUTE = 5
    consumers = {"celery": ["default@db-host-7"], "learning": ["gpu@box"], "long": ["l@x"]}
    # What the workers said, as common.queues keeps it (no worker runs in this test).
    cache.set(queues.CACHE_KEY, {"by_queue": consumers, "error": "", "at": time.time()}, 600)
    answers = [client.get("/readyz") for _ in range(7)]
    assert [a.status_code for a in answers] == [200] * 5 + [429] * 2
    assert answers[0].json()["checks"]["workers"] == "ok"
    assert "db-host-7" not in answers[0].content.decode()
    assert int(answers[-1]["Retry-After"]) >= 1
    client.force_login(make_user(is_staff=True))  # who may read the metrics: no limit
    insider = client.get("/readyz")
    assert insider.status_code == 200
    assert insider.json()["checks"]["workers"]["celery"] == ["default@db-host-7"]


def test_readyz_writes_the_storage_at_most_once_per_interval(client, settings):
    settings.STEPWISE_READYZ_SECONDS = 3600
    with mock.patch.object(default_storage, "save", wraps=default_storage.save) as save:
        for _ in range(20):
            assert client.get("/readyz").json()["checks"]["storage"] == "ok"
    assert save.call_count == 1


def test_readyz_does_not_wait_for_the_workers_once_it_has_an_answer(client, settings):
    """Asking the workers waits the inspect timeout for replies; once an answer is kept, a stale
    one is served while one thread asks again."""
    settings.STEPWISE_INSPECT_TIMEOUT = 3.0
    settings.STEPWISE_QUEUE_CONSUMERS_SECONDS = 0  # always stale
    client.get("/readyz")  # the first answer: asked in the request (nothing kept yet)
    client.get("/readyz")  # stale: served at once, asked again in the background
    asking = [t for t in threading.enumerate() if t.name == "queue-consumers"]
    assert asking and asking[0].is_alive()  # still waiting for replies: the request did not
    asking[0].join(timeout=30)


def test_metrics_have_what_the_workers_did_and_the_media_disk_use(client, media):
    campaign = make_campaign(slug="w")
    now = timezone.now()
    for seconds, status in ((4, "done"), (6, "done"), (100, "failed")):
        Export.objects.create(
            campaign=campaign,
            format="trl",
            status=status,
            started_at=now - timedelta(seconds=seconds),
            finished_at=now,
        )
    Export.objects.create(  # finished before the window: not counted
        campaign=campaign,
        format="trl",
        status="failed",
        started_at=now - timedelta(days=2, seconds=5),
        finished_at=now - timedelta(days=2),
    )
    run = ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        started_at=now - timedelta(seconds=65),
        finished_at=now - timedelta(seconds=5),
    )
    (media / f"prm/w/run-{run.pk}").mkdir(parents=True)
    (media / f"prm/w/run-{run.pk}/labels.jsonl").write_bytes(b"x" * 1000)
    client.force_login(make_user(is_staff=True))
    text = client.get("/metrics").content.decode()

    assert 'stepwise_jobs_finished_recent{kind="exports",state="done"} 2.0' in text
    assert 'stepwise_jobs_finished_recent{kind="exports",state="failed"} 1.0' in text
    assert 'stepwise_job_duration_seconds{kind="exports",quantile="1"} 100.0' in text
    assert 'stepwise_job_duration_seconds{kind="exports",quantile="0.5"} 6.0' in text
    al = [line for line in text.splitlines() if 'quantile="1"' in line and "exports" not in line]
    assert any(line.endswith(" 60.0") for line in al), al  # the active-learning run
    assert 'stepwise_media_bytes{area="prm"} 1000.0' in text
    assert "stepwise_media_reclaimable_bytes 0.0" in text
    for part in ("broker", "database", "storage"):
        assert f'stepwise_metrics_part_ok{{part="{part}"}} 1.0' in text
