"""PRM checkpoints and active-learning runs in Django's admin."""

from __future__ import annotations

from django.contrib import admin

from common.admin import JOB_ACTIONS
from learning.models import ActiveLearningRun, PRMModel


@admin.register(PRMModel)
class PRMModelAdmin(admin.ModelAdmin):
    list_display = ["campaign", "version", "backbone", "is_active", "training_labels", "created_at"]
    list_filter = ["campaign", "is_active", "backbone"]
    readonly_fields = ["metrics"]


@admin.register(ActiveLearningRun)
class ActiveLearningRunAdmin(admin.ModelAdmin):
    """A stuck run is best left to the sweep; deleting one frees its campaign's lock."""

    list_display = ["id", "campaign", "status", "trigger", "attempts", "model", "created_at"]
    list_filter = ["status", "trigger", "campaign"]
    raw_id_fields = ["model", "requested_by"]
    readonly_fields = ["metrics", "timings", "queue_head", "heartbeat_at", "started_at"]
    actions = JOB_ACTIONS
