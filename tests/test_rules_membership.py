"""One rule for "who is a member of a campaign", held in every spelling to the same people.

The rule's home is ``MembershipQuerySet.active`` (``Membership.is_active`` for a loaded row,
``CampaignQuerySet.with_member`` and ``MembershipQuerySet.roles_of`` for the lists). The pages'
check (``campaign_for``) and the queue's hot path (``campaign_of_member``, plain SQL that finds
any membership, then ``is_active``) must let in the same people.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from labeling import queue
from labeling.models import Campaign, Membership
from labeling.permissions import (
    LABEL,
    MANAGE,
    campaign_for,
    campaign_of_member,
    campaigns_visible_to,
)
from tests.factories import make_campaign, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db

Status, Role = Membership.Status, Membership.Role


@pytest.fixture
def people():
    """(campaign, {name: user}) for every role and state, an outsider and a member elsewhere."""
    campaign = make_campaign(overlap=9)
    make_solution(campaign=campaign)
    elsewhere = make_campaign()
    users = {}
    for role in Role.values:
        for state in Status.values:
            users[f"{role}, {state}"] = make_member(campaign=campaign, role=role, status=state).user
    users["outsider"] = make_user()
    users["member elsewhere"] = make_member(campaign=elsewhere).user
    users["imported"] = make_member(campaign=campaign, is_imported=True).user
    return campaign, users


def _members(campaign) -> set[int]:
    return set(Membership.objects.active().filter(campaign=campaign).values_list("user", flat=True))


def test_the_rule_is_an_active_membership(people):
    campaign, users = people
    assert _members(campaign) == {users[f"{role}, active"].pk for role in Role.values} | {
        users["imported"].pk
    }


def test_the_python_form_agrees_row_by_row(people):
    campaign, _ = people
    members = _members(campaign)
    for m in Membership.objects.filter(campaign=campaign):
        assert m.is_active == (m.user_id in members), m


def test_the_pages_let_in_members_only(people):
    campaign, users = people
    members = _members(campaign)
    for name, user in users.items():
        if user.pk in members:
            found, membership = campaign_for(user, campaign.slug, roles=LABEL)
            assert (found, membership.user_id) == (campaign, user.pk), name
        else:
            with pytest.raises(Http404):
                campaign_for(user, campaign.slug, roles=LABEL)


def test_a_role_check_applies_to_members_only(people):
    campaign, users = people
    assert campaign_for(users["manager, active"], campaign.slug, roles=MANAGE)[0] == campaign
    with pytest.raises(PermissionDenied):
        campaign_for(users["reviewer, active"], campaign.slug, roles=MANAGE)
    with pytest.raises(Http404):
        campaign_for(users["manager, paused"], campaign.slug, roles=MANAGE)


def test_the_lists_show_members_their_campaigns(people):
    campaign, users = people
    members = _members(campaign)
    for name, user in users.items():
        visible = campaign in campaigns_visible_to(user)
        assert visible == (user.pk in members), name
        assert (campaign.pk in Membership.objects.roles_of(user)) == (user.pk in members), name
        assert Campaign.objects.with_member(user).filter(pk=campaign.pk).exists() == visible


def test_the_queues_plain_sql_path_lets_in_the_same_people(people):
    """The hot path finds any membership (so a paused member hears why: 403) and then serves
    active members only: the same people the pages let in."""
    campaign, users = people
    members = _members(campaign)
    for name, user in users.items():
        try:
            found = campaign_of_member(slug=campaign.slug, user=user)
        except queue.NotAMember:
            assert not Membership.objects.filter(campaign=campaign, user=user).exists(), name
            assert user.pk not in members, name
            continue
        assert found == campaign
        try:
            served = queue.assignment_next(campaign=found, annotator=user) is not None
        except queue.MembershipInactive:
            served = False
        assert served == (user.pk in members), name
