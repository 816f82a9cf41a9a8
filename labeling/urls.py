"""Campaigns, the labelling page, the data browser and the status of every job (mounted at the
site root by ``stepwise/urls.py``)."""

from __future__ import annotations

from django.urls import path

import common.converters  # noqa: F401 (registers <id:...>: ids too long are 404)
from labeling import campaign_views, job_views, views
from labeling.curation import views as browser

app_name = "labeling"

campaign = "campaigns/<slug:slug>/"
urlpatterns = [
    path("campaigns/", campaign_views.campaign_list, name="campaigns"),
    path("campaigns/new/", campaign_views.campaign_create, name="campaign-create"),
    path(campaign, campaign_views.campaign_detail, name="campaign"),
    path(campaign + "settings/", campaign_views.campaign_settings, name="campaign-settings"),
    path(campaign + "pause/", campaign_views.campaign_pause, name="campaign-pause"),
    path(campaign + "label/", views.label, name="label"),
    path(campaign + "label/<id:pk>/rate/", views.step_rate, name="rate"),
    path(campaign + "label/<id:pk>/undo/", views.step_undo, name="undo"),
    path(campaign + "label/<id:pk>/flag/", views.step_flag, name="flag"),
    path(campaign + "label/<id:pk>/submit/", views.label_submit, name="submit"),
    # Phase 1 mode (labeling.queue.phase1): candidates rated, chosen, written, taken back.
    path(campaign + "label/<id:pk>/candidate/rate/", views.candidate_rate, name="candidate-rate"),
    path(
        campaign + "label/<id:pk>/candidate/choose/",
        views.candidate_choose,
        name="candidate-choose",
    ),
    path(campaign + "label/<id:pk>/candidate/write/", views.step_write, name="step-write"),
    path(campaign + "label/<id:pk>/candidate/undo/", views.phase1_undo, name="candidate-undo"),
    path(campaign + "label/<id:pk>/skip/", views.label_skip, name="skip"),
    path(campaign + "browse/", browser.solution_browser, name="browser"),
    path(campaign + "browse/actions/", browser.solution_browser_action, name="browser-action"),
    path(campaign + "browse/<id:pk>/", browser.solution_item, name="browser-item"),
    path(
        campaign + "browse/<id:pk>/actions/",
        browser.solution_item_action,
        name="browser-item-action",
    ),
    # The one status view of every kind of job (common.jobs), which htmx polls while one runs.
    path(campaign + "jobs/<str:kind>/<id:pk>/", job_views.job_status, name="job-status"),
    path(campaign + "my-work/", campaign_views.my_work, name="my-work"),
    path(campaign + "my-work/<id:pk>/", campaign_views.my_work_item, name="my-work-item"),
]
