"""The manager's upload page (mounted under ``campaigns/<slug>/imports/``)."""

from __future__ import annotations

from django.urls import path

from imports import views

app_name = "imports"

urlpatterns = [
    path("", views.import_list, name="list"),
    path("<int:pk>/delete/", views.import_delete, name="delete"),
    path("preview/", views.import_preview, name="preview"),
    path("generations/", views.generation_list, name="generations"),
    path("generations/<int:pk>/resume/", views.generation_resume, name="generation-resume"),
]
