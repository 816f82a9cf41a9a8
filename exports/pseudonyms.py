"""Annotators in exports: a stable pseudonym per person and campaign, not their username.

An exported data set is meant to be shared; a username is personal data. Every export writes
``annotator_pseudonym`` by default (policy option ``annotator_ids``): an HMAC-SHA256 of the
campaign's and the user's ids under the site's ``STEPWISE_PSEUDONYM_SECRET`` (``SECRET_KEY``
unless set), so the same person has the same id in every export of a campaign, different ids in
different campaigns (two shared data sets do not link them), and nobody without the secret can
compute or reverse it. The mapping back to usernames is for the campaign's managers only
(``exports:annotators``).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils.crypto import salted_hmac

from labeling.models import Campaign

PREFIX = "annotator-"


def annotator_pseudonym(*, campaign_id: int, user_id: int) -> str:
    """The id an export gives this user in this campaign (the same in every export)."""
    digest = salted_hmac(
        "stepwise.exports.annotator_pseudonym",
        f"{campaign_id}:{user_id}",
        secret=settings.STEPWISE_PSEUDONYM_SECRET or settings.SECRET_KEY,
        algorithm="sha256",
    ).hexdigest()
    return PREFIX + digest[:16]


def annotator_pseudonyms(*, campaign: Campaign) -> Iterator[tuple[str, str]]:
    """``(pseudonym, username)`` of everyone who is or was in the campaign or labelled in it."""
    users = (
        get_user_model()
        .objects.filter(
            Q(memberships__campaign=campaign) | Q(assignments__solution__campaign=campaign)
        )
        .distinct()
        .order_by("username")
        .values_list("pk", "username")
    )
    for pk, username in users.iterator():
        yield annotator_pseudonym(campaign_id=campaign.pk, user_id=pk), username
