"""The columns of labeling's tables, for the raw SQL that writes them (``common.columns``).

Raw INSERTs into these tables (the queue's claim in ``labeling.queue.claim``, the submit's
labels in ``labeling.queue.submit``, the benchmarks' loaders) build their column lists from
these declarations; ``tests/test_rules_columns.py`` holds each to its model. Nothing here
imports Django.
"""

from __future__ import annotations

from common.columns import Columns

CAMPAIGN = Columns(
    "labeling_campaign",
    required=(
        "slug",
        "name",
        "instructions",
        "overlap",
        "lease_seconds",
        "stop_at_first_error",
        "qc_rate",
        "requires_screening",
        "screening_threshold",
        "bad_problem_limit",
        "active_learning",
        "al_wrong_answer_share",
        "al_retrain_every",
        "al_backbone",
        "is_paused",
        "created_at",
    ),
    filled=(
        "id",
        "al_strategy",
        "al_control_share",
        "al_scoring_endpoint",
        "al_scoring_model",
        "relabel_by_same_annotator",
        "phase1_mode",
        "phase1_endpoint",
        "phase1_model",
        "phase1_samples",
        "reviewers_see_evidence",
        "trace_kind",
        "qc_pause",
        "qc_pause_window",
        "qc_pause_threshold",
        "grading_rule",
        "created_by_id",
    ),
)

MEMBERSHIP = Columns(
    "annotators_membership",
    required=("user_id", "campaign_id", "role", "status", "screening", "joined_at"),
    filled=(
        "id",
        "screening_score",
        "invitation_id",
        "is_imported",
        "paused_at",
        "pause_reason",
        "pause_figures",
        "resumed_at",
    ),
)

PROBLEM = Columns(
    "labeling_problem",
    required=(
        "campaign_id",
        "text",
        "ground_truth_answer",
        "subject",
        "level",
        "unique_id",
        "content_hash",
        "created_at",
    ),
    filled=("id", "ground_truth_solution"),
)

SOLUTION = Columns(
    "labeling_solution",
    required=(
        "campaign_id",
        "problem_id",
        "generator",
        "kind",
        "pre_generated",
        "priority",
        "is_open",
        "assignment_count",
        "bad_problem_reports",
        "source",
        "source_ref",
        "content_hash",
        "created_at",
    ),
    filled=(
        "id",
        "generation",
        "answer",
        "answer_is_correct",
        "verifier_score",
        "prm_score",
        "al_arm",
        "al_placed_by",
        "archived",
        "extra_labels",
        "import_job_id",
        "disputed_steps",
        "trace",
    ),
)

STEP = Columns(
    "labeling_step",
    required=("solution_id", "index", "text"),
    filled=("id", "raw_text", "gold_rating", "content"),
)

ASSIGNMENT = Columns(
    "labeling_assignment",
    required=(
        "campaign_id",
        "solution_id",
        "annotator_id",
        "status",
        "leased_at",
        "finish_reason",
        "source",
    ),
    filled=(
        "id",
        "lease_expires_at",
        "submitted_at",
        "total_time_ms",
        "submission_key",
        "supersedes_id",
        "outcome_rating",
    ),
)

STEP_LABEL = Columns(
    "labeling_steplabel",
    required=("assignment_id", "step_id", "alternatives", "created_at"),
    filled=(
        "id",
        "rating",
        "flagged",
        "time_spent_ms",
        "completion_index",
        "human_completion",
        "chosen_completion",
    ),
)

REVIEW = Columns(
    "labeling_review",
    required=("assignment_id", "reviewer_id", "decision", "comment", "corrections", "created_at"),
    filled=("id",),
)
