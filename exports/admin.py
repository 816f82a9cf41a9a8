from __future__ import annotations

from django.contrib import admin

from common.admin import JOB_ACTIONS
from exports.models import Export


@admin.register(Export)
class ExportAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "format", "status", "progress", "created_by", "created_at"]
    list_filter = ["status", "format"]
    readonly_fields = ["counts", "files", "manifest", "error", "started_at", "finished_at"]
    raw_id_fields = ["campaign", "created_by"]
    actions = JOB_ACTIONS
