"""In a real browser, the export list follows a running export and offers its files when done."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from exports.models import Export
from exports.services import export_run
from labeling.models import Membership
from tests.factories import make_campaign, make_labelled, make_member, make_solution

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def manager_page(live_server, page, client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = make_campaign(slug="browser")
    make_labelled(solution=make_solution(campaign=campaign, steps=["a", "b"]), ratings=[1, -1])
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return campaign, page


def test_the_list_polls_a_running_export_until_its_download_link_appears(live_server, manager_page):
    campaign, page = manager_page
    # No worker here: the test plays its part.
    export = Export.objects.create(campaign=campaign, format="trl", status="running", progress=0.25)

    page.goto(live_server.url + reverse("exports:list", kwargs={"slug": campaign.slug}))
    row = page.locator(f"#job-exports-{export.pk}")
    assert row.locator("progress").get_attribute("value") == "0.250"

    Export.objects.filter(pk=export.pk).update(progress=0.75)
    # Not wait_for_function: its polling evaluates a string, which the CSP forbids (no eval).
    expect(page.locator(f"#job-exports-{export.pk} progress")).to_have_attribute("value", "0.750")
    export_run(export=Export.objects.get(pk=export.pk))
    # The download is named by campaign, format and export number (and a policy other than the
    # default), so two exports of one format never share a name.
    name = f"browser-trl-export{export.pk}.jsonl"
    link = row.get_by_role("link", name="browser-trl.jsonl")
    link.wait_for()
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == name
    assert row.locator("progress").count() == 0


@pytest.fixture
def eager_tasks():
    """Tasks run where they are sent (here the server's thread) instead of in the broker."""
    from stepwise.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def test_the_form_starts_an_export(live_server, manager_page, eager_tasks):
    campaign, page = manager_page
    page.goto(live_server.url + reverse("exports:list", kwargs={"slug": campaign.slug}))
    page.select_option("select[name=format]", "processbench")
    page.uncheck("input[name=alternatives]")
    page.get_by_role("button", name="Start export").click()
    page.wait_for_selector("table.exports")
    export = Export.objects.get()
    assert (export.format, export.policy["alternatives"]) == ("processbench", False)
    assert export.status == Export.Status.DONE
    page.reload()
    assert page.get_by_role("link", name="browser-processbench.jsonl").is_visible()
