"""The manager's API: campaigns, imports and the caller's own API tokens.

Thin views over ``annotators.services``, the same services the manager's pages call. The
campaign's rules are ``CampaignForm``'s (one place for them): the API validates types with a
serializer, then lets the form check the values, so a value the page refuses the API refuses
with the same words.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.forms.models import model_to_dict
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, serializers, status
from rest_framework.decorators import api_view, authentication_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotators import services
from annotators.forms import CampaignForm, UploadForm
from annotators.models import ApiToken, ImportJob, Membership
from annotators.permissions import (
    LABEL,
    MANAGE,
    campaign_for,
    campaigns_visible_to,
    may_create_campaigns,
)
from labeling.models import Campaign
from stepwise.api import AUTHENTICATION, CursorPagination, ErrorSerializer

# --- Campaigns -------------------------------------------------------------------------------

SETTINGS_FIELDS = [name for name in CampaignForm.Meta.fields if name != "slug"]


class CampaignSerializer(serializers.ModelSerializer):
    """A campaign and the caller's role in it (``site admin`` for superusers outside it)."""

    role = serializers.SerializerMethodField()

    class Meta:
        model = Campaign
        fields = ["id", "slug", *SETTINGS_FIELDS, "is_paused", "created_at", "role"]
        read_only_fields = fields

    def get_role(self, campaign: Campaign) -> str:
        roles = self.context.get("roles", {})
        return roles.get(campaign.pk, "site admin")


class CampaignWriteSerializer(serializers.ModelSerializer):
    """Settings to create a campaign with (``name`` required) or to change (any subset).

    ``slug`` is chosen once, at creation (from the name when absent); ``is_paused`` pauses or
    resumes serving work.
    """

    class Meta:
        model = Campaign
        fields = ["slug", *SETTINGS_FIELDS, "is_paused"]
        extra_kwargs = {
            "slug": {"required": False, "validators": []},
            "name": {"required": True},
            "is_paused": {"required": False},
        }


def _form_errors(form) -> exceptions.ValidationError:
    errors = {("non_field_errors" if k == "__all__" else k): v for k, v in form.errors.items()}
    return exceptions.ValidationError(errors)


def _campaign_body(request: Request, campaign: Campaign, status_code: int = 200) -> Response:
    roles = dict(
        Membership.objects.filter(user=request.user, campaign=campaign).values_list(
            "campaign_id", "role"
        )
    )
    body = CampaignSerializer(campaign, context={"roles": roles}).data
    return Response(body, status=status_code)


