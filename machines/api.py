"""The machines' API (managers): generation jobs (K solutions per problem from a declared chat
endpoint) and the chat endpoints they may name; machine evidence jobs (rollouts, a judge); and
scoring jobs with the campaign's served PRM. Every job says its state in words beside its
``status`` (``state``: a waiting job names its queue, and says when no worker consumes it)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from common.api import CursorListView, ErrorSerializer, JobStateField, idempotent_job
from imports.splitting import MAX_PATTERN_CHARS
from labeling.permissions import MANAGE, campaign_for
from machines.endpoints import CHAT, endpoints_of
from machines.models import EvidenceJob, GenerationJob, ScoringJob
from machines.prompts import MAX_TEMPLATE_CHARS


class GenerationJobSerializer(serializers.ModelSerializer):
    """A generation job: ``status`` pending → running → done or failed, with its counts.

    ``endpoint`` is the declared endpoint's name (its URL and key are the operator's and are
    not shown); ``base_url`` is set only for a free-form URL.
    """

    state = JobStateField()

    class Meta:
        model = GenerationJob
        fields = [
            "id",
            "endpoint",
            "base_url",
            "model",
            "generator",
            "samples_per_problem",
            "selection",
            "problem_filter",
            "prompt_template",
            "temperature",
            "top_p",
            "max_tokens",
            "split",
            "concurrency",
            "timeout_s",
            "max_retries",
            "grade",
            "status",
            "state",
            "error",
            "requested",
            "completed",
            "failed",
            "solutions_created",
            "prompt_tokens",
            "completion_tokens",
            "retries",
            "progress",
            "errors",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class GenerationCreateSerializer(serializers.Serializer):
    endpoint = serializers.CharField(
        max_length=50,
        required=False,
        allow_blank=True,
        default="",
        help_text="The name of a chat endpoint the operator declared (GET "
        "generations/endpoints/ lists them with their models).",
    )
    model = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="One of the endpoint's models; blank: its first.",
    )
    base_url = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="Instead of endpoint, a free-form OpenAI-compatible base URL: only where the "
        "operator allows them (STEPWISE_ENDPOINT_URLS), to the hosts listed; no key is sent.",
    )
    samples_per_problem = serializers.IntegerField(min_value=1, max_value=1000, default=4)
    selection = serializers.ChoiceField(choices=GenerationJob.Selection.values, default="all")
    problem_filter = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=dict,
        help_text="{subject, level, search} for selection 'filter'.",
    )
    prompt_template = serializers.CharField(
        max_length=MAX_TEMPLATE_CHARS,
        required=False,
        allow_blank=True,
        default="",
        help_text="With {problem}, and optionally {answer}, {subject}, {level}; no format "
        "specs or attribute access; default: the campaign's last one, else PRM800K's format.",
    )
    temperature = serializers.FloatField(min_value=0, max_value=2, default=1.0)
    top_p = serializers.FloatField(min_value=0.000001, max_value=1, default=1.0)
    max_tokens = serializers.IntegerField(min_value=1, max_value=131072, default=1024)
    split = serializers.CharField(max_length=MAX_PATTERN_CHARS, default="auto")
    concurrency = serializers.IntegerField(min_value=1, max_value=256, default=4)
    timeout_s = serializers.FloatField(
        min_value=1,
        max_value=3600,
        required=False,
        default=None,
        allow_null=True,
        help_text="Seconds per request; default: the endpoint's.",
    )
    max_retries = serializers.IntegerField(min_value=0, max_value=20, default=5)
    generator = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    grade = serializers.BooleanField(default=True)


class GenerationList(CursorListView):
    """The campaign's generation jobs (managers); POST asks an endpoint for K solutions each."""

    serializer_class = GenerationJobSerializer

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return GenerationJob.objects.filter(campaign=campaign)

    @extend_schema(tags=["generation"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["generation"],
        request=GenerationCreateSerializer,
        responses={202: GenerationJobSerializer},
        description="Queue a generation job: K solutions per selected problem from an "
        "OpenAI-compatible endpoint, split into steps, graded, scored and queued in batches. "
        "Poll the job until its status is done or failed.",
    )
    def post(self, request: Request, slug: str) -> Response:
        from machines import generation

        campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
        data = GenerationCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        values["prompt_template"] = values.get("prompt_template") or None
        try:
            job = idempotent_job(
                request,
                scope=f"generations:{campaign.pk}",
                create=lambda: generation.generation_job_create(
                    campaign=campaign, created_by=request.user, **values
                ),
            )
        except generation.GenerationRefused as error:
            raise exceptions.ValidationError({error.field or "detail": [str(error)]}) from error
        return Response(GenerationJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class EndpointSerializer(serializers.Serializer):
    """A chat endpoint the operator declared: what a generation job names (never its URL)."""

    name = serializers.CharField()
    label = serializers.CharField()
    models = serializers.ListField(
        child=serializers.CharField(), help_text="The first is the default."
    )
    timeout_s = serializers.FloatField()
    max_concurrency = serializers.IntegerField()


@extend_schema(tags=["generation"], responses={200: EndpointSerializer(many=True)})
@api_view(["GET"])
def generation_endpoints(request: Request, slug: str) -> Response:
    """The chat endpoints a generation job may name, with their models (managers)."""
    campaign_for(request.user, slug, roles=MANAGE)
    rows = [
        {
            "name": e.name,
            "label": e.label or e.name,
            "models": list(e.models),
            "timeout_s": e.timeout_s,
            "max_concurrency": e.max_concurrency,
        }
        for e in endpoints_of(CHAT)
    ]
    return Response(EndpointSerializer(rows, many=True).data)


@extend_schema(tags=["generation"], responses={200: GenerationJobSerializer})
@api_view(["GET"])
def generation_detail(request: Request, slug: str, pk: int) -> Response:
    """One generation job's status, progress, token counts and last errors (managers)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(GenerationJob, campaign=campaign, pk=pk)
    return Response(GenerationJobSerializer(job).data)


@extend_schema(
    tags=["generation"],
    request=None,
    responses={202: GenerationJobSerializer, 409: ErrorSerializer},
)
@api_view(["POST"])
def generation_resume(request: Request, slug: str, pk: int) -> Response:
    """Queue a stopped or failed job again; it asks only for the samples still missing."""
    from machines import generation

    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(GenerationJob, campaign=campaign, pk=pk)
    try:
        job = generation.generation_job_resume(job=job)
    except generation.GenerationRefused as error:
        return Response({"code": "conflict", "detail": str(error)}, status=status.HTTP_409_CONFLICT)
    return Response(GenerationJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


def _person(request: Request) -> AbstractBaseUser | None:
    """The signed-in person who asked (the API lets no one else this far)."""
    return request.user if isinstance(request.user, AbstractBaseUser) else None


# --- machine evidence ---------------------------------------------------------------------------


class EvidenceJobSerializer(serializers.ModelSerializer):
    """A machine evidence job (rollouts from steps, or a judge's first error): ``status``
    pending → running → done or failed, ``error`` its reason when it failed, ``errors`` the
    last units' errors."""

    state = JobStateField()

    class Meta:
        model = EvidenceJob
        fields = [
            "id",
            "kind",
            "endpoint",
            "model",
            "selection",
            "steps",
            "samples_per_step",
            "temperature",
            "max_tokens",
            "concurrency",
            "budget_tokens",
            "status",
            "state",
            "error",
            "requested",
            "completed",
            "failed",
            "samples",
            "prompt_tokens",
            "completion_tokens",
            "retries",
            "progress",
            "stopped_by_budget",
            "errors",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class EvidenceCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=EvidenceJob.Kind.choices)
    endpoint = serializers.CharField(
        max_length=50, help_text="A chat endpoint the operator declared (generations/endpoints/)."
    )
    model = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    selection = serializers.DictField(
        help_text='A data-browser filter of the solutions to ask about ({"id": [pk]} for one).'
    )
    steps = serializers.ListField(
        child=serializers.IntegerField(min_value=0),
        required=False,
        default=list,
        max_length=1000,
        help_text="Step indexes (from 0) to roll out from; empty: every step but the last.",
    )
    samples_per_step = serializers.IntegerField(min_value=1, max_value=64, default=8)
    budget_tokens = serializers.IntegerField(min_value=0, default=0)
    temperature = serializers.FloatField(
        min_value=0, max_value=2, required=False, default=None, allow_null=True
    )
    max_tokens = serializers.IntegerField(min_value=1, max_value=131072, default=1024)
    concurrency = serializers.IntegerField(min_value=1, max_value=256, default=4)


class EvidenceList(CursorListView):
    """The campaign's machine evidence jobs (managers); POST asks for rollouts or a judge."""

    serializer_class = EvidenceJobSerializer

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return EvidenceJob.objects.filter(campaign=campaign)

    @extend_schema(tags=["machine evidence"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["machine evidence"],
        request=EvidenceCreateSerializer,
        responses={202: EvidenceJobSerializer},
        description="Queue a machine evidence job on the selected solutions; poll it until "
        "its status is done or failed.",
    )
    def post(self, request: Request, slug: str) -> Response:
        from machines import evidence

        campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
        data = EvidenceCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        try:
            job = idempotent_job(
                request,
                scope=f"evidence:{campaign.pk}",
                create=lambda: evidence.evidence_job_create(
                    campaign=campaign, created_by=_person(request), **values
                ),
            )
        except evidence.EvidenceRefused as error:
            raise exceptions.ValidationError({error.field or "detail": [str(error)]}) from error
        return Response(EvidenceJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["machine evidence"], responses={200: EvidenceJobSerializer})
@api_view(["GET"])
def evidence_detail(request: Request, slug: str, pk: int) -> Response:
    """One machine evidence job's status, progress, tokens and errors (managers)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(EvidenceJob, campaign=campaign, pk=pk)
    return Response(EvidenceJobSerializer(job).data)


# --- scoring with a served PRM -------------------------------------------------------------------


class ScoringJobSerializer(serializers.ModelSerializer):
    """A scoring job with the campaign's served PRM: ``scored`` of ``total`` solutions, counted
    over all its attempts; ``error`` its reason when it failed."""

    state = JobStateField()

    class Meta:
        model = ScoringJob
        fields = [
            "id",
            "endpoint",
            "model",
            "only_new",
            "status",
            "state",
            "error",
            "attempts",
            "total",
            "scored",
            "requests",
            "retries",
            "seconds",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class ScoringList(CursorListView):
    """The campaign's scoring jobs (managers); POST scores every solution with its served PRM
    (or returns the job already waiting or running)."""

    serializer_class = ScoringJobSerializer

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return ScoringJob.objects.filter(campaign=campaign)

    @extend_schema(tags=["scoring"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["scoring"],
        request=None,
        responses={202: ScoringJobSerializer},
        description="Score the campaign's solutions with the served PRM its settings name; "
        "poll the job until its status is done or failed.",
    )
    def post(self, request: Request, slug: str) -> Response:
        from machines.served import ScoringRefused, scoring_job_start

        campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
        try:
            job = scoring_job_start(campaign=campaign, requested_by=_person(request))
        except ScoringRefused as error:
            raise exceptions.ValidationError({"detail": [str(error)]}) from error
        return Response(ScoringJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["scoring"], responses={200: ScoringJobSerializer})
@api_view(["GET"])
def scoring_detail(request: Request, slug: str, pk: int) -> Response:
    """One scoring job's status and counts (managers)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(ScoringJob, campaign=campaign, pk=pk)
    return Response(ScoringJobSerializer(job).data)
