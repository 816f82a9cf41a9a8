"""The labelling REST API: thin views over ``labeling.services`` and ``labeling.selectors``.

Refusals map to status codes by kind: not yours or not a member -> 404 (nothing is revealed),
not allowed to work now -> 403, conflicts with the assignment's state -> 409, broken rules ->
400 naming the field. "No work" is a 200 with a reason, never a 404.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework import authentication, exceptions, status
from rest_framework.authtoken.models import Token
from rest_framework.decorators import api_view, authentication_classes
from rest_framework.request import Request
from rest_framework.response import Response

from labeling import selectors, services
from labeling.serializers import (
    AssignmentSerializer,
    NextSerializer,
    SkipResultSerializer,
    SubmitResultSerializer,
    SubmitSerializer,
)


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's token authentication with the lookup as one plain query.

    Every request of every annotator starts here; DRF's ORM lookup costs about twice the rest of
    authentication on a small machine. Same tokens, same errors.
    """

    def authenticate_credentials(self, key: str):
        User = get_user_model()
        user = next(
            iter(
                User.objects.raw(
                    f"SELECT u.* FROM {User._meta.db_table} u"
                    " JOIN authtoken_token t ON t.user_id = u.id WHERE t.key = %s",
                    [key],
                )
            ),
            None,
        )
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return user, Token(key=key, user=user)


# Token (API clients) or session (the browser, with its CSRF check).
AUTHENTICATION = [TokenAuthentication, authentication.SessionAuthentication]

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


@api_view(["GET"])
@authentication_classes(AUTHENTICATION)
def assignment_detail(request: Request, pk: int) -> Response:
    """The assignment with its steps and the caller's own labels so far."""
    try:
        assignment = selectors.assignment_get(assignment_id=pk, user=request.user)
    except services.LabelingError as error:
        return _refusal(error)
    return Response(AssignmentSerializer(selectors.assignment_view(assignment=assignment)).data)


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
