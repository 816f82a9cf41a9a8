"""The active-learning page in a real Chromium (issue 25): at 390 px (a phone) and 1280 px, with
one PRM version (a versions chart of one point), a best-of-N curve and a run, the page never
scrolls sideways (the runs table scrolls inside its own box); the settings form hides a setting
the strategy chosen in its select does not use, without a reload. Screenshots go to
/tmp/alpage-*.png for a person to look at."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Membership
from learning.models import ActiveLearningRun, PRMModel
from tests.factories import make_campaign, make_member, make_solution, make_user
from tests.test_al_page_at_a_glance import CURVE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = "() => document.documentElement.scrollWidth"


def log_in(page, live_server, client, user) -> None:
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


@pytest.fixture
def campaign_page(live_server, page, client):
    campaign = make_campaign(slug="algebra-and-geometry", al_strategy="convincing-wrong")
    for correct in (False, True):
        make_solution(campaign=campaign, answer_is_correct=correct, prm_score=0.5)
    model = PRMModel.objects.create(
        campaign=campaign,
        version=1,
        path="prm/algebra-and-geometry/v0001",
        is_active=True,
        training_labels=1234,
        metrics={"auroc": 0.64, "auroc_ci95": [0.58, 0.7], "first_error_f1": 0.0, "split": "test"},
    )
    ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        model=model,
        training_labels=1234,
        strategy="convincing-wrong",
        metrics=model.metrics,
        best_of_n=CURVE | {"problems": 147, "solutions": 1024, "most": 8, "data": "graded.jsonl"},
        timings={"export": 0.4, "train": 12.5, "evaluate": 1.2, "bestofn": 3.3, "total": 18.0},
        queue_head={"size": 2, "wrong": 1},
    )
    manager = make_member(
        campaign=campaign, role=Membership.Role.MANAGER, user=make_user(username="the-manager")
    ).user
    log_in(page, live_server, client, manager)
    return campaign


@pytest.mark.parametrize("width", [390, 1280])
def test_the_page_fits_the_screen_with_one_version_and_a_run(
    live_server, page, campaign_page, width
):
    page.set_viewport_size({"width": width, "height": 844})
    url = reverse("learning:page", kwargs={"slug": campaign_page.slug})
    assert page.goto(live_server.url + url).status == 200
    assert page.evaluate(OVERFLOW) <= width
    # The one-point versions chart and the legend are on the page, the legend under the plot.
    assert page.locator("#best-of-n-legend li").count() == 4
    chart = page.locator("figure.best-of-n svg.chart").bounding_box()
    legend = page.locator("#best-of-n-legend").bounding_box()
    assert chart and legend and legend["y"] >= chart["y"] + chart["height"]
    assert chart["x"] + chart["width"] <= width
    # The runs table scrolls inside its wrapper, the wrapper fits.
    wrapper = page.locator(".table-scroll:has(tr[id^='run-'])")
    box = wrapper.bounding_box()
    assert box and box["x"] + box["width"] <= width
    page.screenshot(path=f"/tmp/alpage-{width}.png", full_page=True)
    for part in ("al-bestofn", "al-models", "al-runs"):
        page.locator(f"section[aria-labelledby={part}]").screenshot(
            path=f"/tmp/alpage-{width}-{part}.png"
        )


def test_the_settings_form_follows_the_strategy_select(live_server, page, campaign_page):
    page.set_viewport_size({"width": 390, "height": 844})
    url = reverse("labeling:campaign-settings", kwargs={"slug": campaign_page.slug})
    page.goto(live_server.url + url)
    share = page.locator("#id_al_wrong_answer_share")
    control = page.locator("#id_al_control_share")
    assert share.is_visible() and control.is_visible()
    page.select_option("#id_al_strategy", "uniform")
    assert share.is_hidden() and control.is_hidden()
    page.select_option("#id_al_strategy", "uncertainty")
    assert share.is_hidden() and control.is_visible()
    assert page.evaluate(OVERFLOW) <= 390
