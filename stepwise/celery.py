"""The Celery app. Tasks are thin: they take ids, load objects and call one service."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")

app = Celery("stepwise")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
