"""The machines' pages (mounted under ``campaigns/<slug>/machines/``)."""

from __future__ import annotations

from django.urls import path

import common.converters  # noqa: F401 (registers <id:...>: ids too long are 404)
from machines import views

app_name = "machines"

urlpatterns = [
    path("generations/", views.generation_list, name="generations"),
    path("generations/<id:pk>/resume/", views.generation_resume, name="generation-resume"),
    path("evidence/", views.evidence_list, name="evidence"),
]
