from __future__ import annotations

from django.contrib import admin

from annotators.models import ApiToken, CampaignSnapshot
from common.admin import JOB_ACTIONS


@admin.register(CampaignSnapshot)
class CampaignSnapshotAdmin(admin.ModelAdmin):
    list_display = ["pk", "campaign", "status", "requested_at", "computed_at", "seconds"]
    list_filter = ["status", "campaign"]
    exclude = ["data"]
    readonly_fields = [
        "campaign",
        "status",
        "requested_at",
        "started_at",
        "computed_at",
        "seconds",
        "error",
    ]
    actions = JOB_ACTIONS

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Keys are created on the profile page or with ``create_api_token`` (shown once there);
    here an admin sees who holds which and can revoke one (set ``revoked_at``)."""

    list_display = ["name", "user", "key_hint", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "key_hint"]
    list_select_related = ["user"]
    readonly_fields = ["user", "key_hash", "key_hint", "created_at", "last_used_at"]

    def has_add_permission(self, request) -> bool:
        return False
