"""The labelling REST API: thin views over ``labeling.services`` and ``labeling.selectors``:
the queue (next, submit, skip), browsing a campaign's problems, solutions and labels (managers
and reviewers), PRM models and active-learning runs (managers).

Refusals map to status codes by kind: not yours or not a member -> 404 (nothing is revealed),
not allowed to work now -> 403, conflicts with the assignment's state -> 409, broken rules ->
400 naming the field. "No work" is a 200 with a reason, never a 404.
"""

from __future__ import annotations

from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.decorators import api_view, authentication_classes
from rest_framework.request import Request
from rest_framework.response import Response

from annotators.permissions import MANAGE, REVIEW, campaign_for
from labeling import selectors, services
from labeling.active_learning import active_learning_trigger
from labeling.models import (
    ActiveLearningRun,
    Assignment,
    Campaign,
    PRMModel,
    Problem,
    Solution,
    Step,
    StepLabel,
)
from labeling.serializers import (
    ActiveLearningRunSerializer,
    AssignmentSerializer,
    NextSerializer,
    PRMModelSerializer,
    ProblemDetailSerializer,
    ProblemListSerializer,
    SkipResultSerializer,
    SolutionDetailSerializer,
    SolutionListSerializer,
    StepLabelSerializer,
    SubmitResultSerializer,
    SubmitSerializer,
)
from stepwise.api import (
    AUTHENTICATION,
    CursorPagination,
    ErrorSerializer,
    bool_param,
    choice_param,
    int_param,
    query_bool,
    query_choice,
    query_int,
    query_text,
)

QUEUE = ["queue"]
_REFUSED = {
    403: OpenApiResponse(ErrorSerializer, "campaign_paused, membership_inactive, screening_failed"),
    404: OpenApiResponse(ErrorSerializer, "Not a member of the campaign, or not your assignment."),
    409: OpenApiResponse(ErrorSerializer, "lease_taken or assignment_closed."),
}


_STATUS = {
    services.NotAMember: status.HTTP_404_NOT_FOUND,
    services.NotLeaseHolder: status.HTTP_404_NOT_FOUND,
    services.CampaignPaused: status.HTTP_403_FORBIDDEN,
    services.MembershipInactive: status.HTTP_403_FORBIDDEN,
    services.ScreeningFailed: status.HTTP_403_FORBIDDEN,
    services.LeaseTaken: status.HTTP_409_CONFLICT,
    services.AssignmentClosed: status.HTTP_409_CONFLICT,
}


def _refusal(error: services.LabelingError) -> Response:
    if isinstance(error, services.LabelsInvalid):
        return Response({error.field: [error.detail]}, status=status.HTTP_400_BAD_REQUEST)
    code = _STATUS.get(type(error), status.HTTP_400_BAD_REQUEST)
    return Response({"code": error.code, "detail": error.detail}, status=code)


@extend_schema(
    tags=QUEUE, request=None, responses={200: NextSerializer, **_REFUSED}, operation_id="queue_next"
)
@api_view(["POST"])
@authentication_classes(AUTHENTICATION)
def campaign_next(request: Request, slug: str) -> Response:
    """Lease the caller's next solution in the campaign (or resume the one they hold)."""
    try:
        campaign = selectors.membership_campaign(slug=slug, user=request.user)
        assignment = services.assignment_next(campaign=campaign, annotator=request.user)
    except services.LabelingError as error:
        return _refusal(error)
    if assignment is None:
        nothing = selectors.queue_no_work(campaign=campaign, annotator=request.user)
        body = {
            "assignment": None,
            "reason": nothing.reason,
            "detail": nothing.detail,
            "retry_after": nothing.retry_after,
        }
        return Response(NextSerializer(body).data)
    view = selectors.assignment_view(assignment=assignment)
    body = {"assignment": view, "reason": None, "detail": None, "retry_after": None}
    return Response(NextSerializer(body).data)


