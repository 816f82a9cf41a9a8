"""The annotator-facing pages (mounted at the site root by ``stepwise/urls.py``)."""

from __future__ import annotations

from django.urls import path

from labeling import views

app_name = "labeling"

urlpatterns = [
    path("campaigns/<slug:slug>/label/", views.label, name="label"),
    path("campaigns/<slug:slug>/label/<int:pk>/rate/", views.step_rate, name="rate"),
    path("campaigns/<slug:slug>/label/<int:pk>/undo/", views.step_undo, name="undo"),
    path("campaigns/<slug:slug>/label/<int:pk>/flag/", views.step_flag, name="flag"),
    path("campaigns/<slug:slug>/label/<int:pk>/submit/", views.assignment_submit, name="submit"),
    path("campaigns/<slug:slug>/label/<int:pk>/skip/", views.assignment_skip, name="skip"),
]

urlpatterns += [
    path("campaigns/<slug:slug>/active-learning/", views.active_learning, name="active-learning"),
    path(
        "campaigns/<slug:slug>/active-learning/retrain/",
        views.active_learning_retrain,
        name="active-learning-retrain",
    ),
]
