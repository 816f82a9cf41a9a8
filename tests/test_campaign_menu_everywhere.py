"""The campaign menu is on every campaign page a manager opens (the exports page lacked it)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_campaign, make_member

pytestmark = pytest.mark.django_db

PAGES = [
    "labeling:campaign",
    "labeling:campaign-settings",
    "annotators:dashboard",
    "annotators:members",
    "annotators:invitations",
    "annotators:gold",
    "annotators:agreement",
    "annotators:reviews",
    "annotators:my-reviews",
    "imports:list",
    "exports:list",
    "learning:page",
]


@pytest.mark.parametrize("name", PAGES)
def test_the_page_carries_the_campaign_menu(client, name):
    campaign = make_campaign(slug="menu", name="Menu & <b>more</b>")
    client.force_login(make_member(campaign=campaign, role="manager").user)

    response = client.get(reverse(name, kwargs={"slug": campaign.slug}))

    assert response.status_code == 200
    page = response.content.decode()
    assert '<nav class="campaign-nav" aria-label="Campaign">' in page
    assert f'href="{reverse("exports:list", kwargs={"slug": "menu"})}"' in page
    assert f'href="{reverse("labeling:label", kwargs={"slug": "menu"})}"' in page
    assert "Menu &amp; &lt;b&gt;more&lt;/b&gt;" in page  # escaped
