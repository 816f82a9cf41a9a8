"""The active-learning REST API: PRM versions, runs, and asking for a run now (managers)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from common.api import CursorListView, JobStateField
from labeling.permissions import (
    MANAGE,
    campaign_for,
)
from learning.models import ActiveLearningRun, PRMModel
from learning.triggers import active_learning_trigger


class PRMModelSerializer(serializers.ModelSerializer):
    """A trained PRM checkpoint of the campaign, with its held-out metrics."""

    class Meta:
        model = PRMModel
        fields = [
            "id",
            "version",
            "backbone",
            "metrics",
            "training_labels",
            "training_solutions",
            "is_active",
            "created_at",
        ]
        read_only_fields = fields


class ActiveLearningRunSerializer(serializers.ModelSerializer):
    """A run: queued → running → succeeded (``model``, ``metrics``, ``queue_head``) or failed.

    ``strategy`` is the selection strategy that ordered the queue; ``best_of_n`` the best-of-N
    accuracy against N on held-out problems (PRM, ORM, majority vote, random, oracle);
    ``data_efficiency`` whether the strategy's labels pay against the control arm's
    (``learning.efficiency``); under ``auto``, ``data_efficiency.trials`` holds the same estimate
    for each strategy it tried, and ``queue_head.trials`` how many of the first 100 each placed."""

    requested_by = serializers.CharField(
        source="requested_by.username", allow_null=True, default=None
    )
    state = JobStateField()

    class Meta:
        model = ActiveLearningRun
        fields = [
            "id",
            "status",
            "state",
            "trigger",
            "requested_by",
            "model",
            "training_labels",
            "metrics",
            "timings",
            "queue_head",
            "strategy",
            "best_of_n",
            "data_efficiency",
            "error",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


@extend_schema(tags=["active learning"])
class PRMModelList(CursorListView):
    """The campaign's trained PRMs, oldest first; ``is_active`` marks the one scoring the queue."""

    serializer_class = PRMModelSerializer

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return PRMModel.objects.filter(campaign=campaign)


class ActiveLearningRunList(CursorListView):
    """The campaign's active-learning runs, oldest first; POST asks for one now."""

    serializer_class = ActiveLearningRunSerializer

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return ActiveLearningRun.objects.filter(campaign=campaign).select_related("requested_by")

    @extend_schema(tags=["active learning"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["active learning"],
        request=None,
        responses={202: ActiveLearningRunSerializer},
        description="Train the PRM on the labels so far, rescore the open solutions and reorder "
        "the queue, in a Celery worker. One run at a time per campaign: while one is queued "
        "or running, this returns that one.",
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
        run = active_learning_trigger(campaign=campaign, requested_by=request.user)
        return Response(ActiveLearningRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["active learning"], responses={200: ActiveLearningRunSerializer})
@api_view(["GET"])
def active_learning_run_detail(request: Request, slug: str, pk: int) -> Response:
    """One run's status, timings, metrics and the composition of the new queue head."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    run = get_object_or_404(
        ActiveLearningRun.objects.select_related("requested_by"), campaign=campaign, pk=pk
    )
    return Response(ActiveLearningRunSerializer(run).data)
