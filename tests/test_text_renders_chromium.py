"""In a real Chromium: every list page renders problems, steps and instructions as the labelling
page does (Markdown with math), so no raw ``$...$`` or ``\\frac`` shows outside rendered math."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotators.review.services import review_submit
from labeling.models import Membership
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_problem,
    make_solution,
    make_user,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Formulas all along, so that every excerpt's cut falls near one.
PROBLEM = "Let $\\frac{1}{2} + x_1$ be given and $y = \\sqrt{3}$. " * 8
RAW_MATH = re.compile(r"\$[^\s$][^$]*\$")

# The page's text without what KaTeX rendered (and without form controls).
VISIBLE_TEXT = """() => {
  const copy = document.body.cloneNode(true);
  copy.querySelectorAll(".katex, script, style, textarea, select, input, option")
    .forEach((e) => e.remove());
  return copy.textContent;
}"""


def log_in(page, live_server, client, user) -> None:
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def assert_no_raw_tex(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector(".katex")
    text = page.evaluate(VISIBLE_TEXT)
    assert "\\frac" not in text, url
    assert not RAW_MATH.search(text), (url, RAW_MATH.search(text))


def test_no_raw_tex_on_any_list_page(live_server, page, client):
    campaign = make_campaign(slug="tex", instructions="Check each $\\frac{a}{b}$ carefully.")
    problem = make_problem(campaign=campaign, text=PROBLEM)
    solution = make_solution(campaign=campaign, problem=problem, steps=["$x = 1$", "$y = 2$"])
    make_gold_solution(campaign=campaign, problem=problem, kind="qc", gold=[1, 1])
    alice = make_member(campaign=campaign, user=make_user(username="alice")).user
    bob = make_member(campaign=campaign, user=make_user(username="bob")).user
    mine = make_labelled(solution=solution, ratings=[1, -1], annotator=alice)
    make_labelled(solution=solution, ratings=[1, 1], annotator=bob)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    review_submit(assignment=mine, reviewer=manager, decision="accepted", comment="$\\frac12$ ok")

    def url(name: str) -> str:
        return live_server.url + reverse(name, kwargs={"slug": campaign.slug})

    log_in(page, live_server, client, manager)
    for name in (
        "labeling:browser",
        "annotators:reviews",
        "annotators:gold",
        "annotators:adjudications",
        "labeling:campaign",
    ):
        assert_no_raw_tex(page, url(name))
    page.context.clear_cookies()
    log_in(page, live_server, client, alice)
    for name in ("labeling:my-work", "annotators:my-reviews", "labeling:campaign"):
        assert_no_raw_tex(page, url(name))
