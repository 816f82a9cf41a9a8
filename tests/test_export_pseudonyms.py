"""Annotators in exports: stable pseudonyms by default, the mapping for the campaign's managers."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from exports.formats import FORMATS, LabelPolicy, write_export
from exports.pseudonyms import annotator_pseudonym
from labeling.models import Membership
from tests.factories import (
    export_name,
    make_campaign,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    return {name: make_user(username=name) for name in ("alice.smith", "bob.jones")}


def labelled_campaign(people, slug):
    campaign = make_campaign(slug=slug)
    for user in people.values():
        make_member(campaign=campaign, user=user)
        solution = make_solution(campaign=campaign, steps=["a", "b"])
        make_labelled(solution=solution, ratings=[1, -1], annotator=user)
    return campaign


def export_text(campaign, tmp_path, fmt, **policy):
    out = tmp_path / f"{campaign.slug}-{fmt}-{len(list(tmp_path.iterdir()))}"
    manifest = write_export(campaign=campaign, fmt=fmt, out=out, policy=LabelPolicy(**policy))
    return "".join(
        (tmp_path / f["name"]).read_bytes().decode("utf-8", "replace") for f in manifest["files"]
    )


def test_no_export_carries_a_username_by_default(people, tmp_path):
    campaign = labelled_campaign(people, "geo")
    for fmt in FORMATS:
        for annotators in ("majority", "each"):
            text = export_text(campaign, tmp_path, fmt, annotators=annotators)
            assert "alice" not in text and "bob" not in text, (fmt, annotators)


def test_pseudonyms_are_stable_across_exports_and_differ_between_people_and_campaigns(
    people, tmp_path, settings
):
    geo = labelled_campaign(people, "geo")
    alg = labelled_campaign(people, "alg")

    def labelers(campaign):
        lines = export_text(campaign, tmp_path, "prm800k").splitlines()
        return sorted(json.loads(line)["labeler"] for line in lines)

    first = labelers(geo)
    assert first == labelers(geo)  # the next export names them the same
    assert first == sorted(export_name(geo, user) for user in people.values())
    assert len(set(first)) == 2
    assert set(first).isdisjoint(labelers(alg))  # two shared data sets do not link a person
    rows = csv.DictReader(io.StringIO(export_text(geo, tmp_path, "csv")))
    assert sorted({r["annotator"] for r in rows}) == first  # the same id in every format

    settings.STEPWISE_PSEUDONYM_SECRET = "another site"
    assert set(labelers(geo)).isdisjoint(first)  # nobody without the secret computes them


def test_usernames_only_when_asked(people, tmp_path):
    campaign = labelled_campaign(people, "geo")
    text = export_text(campaign, tmp_path, "prm800k", annotator_ids="username")
    assert sorted(json.loads(line)["labeler"] for line in text.splitlines()) == [
        "alice.smith",
        "bob.jones",
    ]


def mapping_url(campaign):
    return reverse("exports:annotators", kwargs={"slug": campaign.slug})


def test_a_manager_downloads_who_is_behind_each_pseudonym(client, people, tmp_path):
    campaign = labelled_campaign(people, "geo")
    other = labelled_campaign({"carol": make_user(username="carol")}, "alg")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    response = client.get(mapping_url(campaign))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    mapping = {r["pseudonym"]: r["username"] for r in rows}
    lines = export_text(campaign, tmp_path, "prm800k").splitlines()
    assert {mapping[json.loads(line)["labeler"]] for line in lines} == {
        "alice.smith",
        "bob.jones",
    }
    assert "carol" not in mapping.values()  # nobody of another campaign
    assert manager.username in mapping.values()  # members who labelled nothing too
    assert annotator_pseudonym(campaign_id=other.pk, user_id=people["bob.jones"].pk) not in mapping
    page = client.get(reverse("exports:list", kwargs={"slug": campaign.slug}))
    assert mapping_url(campaign) in page.content.decode()


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.REVIEWER])
def test_annotators_and_reviewers_get_403(client, people, role):
    campaign = labelled_campaign(people, "geo")
    client.force_login(make_member(campaign=campaign, role=role).user)
    assert client.get(mapping_url(campaign)).status_code == 403
    client.force_login(people["alice.smith"])  # an annotator who labelled in it
    assert client.get(mapping_url(campaign)).status_code == 403


def test_another_campaigns_manager_and_outsiders_get_404_and_visitors_the_login(client, people):
    campaign = labelled_campaign(people, "geo")
    elsewhere = make_campaign(slug="alg")
    client.force_login(make_member(campaign=elsewhere, role=Membership.Role.MANAGER).user)
    assert client.get(mapping_url(campaign)).status_code == 404
    client.force_login(make_user())
    assert client.get(mapping_url(campaign)).status_code == 404
    client.logout()
    response = client.get(mapping_url(campaign))
    assert response.status_code == 302 and "/login/" in response["Location"]
