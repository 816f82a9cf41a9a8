"""Internal ids a page shows have words (issue 27): finish reasons, roles, sample keys."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling import queue
from labeling.models import Assignment
from machines.models import GenerationJob
from tests.factories import make_campaign, make_labelled, make_member, make_solution

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return " ".join(response.content.decode().split())


def test_my_work_says_finish_reasons_in_words(client):
    campaign = make_campaign(slug="words")
    member = make_member(campaign=campaign)
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    work = make_labelled(solution=solution, ratings=[1, -1], annotator=member.user)
    client.force_login(member.user)
    listed = text(client.get(reverse("labeling:my-work", kwargs={"slug": campaign.slug})))
    assert "found an error" in listed and "found_error" not in listed
    item = reverse("labeling:my-work-item", kwargs={"slug": campaign.slug, "pk": work.pk})
    shown = text(client.get(item))
    assert "finished: found an error." in shown and "found_error" not in shown


def test_the_campaign_page_says_the_role_in_words(client):
    campaign = make_campaign(slug="role")
    member = make_member(campaign=campaign)
    client.force_login(member.user)
    page = text(client.get(reverse("labeling:campaign", kwargs={"slug": campaign.slug})))
    assert "Your role here: <strong>annotator</strong>" in page
    assert "You are a annotator" not in page


def test_a_refused_submission_names_the_buttons_not_the_values():
    campaign = make_campaign(slug="refused")
    member = make_member(campaign=campaign)
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = queue.assignment_next(campaign=campaign, annotator=member.user)
    with pytest.raises(queue.LabelsInvalid) as refused:
        queue.assignment_submit(assignment=assignment, annotator=member.user, submission_key="k")
    assert "give up or report a bad problem" in refused.value.detail
    assert "give_up" not in refused.value.detail
    assert Assignment.objects.get().status == "leased"


def test_generation_errors_name_the_problem_and_sample_in_words():
    job = GenerationJob(
        errors=[
            {"key": "g1:p169:s0", "message": "request failed"},
            {"key": "", "message": "timeout"},
        ]
    )
    assert job.errors_shown == [
        {"where": "problem 169, sample 1", "message": "request failed"},
        {"where": "", "message": "timeout"},
    ]


def test_answer_markers_are_text_and_excerpts_never_cut_a_formula():
    from labeling.templatetags.labeling_tags import excerpt, render_markdown_math

    assert "<h" not in render_markdown_math("# Answer\n\n5")
    assert "<h" not in render_markdown_math("60-20=40\n#### 40")
    assert "#### 40" in render_markdown_math("#### 40")
    text = "Let $\\frac{1}{2} + x$ be given."
    assert excerpt(text, 8) == "Let\u2026"  # the cut at 8 falls inside the formula
    assert excerpt(text, 100) == text


def test_the_review_pages_and_the_item_page_say_finish_reasons_in_words(client):
    campaign = make_campaign(slug="review-words")
    manager = make_member(campaign=campaign, role="manager").user
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    work = make_labelled(solution=solution, ratings=[1, -1])
    client.force_login(manager)
    for url in (
        reverse("annotators:reviews", kwargs={"slug": campaign.slug}),
        reverse("annotators:review", kwargs={"slug": campaign.slug, "pk": work.pk}),
        reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": solution.pk}),
    ):
        shown = text(client.get(url))
        assert "found an error" in shown and "found_error" not in shown, url
