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

from common.api import CursorListView, ErrorSerializer, JobStateField, idempotent_job
from imports import services
from imports.forms import UploadForm
from imports.models import ImportJob
from labeling.permissions import (
    MANAGE,
    campaign_for,
)


class ImportJobSerializer(serializers.ModelSerializer):
    """An upload and its import: ``status`` pending → running → done (``counts``) or failed
    (``errors`` with file, line, field and message; nothing was written). ``attempts``: how many
    times a worker started it (more than one after a worker died and the sweep sent it again).
    ``state``: the state in words (a waiting job names its queue, and says when no worker
    consumes it)."""

    state = JobStateField()

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
            "state",
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
        except services.UploadNotStored as error:  # the server's fault: 503, said as such
            body = {"code": error.code, "detail": str(error)}
            return Response(body, status=error.http_status)
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
