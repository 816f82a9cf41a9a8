"""Routes under ``/api/``. Other apps add their API routes here (or include their own module)."""

from __future__ import annotations

from django.urls import path

from labeling import api

urlpatterns = [
    path("campaigns/<slug:slug>/next/", api.campaign_next, name="api-campaign-next"),
    path("assignments/<int:pk>/", api.assignment_detail, name="api-assignment"),
    path("assignments/<int:pk>/submit/", api.assignment_submit, name="api-assignment-submit"),
    path("assignments/<int:pk>/skip/", api.assignment_skip, name="api-assignment-skip"),
]
