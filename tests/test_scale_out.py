"""Scale-out, shown: two web processes and two workers on separate queues share one database,
one broker and one file storage, and a campaign's whole cycle goes across them.

Two gunicorn processes (on two ports) take the requests, alternately; a worker consuming only
``celery`` (with beat) runs the imports, and one consuming only ``learning`` (what a GPU box
would run) the active-learning run and the export. Uploads written by a web process are read
by a worker, the export a worker wrote is downloaded from the other web process. Needs
PostgreSQL and Redis (CI has both); database connections stay bounded throughout.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from labeling.models import Assignment
from learning.triggers import submitted_labels
from tests.factories import make_campaign, make_member, make_token
from tests.waiting import log_tail, wait_until

pytestmark = [pytest.mark.celery, pytest.mark.postgres, pytest.mark.slow]

DEADLINE_S = 240  # a failure bound, not a performance assertion
DEMO = django_settings.BASE_DIR / "demo"
ROOT = Path(__file__).resolve().parents[1]
# Each process keeps its connection a few seconds at most, and runs few threads.
PROCESS_ENV = {"DB_CONN_MAX_AGE": "5", "STEPWISE_AL_SCORE_WORKERS": "1"}
# Everything on this machine shares max_connections (100): the whole cluster must stay small.
MAX_CONNECTIONS = 20


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


class Cluster:
    """The API, through two web processes taken in turn, and a watch on database connections."""

    def __init__(self, urls: list[str], token: str, workers: list) -> None:
        import httpx

        self.clients = [
            httpx.Client(base_url=u, headers={"Authorization": f"Token {token}"}, timeout=60)
            for u in urls
        ]
        self.turn = 0
        self.workers = workers
        self.most_connections = 0

    def client(self, which: int | None = None):
        if which is None:
            which, self.turn = self.turn, 1 - self.turn
        return self.clients[which]

    def connections(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            )
            (n,) = cursor.fetchone()
        self.most_connections = max(self.most_connections, n)
        return n

    def wait(self, path: str, *, until, what: str) -> dict:
        last: list[dict] = []

        def answered() -> dict | None:
            self.connections()
            last[:] = [self.client().get(path).json()]
            return last[0] if until(last[0]) else None

        def logs() -> str:
            return f"last answer: {last}\n" + log_tail(*self.workers, chars=3000)()

        return wait_until(
            answered, what=what, seconds=DEADLINE_S, every=0.3, processes=self.workers, log=logs
        )


def test_two_web_processes_and_two_workers_on_separate_queues_run_a_whole_cycle(
    media, web_processes, celery_workers
):
    campaign = make_campaign(slug="scale", qc_rate=0.0, overlap=1)
    manager = make_member(campaign=campaign, role="manager").user
    annotator = make_member(campaign=campaign).user
    light = celery_workers(queues="celery", beat=True, **PROCESS_ENV)
    heavy = celery_workers(queues="learning", **PROCESS_ENV)
    urls = [web_processes(**PROCESS_ENV), web_processes(**PROCESS_ENV)]
    api = Cluster(urls, make_token(user=manager), [light, heavy])
    base = f"/api/campaigns/{campaign.slug}"

    # Imports: uploaded to one web process, run by the `celery` worker, polled on the other.
    uploads = [
        ("prm800k_phase1_trajectories.jsonl", "prm800k-trajectories"),  # labelled history
        ("gsm8k_model_solutions.jsonl", "jsonl"),  # open work
    ]
    for name, fmt in uploads:
        with open(DEMO / name, "rb") as fh:
            response = api.client(0).post(
                f"{base}/imports/",
                data={"format": fmt, "grade": "false"},
                files={"file": (name, fh)},
            )
        assert response.status_code == 202, response.text
        job = api.wait(
            f"{base}/imports/{response.json()['id']}/",
            until=lambda b: b["status"] in ("done", "failed"),
            what=f"the import of {name}",
        )
        assert job["status"] == "done", job
        assert job["counts"]["solutions_created"] > 0
    labels_before = submitted_labels(campaign=campaign)

    # A labelling round through the API, alternating web processes.
    import httpx

    annotating = [
        httpx.Client(base_url=u, headers={"Authorization": f"Token {make_token(user=annotator)}"})
        for u in urls
    ]
    for k in range(6):
        body = annotating[k % 2].post(f"{base}/next/").json()
        assignment = body["assignment"]
        assert assignment is not None, body
        n = len(assignment["steps"])
        ratings = [1] * n if k % 2 else [1] * (n - 1) + [-1]  # stop at the first error
        submitted = annotating[(k + 1) % 2].post(
            assignment["submit_url"], json={"submission_key": f"scale-{k}", "ratings": ratings}
        )
        assert submitted.status_code == 200, submitted.text
    assert Assignment.objects.filter(annotator=annotator, status="submitted").count() == 6

    # Active learning: asked on one web process, trained and scored by the `learning` worker.
    response = api.client(0).post(f"{base}/active-learning/runs/")
    assert response.status_code == 202, response.text
    run = api.wait(
        f"{base}/active-learning/runs/{response.json()['id']}/",
        until=lambda b: b["status"] in ("succeeded", "failed"),
        what="the active-learning run",
    )
    assert run["status"] == "succeeded", run
    assert run["training_labels"] > labels_before

    # Export: asked on one web process, written by the `learning` worker, downloaded elsewhere.
    response = api.client(1).post(f"{base}/exports/", json={"format": "trl"})
    assert response.status_code == 202, response.text
    export = api.wait(
        f"{base}/exports/{response.json()['id']}/",
        until=lambda b: b["status"] in ("done", "failed"),
        what="the export",
    )
    assert export["status"] == "done", export
    (entry,) = export["files"]
    content = api.client(0).get(entry["url"]).content
    assert hashlib.sha256(content).hexdigest() == entry["sha256"]
    assert len(content.splitlines()) == entry["records"] > 0

    # Each queue's tasks ran on its own worker only.
    light_log = light.log_path.read_text(errors="replace")
    heavy_log = heavy.log_path.read_text(errors="replace")
    ran = "Task {}[".format  # the worker's "received" and "succeeded" lines, not its banner
    assert ran("imports.import_run") in light_log
    assert ran("imports.import_run") not in heavy_log
    for task in ("learning.active_learning_run", "exports.export_run"):
        assert ran(task) in heavy_log and ran(task) not in light_log
    assert api.most_connections <= MAX_CONNECTIONS, api.most_connections
