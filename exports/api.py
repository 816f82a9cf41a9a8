"""Exports over the API: create (a Celery worker writes the files), follow, download.

Managers only, like the export page: an export holds every annotator's labels and the gold.
Same services as the page (``exports.services.export_create``).
"""

from __future__ import annotations

from typing import Any

from django.core.files.storage import default_storage
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from common.api import CursorListView, JobStateField, idempotent_job
from exports.formats.options import FORMAT_OPTIONS, FormatOption, options_refused
from exports.formats.registry import FORMATS
from exports.models import Export
from exports.policy import POLICY_OPTIONS, ExportError, LabelPolicy, Option
from exports.services import export_create
from labeling.curation.filters import FilterError, SolutionFilter
from labeling.permissions import MANAGE, campaign_for


class ExportFileSerializer(serializers.Serializer):
    name = serializers.CharField()
    split = serializers.CharField(allow_null=True, required=False)
    bytes = serializers.IntegerField(required=False)
    sha256 = serializers.CharField(required=False)
    records = serializers.IntegerField(required=False, allow_null=True)
    url = serializers.CharField(help_text="Download URL (same authentication).")


class ExportSerializer(serializers.ModelSerializer):
    """An export job: ``status`` pending → running (``progress`` 0..1) → done (``files``,
    ``manifest_url``) or failed (``error``). ``attempts``: how many times a worker started it
    (more than one after a worker died and the sweep sent it again). ``state``: the state in
    words (a waiting job names its queue, and says when no worker consumes it)."""

    state = JobStateField()
    files = serializers.SerializerMethodField()
    manifest_url = serializers.SerializerMethodField()

    class Meta:
        model = Export
        fields = [
            "id",
            "format",
            "policy",
            "options",
            "selection",
            "status",
            "state",
            "progress",
            "counts",
            "files",
            "manifest_url",
            "error",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def _url(self, export: Export, name: str) -> str:
        return f"/api/campaigns/{export.campaign.slug}/exports/{export.pk}/files/{name}"

    @extend_schema_field(ExportFileSerializer(many=True))
    def get_files(self, export: Export) -> list[dict]:
        if export.status != Export.Status.DONE:
            return []
        return [{**f, "url": self._url(export, f["name"])} for f in export.files]

    def get_manifest_url(self, export: Export) -> str | None:
        if export.status != Export.Status.DONE or not export.manifest:
            return None
        return self._url(export, export.manifest_name)


def policy_field(option: Option) -> serializers.Field:
    """The serializer field of one policy option, from its declaration."""
    common = {"default": option.default, "help_text": option.help}
    if option.choices:
        return serializers.ChoiceField(choices=option.choices, **common)
    if option.type is bool:
        return serializers.BooleanField(**common)
    number = serializers.FloatField if option.type is float else serializers.IntegerField
    return number(min_value=option.min_value, max_value=option.max_value, **common)


def format_option_field(option: FormatOption) -> serializers.Field:
    """The serializer field of one format option, from its declaration (absent: its default;
    the service refuses a tokenizer the operator did not declare)."""
    common: dict[str, Any] = {"required": False, "help_text": f"{option.scope}: {option.help}"}
    if option.type is bool:
        return serializers.BooleanField(**common)
    if option.type is int:
        return serializers.IntegerField(
            min_value=option.min_value, max_value=option.max_value, **common
        )
    return serializers.CharField(
        max_length=option.max_chars, trim_whitespace=not option.keep_spaces, **common
    )


class ExportCreateSerializer(serializers.Serializer):
    """A format and the label policy (every option defaults as on the export page)."""

    format = serializers.ChoiceField(choices=list(FORMATS))
    selection = serializers.DictField(
        required=False,
        help_text="Export only the solutions these filters match: the solution list's query "
        "parameters (`/api/campaigns/{slug}/solutions/`), each a string or a list of strings, "
        'e.g. {"answer": "wrong", "negative": "true", "id": ["12", "15"]}.',
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        selection = fields.pop("selection")
        fields.update({option.name: policy_field(option) for option in POLICY_OPTIONS})
        fields.update({option.name: format_option_field(option) for option in FORMAT_OPTIONS})
        fields["selection"] = selection
        return fields

    def validate_selection(self, value: dict) -> SolutionFilter | None:
        try:
            return SolutionFilter.from_params(value) or None
        except FilterError as error:
            raise serializers.ValidationError(f"{error.field}: {error.message}") from None


class ExportList(CursorListView):
    """The campaign's exports, oldest first (managers); POST starts one."""

    serializer_class = ExportSerializer

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return Export.objects.filter(campaign=campaign).select_related("campaign")

    @extend_schema(tags=["exports"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["exports"],
        request=ExportCreateSerializer,
        responses={202: ExportSerializer},
        description="Start an export; a Celery worker writes it. Poll it until its status is "
        "done, then download its files.",
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
        data = ExportCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        fmt = values.pop("format")
        options = {o.name: values.pop(o.name) for o in FORMAT_OPTIONS if o.name in values}
        selection = values.pop("selection", None)
        if refused := options_refused(fmt, options):
            raise exceptions.ValidationError({name: [why] for name, why in refused.items()})
        try:
            export = idempotent_job(
                request,
                scope=f"exports:{campaign.pk}",
                create=lambda: export_create(
                    campaign=campaign,
                    fmt=fmt,
                    policy=LabelPolicy(**values),
                    options=options or None,
                    created_by=request.user,
                    selection=selection,
                ),
            )
        except ExportError as error:
            raise exceptions.ValidationError({"non_field_errors": [str(error)]}) from error
        return Response(ExportSerializer(export).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["exports"], responses={200: ExportSerializer})
@api_view(["GET"])
def export_detail(request: Request, slug: str, pk: int) -> Response:
    """One export's status and progress, then its files (managers)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    export = get_object_or_404(Export.objects.select_related("campaign"), campaign=campaign, pk=pk)
    return Response(ExportSerializer(export).data)


@extend_schema(
    tags=["exports"],
    responses={
        (200, "application/octet-stream"): OpenApiResponse(
            OpenApiTypes.BINARY, "The file (JSONL, Parquet, CSV or the JSON manifest)."
        )
    },
)
@api_view(["GET"])
def export_download(request: Request, slug: str, pk: int, name: str) -> FileResponse:
    """One file of a finished export, or its manifest (managers)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    export = get_object_or_404(Export, campaign=campaign, pk=pk, status=Export.Status.DONE)
    stored = export.stored_file(name)
    if stored is None or not default_storage.exists(stored):
        raise Http404("No such file")
    response = FileResponse(
        default_storage.open(stored, "rb"), as_attachment=True, filename=export.download_name(name)
    )
    response["Content-Type"] = "application/octet-stream"
    return response
