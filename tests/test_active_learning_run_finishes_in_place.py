"""When an active-learning run ends, its status poll (the one job status view) reloads the page,
which shows the new active model in the settings card and the model list, and the run's outcome
where the "waiting" notice was; polling stops."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from labeling.models import Membership
from learning.models import ActiveLearningRun, PRMModel
from tests.factories import make_campaign, make_member

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def campaign():
    return make_campaign(slug="al-live", active_learning=True)


@pytest.fixture
def manager(client, campaign):
    user = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(user)
    return user


def page(campaign):
    return reverse("learning:page", kwargs={"slug": campaign.slug})


def status_url(run, state: str) -> str:
    url = reverse(
        "labeling:job-status",
        kwargs={"slug": run.campaign.slug, "kind": "active_learning", "pk": run.pk},
    )
    return f"{url}?state={state}"


def text(body: str) -> str:
    """What a reader sees: the page's words, tags and runs of spaces gone."""
    return " ".join(re.sub(r"<[^>]+>", " ", body).split()).replace(" .", ".")


def test_retrain_says_queued_in_the_page_not_in_a_message_that_stays(client, campaign, manager):
    response = client.post(reverse("learning:retrain", kwargs={"slug": campaign.slug}), follow=True)

    body = response.content.decode()
    run = ActiveLearningRun.objects.get()
    # No worker consumes the `learning` queue here, and the page says so in the same sentence.
    words = text(body)
    assert f"Run {run.pk}: waiting for a worker — No worker consumes the queue “learning”" in words
    assert "-Q learning ). This page updates when it is done." in words
    assert f'hx-get="{status_url(run, "pending")}" hx-trigger="every 2s"' in body
    assert 'class="messages"' not in body
    assert re.search(r"<button type=\"submit\" disabled[^>]*>Retrain now</button>", body)


def test_the_poll_after_the_run_reloads_the_page_with_the_new_active_model_and_the_outcome(
    client, campaign, manager
):
    PRMModel.objects.create(campaign=campaign, version=1, path="a", is_active=True)
    run = ActiveLearningRun.objects.create(campaign=campaign, status="queued")
    before = client.get(page(campaign)).content.decode()
    assert f"Run {run.pk}: waiting for a worker" in text(before)
    assert "v1, trained on" in before
    polled = client.get(status_url(run, "pending"), **HX)
    assert polled.status_code == 200 and "HX-Refresh" not in polled.headers

    PRMModel.objects.filter(version=1).update(is_active=False)
    model = PRMModel.objects.create(campaign=campaign, version=2, path="b", is_active=True)
    ActiveLearningRun.objects.filter(pk=run.pk).update(
        status="succeeded", model=model, finished_at=timezone.now()
    )
    assert client.get(status_url(run, "pending"), **HX).headers["HX-Refresh"] == "true"
    after = client.get(page(campaign)).content.decode()

    assert "waiting for a worker" not in after
    assert re.search(rf"Run {run.pk}: done at [0-9: -]+: v2 is the active model\.", text(after))
    settings_row = re.search(r'<tr id="al-active-model">.*?</tr>', after, re.S).group(0)
    assert "v2, trained on" in settings_row
    assert "hx-trigger" not in after  # polling stops


def test_a_failed_run_says_the_active_model_is_unchanged(client, campaign, manager):
    ActiveLearningRun.objects.create(campaign=campaign, status="failed", error="Boom <script>")

    body = client.get(page(campaign)).content.decode()

    assert "failed" in body and "the active model is unchanged" in body
    assert "Boom &lt;script&gt;" in body
