"""Creating and editing campaigns, pausing them, and managing members."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotators.services import ManageError, membership_update
from labeling import queue
from labeling.models import Assignment, Campaign, Membership, Solution
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db

SETTINGS = {
    "name": "Geometry, round 2",
    "slug": "",
    "instructions": "Rate **every** step.",
    "overlap": 3,
    "lease_seconds": 900,
    "stop_at_first_error": "on",
    "qc_rate": 0.1,
    "requires_screening": "on",
    "screening_threshold": 0.8,
    "bad_problem_limit": 2,
    "al_wrong_answer_share": 0.8,
    "al_retrain_every": 500,
    "al_backbone": "bow",
}


def test_anyone_logged_in_creates_a_campaign_and_becomes_its_manager(client):
    user = make_user()
    client.force_login(user)

    response = client.post(reverse("labeling:campaign-create"), SETTINGS)

    campaign = Campaign.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("imports:list", kwargs={"slug": "geometry-round-2"})
    assert (campaign.slug, campaign.overlap, campaign.qc_rate, campaign.created_by) == (
        "geometry-round-2",
        3,
        0.1,
        user,
    )
    assert campaign.requires_screening and campaign.screening_threshold == 0.8
    member = Membership.objects.get()
    assert (member.user, member.role, member.screening) == (user, "manager", "passed")


def test_only_staff_create_campaigns_when_the_site_says_so(client, settings):
    settings.STEPWISE_CAMPAIGN_CREATORS = "staff"
    client.force_login(make_user())
    assert client.get(reverse("labeling:campaign-create")).status_code == 403
    client.force_login(make_user(is_staff=True))
    assert client.get(reverse("labeling:campaign-create")).status_code == 200


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("qc_rate", 1.5, "between 0 and 1"),
        ("screening_threshold", -0.1, "between 0 and 1"),
        ("overlap", 0, "At least one annotator"),
        ("lease_seconds", 10, "at least 60 seconds"),
        ("slug", "new", "reserved"),
    ],
)
def test_settings_are_checked(client, field, value, message):
    client.force_login(make_user())
    response = client.post(reverse("labeling:campaign-create"), SETTINGS | {field: value})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Campaign.objects.exists()


def test_a_taken_slug_is_refused(client):
    make_campaign(slug="geometry-round-2")
    client.force_login(make_user())
    response = client.post(reverse("labeling:campaign-create"), SETTINGS)
    assert "is taken" in response.content.decode()


def test_raising_the_overlap_reopens_labelled_solutions(client):
    campaign = make_campaign(overlap=1)
    manager = make_member(campaign=campaign, role="manager").user
    solution = make_solution(campaign=campaign)
    make_labelled(solution=solution, ratings=[1, 1, 1])
    Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    assert not Solution.objects.get(pk=solution.pk).is_open
    client.force_login(manager)

    response = client.post(
        reverse("labeling:campaign-settings", kwargs={"slug": campaign.slug}),
        SETTINGS | {"name": campaign.name, "overlap": 2},
    )

    assert response.status_code == 302
    assert Solution.objects.get(pk=solution.pk).is_open
    assert Campaign.objects.get(pk=campaign.pk).slug == campaign.slug  # never changes


def test_a_paused_campaign_serves_no_work_until_resumed(client):
    campaign = make_campaign()
    manager = make_member(campaign=campaign, role="manager").user
    annotator = make_member(campaign=campaign).user
    make_solution(campaign=campaign)
    client.force_login(manager)
    pause = reverse("labeling:campaign-pause", kwargs={"slug": campaign.slug})

    client.post(pause, {"paused": "1"})
    campaign.refresh_from_db()
    with pytest.raises(queue.CampaignPaused):
        queue.assignment_next(campaign=campaign, annotator=annotator)
    client.post(pause, {"paused": "0"})
    campaign.refresh_from_db()

    assert queue.assignment_next(campaign=campaign, annotator=annotator) is not None


def test_the_campaign_page_renders_instructions_as_markdown_without_html(client):
    campaign = make_campaign(instructions="Rate **every** step. <script>alert(1)</script>")
    client.force_login(make_member(campaign=campaign).user)

    page = client.get(reverse("labeling:campaign", kwargs={"slug": campaign.slug})).content.decode()

    assert "<strong>every</strong>" in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert reverse("labeling:label", kwargs={"slug": campaign.slug}) in page


@pytest.mark.parametrize(
    ("screening", "score", "text"),
    [
        ("pending", None, "First, a few screening solutions"),
        ("passed", 0.9, "Screening passed with a score of 0.90: you are admitted"),
        ("failed", 0.2, "Screening not passed: your score against the reference ratings is 0.20"),
    ],
)
def test_an_annotator_is_told_their_screening_outcome(client, screening, score, text):
    campaign = make_campaign(requires_screening=True)
    member = make_member(campaign=campaign, screening=screening, screening_score=score)
    client.force_login(member.user)

    page = client.get(reverse("labeling:campaign", kwargs={"slug": campaign.slug})).content.decode()

    assert text in page
    assert ("Start labelling" in page) == (screening != "failed")


def test_pausing_a_member_ends_their_lease_and_their_work(client):
    campaign = make_campaign()
    manager = make_member(campaign=campaign, role="manager").user
    member = make_member(campaign=campaign)
    make_solution(campaign=campaign)
    leased = queue.assignment_next(campaign=campaign, annotator=member.user)
    client.force_login(manager)

    response = client.post(
        reverse("annotators:member", kwargs={"slug": campaign.slug, "pk": member.pk}),
        {"role": "annotator", "status": "paused"},
    )

    assert response.status_code == 302
    assert Assignment.objects.get(pk=leased.pk).status == "expired"
    assert Solution.objects.get(pk=leased.solution_id).assignment_count == 0
    with pytest.raises(queue.MembershipInactive):
        queue.assignment_next(campaign=campaign, annotator=member.user)


def test_a_removed_member_no_longer_sees_the_campaign(client):
    campaign = make_campaign()
    make_member(campaign=campaign, role="manager")
    member = make_member(campaign=campaign)
    membership_update(membership=member, status="removed")
    client.force_login(member.user)

    assert (
        client.get(reverse("labeling:campaign", kwargs={"slug": campaign.slug})).status_code == 404
    )


def test_a_manager_changes_a_role_but_the_last_manager_stays(client):
    campaign = make_campaign()
    manager = make_member(campaign=campaign, role="manager")
    member = make_member(campaign=campaign, screening="pending")
    client.force_login(manager.user)
    url = reverse("annotators:member", kwargs={"slug": campaign.slug, "pk": manager.pk})

    demoted = client.post(url, {"role": "annotator", "status": "active"})
    membership_update(membership=member, role="reviewer")

    assert demoted.status_code == 400
    assert "needs an active manager" in demoted.content.decode()
    member.refresh_from_db()
    assert (member.role, member.screening) == ("reviewer", "passed")
    with pytest.raises(ManageError):
        membership_update(membership=manager, status="removed")
    membership_update(membership=member, role="manager")
    assert membership_update(membership=manager, status="removed").status == "removed"


def test_the_members_page_lists_and_sorts_members(client):
    campaign = make_campaign()
    manager = make_member(campaign=campaign, role="manager", user=make_user(username="zed"))
    make_member(campaign=campaign, user=make_user(username="amy"))
    make_member(campaign=campaign, user=make_user(username="Bob"))
    client.force_login(manager.user)
    url = reverse("annotators:members", kwargs={"slug": campaign.slug})

    by_name = client.get(url).context["members"].rows
    by_name_desc = client.get(url + "?sort=-username").context["members"].rows

    assert [r["username"] for r in by_name] == ["amy", "Bob", "zed"]
    assert [r["username"] for r in by_name_desc] == ["zed", "Bob", "amy"]


@pytest.mark.parametrize(
    ("strategy", "said", "not_said"),
    [
        ("uniform", "on: uniform (random order, the control)", "convincing wrong"),
        ("auto", "on: auto (tries the others", "convincing wrong answers at the head"),
        ("convincing-wrong", "80% convincing wrong answers at the head of the queue", "(uniform)"),
    ],
)
def test_the_active_learning_line_says_the_strategy_really_chosen(client, strategy, said, not_said):
    from labeling.models import Membership
    from tests.factories import make_campaign, make_member

    campaign = make_campaign(
        slug=f"al-{strategy}", active_learning=True, al_strategy=strategy, al_wrong_answer_share=0.8
    )
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    body = client.get(reverse("labeling:campaign", kwargs={"slug": campaign.slug})).content.decode()
    line = body[body.index('id="al-summary"') :].split("</li>")[0]
    assert said in line and not_said not in line
