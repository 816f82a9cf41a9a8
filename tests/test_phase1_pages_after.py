"""After a phase 1 submission, the pages that show submitted work render it: My work, the
review page, the data browser's item page (a written step has no rating of its own)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling import queue
from labeling.models import Membership
from tests.factories import make_campaign, make_member, make_solution

pytestmark = pytest.mark.django_db


def test_my_work_review_and_the_item_page_show_a_phase_1_path(client):
    campaign = make_campaign(slug="p1pages", phase1_mode=True)
    make_solution(campaign=campaign, steps=["Let x = 1.", "Then x + 1 = 3."])
    user = make_member(campaign=campaign).user
    assignment = queue.assignment_next(campaign=campaign, annotator=user)
    assignment.campaign = campaign
    view = queue.phase1_open(assignment=assignment)
    queue.candidate_rate(
        assignment=assignment, annotator=user, candidate_id=view.candidates[0].id, rating=1
    )
    queue.candidate_choose(
        assignment=assignment, annotator=user, candidate_id=view.candidates[0].id
    )
    view = queue.phase1_open(assignment=assignment)
    queue.candidate_rate(
        assignment=assignment, annotator=user, candidate_id=view.candidates[0].id, rating=-1
    )
    written = "Then x + 1 = 2, my own step.\n\n# Answer\n\n2"
    queue.step_write(assignment=assignment, annotator=user, position=1, text=written)
    result = queue.assignment_submit(assignment=assignment, annotator=user, submission_key="k")

    client.force_login(user)
    mine = client.get(
        reverse("labeling:my-work-item", kwargs={"slug": campaign.slug, "pk": assignment.pk})
    )
    assert mine.status_code == 200 and "my own step" in mine.content.decode()

    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    item = client.get(
        reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": result.solution_id})
    )
    assert item.status_code == 200 and "my own step" in item.content.decode()
    review = client.get(
        reverse("annotators:review", kwargs={"slug": campaign.slug, "pk": assignment.pk})
    )
    assert review.status_code == 200 and "my own step" in review.content.decode()
