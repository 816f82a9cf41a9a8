"""A failed job's reason, as its page shows it, never carries the server's paths
(common.jobs.job_error_reason): a media folder that cannot be written fails an export with what
went wrong, and the worker's log keeps the path."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse

from exports.models import Export
from exports.services import export_run
from labeling.models import Membership
from tests.factories import make_campaign, make_labelled, make_member, make_solution

pytestmark = pytest.mark.django_db


def test_an_export_into_an_unwritable_media_folder_fails_without_the_server_path(
    settings, tmp_path, client, caplog
):
    media = tmp_path / "srv-media"
    media.mkdir()
    (media / "exports").write_text("a file where the exports folder should be")
    settings.MEDIA_ROOT = media
    campaign = make_campaign()
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, -1])
    export = Export.objects.create(campaign=campaign, format="trl")

    with caplog.at_level(logging.ERROR, logger="common.jobs"), pytest.raises(OSError):
        export_run(export=export)

    export.refresh_from_db()
    assert export.status == "failed"
    assert export.error.startswith(("NotADirectoryError", "FileExistsError", "OSError"))
    assert "the file storage could not be used" in export.error
    assert str(tmp_path) not in export.error
    assert str(media) in caplog.text  # the operator's log has it
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    page = client.get(reverse("exports:list", kwargs={"slug": campaign.slug})).content.decode()
    assert "the file storage could not be used" in page
    assert str(tmp_path) not in page


def test_other_errors_keep_their_message_but_not_the_media_root(settings, tmp_path):
    from common.jobs import job_error_reason

    settings.MEDIA_ROOT = tmp_path / "media"
    error = ValueError(f"bad row in {settings.MEDIA_ROOT}/imports/1/x.jsonl")
    assert job_error_reason(error) == "ValueError: bad row in …/imports/1/x.jsonl"
