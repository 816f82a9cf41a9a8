"""Generation, evidence, scoring and phase 1 sampling jobs in Django's admin (read-only: they
start from campaign and labelling pages; the actions retry or fail them)."""

from __future__ import annotations

from django.contrib import admin

from common.admin import JOB_ACTIONS
from machines.models import EvidenceJob, GenerationJob, Phase1Sampling, ScoringJob


@admin.register(GenerationJob)
class GenerationJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "campaign", "model", "status", "requested", "completed", "created_at"]
    list_filter = ["status", "campaign"]
    readonly_fields = [f.name for f in GenerationJob._meta.fields]
    actions = JOB_ACTIONS

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(EvidenceJob)
class EvidenceJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "campaign", "status", "created_at"]
    list_filter = ["status", "campaign"]
    readonly_fields = [f.name for f in EvidenceJob._meta.fields]
    actions = JOB_ACTIONS

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ScoringJob)
class ScoringJobAdmin(admin.ModelAdmin):
    """Scoring with a served PRM (retry or fail one with the actions)."""

    list_display = ["pk", "campaign", "status", "attempts"]
    list_filter = ["status", "campaign"]
    readonly_fields = [f.name for f in ScoringJob._meta.fields]
    actions = JOB_ACTIONS

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Phase1Sampling)
class Phase1SamplingAdmin(admin.ModelAdmin):
    """Phase 1 mode's sampling of candidates for one prefix (retry or fail one)."""

    list_display = ["pk", "campaign", "solution", "status", "sampled", "created_at"]
    list_filter = ["status", "campaign"]
    readonly_fields = [f.name for f in Phase1Sampling._meta.fields]
    actions = JOB_ACTIONS

    def has_add_permission(self, request) -> bool:
        return False
