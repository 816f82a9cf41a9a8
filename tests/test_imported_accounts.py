"""Accounts an import made for the labelers of its file (PRM800K labeler ids): marked as imported,
not active annotators, never waiting for screening, left out of member lists, review filters and
charts unless ``?show_imported=1``, and shown by a short id."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.urls import reverse

from annotators.models import CampaignSnapshot
from annotators.snapshots import snapshot_run
from imports.pipeline import import_file
from labeling.models import Membership, Solution
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db

PHASE2 = FIXTURES / "prm800k_raw_samples" / "phase2_train_examples.jsonl"
LABELER = "cc88bf76-df08-4041-be67-3464279cb3b1"  # a labeler id in the phase 2 sample


@pytest.fixture
def campaign():
    return make_campaign(slug="imported", overlap=2, requires_screening=True)


@pytest.fixture
def manager(campaign, client):
    user = make_member(campaign=campaign, role="manager", user=make_user(username="boss")).user
    client.force_login(user)
    return user


def imported_member(campaign, name: str) -> Membership:
    """An account as the importer makes one: unusable password, annotator, marked."""
    user = get_user_model().objects.create(username=name, password=make_password(None))
    return Membership.objects.create(user=user, campaign=campaign, is_imported=True)


def with_work(campaign):
    """A real annotator and an imported account, both with submitted work; fresh figures."""
    ann = make_member(campaign=campaign, user=make_user(username="ann")).user
    ghost = imported_member(campaign, LABELER).user
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    make_labelled(solution=solution, ratings=[1, 1], annotator=ann)
    make_labelled(solution=solution, ratings=[1, 0], annotator=ghost)
    snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    return ann, ghost


def test_the_importer_marks_the_accounts_it_makes(campaign):
    real = make_member(campaign=campaign, user=make_user(username="real")).user

    import_file(PHASE2, campaign=campaign, fmt="prm800k", grade=False)

    member = Membership.objects.get(campaign=campaign, user__username=LABELER)
    assert member.is_imported
    assert member.display_name == "imported cc88bf76"
    assert not Membership.objects.get(user=real).is_imported


def test_the_migration_marks_existing_imported_accounts_and_nobody_else(campaign):
    ghost = get_user_model().objects.create(username=LABELER, password=make_password(None))
    Membership.objects.create(user=ghost, campaign=campaign)
    person = make_member(campaign=campaign, user=make_user(username="person"))
    api_only = get_user_model().objects.create(
        username="script", password=make_password(None), is_staff=True
    )
    staff = Membership.objects.create(user=api_only, campaign=campaign)
    migration = importlib.import_module("labeling.migrations.0006_membership_is_imported")

    migration.mark_imported(apps, None)

    assert Membership.objects.get(user=ghost).is_imported
    assert not Membership.objects.get(pk=person.pk).is_imported
    assert not Membership.objects.get(pk=staff.pk).is_imported


def test_they_are_not_active_annotators_nor_waiting_for_screening(campaign):
    with_work(campaign)

    data = CampaignSnapshot.objects.get(campaign=campaign).data

    assert data["totals"]["annotators"] == 1
    assert data["totals"]["imported_annotators"] == 1
    assert data["members"]["screening"] == {"pending": 1}  # ann only
    assert data["members"]["imported"] == 1


def test_the_member_list_hides_them_unless_asked(client, campaign, manager):
    with_work(campaign)
    url = reverse("annotators:members", kwargs={"slug": campaign.slug})

    hidden = client.get(url).content.decode()
    shown = client.get(url, {"show_imported": "1"}).content.decode()

    assert "ann" in hidden and LABELER[:8] not in hidden
    assert "1 account made by imports" in hidden and "show_imported=1" in hidden
    assert "imported cc88bf76" in shown and LABELER not in shown
    assert "not screened (imported)" in shown


def test_the_review_filter_offers_them_only_when_asked(client, campaign, manager):
    _, ghost = with_work(campaign)
    url = reverse("annotators:reviews", kwargs={"slug": campaign.slug})

    hidden = client.get(url).content.decode()
    shown = client.get(url, {"show_imported": "1"}).content.decode()

    assert f'<option value="{ghost.pk}"' not in hidden
    assert f'<option value="{ghost.pk}">imported cc88bf76</option>' in shown
    assert 'name="show_imported" value="1"' in shown  # the filter form keeps the switch
    assert LABELER not in hidden  # the queue's rows show the short id too


def test_the_dashboard_charts_leave_them_out_unless_asked(client, campaign, manager):
    with_work(campaign)
    url = reverse("annotators:dashboard", kwargs={"slug": campaign.slug})

    hidden = client.get(url).content.decode()
    shown = client.get(url, {"show_imported": "1"}).content.decode()

    assert "imported cc88bf76" not in hidden
    assert "(and 1 imported account)" in hidden
    assert "imported cc88bf76" in shown


def test_the_agreement_page_leaves_them_out_unless_asked(client, campaign, manager):
    with_work(campaign)
    url = reverse("annotators:agreement", kwargs={"slug": campaign.slug})

    hidden = client.get(url).content.decode()
    shown = client.get(url, {"show_imported": "1"}).content.decode()

    assert "imported cc88bf76" not in hidden
    assert "imported cc88bf76" in shown


def test_the_data_browser_names_them_by_a_short_id(client, campaign, manager):
    with_work(campaign)
    page = client.get(reverse("labeling:browser", kwargs={"slug": campaign.slug})).content.decode()
    assert LABELER not in page
    assert "imported cc88bf76" in page
    assert page.index(">ann<") < page.index("imported cc88bf76")  # people first


def test_the_item_page_names_them_by_a_short_id(client, campaign, manager):
    with_work(campaign)
    solution = Solution.objects.get(campaign=campaign)
    url = reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": solution.pk})
    page = client.get(url).content.decode()
    assert LABELER not in page  # neither in the ratings' columns nor in the history
    assert "imported cc88bf76" in page
    assert ">ann<" in page
