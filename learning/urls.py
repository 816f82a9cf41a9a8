"""The manager's active-learning page (mounted under ``campaigns/<slug>/active-learning/``)."""

from __future__ import annotations

from django.urls import path

from learning import views

app_name = "learning"

urlpatterns = [
    path("", views.active_learning, name="page"),
    path("retrain/", views.active_learning_retrain, name="retrain"),
    path("score/", views.active_learning_score, name="score"),
]
