"""In a real Chromium: axe-core (WCAG 2.1 A and AA rules) over the pages people work on, in the
light and dark colour schemes and at a phone's width, finds no violation.

The pages: the labelling page in its states (a step to rate, a −1 with its correction box, every
step rated, rejected work shown, failed screening, nothing left), Home, My work and the amend
form, the import form, the data browser with filter chips and an item page, the active-learning
page with runs and models, and the campaign pages. axe is vendored in ``tests/vendor/axe-core``
(MPL-2.0); it is added to each page by the browser (the page's own policy is bypassed for it
alone: the pages' own scripts are tested under the policy in test_csp_chromium.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from annotators.models import CampaignSnapshot
from annotators.review.services import review_submit
from annotators.snapshots import snapshot_run
from labeling import queue
from labeling.models import Membership, StepLabel
from learning.models import ActiveLearningRun, PRMModel
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_problem,
    make_solution,
    make_user,
    submit_ratings,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
RUN = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: tags}});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, targets: v.nodes.map(n => n.target.join(" ")).slice(0, 5),
  }));
}"""
MODES = {
    "light": {"viewport": {"width": 1280, "height": 900}, "color_scheme": "light"},
    "dark": {"viewport": {"width": 1280, "height": 900}, "color_scheme": "dark"},
    "phone": {"viewport": {"width": 390, "height": 844}, "color_scheme": "light"},
}
LONG = "$$" + " + ".join(f"x_{{{i}}}" for i in range(1, 120)) + "$$"


@pytest.fixture
def world():
    """A campaign with work of every kind in it, its manager and two annotators."""
    campaign = make_campaign(
        slug="a11y", name="Accessible campaign", instructions="Rate **every** step.",
        active_learning=True, al_strategy="uncertainty", overlap=2,
    )  # fmt: skip
    problem = make_problem(campaign=campaign, text=f"Show that {LONG}")
    for i in range(4):
        make_solution(campaign=campaign, problem=problem, steps=[f"We have {LONG}", "b", f"c {i}"])
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1])
    manager = make_member(
        campaign=campaign, role=Membership.Role.MANAGER, user=make_user(username="manager")
    ).user
    ann = make_member(campaign=campaign, user=make_user(username="ann")).user
    bob = make_member(campaign=campaign, user=make_user(username="bob")).user
    reviewer = make_member(campaign=campaign, role="reviewer", user=make_user(username="rev")).user
    # Ann's work: one rejected (shown on her labelling page), one she may amend.
    for decision in ("rejected", None):
        assignment = queue.assignment_next(campaign=campaign, annotator=ann)
        submit_ratings(assignment=assignment, annotator=ann)
        assignment.refresh_from_db()
        if decision:
            review_submit(
                assignment=assignment, reviewer=reviewer, decision=decision, comment="Look at $x$."
            )
    amendable = assignment
    labelled = make_solution(campaign=campaign, steps=["x", "y"], answer="1")
    make_labelled(solution=labelled, ratings=[1, -1], annotator=bob)
    make_labelled(solution=labelled, ratings=[1, 1], annotator=make_user())
    models = [
        PRMModel.objects.create(
            campaign=campaign,
            version=v,
            path=f"p/{v}",
            is_active=v == 2,
            training_labels=100 * v,
            metrics={"auroc": 0.6 + v / 100, "auroc_ci95": [0.5, 0.7], "split": "test"},
        )
        for v in (1, 2)
    ]
    for n in range(3):
        ActiveLearningRun.objects.create(
            campaign=campaign, status="succeeded", model=models[1], training_labels=200,
            metrics=models[1].metrics, queue_head={"size": 3, "wrong": 1},
            timings={"export": 0.5, "train": 3.25, "score": 1.5, "order": 0.2, "total": 5.5 + n},
        )  # fmt: skip
    snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    # Someone who failed another campaign's screening.
    screened = make_campaign(slug="screened", name="Screened", requires_screening=True)
    make_solution(campaign=screened)
    failed = make_member(campaign=screened, user=make_user(username="failed"))
    Membership.objects.filter(pk=failed.pk).update(screening="failed", screening_score=-0.12)
    empty = make_campaign(slug="empty", name="Nothing left")
    make_member(campaign=empty, user=ann)
    return {
        "campaign": campaign, "manager": manager, "ann": ann, "bob": bob,
        "failed": failed.user, "amendable": amendable, "labelled": labelled,
    }  # fmt: skip


