"""Routes under ``/api/``: every app's API views, the OpenAPI schema and its docs page."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

import common.converters  # noqa: F401 (registers <id:...>)
from annotators import api as annotators_api
from exports import api as exports_api
from imports import api as imports_api
from labeling import api as labeling_api
from learning import api as learning_api
from machines import api as machines_api

campaign = "campaigns/<slug:slug>/"
urlpatterns = [
    path("campaigns/", labeling_api.CampaignList.as_view(), name="api-campaigns"),
    path(campaign, labeling_api.campaign_detail, name="api-campaign"),
    path(campaign + "imports/", imports_api.ImportList.as_view(), name="api-imports"),
    path(campaign + "imports/<id:pk>/", imports_api.import_detail, name="api-import"),
    path(campaign + "generations/", machines_api.GenerationList.as_view(), name="api-generations"),
    path(
        campaign + "generations/endpoints/",
        machines_api.generation_endpoints,
        name="api-generation-endpoints",
    ),
    path(campaign + "generations/<id:pk>/", machines_api.generation_detail, name="api-generation"),
    path(
        campaign + "generations/<id:pk>/resume/",
        machines_api.generation_resume,
        name="api-generation-resume",
    ),
    path(campaign + "evidence/", machines_api.EvidenceList.as_view(), name="api-evidence-jobs"),
    path(campaign + "evidence/<id:pk>/", machines_api.evidence_detail, name="api-evidence-job"),
    path(campaign + "scoring/", machines_api.ScoringList.as_view(), name="api-scoring-jobs"),
    path(campaign + "scoring/<id:pk>/", machines_api.scoring_detail, name="api-scoring-job"),
    path(campaign + "problems/", labeling_api.ProblemList.as_view(), name="api-problems"),
    path(campaign + "problems/<id:pk>/", labeling_api.ProblemDetail.as_view(), name="api-problem"),
    path(campaign + "solutions/", labeling_api.SolutionList.as_view(), name="api-solutions"),
    path(
        campaign + "solutions/<id:pk>/",
        labeling_api.SolutionDetail.as_view(),
        name="api-solution",
    ),
    path(campaign + "labels/", labeling_api.LabelList.as_view(), name="api-labels"),
    path(campaign + "exports/", exports_api.ExportList.as_view(), name="api-exports"),
    path(campaign + "exports/<id:pk>/", exports_api.export_detail, name="api-export"),
    path(
        campaign + "exports/<id:pk>/files/<str:name>",
        exports_api.export_download,
        name="api-export-file",
    ),
    path(campaign + "prm-models/", learning_api.PRMModelList.as_view(), name="api-prm-models"),
    path(
        campaign + "active-learning/runs/",
        learning_api.ActiveLearningRunList.as_view(),
        name="api-al-runs",
    ),
    path(
        campaign + "active-learning/runs/<id:pk>/",
        learning_api.active_learning_run_detail,
        name="api-al-run",
    ),
    path(campaign + "next/", labeling_api.campaign_next, name="api-campaign-next"),
    path("assignments/<id:pk>/", labeling_api.assignment_detail, name="api-assignment"),
    path(
        "assignments/<id:pk>/submit/",
        labeling_api.assignment_submit_api,
        name="api-assignment-submit",
    ),
    path("assignments/<id:pk>/skip/", labeling_api.assignment_skip_api, name="api-assignment-skip"),
    path("tokens/", annotators_api.TokenList.as_view(), name="api-tokens"),
    path("tokens/<id:pk>/revoke/", annotators_api.token_revoke_api, name="api-token-revoke"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
