"""The Celery app. Tasks are thin: they take ids, load objects and call one service."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")

app = Celery("stepwise")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The embedded broker (settings' default) writes each message whole (common/fsbroker.py).
if os.environ.get("CELERY_BROKER_URL", "filesystem://").startswith("filesystem://"):
    from common.fsbroker import filesystem_broker_atomic_put

    filesystem_broker_atomic_put()
app.autodiscover_tasks()


@worker_init.connect
def _database_or_exit(**_kwargs) -> None:
    """A worker without its database would say ``ready`` and fail every job: refuse instead."""
    from stepwise.startup import database_reachable_or_exit

    database_reachable_or_exit("worker")
