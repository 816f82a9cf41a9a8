"""Import jobs in Django's admin (read-only: they start from campaign pages;
the actions retry or fail them)."""

from __future__ import annotations

from django.contrib import admin

from common.admin import JOB_ACTIONS
from imports.models import ImportJob


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "campaign", "file_name", "format", "status", "created_at", "finished_at"]
    list_filter = ["status", "format", "campaign"]
    readonly_fields = [f.name for f in ImportJob._meta.fields]
    actions = JOB_ACTIONS

    def has_add_permission(self, request) -> bool:
        return False
