"""JSON shapes of the labelling API. Input serializers check types; the services check the rules."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from common.api import BoundedListField, FiniteFloatField
from labeling.models import Assignment, FinishReason, Problem, Solution, Step, StepLabel


class StepSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    text = serializers.CharField()


class LabelSerializer(serializers.Serializer):
    step_index = serializers.IntegerField()
    rating = serializers.IntegerField()
    flagged = serializers.BooleanField()
    human_completion = serializers.CharField(allow_null=True)
    time_spent_ms = serializers.IntegerField(allow_null=True)


class ProblemSerializer(serializers.Serializer):
    text = serializers.CharField(source="problem")
    ground_truth_answer = serializers.CharField()


class AssignmentSerializer(serializers.Serializer):
    """An assignment as its annotator sees it (``labeling.selectors.labelling.AssignmentView``)."""

    id = serializers.IntegerField()
    campaign = serializers.CharField()
    solution = serializers.IntegerField(source="solution_id")
    status = serializers.CharField()
    is_screening = serializers.BooleanField()
    lease_expires_at = serializers.DateTimeField(allow_null=True)
    stop_at_first_error = serializers.BooleanField()
    instructions = serializers.CharField()
    problem = ProblemSerializer(source="*")
    steps = StepSerializer(many=True)
    labels = LabelSerializer(many=True)
    submit_url = serializers.SerializerMethodField()

    def get_submit_url(self, view) -> str:
        return f"/api/assignments/{view.id}/submit/"


class NextSerializer(serializers.Serializer):
    """The answer to "next": an assignment, or none with the reason (never a 404)."""

    assignment = AssignmentSerializer(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    detail = serializers.CharField(allow_null=True)
    retry_after = serializers.IntegerField(allow_null=True)


def _most_steps() -> int:
    """No solution has more steps than an import may bring (``STEPWISE_IMPORT_MAX_STEPS``)."""
    return settings.STEPWISE_IMPORT_MAX_STEPS


class SubmitSerializer(serializers.Serializer):
    """A submission. Its lists are refused on length alone past ``STEPWISE_IMPORT_MAX_STEPS``,
    and the service refuses any longer than the solution's steps before looking at an item;
    times are clamped (``labeling.forms``: 30 minutes a step, 4 hours a solution)."""

    submission_key = serializers.CharField(max_length=64)
    ratings = BoundedListField(
        most=_most_steps,
        child=serializers.IntegerField(min_value=-1, max_value=1),
        required=False,
        allow_null=True,
    )
    flags = BoundedListField(
        most=_most_steps,
        child=serializers.IntegerField(min_value=0),
        required=False,
        allow_null=True,
    )
    human_completion = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=10_000
    )
    finish_reason = serializers.ChoiceField(
        choices=FinishReason.choices, required=False, allow_null=True
    )
    total_time_ms = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    # An agent trajectory's final outcome (campaigns of a kind that rates it, labeling.traces).
    outcome_rating = serializers.IntegerField(
        min_value=-1, max_value=1, required=False, allow_null=True
    )
    step_times_ms = BoundedListField(
        most=_most_steps,
        child=serializers.IntegerField(min_value=0),
        required=False,
        allow_null=True,
    )


class SubmitResultSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment_id")
    solution = serializers.IntegerField(source="solution_id")
    status = serializers.CharField()
    finish_reason = serializers.CharField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    rated_steps = serializers.IntegerField()
    screening = serializers.CharField(allow_null=True)


class SkipResultSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(source="pk")
    status = serializers.CharField()


# --- Browsing a campaign (managers and reviewers) --------------------------------------------


class ProblemListSerializer(serializers.ModelSerializer):
    class Meta:
        model = Problem
        fields = [
            "id",
            "text",
            "ground_truth_answer",
            "subject",
            "level",
            "unique_id",
            "created_at",
        ]


class ProblemDetailSerializer(serializers.ModelSerializer):
    solutions = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta:
        model = Problem
        fields = [*ProblemListSerializer.Meta.fields, "ground_truth_solution", "solutions"]


class SolutionListSerializer(serializers.ModelSerializer):
    verifier_score = FiniteFloatField(read_only=True, allow_null=True)
    prm_score = FiniteFloatField(read_only=True, allow_null=True)

    class Meta:
        model = Solution
        fields = [
            "id",
            "problem",
            "generator",
            "kind",
            "answer",
            "answer_is_correct",
            "verifier_score",
            "prm_score",
            "priority",
            "is_open",
            "archived",
            "extra_labels",
            "assignment_count",
            "bad_problem_reports",
            "source",
            "source_ref",
            "import_job_id",
            "created_at",
        ]


class SolutionStepSerializer(serializers.ModelSerializer):
    """A step with its gold rating (null unless a quality-control or screening solution)."""

    class Meta:
        model = Step
        fields = ["index", "text", "gold_rating"]


class SolutionDetailSerializer(SolutionListSerializer):
    problem = ProblemListSerializer()
    steps = SolutionStepSerializer(many=True)

    class Meta:
        model = Solution
        fields = [*SolutionListSerializer.Meta.fields, "steps"]


class StepLabelSerializer(serializers.ModelSerializer):
    """One annotator's rating of one step, with the assignment it belongs to."""

    assignment = serializers.IntegerField(source="assignment_id")
    annotator = serializers.IntegerField(source="assignment.annotator_id")
    annotator_username = serializers.CharField(source="assignment.annotator.username")
    assignment_status = serializers.ChoiceField(
        source="assignment.status", choices=Assignment.Status.choices
    )
    finish_reason = serializers.CharField(source="assignment.finish_reason")
    submitted_at = serializers.DateTimeField(source="assignment.submitted_at", allow_null=True)
    solution = serializers.IntegerField(source="step.solution_id")
    step_index = serializers.IntegerField(source="step.index")

    class Meta:
        model = StepLabel
        fields = [
            "id",
            "assignment",
            "annotator",
            "annotator_username",
            "assignment_status",
            "finish_reason",
            "submitted_at",
            "solution",
            "step_index",
            "rating",
            "flagged",
            "time_spent_ms",
            "human_completion",
            "alternatives",
            "created_at",
        ]
