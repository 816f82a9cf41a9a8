from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from labeling.models import Membership
from labeling.permissions import MANAGE, campaign_for, campaigns_visible_to
from tests.factories import make_campaign, make_member, make_user

pytestmark = pytest.mark.django_db


def test_an_outsider_is_told_the_campaign_does_not_exist():
    campaign = make_campaign()
    with pytest.raises(Http404):
        campaign_for(make_user(), campaign.slug)


def test_an_annotator_may_label_but_not_manage():
    campaign = make_campaign()
    member = make_member(campaign=campaign)
    assert campaign_for(member.user, campaign.slug) == (campaign, member)
    with pytest.raises(PermissionDenied):
        campaign_for(member.user, campaign.slug, roles=MANAGE)


def test_a_removed_member_is_an_outsider():
    campaign = make_campaign()
    member = make_member(campaign=campaign, role="manager", status=Membership.Status.REMOVED)
    with pytest.raises(Http404):
        campaign_for(member.user, campaign.slug, roles=MANAGE)
    assert list(campaigns_visible_to(member.user)) == []


def test_a_site_admin_sees_every_campaign():
    campaign = make_campaign()
    admin = make_user(is_superuser=True)
    assert campaign_for(admin, campaign.slug, roles=MANAGE) == (campaign, None)
    assert list(campaigns_visible_to(admin)) == [campaign]
