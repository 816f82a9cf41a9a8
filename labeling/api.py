"""The labelling REST API: thin views over ``labeling.queue``, ``labeling.services`` and
``labeling.selectors.labelling``: campaigns (list, create, settings; the campaign's rules are
``CampaignForm``'s, so the API refuses what the page refuses, with the same words), the queue
(next, submit, skip), and browsing a campaign's problems, solutions and labels (managers and
reviewers).

Refusals map to status codes by kind: not yours or not a member -> 404 (nothing is revealed),
not allowed to work now -> 403, conflicts with the assignment's state -> 409, broken rules ->
400 naming the field. "No work" is a 200 with a reason, never a 404.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.forms.models import model_to_dict
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from common.api import (
    CursorListView,
    CursorPagination,
    ErrorSerializer,
    bad_request,
    choice_param,
    int_param,
    query_choice,
    query_int,
    query_text,
)
from labeling import queue, services
from labeling.backbones import backbone_choices
from labeling.curation import filters
from labeling.forms import CampaignForm
from labeling.models import Assignment, Campaign, Membership, Problem, Solution, Step, StepLabel
from labeling.permissions import (
    LABEL,
    MANAGE,
    REVIEW,
    campaign_for,
    campaign_of_member,
    campaigns_visible_to,
    may_create_campaigns,
)
from labeling.selectors import labelling
from labeling.serializers import (
    AssignmentSerializer,
    NextSerializer,
    ProblemDetailSerializer,
    ProblemListSerializer,
    SkipResultSerializer,
    SolutionDetailSerializer,
    SolutionListSerializer,
    StepLabelSerializer,
    SubmitResultSerializer,
    SubmitSerializer,
)

QUEUE = ["queue"]
_REFUSED = {
    403: OpenApiResponse(ErrorSerializer, "campaign_paused, membership_inactive, screening_failed"),
    404: OpenApiResponse(ErrorSerializer, "Not a member of the campaign, or not your assignment."),
    409: OpenApiResponse(ErrorSerializer, "lease_taken or assignment_closed."),
}

SETTINGS_FIELDS = [name for name in CampaignForm.Meta.fields if name != "slug"]


_STATUS = {
    queue.NotAMember: status.HTTP_404_NOT_FOUND,
    queue.NotLeaseHolder: status.HTTP_404_NOT_FOUND,
    queue.CampaignPaused: status.HTTP_403_FORBIDDEN,
    queue.MembershipInactive: status.HTTP_403_FORBIDDEN,
    queue.ScreeningFailed: status.HTTP_403_FORBIDDEN,
    queue.LeaseTaken: status.HTTP_409_CONFLICT,
    queue.AssignmentClosed: status.HTTP_409_CONFLICT,
}


def _refusal(error: queue.LabelingError) -> Response:
    if isinstance(error, queue.LabelsInvalid):
        return Response({error.field: [error.detail]}, status=status.HTTP_400_BAD_REQUEST)
    code = _STATUS.get(type(error), status.HTTP_400_BAD_REQUEST)
    return Response({"code": error.code, "detail": error.detail}, status=code)


@extend_schema(
    tags=QUEUE, request=None, responses={200: NextSerializer, **_REFUSED}, operation_id="queue_next"
)
@api_view(["POST"])
def campaign_next(request: Request, slug: str) -> Response:
    """Lease the caller's next solution in the campaign (or resume the one they hold)."""
    try:
        campaign = campaign_of_member(slug=slug, user=request.user)
        assignment = queue.assignment_next(campaign=campaign, annotator=request.user)
    except queue.LabelingError as error:
        return _refusal(error)
    if assignment is None:
        nothing = labelling.queue_no_work(campaign=campaign, annotator=request.user)
        body = {
            "assignment": None,
            "reason": nothing.reason,
            "detail": nothing.detail,
            "retry_after": nothing.retry_after,
        }
        return Response(NextSerializer(body).data)
    view = labelling.assignment_view(assignment=assignment)
    body = {"assignment": view, "reason": None, "detail": None, "retry_after": None}
    return Response(NextSerializer(body).data)


@extend_schema(tags=QUEUE, responses={200: AssignmentSerializer, 404: _REFUSED[404]})
@api_view(["GET"])
def assignment_detail(request: Request, pk: int) -> Response:
    """The assignment with its steps and the caller's own labels so far."""
    try:
        assignment = labelling.assignment_get(assignment_id=pk, user=request.user)
    except queue.LabelingError as error:
        return _refusal(error)
    return Response(AssignmentSerializer(labelling.assignment_view(assignment=assignment)).data)


