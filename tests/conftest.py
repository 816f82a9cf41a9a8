from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from tests.waiting import answers, wait_until

# Playwright's sync API runs an event loop in the test thread; Django must still allow ORM calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# Hugging Face libraries (datasets, transformers, trl) read these at import: nothing may be
# downloaded, and without them load_dataset and the trainers try the network.
for _name in (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "HF_HUB_DISABLE_TELEMETRY",
    "TRL_EXPERIMENTAL_SILENCE",
):
    os.environ.setdefault(_name, "1")
# Under pytest-xdist (`make test-fast`: two workers on two cores) each worker gets one torch
# thread: with torch's default of one thread a core, the workers' threads spin waiting on each
# other and burn CPU for nothing. Set before torch is imported (OMP_NUM_THREADS is read then).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("PRM_NUM_THREADS", "1")

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_cache(settings, request):
    """A cache of the test's own (login throttling counts must not leak between tests)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": request.node.nodeid,
        }
    }


@pytest.fixture(autouse=True)
def _quick_worker_inspection(settings):
    """In-process tests have no worker to wait for: ask the broker which queues have consumers
    (common.queues) with a short wait; the tests that start workers wait longer."""
    settings.STEPWISE_INSPECT_TIMEOUT = 0.1


# Modules whose every test is marked slow (``pytestmark``) and whose mere collection costs
# seconds: test_api_fuzz.py (schemathesis builds each operation's coverage cases when it
# collects, about 3 s of CPU per process). A run that deselects slow tests (make test-fast)
# does not collect them at all.
SLOW_MODULES = frozenset({"test_api_fuzz.py"})


def pytest_ignore_collect(collection_path, config):
    """Skip collecting ``SLOW_MODULES`` when the marker expression leaves slow tests out."""
    if collection_path.name not in SLOW_MODULES:
        return None
    markexpr = config.getoption("markexpr") or ""
    return True if "not slow" in markexpr else None


def pytest_collection_modifyitems(config, items):
    """Skip PostgreSQL-only tests on SQLite. CI always runs the suite on PostgreSQL too."""
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL=postgres://...)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium: Playwright's own browser download does not work here."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.fail("Chromium is not installed: apt-get install -y chromium")
    return {
        **browser_type_launch_args,
        "executable_path": executable,
        "args": [
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
        ],
    }


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix, tmp_path_factory, request
):
    """On SQLite, keep the test database in a file instead of memory, copied from a migrated
    template when there is one (``sqlite_template``).

    A real Celery worker is another process: it can open a file, not this process's memory.
    """
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3") and not db.get("TEST", {}).get("NAME"):
        path = tmp_path_factory.mktemp("db") / "test.sqlite3"
        db.setdefault("TEST", {})["NAME"] = str(path)
        template = sqlite_template()
        if template.is_file() and not request.config.getoption("create_db"):
            shutil.copyfile(template, path)


def sqlite_template(root: Path = ROOT) -> Path:
    """Where the migrated SQLite test database is kept between runs, named by everything its
    contents depend on: every migration file of the project and ``common/migration_ops.py``,
    which they import, the pinned packages (their apps' migrations), Django's, SQLite's and
    Python's versions. Migrating a fresh database takes
    about 2.5 s a test process; copying the template, a few milliseconds. A changed migration
    makes another name, so a stale template is never used (``--create-db`` ignores it)."""
    import hashlib
    import sqlite3
    import sys

    import django

    digest = hashlib.sha256()
    for path in [*sorted(root.glob("*/migrations/*.py")), root / "common" / "migration_ops.py"]:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    digest.update((root / "requirements.lock").read_bytes())
    digest.update(f"{django.__version__} {sqlite3.sqlite_version} {sys.version}".encode())
    return root / "var" / "test-databases" / f"{digest.hexdigest()[:20]}.sqlite3"


@pytest.fixture(scope="session")
def django_db_keepdb(request, django_db_modify_db_settings):
    """Keep (and so reuse) the test database when it was copied from the template, as with
    ``--reuse-db``: migrating it only confirms it is up to date."""
    from django.conf import settings

    name = settings.DATABASES["default"].get("TEST", {}).get("NAME")
    copied = (
        settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
        and name is not None
        and Path(name).is_file()
    )
    reuse = request.config.getvalue("reuse_db") and not request.config.getvalue("create_db")
    return bool(reuse or copied)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's setup, then, on SQLite, the migrated database kept as the template for
    the next run (written whole and renamed into place: another process reads it or nothing)."""
    import os
    import sqlite3

    from django.conf import settings

    db = settings.DATABASES["default"]
    template = sqlite_template()
    if db["ENGINE"].endswith("sqlite3") and not template.is_file():
        template.parent.mkdir(parents=True, exist_ok=True)
        tmp = template.with_name(f"{template.name}.{os.getpid()}.tmp")
        with django_db_blocker.unblock():
            source = sqlite3.connect(db["NAME"])
            target = sqlite3.connect(tmp)
            try:
                source.backup(target)
            finally:
                target.close()
                source.close()
        os.replace(tmp, template)
    yield


def database_url(db: dict) -> str:
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db.get("USER") or ""
    if db.get("PASSWORD"):
        auth += f":{db['PASSWORD']}"
    host = db.get("HOST") or "localhost"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{'@' if auth else ''}{host}{port}/{db['NAME']}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def web_processes(transactional_db, settings, tmp_path):
    """``start(**env)`` launches one gunicorn (1 process, 2 threads) on the test database, with
    extra environment variables, and returns its URL; it uses this process's broker and media
    root (the test sets ``MEDIA_ROOT`` first). Whatever is still running at the end is stopped."""
    import subprocess
    import sys

    import httpx
    from django.db import connection

    started: list[subprocess.Popen] = []

    def start(**env_extra: str) -> str:
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url(connection.settings_dict),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "STEPWISE_VAR_DIR": str(settings.VAR_DIR),
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "CELERY_TASK_ALWAYS_EAGER": "False",
            **env_extra,
        }
        log = open(tmp_path / f"gunicorn-{port}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "stepwise.wsgi:application",
                f"--bind=127.0.0.1:{port}",
                "--workers=1",
                "--threads=2",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started.append(proc)
        url = f"http://127.0.0.1:{port}"
        wait_until(
            answers(
                lambda: httpx.get(f"{url}/login/", timeout=5).status_code, httpx.TransportError
            ),
            what=f"gunicorn on {port} to start",
            seconds=60,
            every=0.2,
            processes=[proc],
            log=lambda: log.name,
        )
        return url

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def celery_workers(transactional_db, settings, tmp_path):
    """Starts real ``celery -A stepwise worker --pool=solo`` processes on the test database.

    ``start(**env)`` launches one, with extra environment variables; ``queues`` says which
    queues it consumes (all of them by default, as ``make run``'s worker), ``beat=True`` runs
    beat in it too (its schedule file in the test's own folder). Each uses this process's
    broker (Redis when CELERY_BROKER_URL says so, else the filesystem transport under
    STEPWISE_VAR_DIR) and media root, and logs to ``proc.log_path``. The test must commit what a
    worker should see, hence the transactional database. Whatever is still running at the end is
    stopped.
    """
    import subprocess
    import sys
    import uuid

    from django.db import connection

    started: list[subprocess.Popen] = []
    settings.STEPWISE_INSPECT_TIMEOUT = 2.0  # real workers answer within the polling interval

    def start(*, queues: str | None = None, beat: bool = False, **env_extra: str):
        queues = queues or ",".join(settings.STEPWISE_QUEUES)
        env = {
            **os.environ,
            "DATABASE_URL": database_url(connection.settings_dict),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "STEPWISE_VAR_DIR": str(settings.VAR_DIR),
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "CELERY_TASK_ALWAYS_EAGER": "False",
            **env_extra,
        }
        log_path = tmp_path / f"celery-worker-{len(started)}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "stepwise",
                    "worker",
                    "--pool=solo",
                    "--loglevel=INFO",
                    "--without-mingle",
                    "--without-gossip",
                    "--without-heartbeat",
                    f"--hostname=test-{uuid.uuid4().hex[:8]}@%h",
                    f"--queues={queues}",
                    *(
                        ["--beat", f"--schedule={tmp_path / f'beat-{len(started)}'}"]
                        if beat
                        else []
                    ),
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        proc.log_path = log_path
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def celery_worker_process(celery_workers):
    """One real Celery worker process on the test database (see ``celery_workers``)."""
    return celery_workers()


# --- The data the API's fuzzing tests aim at ------------------------------------------------


@pytest.fixture
def _keep_connection():
    """The WSGI app closes the database connection after each request, which would end the
    test's transaction; Django's test client turns that off the same way."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_seeded(db, settings, tmp_path, _keep_connection):
    """For the API's fuzzing tests (tests/test_api_schema.py, tests/test_api_fuzz.py): a
    campaign ``fuzz`` with solutions, labels, gold, an import, a generation job and a
    finished export, and a token of the campaign's manager."""
    from annotators.models import ApiToken
    from exports.models import Export
    from exports.services import export_run
    from imports.models import ImportJob
    from labeling.models import Membership
    from machines.models import GenerationJob
    from tests.factories import (
        make_campaign,
        make_gold_solution,
        make_labelled,
        make_member,
        make_solution,
        make_token,
        make_user,
    )

    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = make_campaign(slug="fuzz", overlap=2)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    solutions = [make_solution(campaign=campaign) for _ in range(3)]
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1])
    annotator = make_member(campaign=campaign).user
    work = make_labelled(solution=solutions[0], ratings=[1, 0, -1], annotator=annotator)
    export = Export.objects.create(campaign=campaign, format="trl")
    export_run(export=export)
    job = ImportJob.objects.create(campaign=campaign, file_name="x.jsonl", format="jsonl")
    generation = GenerationJob.objects.create(
        campaign=campaign, base_url="http://localhost:8000/v1", model="m", status="failed"
    )
    make_campaign(slug="elsewhere")
    key = make_token(user=manager, name="fuzz")
    decoy = ApiToken.objects.get(pk=ApiToken.objects.get(key_hash=ApiToken.hash_key(key)).pk)
    make_token(user=manager, name="decoy")
    ids = {
        "problems": [s.problem_id for s in solutions],
        "solutions": [s.pk for s in solutions],
        "exports": [export.pk],
        "imports": [job.pk],
        "generations": [generation.pk],
        "assignments": [work.pk],
        "tokens": [ApiToken.objects.get(name="decoy").pk],
    }
    assert decoy.name == "fuzz"
    make_user(username="outsider")
    return {"key": key, "ids": ids, "export": export}
