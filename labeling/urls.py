"""Campaigns and the labelling page (mounted at the site root by ``stepwise/urls.py``)."""

from __future__ import annotations

from django.urls import path

from labeling import campaign_views, views

app_name = "labeling"

campaign = "campaigns/<slug:slug>/"
urlpatterns = [
    path("campaigns/", campaign_views.campaign_list, name="campaigns"),
    path("campaigns/new/", campaign_views.campaign_create, name="campaign-create"),
    path(campaign, campaign_views.campaign_detail, name="campaign"),
    path(campaign + "settings/", campaign_views.campaign_settings, name="campaign-settings"),
    path(campaign + "pause/", campaign_views.campaign_pause, name="campaign-pause"),
    path(campaign + "label/", views.label, name="label"),
    path(campaign + "label/<int:pk>/rate/", views.step_rate, name="rate"),
    path(campaign + "label/<int:pk>/undo/", views.step_undo, name="undo"),
    path(campaign + "label/<int:pk>/flag/", views.step_flag, name="flag"),
    path(campaign + "label/<int:pk>/submit/", views.assignment_submit, name="submit"),
    path(campaign + "label/<int:pk>/skip/", views.assignment_skip, name="skip"),
    path(campaign + "my-work/", campaign_views.my_work, name="my-work"),
    path(campaign + "my-work/<int:pk>/", campaign_views.my_work_item, name="my-work-item"),
]