@extend_schema(
    tags=QUEUE,
    request=SubmitSerializer,
    responses={200: SubmitResultSerializer, **_REFUSED},
)
@api_view(["POST"])
def assignment_submit_api(request: Request, pk: int) -> Response:
    """Submit the labels of an assignment; a retry with the same submission key is harmless."""
    data = SubmitSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        assignment = labelling.assignment_get(assignment_id=pk, user=request.user)
        result = queue.assignment_submit(
            assignment=assignment, annotator=request.user, **data.validated_data
        )
    except queue.LabelingError as error:
        return _refusal(error)
    headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
    return Response(SubmitResultSerializer(result).data, headers=headers)


@extend_schema(tags=QUEUE, request=None, responses={200: SkipResultSerializer, **_REFUSED})
@api_view(["POST"])
def assignment_skip_api(request: Request, pk: int) -> Response:
    """Hand the solution back unlabelled; it is not served to the caller again."""
    try:
        assignment = labelling.assignment_get(assignment_id=pk, user=request.user)
        skipped = queue.assignment_skip(assignment=assignment, annotator=request.user)
    except queue.LabelingError as error:
        return _refusal(error)
    return Response(SkipResultSerializer(skipped).data)


# --- Browsing a campaign: managers and reviewers ----------------------------------------------
#
# Annotators get 403 here: what they may see of a campaign is what the queue serves them
# (``next`` and their own assignments), never gold ratings, others' labels or the whole queue.


def _reviewable_campaign(request: Request, slug: str) -> Campaign:
    campaign, _ = campaign_for(request.user, slug, roles=REVIEW)
    return campaign


@extend_schema(
    tags=["problems"],
    parameters=[
        OpenApiParameter("subject", str, description="Exact subject, e.g. Algebra."),
        OpenApiParameter("level", str, description="Exact level, e.g. 3."),
    ],
)
class ProblemList(CursorListView):
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

    serializer_class = ProblemDetailSerializer

    def get_queryset(self):
        campaign = _reviewable_campaign(self.request, self.kwargs["slug"])
        return Problem.objects.filter(campaign=campaign).prefetch_related("solutions")


def _filter_parameters() -> list[OpenApiParameter]:
    """The solution list's query parameters, from the filter spec (``curation.filters``)."""
    kinds = {"int": int, "float": float, "bool": bool}
    params = []
    for spec in filters.FILTERS:
        params.append(
            OpenApiParameter(
                spec.name,
                kinds.get(spec.type, str),
                enum=list(spec.values) or None,
                many=spec.many or None,
                explode=True if spec.many else None,
                description=spec.help
                + (
                    " Repeat the parameter (or separate by commas) for any of several."
                    if spec.many
                    else ""
                ),
            )
        )
    params.append(
        OpenApiParameter(
            "sort",
            str,
            enum=list(filters.SORT_NAMES),
            description="; ".join(f"{name}: {text}" for name, text in filters.SORTS)
            + ". Default: id (oldest first).",
        )
    )
    return params


class SolutionPagination(CursorPagination):
    """Cursor pages in the order the request's ``sort`` asks for (``SolutionFilter.ordering``)."""

    def get_ordering(self, request, queryset, view):
        return view.solution_filter.ordering


@extend_schema(tags=["solutions"], parameters=_filter_parameters())
class SolutionList(CursorListView):
    """The campaign's solutions with their queue state (managers, reviewers), filtered and sorted
    as in the data browser: the same filters, declared once in ``labeling.curation.filters``."""

    serializer_class = SolutionListSerializer
    pagination_class = SolutionPagination

    def get_queryset(self):
        campaign = _reviewable_campaign(self.request, self.kwargs["slug"])
        try:
            self.solution_filter = filters.SolutionFilter.from_params(
                self.request.query_params, default_sort="id"
            )
        except filters.FilterError as error:
            raise bad_request(error.field, error.message) from None
        solutions = self.solution_filter.apply(Solution.objects.filter(campaign=campaign))
        return self.solution_filter.ordered(solutions)


@extend_schema(tags=["solutions"])
class SolutionDetail(generics.RetrieveAPIView):
    """A solution with its problem and its steps (with gold ratings on gold solutions)."""

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
            "The assignment's status (submitted: final labels; leased: drafts; rejected: "
            "rejected by a reviewer, kept; superseded: an earlier version of amended work).",
        ),
    ],
)
class LabelList(CursorListView):
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