@extend_schema(tags=QUEUE, responses={200: AssignmentSerializer, 404: _REFUSED[404]})
@api_view(["GET"])
@authentication_classes(AUTHENTICATION)
def assignment_detail(request: Request, pk: int) -> Response:
    """The assignment with its steps and the caller's own labels so far."""
    try:
        assignment = selectors.assignment_get(assignment_id=pk, user=request.user)
    except services.LabelingError as error:
        return _refusal(error)
    return Response(AssignmentSerializer(selectors.assignment_view(assignment=assignment)).data)


@extend_schema(
    tags=QUEUE,
    request=SubmitSerializer,
    responses={200: SubmitResultSerializer, **_REFUSED},
)
@api_view(["POST"])
@authentication_classes(AUTHENTICATION)
def assignment_submit(request: Request, pk: int) -> Response:
    """Submit the labels of an assignment; a retry with the same submission key is harmless."""
    data = SubmitSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        assignment = selectors.assignment_get(assignment_id=pk, user=request.user)
        result = services.assignment_submit(
            assignment=assignment, annotator=request.user, **data.validated_data
        )
    except services.LabelingError as error:
        return _refusal(error)
    headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
    return Response(SubmitResultSerializer(result).data, headers=headers)


@extend_schema(tags=QUEUE, request=None, responses={200: SkipResultSerializer, **_REFUSED})
@api_view(["POST"])
@authentication_classes(AUTHENTICATION)
def assignment_skip(request: Request, pk: int) -> Response:
    """Hand the solution back unlabelled; it is not served to the caller again."""
    try:
        assignment = selectors.assignment_get(assignment_id=pk, user=request.user)
        skipped = services.assignment_skip(assignment=assignment, annotator=request.user)
    except services.LabelingError as error:
        return _refusal(error)
    return Response(SkipResultSerializer(skipped).data)


# --- Browsing a campaign: managers and reviewers ----------------------------------------------
#
# Annotators get 403 here: what they may see of a campaign is what the queue serves them
# (``next`` and their own assignments), never gold ratings, others' labels or the whole queue.


def _reviewable_campaign(request: Request, slug: str) -> Campaign:
    campaign, _ = campaign_for(request.user, slug, roles=REVIEW)
    return campaign


class _CampaignList(generics.ListAPIView):
    authentication_classes = AUTHENTICATION
    pagination_class = CursorPagination


@extend_schema(
    tags=["problems"],
    parameters=[
        OpenApiParameter("subject", str, description="Exact subject, e.g. Algebra."),
        OpenApiParameter("level", str, description="Exact level, e.g. 3."),
    ],
)
class ProblemList(_CampaignList):
    """The campaign's problems, oldest first (managers and reviewers)."""

    serializer_class = ProblemListSerializer

    def get_queryset(self):
        campaign = _reviewable_campaign(self.request, self.kwargs["slug"])
        problems = Problem.objects.filter(campaign=campaign)
        for name in ("subject", "level"):
            if value := query_text(self.request, name):
                problems = problems.filter(**{name: value})
        return problems


@extend_schema(tags=["problems"])
class ProblemDetail(generics.RetrieveAPIView):
    """A problem with its ground truth and the ids of its solutions."""

    authentication_classes = AUTHENTICATION
    serializer_class = ProblemDetailSerializer

    def get_queryset(self):
        campaign = _reviewable_campaign(self.request, self.kwargs["slug"])
        return Problem.objects.filter(campaign=campaign).prefetch_related("solutions")


@extend_schema(
    tags=["solutions"],
    parameters=[
        choice_param("kind", Solution.Kind.values, "regular, qc (quality control) or screening."),
        bool_param("is_open", "Still wanted by the queue."),
        bool_param("answer_is_correct", "The graded final answer (ungraded ones never match)."),
        int_param("problem", "Solutions of this problem."),
        OpenApiParameter("generator", str, description="Exact generator name."),
    ],
)
class SolutionList(_CampaignList):
    """The campaign's solutions, oldest first, with their queue state (managers, reviewers)."""

    serializer_class = SolutionListSerializer

    def get_queryset(self):
        request = self.request
        campaign = _reviewable_campaign(request, self.kwargs["slug"])
        solutions = Solution.objects.filter(campaign=campaign)
        if (kind := query_choice(request, "kind", Solution.Kind.values)) is not None:
            solutions = solutions.filter(kind=kind)
        for name in ("is_open", "answer_is_correct"):
            if (value := query_bool(request, name)) is not None:
                solutions = solutions.filter(**{name: value})
        if (problem := query_int(request, "problem")) is not None:
            solutions = solutions.filter(problem_id=problem)
        if generator := query_text(request, "generator"):
            solutions = solutions.filter(generator=generator)
        return solutions


