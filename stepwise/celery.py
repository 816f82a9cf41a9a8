"""The Celery app. Tasks are thin: they take ids, load objects and call one service."""

from __future__ import annotations

import os
import sys
from pathlib import Path

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


def _settings_or_exit() -> None:
    """A celery command (a worker, beat) loads Django now, so that a bad setting (a malformed
    ``STEPWISE_ENDPOINTS``) is one line and exit status 3, as the web process says it, instead
    of the 88-line traceback that Celery's Django fixup prints when it loads the apps itself."""
    import django
    from django.core.exceptions import ImproperlyConfigured

    from stepwise.startup import EXIT_CODE, say_and_exit_later

    try:
        django.setup()
    except ImproperlyConfigured as error:
        say_and_exit_later(f"Stepwise cannot start: {error}")
        raise SystemExit(EXIT_CODE) from None


if Path(sys.argv[0]).name == "celery" or sys.argv[0].endswith(
    os.path.join("celery", "__main__.py")
):
    _settings_or_exit()
