"""Invitation links: sign up or log in and join with the invited role; expiry, caps, revocation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from annotators.services import (
    InvitationRefused,
    invitation_create,
    invitation_redeem,
    membership_update,
)
from labeling.models import Invitation, Membership
from tests.factories import make_campaign, make_member, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return make_campaign(slug="algebra", name="Algebra")


def join_url(token: str) -> str:
    return reverse("annotators:join", kwargs={"token": token})


def signup(client, token: str, username: str = "newbie"):
    return client.post(
        join_url(token),
        {
            "username": username,
            "password1": "a-long-passphrase-1",
            "password2": "a-long-passphrase-1",
        },
    )


def test_a_manager_creates_a_link_that_is_shown_once_and_stored_as_a_hash(client, campaign):
    manager = make_member(campaign=campaign, role="manager").user
    client.force_login(manager)

    response = client.post(
        reverse("annotators:invitations", kwargs={"slug": campaign.slug}),
        {"role": "reviewer", "max_uses": 3, "expires_in_days": 2, "note": "for the review team"},
    )

    invitation = Invitation.objects.get()
    link = response.context["new_link"]
    token = link.rstrip("/").rsplit("/", 1)[1]
    assert link.startswith("http://testserver/join/")
    assert invitation.token_hash == Invitation.hash_token(token) != token
    assert (invitation.role, invitation.max_uses, invitation.note) == (
        "reviewer",
        3,
        "for the review team",
    )
    assert timedelta(days=1, hours=23) < invitation.expires_at - timezone.now() <= timedelta(days=2)
    listing = client.get(reverse("annotators:invitations", kwargs={"slug": campaign.slug}))
    assert token not in listing.content.decode()
    assert invitation.token_hint in listing.content.decode()


def test_an_invitee_signs_up_and_joins_with_the_invited_role(client, campaign):
    _, token = invitation_create(campaign=campaign, created_by=None, role="annotator")

    page = client.get(join_url(token))
    response = signup(client, token)

    assert "You are invited as <strong>annotator</strong>" in page.content.decode()
    assert response.status_code == 302
    assert response.url == reverse("labeling:campaign", kwargs={"slug": campaign.slug})
    member = Membership.objects.get(user__username="newbie")
    assert (member.campaign, member.role, member.screening) == (campaign, "annotator", "pending")
    assert member.invitation.uses == 1
    # Logged in by the sign-up: the campaign page is theirs.
    assert client.get(response.url).status_code == 200


def test_someone_with_an_account_logs_in_and_joins(client, campaign):
    _, token = invitation_create(campaign=campaign, created_by=None, role="reviewer")
    user = make_user(username="carol", password="pw")

    anonymous = client.get(join_url(token)).content.decode()
    client.force_login(user)
    response = client.post(join_url(token))

    assert f"/login/?next={join_url(token)}" in anonymous
    assert response.status_code == 302
    member = Membership.objects.get(user=user)
    # Reviewers and managers are chosen by a manager: they are not screened.
    assert (member.role, member.screening) == ("reviewer", "passed")


def test_a_single_use_link_works_once(client, campaign):
    _, token = invitation_create(campaign=campaign, created_by=None, max_uses=1)
    signup(client, token, "first")
    client.logout()

    response = signup(client, token, "second")

    assert response.status_code == 410
    assert "used as often as it may be" in response.content.decode()
    assert not get_user_model().objects.filter(username="second").exists()


def test_a_capped_link_works_as_many_times_as_its_cap(campaign):
    _, token = invitation_create(campaign=campaign, created_by=None, max_uses=3)
    for _ in range(3):
        invitation_redeem(token=token, user=make_user())

    with pytest.raises(InvitationRefused) as refused:
        invitation_redeem(token=token, user=make_user())

    assert refused.value.code == "used_up"
    assert Membership.objects.filter(campaign=campaign).count() == 3


def test_an_expired_link_is_refused(client, campaign):
    invitation, token = invitation_create(campaign=campaign, created_by=None)
    Invitation.objects.filter(pk=invitation.pk).update(expires_at=timezone.now())

    page = client.get(join_url(token))
    response = signup(client, token)

    assert page.status_code == response.status_code == 410
    assert "expired" in response.content.decode()
    assert not Membership.objects.exists()


def test_a_wrong_token_is_not_found(client, campaign):
    _, token = invitation_create(campaign=campaign, created_by=None)

    response = client.get(join_url(token[:-1] + ("A" if token[-1] != "A" else "B")))

    assert response.status_code == 404
    assert "not valid" in response.content.decode()
    assert "Algebra" not in response.content.decode()


def test_a_revoked_link_is_refused_but_its_members_stay(client, campaign):
    manager = make_member(campaign=campaign, role="manager").user
    invitation, token = invitation_create(campaign=campaign, created_by=manager, max_uses=5)
    joined = invitation_redeem(token=token, user=make_user())
    client.force_login(manager)

    client.post(
        reverse("annotators:invitation-revoke", kwargs={"slug": campaign.slug, "pk": invitation.pk})
    )
    client.logout()

    assert signup(client, token).status_code == 410
    joined.refresh_from_db()
    assert joined.status == "active"


def test_a_member_following_a_link_again_uses_nothing_and_keeps_their_role(campaign):
    member = make_member(campaign=campaign, role="reviewer")
    invitation, token = invitation_create(campaign=campaign, created_by=None, role="annotator")

    again = invitation_redeem(token=token, user=member.user)

    assert (again.pk, again.role) == (member.pk, "reviewer")
    invitation.refresh_from_db()
    assert invitation.uses == 0


def test_a_removed_member_cannot_come_back_through_a_link(campaign):
    make_member(campaign=campaign, role="manager")
    member = make_member(campaign=campaign)
    membership_update(membership=member, status="removed")
    _, token = invitation_create(campaign=campaign, created_by=None, max_uses=10)

    with pytest.raises(InvitationRefused) as refused:
        invitation_redeem(token=token, user=member.user)

    assert refused.value.code == "removed"


def test_a_sign_up_with_a_taken_username_shows_the_form_again(client, campaign):
    make_user(username="taken")
    _, token = invitation_create(campaign=campaign, created_by=None)

    response = signup(client, token, "taken")

    assert response.status_code == 400
    assert "already exists" in response.content.decode()
    assert Invitation.objects.get().uses == 0