class CampaignSerializer(serializers.ModelSerializer):
    """A campaign and the caller's role in it (``site admin`` for superusers outside it)."""

    role = serializers.SerializerMethodField()

    class Meta:
        model = Campaign
        fields = ["id", "slug", *SETTINGS_FIELDS, "is_paused", "created_at", "role"]
        read_only_fields = fields

    def get_role(self, campaign: Campaign) -> str:
        roles = self.context.get("roles", {})
        return roles.get(campaign.pk, "site admin")


class CampaignWriteSerializer(serializers.ModelSerializer):
    """Settings to create a campaign with (``name`` required) or to change (any subset).

    ``slug`` is chosen once, at creation (from the name when absent); ``is_paused`` pauses or
    resumes serving work.
    """

    class Meta:
        model = Campaign
        fields = ["slug", *SETTINGS_FIELDS, "is_paused"]
        extra_kwargs = {
            "slug": {"required": False, "validators": []},
            "name": {"required": True},
            "is_paused": {"required": False},
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # The operator's list (STEPWISE_PRM_BACKBONES), read when the request comes.
        self.fields["al_backbone"] = serializers.ChoiceField(
            choices=backbone_choices(), required=False
        )


def _form_errors(form) -> exceptions.ValidationError:
    errors = {("non_field_errors" if k == "__all__" else k): v for k, v in form.errors.items()}
    return exceptions.ValidationError(errors)


def _campaign_body(request: Request, campaign: Campaign, status_code: int = 200) -> Response:
    roles = Membership.objects.filter(campaign=campaign).roles_of(request.user)
    body = CampaignSerializer(campaign, context={"roles": roles}).data
    return Response(body, status=status_code)


class CampaignList(CursorListView):
    """The campaigns the caller belongs to (every campaign for site admins), with their role."""

    serializer_class = CampaignSerializer

    def get_queryset(self):
        return campaigns_visible_to(self.request.user).distinct()

    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["roles"] = Membership.objects.roles_of(self.request.user)
        return context

    @extend_schema(tags=["campaigns"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["campaigns"],
        request=CampaignWriteSerializer,
        responses={201: CampaignSerializer},
        description="Create a campaign; the caller becomes its manager. Who may: "
        "`STEPWISE_CAMPAIGN_CREATORS` (anyone logged in, or staff).",
    )
    def post(self, request: Request, *args, **kwargs) -> Response:
        if not may_create_campaigns(request.user):
            raise PermissionDenied("Only staff create campaigns on this site.")
        data = CampaignWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        paused = values.pop("is_paused", False)
        defaults = model_to_dict(Campaign(), fields=CampaignForm.Meta.fields)
        form = CampaignForm({**defaults, **values})
        if not form.is_valid():
            raise _form_errors(form)
        campaign = services.campaign_create(creator=request.user, **form.settings())
        if paused:
            services.campaign_pause_set(campaign=campaign, paused=True)
        return _campaign_body(request, campaign, status.HTTP_201_CREATED)


@extend_schema(methods=["GET"], tags=["campaigns"], responses={200: CampaignSerializer})
@extend_schema(
    methods=["PATCH"],
    tags=["campaigns"],
    request=CampaignWriteSerializer(partial=True),
    responses={200: CampaignSerializer},
    description="Change settings (managers). A new overlap or bad-problem limit reopens or "
    "closes solutions at once; `is_paused` pauses or resumes serving work; the slug never changes.",
)
@api_view(["GET", "PATCH"])
def campaign_detail(request: Request, slug: str) -> Response:
    """A campaign the caller belongs to, with their role; managers change its settings."""
    if request.method == "GET":
        campaign, _ = campaign_for(request.user, slug, roles=LABEL)
        return _campaign_body(request, campaign)
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    data = CampaignWriteSerializer(campaign, data=request.data, partial=True)
    data.is_valid(raise_exception=True)
    values = dict(data.validated_data)
    if "slug" in values and values.pop("slug") != campaign.slug:
        raise exceptions.ValidationError({"slug": ["A campaign's slug cannot change."]})
    paused = values.pop("is_paused", None)
    current = model_to_dict(campaign, fields=SETTINGS_FIELDS)
    form = CampaignForm({**current, **values}, instance=Campaign.objects.get(pk=campaign.pk))
    if not form.is_valid():
        raise _form_errors(form)
    campaign = services.campaign_update(campaign=campaign, actor=request.user, **form.settings())
    if paused is not None:
        services.campaign_pause_set(campaign=campaign, paused=paused)
    return _campaign_body(request, campaign)
