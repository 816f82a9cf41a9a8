"""The caller's own API tokens over the API: list, create (the key is shown once), revoke.

Thin views over ``annotators.services``, the same services the profile page calls. (Campaigns
are ``labeling.api``'s, imports ``imports.api``'s.)
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotators import services
from annotators.models import ApiToken
from common.api import CursorListView

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


class TokenList(CursorListView):
    """The caller's API tokens, live and revoked."""

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
def token_revoke_api(request: Request, pk: int) -> Response:
    """Revoke one of your tokens: it is refused (401) from now on."""
    token = get_object_or_404(ApiToken, user=request.user, pk=pk)
    return Response(ApiTokenSerializer(services.api_token_revoke(token=token)).data)
