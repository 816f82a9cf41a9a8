"""Stepwise settings: one file, driven by environment variables with safe defaults.

Every variable is listed in docs/settings.md. With none set, the app runs on an SQLite file and
kombu's filesystem broker under ``var/``, so a fresh checkout works at once; installed from a
wheel (the ``stepwise`` command), ``var/`` is under ``STEPWISE_HOME``, else the current directory.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
# A checkout has templates/, static/ and demo/ beside the apps; a wheel carries them inside this
# package (stepwise/assets/, pyproject.toml's package data), where site-packages is no place for
# the database and the files the site writes.
CHECKOUT = (BASE_DIR / "manage.py").is_file() and (BASE_DIR / "templates").is_dir()
ASSETS_DIR = BASE_DIR if CHECKOUT else Path(__file__).resolve().parent / "assets"


def envbool(name: str, default: str) -> bool:
    return os.environ.get(name, default).strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: str) -> int:
    return int(os.environ.get(name, default))


def envstr(name: str, default: str) -> str:
    return os.environ.get(name, default)


_HOME = Path(envstr("STEPWISE_HOME", "")) if envstr("STEPWISE_HOME", "") else None
VAR_DIR = Path(
    envstr(
        "STEPWISE_VAR_DIR",
        str((_HOME or (BASE_DIR if CHECKOUT else Path.cwd())).resolve() / "var"),
    )
)
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """SECRET_KEY, else a key generated once per checkout and kept in var/ (never in git)."""
    if key := os.environ.get("SECRET_KEY"):
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = envbool("DEBUG", "False")
PRODUCTION = envbool("STEPWISE_PRODUCTION", "False")
ALLOWED_HOSTS = [h for h in envstr("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h]
SITE_URL = envstr("SITE_URL", "http://localhost:8000")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "django_htmx",
    "template_partials",
    # Lowest layer first; a module imports only its own app and those above it in this list
    # (the import-linter contracts in pyproject.toml hold it).
    "common",
    "labeling",
    "annotators",
    "imports",
    "machines",
    "exports",
    "learning",
]

MIDDLEWARE = [
    # First, so that it times everything below it (stepwise/observability.py).
    "stepwise.observability.RequestMetricsMiddleware",
    # Each request's id, user and campaign on its log lines (common/logs.py), early, so that
    # what the middleware below logs carries them too.
    "common.logs.RequestLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "stepwise.security.ContentSecurityPolicyMiddleware",
    # WhiteNoise, scanning the static files once a process (stepwise/static.py).
    "stepwise.static.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "stepwise.urls"
WSGI_APPLICATION = "stepwise.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [ASSETS_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        envstr("DATABASE_URL", f"sqlite:///{VAR_DIR / 'stepwise.sqlite3'}"),
        conn_max_age=envint("DB_CONN_MAX_AGE", "0"),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server read while the worker writes; IMMEDIATE takes the write lock at
    # BEGIN so concurrent writers queue on busy_timeout instead of failing with "locked".
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [ASSETS_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every request otherwise
MEDIA_ROOT = Path(envstr("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_URL = "/media/"
# Files that web processes and workers share (uploads, exports, PRM checkpoints) go through
# Django's storage API (common/storage.py). The default is a directory under MEDIA_ROOT: every
# process must see the same one (one machine, or a shared mount). STEPWISE_STORAGE_BACKEND names
# another backend, with STEPWISE_STORAGE_OPTIONS as JSON, e.g. django-storages' S3 backend
# (`storages.backends.s3.S3Storage`, {"bucket_name": "...", "endpoint_url": "..."}), which must
# then be installed: see docs/operations.md.
STORAGES = {
    "default": {
        "BACKEND": envstr(
            "STEPWISE_STORAGE_BACKEND", "django.core.files.storage.FileSystemStorage"
        ),
        "OPTIONS": json.loads(envstr("STEPWISE_STORAGE_OPTIONS", "{}")),
    },
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotators.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "common.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Stepwise API",
    "DESCRIPTION": "Step-level human feedback on model math solutions: campaigns, imports, "
    "the labelling queue, labels, exports. Authenticate with `Authorization: Token <key>` "
    "(keys on your profile page) or a browser session (with the CSRF header on writes).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "RatingEnum": "labeling.models.Rating",
        "AssignmentStatusEnum": "labeling.models.Assignment.Status",
        "RunStatusEnum": "learning.models.ActiveLearningRun.Status",
        "JobStatusEnum": "exports.models.Export.Status",  # imports share these four states
        "EvidenceKindEnum": "machines.models.EvidenceJob.Kind",
        "SolutionKindEnum": "labeling.models.Solution.Kind",
    },
    "PATH_CONVERTER_OVERRIDES": {
        "id": {"type": "integer", "minimum": 0, "maximum": 999_999_999_999_999_999}
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "common.api.schema_add_error_responses",
    ],
    # Served from static/vendor/swagger-ui (no CDN: the Content Security Policy allows 'self').
    "SWAGGER_UI_DIST": "/static/vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": "/static/vendor/swagger-ui/favicon-32x32.png",
    "SWAGGER_UI_SETTINGS": {"persistAuthorization": True},
}

# Celery. The embedded default is kombu's filesystem transport: no server, a real worker.
# In production and CI set CELERY_BROKER_URL=redis://... ; the code is the same either way.
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", "filesystem://")
CELERY_DIR = VAR_DIR / "celery"
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu creates none of these folders itself; all on one filesystem (rename-based claim).
    for sub in ("queue", "processed", "control"):
        (CELERY_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_DIR / "queue"),
        "data_folder_out": str(CELERY_DIR / "queue"),
        "processed_folder": str(CELERY_DIR / "processed"),
        "control_folder": str(CELERY_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.1,
    }
else:
    # Redis redelivers an unacknowledged task after this many seconds (acks_late tasks).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", "3600")
    }
CELERY_RESULT_BACKEND = envstr("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", "False")
CELERY_WORKER_PREFETCH_MULTIPLIER = envint("CELERY_WORKER_PREFETCH_MULTIPLIER", "4")
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# With JSON logs a worker logs through LOGGING (below) instead of Celery's own plain format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = envstr("LOG_FORMAT", "text") != "json"
# Queues: heavy tasks (training and scoring, exports) go to `learning`, so a dedicated worker (a GPU
# box) takes them with `-Q learning`; work that may hold a worker for hours (generation from a model
# endpoint, rollouts and a judge) goes to `long`, so that imports, figures and the sweeps on the
# default `celery` queue are never behind it. A worker that serves them all says `-Q
# celery,learning,long` (scripts/serve.sh). Every queue needs a worker: the app asks the workers
# which queues they consume (common/queues.py) and says so on a job's page when nobody consumes its
# queue. See docs/operations.md. A job's task is named by its kind (common/jobs.py, JobKind.task);
# the sweep sends a job again to the same task, so to the same queue.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "learning.active_learning_run": {"queue": "learning"},
    "exports.export_run": {"queue": "learning"},
    "learning.scoring_run": {"queue": "learning"},
    "imports.generation_run": {"queue": "long"},
    "imports.evidence_run": {"queue": "long"},
}
# Every queue the routes name, the default first (readiness and the metrics watch each one).
STEPWISE_QUEUES = tuple(
    dict.fromkeys([CELERY_TASK_DEFAULT_QUEUE, *(r["queue"] for r in CELERY_TASK_ROUTES.values())])
)
# Seconds the answer to "which workers consume which queue" is kept (asking takes up to
# STEPWISE_INSPECT_TIMEOUT seconds of waiting for the workers' replies).
STEPWISE_QUEUE_CONSUMERS_SECONDS = envint("STEPWISE_QUEUE_CONSUMERS_SECONDS", "15")
STEPWISE_INSPECT_TIMEOUT = float(envstr("STEPWISE_INSPECT_TIMEOUT", "1.0"))
# /metrics (stepwise/observability.py) is readable by staff, and with
# `Authorization: Bearer <token>` when this is set (for Prometheus). Empty: staff only.
STEPWISE_METRICS_TOKEN = envstr("STEPWISE_METRICS_TOKEN", "")
# /metrics: the window of the finished jobs' counts and durations (seconds), how long the media's
# disk use is kept between two walks, and readiness: how long an answer is kept (it is refreshed
# in the background once stale) and how many anonymous /readyz calls an address may make a minute.
STEPWISE_METRICS_WINDOW_SECONDS = envint("STEPWISE_METRICS_WINDOW_SECONDS", "3600")
STEPWISE_DISK_METRICS_SECONDS = envint("STEPWISE_DISK_METRICS_SECONDS", "300")
STEPWISE_READYZ_SECONDS = float(envstr("STEPWISE_READYZ_SECONDS", "10"))
STEPWISE_READYZ_PER_MINUTE = envint("STEPWISE_READYZ_PER_MINUTE", "60")
# Periodic tasks; each app adds its own entries.
CELERY_BEAT_SCHEDULE: dict = {}
# Releases the slots of expired leases in every campaign (the queue also does it when serving).
CELERY_BEAT_SCHEDULE["labeling-leases-sweep"] = {
    "task": "labeling.leases_sweep",
    "schedule": envint("STEPWISE_LEASE_SWEEP_SECONDS", "60"),
}

# Jobs (common/jobs.py): imports, generations, exports, figure snapshots, bulk actions (and
# active-learning runs, with their own STEPWISE_AL_* bounds below). A running job beats its
# heartbeat every HEARTBEAT seconds; the sweep (every SWEEP seconds, on beat) sends again a job
# silent for STALE seconds, and fails it with a reason after MAX_ATTEMPTS starts. A waiting job
# nobody took within STALE seconds is sent again (the embedded broker never redelivers). So a
# killed worker's job is running again within STALE + SWEEP seconds.
STEPWISE_JOB_HEARTBEAT_SECONDS = envint("STEPWISE_JOB_HEARTBEAT_SECONDS", "10")
STEPWISE_JOB_STALE_SECONDS = envint("STEPWISE_JOB_STALE_SECONDS", "120")
STEPWISE_JOB_MAX_ATTEMPTS = envint("STEPWISE_JOB_MAX_ATTEMPTS", "3")
STEPWISE_JOB_SWEEP_SECONDS = envint(
    "STEPWISE_JOB_SWEEP_SECONDS", os.environ.get("STEPWISE_AL_SWEEP_SECONDS", "60")
)
# Every page that shows a job polls its status this often, in seconds, while it runs.
STEPWISE_JOB_POLL_SECONDS = envint("STEPWISE_JOB_POLL_SECONDS", "2")
# Tests only: hold a job at a named stage for some seconds, as JSON ({"exports.write": 30}).
STEPWISE_JOB_PAUSE = json.loads(envstr("STEPWISE_JOB_PAUSE", "{}"))
# One sweep for every kind of job, active-learning runs included.
CELERY_BEAT_SCHEDULE["common-jobs-sweep"] = {
    "task": "common.jobs_sweep",
    "schedule": STEPWISE_JOB_SWEEP_SECONDS,
}

# Active learning (learning/run.py). A running run beats its heartbeat this often; one
# whose heartbeat is older than the stale bound lost its worker: the sweep (every SWEEP seconds)
# queues it again, and fails it after MAX_ATTEMPTS starts. A queued run nobody started within the
# stale bound is sent again (the embedded broker never redelivers). The sweep is the jobs' one
# (STEPWISE_JOB_SWEEP_SECONDS; STEPWISE_AL_SWEEP_SECONDS is still read as its default).
STEPWISE_AL_HEARTBEAT_SECONDS = envint("STEPWISE_AL_HEARTBEAT_SECONDS", "10")
STEPWISE_AL_STALE_SECONDS = envint("STEPWISE_AL_STALE_SECONDS", "120")
STEPWISE_AL_MAX_ATTEMPTS = envint("STEPWISE_AL_MAX_ATTEMPTS", "3")
# Processes that score open solutions in a run (forked per batch; 1: in the worker itself).
STEPWISE_AL_SCORE_WORKERS = envint(
    "STEPWISE_AL_SCORE_WORKERS", str(min(4, len(os.sched_getaffinity(0))))
)
# Extra prm.TrainConfig fields for active-learning training, as JSON (e.g. {"epochs": 4}).
STEPWISE_AL_TRAIN = envstr("STEPWISE_AL_TRAIN", "{}")
# The PRM backbones managers may choose (labeling/backbones.py): bow, minilm, and hf:NAME for a
# local Hugging Face model folder NAME directly under STEPWISE_MODEL_ROOT. Only the operator
# chooses models; nothing is ever fetched from a model hub.
STEPWISE_PRM_BACKBONES = envstr("STEPWISE_PRM_BACKBONES", "bow,minilm")
# Disk (learning/retention.py): per campaign, the active PRM and the last STEPWISE_PRM_KEEP
# versions keep their checkpoints (and the last STEPWISE_PRM_KEEP runs their folders); beat
# deletes the rest every STEPWISE_RETENTION_SECONDS. `manage.py disk_usage` reports and reclaims.
STEPWISE_PRM_KEEP = envint("STEPWISE_PRM_KEEP", "3")
STEPWISE_RETENTION_SECONDS = envint("STEPWISE_RETENTION_SECONDS", "3600")
CELERY_BEAT_SCHEDULE["learning-media-retention"] = {
    "task": "learning.media_retention",
    "schedule": STEPWISE_RETENTION_SECONDS,
}
STEPWISE_MODEL_ROOT = Path(envstr("STEPWISE_MODEL_ROOT", str(VAR_DIR / "models")))

# Campaign management (annotators/). Who may create campaigns: "users" (anyone logged in, who
# becomes the campaign's manager) or "staff" (Django staff and superusers only).
STEPWISE_CAMPAIGN_CREATORS = envstr("STEPWISE_CAMPAIGN_CREATORS", "users")
# Largest import file accepted from the browser, in MB (bigger files: manage.py import_solutions).
STEPWISE_MAX_UPLOAD_MB = envint("STEPWISE_MAX_UPLOAD_MB", "200")
# Model endpoints (machines/endpoints.py; docs/settings.md, "Model endpoints"): the operator
# declares every endpoint the server may call (generation, scoring, rollouts, a judge), a list of
# {name, kind, base_url, models, key_env, timeout_s, max_concurrency, label} in STEPWISE_ENDPOINTS
# and/or the file STEPWISE_ENDPOINTS_FILE; managers choose them by name. Free-form URLs only with
# STEPWISE_ENDPOINT_URLS on, and then only to STEPWISE_ENDPOINT_HOSTS (names, addresses,
# networks; private and loopback addresses only where listed). Checked when the app starts.


def _endpoints_declared() -> list:
    declared: list = []
    sources = []
    if path := envstr("STEPWISE_ENDPOINTS_FILE", ""):
        try:
            sources.append(("STEPWISE_ENDPOINTS_FILE", Path(path).read_text()))
        except OSError as e:
            raise ImproperlyConfigured(f"STEPWISE_ENDPOINTS_FILE: cannot read {path}: {e}") from e
    if text := envstr("STEPWISE_ENDPOINTS", "").strip():
        sources.append(("STEPWISE_ENDPOINTS", text))
    for name, text in sources:
        try:
            value = json.loads(text)
        except ValueError as e:
            raise ImproperlyConfigured(f"{name} is not valid JSON: {e}") from e
        if not isinstance(value, list):
            raise ImproperlyConfigured(f"{name} must be a JSON list of endpoint objects.")
        declared += value
    return declared


STEPWISE_ENDPOINTS = _endpoints_declared()
STEPWISE_ENDPOINT_URLS = envbool("STEPWISE_ENDPOINT_URLS", "False")
STEPWISE_ENDPOINT_HOSTS = [
    h.strip() for h in envstr("STEPWISE_ENDPOINT_HOSTS", "").split(",") if h.strip()
]
# The most bytes one answer of a model endpoint may hold after decompression (machines/client.py,
# endpoint_post): a larger one fails its request. 4 MiB is about eight times a 131,072-token
# completion.
STEPWISE_ENDPOINT_MAX_BYTES = envint("STEPWISE_ENDPOINT_MAX_BYTES", str(4 * 1024 * 1024))
# The secret of the annotator pseudonyms in exports (exports/pseudonyms.py): keep it when
# rotating SECRET_KEY, or every pseudonym in later exports changes. Empty: SECRET_KEY.
STEPWISE_PSEUDONYM_SECRET = envstr("STEPWISE_PSEUDONYM_SECRET", "")
# Tokenizers the export page and API offer for TRL's length check (docs/exports.md): "name=source"
# pairs separated by commas, each source a local folder or a hub id already in the cache (never
# downloaded). The command line also takes a folder or hub id directly.
STEPWISE_EXPORT_TOKENIZERS = {
    name.strip(): source.strip()
    for name, _, source in (
        pair.partition("=") for pair in envstr("STEPWISE_EXPORT_TOKENIZERS", "").split(",")
    )
    if name.strip() and source.strip()
}
# Generation jobs (docs/generation.md): requests one job may have in flight (and at most its
# endpoint's max_concurrency).
STEPWISE_GENERATION_MAX_CONCURRENCY = envint("STEPWISE_GENERATION_MAX_CONCURRENCY", "16")
# First wait before retrying a 429/5xx answer (doubled each try, Retry-After honoured).
STEPWISE_GENERATION_BACKOFF_MS = envint("STEPWISE_GENERATION_BACKOFF_MS", "1000")
# Scoring jobs with a served PRM (docs/active-learning.md, "A PRM served elsewhere"): open
# solutions per committed batch, solutions per pooling request, requests in flight (at most the
# endpoint's max_concurrency), retries of a 429/5xx/timeout and the first wait before one.
STEPWISE_SCORING_BATCH = envint("STEPWISE_SCORING_BATCH", "64")
STEPWISE_SCORING_REQUEST_SIZE = envint("STEPWISE_SCORING_REQUEST_SIZE", "16")
STEPWISE_SCORING_MAX_CONCURRENCY = envint("STEPWISE_SCORING_MAX_CONCURRENCY", "4")
STEPWISE_SCORING_RETRIES = envint("STEPWISE_SCORING_RETRIES", "5")
STEPWISE_SCORING_BACKOFF_MS = envint("STEPWISE_SCORING_BACKOFF_MS", "1000")
# Bounds on imported text (imports/reading.py), far above any real dataset; raise them if needed.
STEPWISE_IMPORT_MAX_STEPS = envint("STEPWISE_IMPORT_MAX_STEPS", "1000")
STEPWISE_IMPORT_MAX_STEP_CHARS = envint("STEPWISE_IMPORT_MAX_STEP_CHARS", "20000")
STEPWISE_IMPORT_MAX_ANSWER_CHARS = envint("STEPWISE_IMPORT_MAX_ANSWER_CHARS", "5000")
# Dashboard and agreement figures older than this many seconds are recomputed by a worker.
STEPWISE_SNAPSHOT_MAX_AGE = envint("STEPWISE_SNAPSHOT_MAX_AGE", "300")
# ... and sooner, once they are this many seconds old, when solutions were submitted since.
STEPWISE_SNAPSHOT_MIN_AGE = envint("STEPWISE_SNAPSHOT_MIN_AGE", "30")
# How long a new invitation link works unless the manager says otherwise, in days.
STEPWISE_INVITATION_DAYS = envint("STEPWISE_INVITATION_DAYS", "7")
# How old the campaign's progress on the labelling page may be (seconds): it is counted over the
# whole campaign at most this often, and read from the cache in between.
STEPWISE_PROGRESS_SECONDS = envint("STEPWISE_PROGRESS_SECONDS", "10")

# Caches: login throttling counts (stepwise/security.py). A file cache under var/ is shared by
# the processes of one machine; set CACHE_URL=redis://... when several machines serve the site.
# Redis down is a cache without the keys, never a 500 (common/cache.py): it is asked again after
# STEPWISE_CACHE_RETRY_SECONDS.
CACHE_URL = envstr("CACHE_URL", "")
STEPWISE_CACHE_RETRY_SECONDS = float(envstr("STEPWISE_CACHE_RETRY_SECONDS", "5"))
if CACHE_URL.startswith(("redis://", "rediss://")):
    CACHES = {"default": {"BACKEND": "common.cache.ResilientRedisCache", "LOCATION": CACHE_URL}}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }
# Failed logins (and wrong old passwords on the password-change form: the same count) allowed
# per username within the window, five times as many per IP address; a browser that has logged
# in as that user before has a count of its own (its device cookie), so a guesser cannot lock
# the user out. Wrong API tokens: five times as many per address (a valid token is served).
STEPWISE_LOGIN_FAILURES = envint("STEPWISE_LOGIN_FAILURES", "5")
STEPWISE_LOGIN_WINDOW = envint("STEPWISE_LOGIN_WINDOW", "900")
# Reverse proxies in front of the app that append to X-Forwarded-For (0: ignore the header), and
# the addresses or networks they connect from (empty: believe the header from any address).
STEPWISE_TRUSTED_PROXY_HOPS = envint("STEPWISE_TRUSTED_PROXY_HOPS", "0")
STEPWISE_TRUSTED_PROXIES = [
    p.strip() for p in envstr("STEPWISE_TRUSTED_PROXIES", "").split(",") if p.strip()
]
for _proxy in STEPWISE_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError as e:
        raise ImproperlyConfigured(
            f"STEPWISE_TRUSTED_PROXIES: {_proxy!r} is not an address or network: {e}"
        ) from e
# Content-Security-Policy-Report-Only instead of the enforced header (to try a change).
STEPWISE_CSP_REPORT_ONLY = envbool("STEPWISE_CSP_REPORT_ONLY", "False")
# Email (password reset links): off unless EMAIL_HOST is set.
EMAIL_HOST = envstr("EMAIL_HOST", "")
EMAIL_PORT = envint("EMAIL_PORT", "587")
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "True")
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "stepwise@localhost")

# Request bodies. Form and JSON bodies (not files) stay small: the largest real one is a
# submission of a few hundred steps. Files above 2.5 MB go to a temporary file, never memory;
# imports are limited by STEPWISE_MAX_UPLOAD_MB in the views (a clear 413 / form error).
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", str(5 * 1024 * 1024))
DATA_UPLOAD_MAX_NUMBER_FIELDS = 2000
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_TEMP_DIR = VAR_DIR / "tmp"
FILE_UPLOAD_TEMP_DIR.mkdir(parents=True, exist_ok=True)

PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
if envbool("STEPWISE_FAST_HASHER", "False"):
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# LOG_FORMAT=json: one JSON object a line, with the request's or the job's ids (common/logs.py);
# `text` (the default): Python's plain lines. LOG_LEVEL=INFO adds a line per request.
LOG_FORMAT = envstr("LOG_FORMAT", "text")
if LOG_FORMAT not in ("text", "json"):
    raise RuntimeError(f"LOG_FORMAT must be text or json, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "common.logs.JsonFormatter"}},
    "filters": {"context": {"()": "common.logs.ContextFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["context"],
            **({"formatter": "json"} if LOG_FORMAT == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "WARNING")},
    # kombu warns "No hostname was supplied" for every connection to the filesystem broker,
    # which has no host by design.
    "loggers": {"kombu.connection": {"level": "ERROR"}},
}

if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", "True")
    # Probes (a load balancer, systemd, Kubernetes) ask over plain HTTP, inside the network.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "31536000")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    CSRF_COOKIE_HTTPONLY = True  # pages carry the token in the HTML; no script reads the cookie
    SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", str(14 * 24 * 3600))
    if DEBUG:
        raise RuntimeError("DEBUG must be off with STEPWISE_PRODUCTION=true")
WHITENOISE_USE_FINDERS = True