@extend_schema(tags=["solutions"])
class SolutionDetail(generics.RetrieveAPIView):
    """A solution with its problem and its steps (with gold ratings on gold solutions)."""

    authentication_classes = AUTHENTICATION
    serializer_class = SolutionDetailSerializer

    def get_queryset(self):
        campaign = _reviewable_campaign(self.request, self.kwargs["slug"])
        return (
            Solution.objects.filter(campaign=campaign)
            .select_related("problem")
            .prefetch_related(Prefetch("steps", Step.objects.order_by("index")))
        )


@extend_schema(
    tags=["labels"],
    parameters=[
        int_param("annotator", "Labels by this user id."),
        int_param("solution", "Labels of this solution."),
        int_param("assignment", "Labels of this assignment."),
        choice_param(
            "status",
            Assignment.Status.values,
            "The assignment's status (submitted: final labels; leased: drafts).",
        ),
    ],
)
class LabelList(_CampaignList):
    """Every step label of the campaign, oldest first (managers and reviewers)."""

    serializer_class = StepLabelSerializer

    def get_queryset(self):
        request = self.request
        campaign = _reviewable_campaign(request, self.kwargs["slug"])
        labels = StepLabel.objects.filter(assignment__campaign=campaign).select_related(
            "assignment__annotator", "step"
        )
        if (annotator := query_int(request, "annotator")) is not None:
            labels = labels.filter(assignment__annotator_id=annotator)
        if (solution := query_int(request, "solution")) is not None:
            labels = labels.filter(step__solution_id=solution)
        if (assignment := query_int(request, "assignment")) is not None:
            labels = labels.filter(assignment_id=assignment)
        if (state := query_choice(request, "status", Assignment.Status.values)) is not None:
            labels = labels.filter(assignment__status=state)
        return labels


# --- PRM models and active learning: managers -------------------------------------------------


@extend_schema(tags=["active learning"])
class PRMModelList(_CampaignList):
    """The campaign's trained PRMs, oldest first; ``is_active`` marks the one scoring the queue."""

    serializer_class = PRMModelSerializer

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return PRMModel.objects.filter(campaign=campaign)


class ActiveLearningRunList(_CampaignList):
    """The campaign's active-learning runs, oldest first; POST asks for one now."""

    serializer_class = ActiveLearningRunSerializer

    def get_queryset(self):
        campaign, _ = campaign_for(self.request.user, self.kwargs["slug"], roles=MANAGE)
        return ActiveLearningRun.objects.filter(campaign=campaign).select_related("requested_by")

    @extend_schema(tags=["active learning"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["active learning"],
        request=None,
        responses={202: ActiveLearningRunSerializer},
        description="Train the PRM on the labels so far, rescore the open solutions and reorder "
        "the queue, in a Celery worker. One run at a time per campaign: while one is queued "
        "or running, this returns that one.",
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
        run = active_learning_trigger(campaign=campaign, requested_by=request.user)
        return Response(ActiveLearningRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["active learning"], responses={200: ActiveLearningRunSerializer})
@api_view(["GET"])
@authentication_classes(AUTHENTICATION)
def active_learning_run_detail(request: Request, slug: str, pk: int) -> Response:
    """One run's status, timings, metrics and the composition of the new queue head."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    run = get_object_or_404(
        ActiveLearningRun.objects.select_related("requested_by"), campaign=campaign, pk=pk
    )
    return Response(ActiveLearningRunSerializer(run).data)
