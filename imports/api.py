"""The imports REST API (managers): upload a file into a campaign, or generate solutions from a
model endpoint, and follow the job."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.decorators import api_view
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from common.api import CursorListView, ErrorSerializer, idempotent_job
from common.endpoints import CHAT, endpoints_of
from imports import services
from imports.forms import UploadForm
from imports.models import GenerationJob, ImportJob
from imports.prompts import MAX_TEMPLATE_CHARS
from imports.splitting import MAX_PATTERN_CHARS
from labeling.permissions import (
    MANAGE,
    campaign_for,
)


class ImportJobSerializer(serializers.ModelSerializer):
    """An upload and its import: ``status`` pending → running → done (``counts``) or failed
    (``errors`` with file, line, field and message; nothing was written). ``attempts``: how many
    times a worker started it (more than one after a worker died and the sweep sent it again)."""

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "file_name",
            "size",
            "sha256",
            "format",
            "options",
            "grade",
            "status",
            "phase",
            "progress",
            "counts",
            "errors",
            "errors_truncated",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class ImportUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="The file to import (limit: STEPWISE_MAX_UPLOAD_MB).")
    format = serializers.ChoiceField(
        choices=[c for c, _ in UploadForm.base_fields["format"].choices]
    )
    as_gold = serializers.ChoiceField(
        choices=["", "qc", "screening"],
        required=False,
        allow_blank=True,
        help_text="Import as gold: quality-control or screening questions.",
    )
    generator = serializers.CharField(max_length=200, required=False, allow_blank=True)
    grade = serializers.BooleanField(required=False, default=True)
    split = serializers.CharField(
        max_length=200,
        required=False,
        default="auto",
        help_text="How solutions given as text become steps: auto, paragraphs, lines, numbered, "
        "or a regular expression that separates steps.",
    )


def _too_large(request: Request) -> Response | None:
    length = services.declared_length(request)
    if length > services.upload_limit_bytes() + 65536:
        body = {"code": "too_large", "detail": services.upload_too_large_message(length)}
        return Response(body, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    return None


class ImportList(CursorListView):
    """The campaign's imports, newest last (managers); POST uploads a file to import."""

    serializer_class = ImportJobSerializer
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return ImportJob.objects.filter(campaign=campaign)

    @extend_schema(tags=["imports"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["imports"],
        request={"multipart/form-data": ImportUploadSerializer},
        responses={
            202: ImportJobSerializer,
            413: OpenApiResponse(ErrorSerializer, "The file is over STEPWISE_MAX_UPLOAD_MB."),
        },
        description="Upload a file; a Celery worker imports it (all or nothing). Poll the job "
        "until its status is done or failed.",
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
        # Refused on the request's declared size, before anything reads the body.
        if refused := _too_large(request):
            return refused
        data = ImportUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            job = idempotent_job(
                request,
                scope=f"imports:{campaign.pk}",
                create=lambda: services.import_job_create(
                    campaign=campaign,
                    created_by=request.user,
                    upload=values["file"],
                    fmt=values["format"],
                    as_gold=values.get("as_gold") or None,
                    generator=values.get("generator", ""),
                    grade=values["grade"],
                    split=values.get("split") or "auto",
                ),
            )
        except services.ImportRefused as error:
            raise exceptions.ValidationError({"file": [str(error)]}) from error
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["imports"], responses={200: ImportJobSerializer})
@api_view(["GET"])
def import_detail(request: Request, slug: str, pk: int) -> Response:
    """One import's status, phase, progress, and its counts or errors (managers)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(ImportJob, campaign=campaign, pk=pk)
    return Response(ImportJobSerializer(job).data)


class GenerationJobSerializer(serializers.ModelSerializer):
    """A generation job: ``status`` pending → running → done or failed, with its counts.

    ``endpoint`` is the declared endpoint's name (its URL and key are the operator's and are
    not shown); ``base_url`` is set only for a free-form URL.
    """

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
        from imports import generation

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
    from imports import generation

    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(GenerationJob, campaign=campaign, pk=pk)
    try:
        job = generation.generation_job_resume(job=job)
    except generation.GenerationRefused as error:
        return Response({"code": "conflict", "detail": str(error)}, status=status.HTTP_409_CONFLICT)
    return Response(GenerationJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
