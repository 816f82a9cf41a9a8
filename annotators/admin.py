from __future__ import annotations

from django.contrib import admin

from annotators.models import ApiToken, CampaignSnapshot, ImportJob, Invitation, Membership


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = [
        "user",
        "campaign",
        "role",
        "status",
        "screening",
        "screening_score",
        "joined_at",
    ]
    list_filter = ["campaign", "role", "status", "screening"]
    search_fields = ["user__username", "user__email", "campaign__name"]
    list_select_related = ["user", "campaign"]
    raw_id_fields = ["user"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Links are created on the campaign's invitations page (the token is shown only there)."""

    list_display = [
        "token_hint",
        "campaign",
        "role",
        "uses",
        "max_uses",
        "expires_at",
        "revoked_at",
    ]
    list_filter = ["campaign", "role"]
    readonly_fields = ["token_hash", "token_hint", "uses", "created_by", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "campaign", "file_name", "format", "status", "created_at", "finished_at"]
    list_filter = ["status", "format", "campaign"]
    readonly_fields = [f.name for f in ImportJob._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False


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