class CampaignList(generics.ListAPIView):
    """The campaigns the caller belongs to (every campaign for site admins), with their role."""

    authentication_classes = AUTHENTICATION
    pagination_class = CursorPagination
    serializer_class = CampaignSerializer

    def get_queryset(self):
        return campaigns_visible_to(self.request.user).distinct()

    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["roles"] = dict(
            Membership.objects.filter(
                user=self.request.user, status=Membership.Status.ACTIVE
            ).values_list("campaign_id", "role")
        )
        return context

    @extend_schema(tags=["campaigns"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["campaigns"],
        request=CampaignWriteSerializer,
        responses={201: CampaignSerializer},
        description="Create a campaign; the caller becomes its manager. Who may: "
        "`STEPWISE_CAMPAIGN_CREATORS` (anyone logged in, or staff).",
    )
    def post(self, request: Request, *args, **kwargs) -> Response:
        if not may_create_campaigns(request.user):
            raise PermissionDenied("Only staff create campaigns on this site.")
        data = CampaignWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        paused = values.pop("is_paused", False)
        defaults = model_to_dict(Campaign(), fields=CampaignForm.Meta.fields)
        form = CampaignForm({**defaults, **values})
        if not form.is_valid():
            raise _form_errors(form)
        campaign = services.campaign_create(creator=request.user, **form.settings())
        if paused:
            services.campaign_pause_set(campaign=campaign, paused=True)
        return _campaign_body(request, campaign, status.HTTP_201_CREATED)


@extend_schema(methods=["GET"], tags=["campaigns"], responses={200: CampaignSerializer})
@extend_schema(
    methods=["PATCH"],
    tags=["campaigns"],
    request=CampaignWriteSerializer(partial=True),
    responses={200: CampaignSerializer},
    description="Change settings (managers). A new overlap or bad-problem limit reopens or "
    "closes solutions at once; `is_paused` pauses or resumes serving work; the slug never changes.",
)
@api_view(["GET", "PATCH"])
@authentication_classes(AUTHENTICATION)
def campaign_detail(request: Request, slug: str) -> Response:
    """A campaign the caller belongs to, with their role; managers change its settings."""
    if request.method == "GET":
        campaign, _ = campaign_for(request.user, slug, roles=LABEL)
        return _campaign_body(request, campaign)
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    data = CampaignWriteSerializer(campaign, data=request.data, partial=True)
    data.is_valid(raise_exception=True)
    values = dict(data.validated_data)
    if "slug" in values and values.pop("slug") != campaign.slug:
        raise exceptions.ValidationError({"slug": ["A campaign's slug cannot change."]})
    paused = values.pop("is_paused", None)
    current = model_to_dict(campaign, fields=SETTINGS_FIELDS)
    form = CampaignForm({**current, **values}, instance=Campaign.objects.get(pk=campaign.pk))
    if not form.is_valid():
        raise _form_errors(form)
    campaign = services.campaign_update(campaign=campaign, **form.settings())
    if paused is not None:
        services.campaign_pause_set(campaign=campaign, paused=paused)
    return _campaign_body(request, campaign)


# --- Imports ---------------------------------------------------------------------------------


class ImportJobSerializer(serializers.ModelSerializer):
    """An upload and its import: ``status`` pending → running → done (``counts``) or failed
    (``errors`` with file, line, field and message; nothing was written)."""

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


def _too_large(request: Request) -> Response | None:
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > services.upload_limit_bytes() + 65536:
        body = {"code": "too_large", "detail": services.upload_too_large_message(length)}
        return Response(body, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    return None


class ImportList(generics.ListAPIView):
    """The campaign's imports, newest last (managers); POST uploads a file to import."""

    authentication_classes = AUTHENTICATION
    pagination_class = CursorPagination
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
            job = services.import_job_create(
                campaign=campaign,
                created_by=request.user,
                upload=values["file"],
                fmt=values["format"],
                as_gold=values.get("as_gold") or None,
                generator=values.get("generator", ""),
                grade=values["grade"],
            )
        except services.ManageError as error:
            raise exceptions.ValidationError({"file": [str(error)]}) from error
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["imports"], responses={200: ImportJobSerializer})
@api_view(["GET"])
@authentication_classes(AUTHENTICATION)
def import_detail(request: Request, slug: str, pk: int) -> Response:
    """One import's status, phase, progress, and its counts or errors (managers)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    job = get_object_or_404(ImportJob, campaign=campaign, pk=pk)
    return Response(ImportJobSerializer(job).data)


# --- API tokens (the caller's own) ------------------------------------------------------------


class ApiTokenSerializer(serializers.ModelSerializer):
    """A token as listed: never the key, which is shown once at creation."""

    class Meta:
        model = ApiToken
        fields = ["id", "name", "key_hint", "created_at", "last_used_at", "revoked_at"]
        read_only_fields = fields


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    key = serializers.CharField(help_text="The key: shown only now, store it.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="What the key is for.")


class TokenList(generics.ListAPIView):
    """The caller's API tokens, live and revoked."""

    authentication_classes = AUTHENTICATION
    pagination_class = CursorPagination
    serializer_class = ApiTokenSerializer

    def get_queryset(self):
        return ApiToken.objects.filter(user=self.request.user)

    @extend_schema(tags=["tokens"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["tokens"],
        request=ApiTokenCreateSerializer,
        responses={201: ApiTokenCreatedSerializer},
    )
    def post(self, request: Request) -> Response:
        data = ApiTokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            token, key = services.api_token_create(
                user=request.user, name=data.validated_data["name"]
            )
        except services.ManageError as error:
            raise exceptions.ValidationError({"name": [str(error)]}) from error
        token.key = key
        return Response(ApiTokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["tokens"], request=None, responses={200: ApiTokenSerializer})
@api_view(["POST"])
@authentication_classes(AUTHENTICATION)
def token_revoke(request: Request, pk: int) -> Response:
    """Revoke one of your tokens: it is refused (401) from now on."""
    token = get_object_or_404(ApiToken, user=request.user, pk=pk)
    return Response(ApiTokenSerializer(services.api_token_revoke(token=token)).data)
