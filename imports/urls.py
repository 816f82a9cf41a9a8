"""The manager's upload page (mounted under ``campaigns/<slug>/imports/``)."""

from __future__ import annotations

from django.urls import path

import common.converters  # noqa: F401 (registers <id:...>: ids too long are 404)
from imports import views

app_name = "imports"

urlpatterns = [
    path("", views.import_list, name="list"),
    path("<id:pk>/delete/", views.import_delete, name="delete"),
    path("preview/", views.import_preview, name="preview"),
]
