"""In a real Chromium, under the Content Security Policy: the main pages report no violation,
and what depends on scripts and styles still works (htmx swaps, KaTeX, the API docs)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotators.models import CampaignSnapshot
from annotators.snapshots import snapshot_run
from labeling.models import Membership
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user
from tests.test_security import main_pages

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Playwright's init scripts run before the page's own and are not subject to its policy.
LISTEN = """
window.__csp = [];
window.__cspSeen = new Promise((resolve) => {
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sourceFile || ''));
    resolve(true);
  });
});
"""


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="csp", instructions="Rate **every** step, e.g. $x^2$.")
    for i in range(3):
        make_solution(campaign=campaign, steps=[f"Let $x = {i}$.", r"So \(x^2 \ge 0\)."])
    labelled = make_solution(campaign=campaign, steps=["a", "b"])
    make_labelled(solution=labelled, ratings=[1, -1], annotator=make_user())
    CampaignSnapshot.objects.create(campaign=campaign)
    snapshot_run(snapshot=CampaignSnapshot.objects.get(campaign=campaign))
    return campaign


def logged_in(page, live_server, client, user):
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.add_init_script(LISTEN)
    console: list[str] = []
    page.on(
        "console",
        lambda msg: console.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    page.csp_console = console
    return page


def assert_no_violation(page, url: str) -> None:
    violations = page.evaluate("window.__csp")
    assert violations == [], (url, violations)
    assert page.csp_console == [], (url, page.csp_console)


def test_the_manager_pages_report_no_violation(page, live_server, client, campaign):
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    page = logged_in(page, live_server, client, manager)
    # The labelling page and the API docs have their own tests below.
    pages = [p for p in main_pages(campaign.slug) if not p.endswith(("/label/", "/api/docs/"))]
    for path in pages:
        page.goto(live_server.url + path)
        page.wait_for_load_state("load")
        assert_no_violation(page, path)
    # The profile page's form works under the policy.
    page.goto(live_server.url + "/profile/")
    page.fill("#token-name", "browser")
    page.click("text=Create token")
    page.wait_for_selector("#new-token-key")
    assert page.input_value("#new-token-key").startswith("sw_")
    assert_no_violation(page, "/profile/ (after creating a token)")


def test_the_labelling_page_works_under_the_policy(page, live_server, client, campaign):
    annotator = make_member(campaign=campaign).user
    page = logged_in(page, live_server, client, annotator)
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    page.wait_for_selector("#workspace")
    assert page.locator("#steps .katex").count() >= 1  # KaTeX rendered under style-src 'self'
    first = page.get_attribute("#steps", "data-assignment")
    page.keyboard.press("3")
    page.wait_for_selector('#steps[data-current="1"]')  # an htmx swap
    page.keyboard.press("3")
    page.wait_for_selector('#steps[data-current="end"]')
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#steps:not([data-assignment="{first}"])')
    assert page.locator("#steps .katex").count() >= 1
    assert_no_violation(page, "label page")


def test_a_resized_text_box_swapped_again_breaks_no_policy(page, live_server, client, campaign):
    """A box the person resized carries a style attribute; htmx must not copy it onto the box
    that replaces it (setting a style attribute is inline style: phase 1's write-your-own and
    the correction box are swapped with the steps)."""
    annotator = make_member(campaign=campaign).user
    page = logged_in(page, live_server, client, annotator)
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": campaign.slug}))
    page.wait_for_selector("[data-open-help]:not([hidden])")
    page.keyboard.press("1")
    page.wait_for_selector("#correction")
    page.evaluate("document.getElementById('correction').style.height = '12rem'")  # resized
    page.keyboard.press("f")  # flags the negative step: the steps, the box with them, swapped
    page.wait_for_selector("#step-0 .badge.flag")
    assert_no_violation(page, "label page, resized correction box")


def test_the_api_docs_render_under_the_policy(page, live_server, client, campaign):
    page = logged_in(page, live_server, client, make_user())
    page.goto(live_server.url + "/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
    assert "Stepwise API" in page.inner_text(".swagger-ui .info .title")
    page.wait_for_selector(".opblock-tag", timeout=30_000)
    assert_no_violation(page, "/api/docs/")


def test_an_inline_script_is_blocked_and_reported(page, live_server, client, campaign):
    """The listener above does hear violations: an injected inline script is blocked."""
    page = logged_in(page, live_server, client, make_user())
    page.goto(live_server.url + "/profile/")
    page.evaluate(
        """() => {
          const s = document.createElement('script');
          s.textContent = 'window.__ran = true';
          document.body.appendChild(s);
        }"""
    )
    # Awaits the listener's promise (wait_for_function would need eval, which the CSP forbids).
    assert page.evaluate("window.__cspSeen") is True
    assert page.evaluate("window.__ran") is None
    assert any("script-src" in v for v in page.evaluate("window.__csp"))
