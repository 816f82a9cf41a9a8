from __future__ import annotations

from django.contrib import admin

from annotators.models import Membership


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
