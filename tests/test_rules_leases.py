"""One rule for "this assignment's lease is live", held in every spelling to the same rows.

The rule's home is ``Assignment`` (``live_lease_q``, ``AssignmentQuerySet.live_leases``, the
Python ``lease_is_live``, and ``live_lease_sql`` for the queue's raw statements). A dataset with
every edge case (live, expired, expiring at the very instant, a missing expiry, and leases
released by submit, skip, reclaim, rejection and amendment) must come out the same from each.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from labeling import queue
from labeling.curation.filters import SolutionFilter
from labeling.models import Assignment, Solution
from labeling.queue.claim import assignment_live
from labeling.selectors.home import campaigns_progress
from tests.factories import make_campaign, make_member, make_solution

pytestmark = pytest.mark.django_db

S = Assignment.Status


@pytest.fixture
def leases():
    """(campaign, now, {name: assignment}): one assignment of each kind, each on its own
    solution and held by its own annotator, so every form can be compared row by row."""
    campaign = make_campaign(overlap=3)
    now = timezone.now()
    later, earlier = now + timedelta(minutes=5), now - timedelta(minutes=5)
    cases = {
        "live": (S.LEASED, later),
        "live, a second one of its annotator": (S.LEASED, now + timedelta(minutes=9)),
        "past its expiry, not reclaimed yet": (S.LEASED, earlier),
        "expiring at this very instant": (S.LEASED, now),
        "leased without an expiry": (S.LEASED, None),
        "reclaimed (expired)": (S.EXPIRED, later),
        "submitted before its expiry": (S.SUBMITTED, later),
        "imported (submitted, no expiry)": (S.SUBMITTED, None),
        "skipped before its expiry": (S.SKIPPED, later),
        "rejected": (S.REJECTED, later),
        "superseded": (S.SUPERSEDED, later),
    }
    rows = {}
    first = None
    for name, (status, expires) in cases.items():
        annotator = (
            first if name.startswith("live, a second") else make_member(campaign=campaign).user
        )
        row = rows[name] = Assignment.objects.create(
            campaign=campaign,
            solution=make_solution(campaign=campaign),
            annotator=annotator,
            status=status,
            leased_at=now - timedelta(minutes=1 if annotator is first else 2),
            lease_expires_at=expires,
        )
        Solution.objects.filter(pk=row.solution_id).update(assignment_count=int(row.holds_slot))
        first = first or annotator
    return campaign, now, rows


def test_the_rule_says_which_leases_are_live(leases):
    _, now, rows = leases
    live = set(Assignment.objects.live_leases(now).values_list("pk", flat=True))
    assert live == {rows["live"].pk, rows["live, a second one of its annotator"].pk}


def test_the_python_form_agrees_row_by_row(leases):
    _, now, rows = leases
    live = set(Assignment.objects.live_leases(now).values_list("pk", flat=True))
    for name, row in rows.items():
        row.refresh_from_db()
        assert row.lease_is_live(now) == (row.pk in live), name


def test_a_missing_expiry_is_not_live(leases):
    _, now, rows = leases
    assert not rows["leased without an expiry"].lease_is_live(now)
    assert not rows["leased without an expiry"].lease_is_live(now - timedelta(days=365))


def test_the_raw_sql_form_selects_the_same_rows(leases):
    _, now, _ = leases
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM labeling_assignment WHERE " + Assignment.live_lease_sql(), [now]
        )
        raw = {pk for (pk,) in cursor.fetchall()}
        cursor.execute(
            "SELECT a.id FROM labeling_assignment a WHERE " + Assignment.live_lease_sql("a"), [now]
        )
        aliased = {pk for (pk,) in cursor.fetchall()}
    assert raw == aliased == set(Assignment.objects.live_leases(now).values_list("pk", flat=True))


def test_the_claims_own_lookup_finds_each_annotators_first_live_lease(leases):
    campaign, now, rows = leases
    for name, row in rows.items():
        expected = (
            Assignment.objects.live_leases(now)
            .filter(campaign=campaign, annotator=row.annotator)
            .order_by("leased_at")
            .first()
        )
        found = assignment_live(campaign=campaign, annotator=row.annotator, now=now)
        assert (found and found.pk) == (expected and expected.pk), name


def test_expired_leases_are_the_leased_rows_past_their_expiry(leases):
    _, now, rows = leases
    expired = set(Assignment.objects.expired_leases(now).values_list("pk", flat=True))
    assert expired == {
        rows["past its expiry, not reclaimed yet"].pk,
        rows["expiring at this very instant"].pk,
    }
    live = set(Assignment.objects.live_leases(now).values_list("pk", flat=True))
    assert not live & expired


def test_the_reclaim_releases_exactly_the_expired_leases(leases):
    campaign, now, _ = leases
    expired = set(Assignment.objects.expired_leases(now).values_list("pk", flat=True))
    released = queue.leases_reclaim(campaign=campaign, limit=None, now=now)
    assert released == len(expired)
    assert set(Assignment.objects.filter(pk__in=expired).values_list("status", flat=True)) == {
        S.EXPIRED
    }
    assert not Assignment.objects.expired_leases(now).exists()


def test_the_data_browser_state_leased_is_a_live_lease(leases):
    campaign, _, rows = leases
    # The browser reads the clock itself: every case is minutes away from it but the instant
    # one, which has passed by now.
    leased = SolutionFilter.from_params({"state": "leased"}).apply(
        Solution.objects.filter(campaign=campaign)
    )
    expected = {r.solution_id for r in rows.values() if r.lease_is_live(timezone.now())}
    assert set(leased.values_list("pk", flat=True)) == expected


def test_the_home_page_says_in_progress_for_a_live_lease_only(leases):
    campaign, _, rows = leases
    for name, row in rows.items():
        (shown,) = campaigns_progress(user=row.annotator).filter(pk=campaign.pk)
        has_live = Assignment.objects.live_leases().filter(annotator=row.annotator).exists()
        assert shown.in_progress == has_live, name
