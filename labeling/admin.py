from __future__ import annotations

from django.contrib import admin

from common.admin import JOB_ACTIONS
from labeling.models import (
    Adjudication,
    Assignment,
    Campaign,
    Invitation,
    Membership,
    Problem,
    Review,
    Solution,
    SolutionBulkAction,
    Step,
    StepLabel,
)


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "overlap",
        "stop_at_first_error",
        "qc_rate",
        "requires_screening",
        "active_learning",
        "is_paused",
        "created_at",
    ]
    list_filter = ["is_paused", "active_learning", "stop_at_first_error", "requires_screening"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ["id", "short_text", "ground_truth_answer", "subject", "level", "campaign"]
    list_filter = ["campaign", "subject", "level"]
    search_fields = ["text", "unique_id", "ground_truth_answer"]
    list_select_related = ["campaign"]

    @admin.display(description="problem")
    def short_text(self, obj: Problem) -> str:
        return obj.text[:100]


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ["index", "text", "gold_rating"]


@admin.register(Solution)
class SolutionAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "problem_id",
        "campaign",
        "kind",
        "generator",
        "answer",
        "answer_is_correct",
        "prm_score",
        "priority",
        "is_open",
        "assignment_count",
    ]
    list_filter = ["campaign", "kind", "answer_is_correct", "is_open", "source", "generator"]
    search_fields = ["problem__text", "answer", "source_ref"]
    list_select_related = ["campaign"]
    raw_id_fields = ["problem"]
    inlines = [StepInline]


class StepLabelInline(admin.TabularInline):
    model = StepLabel
    extra = 0
    fields = ["step", "rating", "flagged", "time_spent_ms", "human_completion"]
    raw_id_fields = ["step"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "campaign",
        "solution_id",
        "annotator",
        "status",
        "finish_reason",
        "total_time_ms",
        "submitted_at",
        "lease_expires_at",
    ]
    list_filter = ["campaign", "status", "finish_reason", "source"]
    search_fields = ["annotator__username", "solution__problem__text"]
    list_select_related = ["campaign", "annotator"]
    raw_id_fields = ["solution", "annotator"]
    date_hierarchy = "submitted_at"
    inlines = [StepLabelInline]


@admin.register(StepLabel)
class StepLabelAdmin(admin.ModelAdmin):
    list_display = ["id", "assignment_id", "step", "rating", "flagged", "time_spent_ms"]
    list_filter = ["rating", "flagged", "assignment__campaign"]
    search_fields = ["step__text", "assignment__annotator__username"]
    raw_id_fields = ["assignment", "step"]


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ["id", "assignment_id", "reviewer", "decision", "created_at"]
    list_filter = ["decision"]
    search_fields = ["reviewer__username", "comment"]
    raw_id_fields = ["assignment", "reviewer"]


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


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    """Decided on the campaign's adjudication page; here for audit (read-only)."""

    list_display = ["id", "step", "campaign", "rating", "decided_by", "decided_at", "replaced_at"]
    list_filter = ["campaign", "rating"]
    raw_id_fields = ["step", "decided_by"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SolutionBulkAction)
class SolutionBulkActionAdmin(admin.ModelAdmin):
    """Bulk actions of the data browser (they start there; retry or fail them here)."""

    list_display = ["pk", "campaign", "action", "status", "total", "changed", "created_at"]
    list_filter = ["status", "action", "campaign"]
    readonly_fields = [f.name for f in SolutionBulkAction._meta.fields]
    actions = JOB_ACTIONS

    def has_add_permission(self, request) -> bool:
        return False