def session_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def scan(page, name: str, mode: str, found: dict) -> None:
    # The steps fade while a request is out (stepwise.css): measure contrast once they are back.
    if page.locator("#steps").count():
        page.wait_for_selector("#workspace:not(.htmx-request)")
        page.wait_for_function(
            "() => getComputedStyle(document.getElementById('steps')).opacity === '1'"
        )
    page.add_script_tag(path=str(AXE))
    for violation in page.evaluate(RUN, TAGS):
        found.setdefault(f"{name} ({mode})", []).append(violation)


def url(name: str, **kwargs) -> str:
    return reverse(name, kwargs=kwargs)


def test_axe_finds_no_violation_light_dark_and_phone(live_server, browser, world):
    slug = world["campaign"].slug
    manager_pages = {
        "home": url("home"),
        "campaign": url("labeling:campaign", slug=slug),
        "settings": url("labeling:campaign-settings", slug=slug),
        "members": url("annotators:members", slug=slug),
        "dashboard": url("annotators:dashboard", slug=slug),
        "imports": url("imports:list", slug=slug),
        "data browser, filter chips": url("labeling:browser", slug=slug)
        + "?answer=right&kind=regular&negative=true&q=b",
        "item page": url("labeling:browser-item", slug=slug, pk=world["labelled"].pk),
        "active learning": url("learning:page", slug=slug),
    }
    annotator_pages = {
        "home (annotator)": url("home"),
        "my work": url("labeling:my-work", slug=slug),
        "my work, amend form": url("labeling:my-work-item", slug=slug, pk=world["amendable"].pk),
        "labelling, nothing left": url("labeling:label", slug="empty"),
    }
    found: dict[str, list] = {}
    scanned = 0
    for mode, options in MODES.items():
        context = browser.new_context(bypass_csp=True, **options)
        context.add_cookies(
            [{"name": "sessionid", "value": session_of(world["manager"]), "url": live_server.url}]
        )
        page = context.new_page()
        for name, path in manager_pages.items():
            page.goto(live_server.url + path)
            page.wait_for_load_state("load")
            if name == "item page":
                page.wait_for_selector("#steps-table")
            scan(page, name, mode, found)
            scanned += 1
        context.clear_cookies()
        context.add_cookies(
            [{"name": "sessionid", "value": session_of(world["ann"]), "url": live_server.url}]
        )
        for name, path in annotator_pages.items():
            page.goto(live_server.url + path)
            page.wait_for_load_state("load")
            scan(page, name, mode, found)
            scanned += 1
        # The labelling page in its states (the rejection above it in each), from no rating.
        StepLabel.objects.filter(assignment__status="leased").delete()
        page.goto(live_server.url + url("labeling:label", slug=slug))
        page.wait_for_selector("[data-open-help]:not([hidden])")
        page.wait_for_selector("#steps .katex")
        scan(page, "labelling, a step to rate, a rejection", mode, found)
        page.keyboard.press("3")
        page.wait_for_selector('#steps[data-current="1"]')
        page.keyboard.press("1")
        page.wait_for_selector("#correction")
        scan(page, "labelling, a −1 and its correction box", mode, found)
        page.keyboard.press("u")
        page.wait_for_selector('#steps[data-current="1"]')
        for key, then in (("3", 2), ("3", "end")):
            page.keyboard.press(key)
            page.wait_for_selector(f'#steps[data-current="{then}"]')
        scan(page, "labelling, every step rated", mode, found)
        page.keyboard.press("?")
        scan(page, "labelling, the keys' help", mode, found)
        page.keyboard.press("Escape")
        scanned += 4
        context.clear_cookies()
        context.add_cookies(
            [{"name": "sessionid", "value": session_of(world["failed"]), "url": live_server.url}]
        )
        failed_pages = {
            "home, failed screening": url("home"),
            "labelling, failed screening": url("labeling:label", slug="screened"),
        }
        for name, path in failed_pages.items():
            page.goto(live_server.url + path)
            page.wait_for_load_state("load")
            scan(page, name, mode, found)
            scanned += 1
        context.close()
    assert scanned == 3 * 19
    assert found == {}
