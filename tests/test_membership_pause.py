"""Stopping a member's work (``labeling.queue.membership_pause``): whoever pauses them, a manager
or the campaign's QC pause rule, their leases end and the slots those leases held go back to the
queue in the same transaction."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from bench.gold_scores import constant
from labeling import queue
from labeling.models import Assignment, Membership, Solution
from tests.factories import make_campaign, make_member, make_solution, submit_ratings
from tests.test_qc_pause_rule import qc_campaign

pytestmark = pytest.mark.django_db


def plant_lease(*, campaign, membership, expires_in: timedelta) -> Assignment:
    """A lease the member holds on a fresh regular solution, with the slot it takes."""
    solution = make_solution(campaign=campaign)
    lease = Assignment.objects.create(
        campaign=campaign,
        solution=solution,
        annotator=membership.user,
        status=Assignment.Status.LEASED,
        lease_expires_at=timezone.now() + expires_in,
    )
    Solution.objects.filter(pk=solution.pk).slots_change(campaign=campaign, slots=1)
    return lease


def assert_given_back(lease: Assignment) -> None:
    lease.refresh_from_db()
    assert lease.status == Assignment.Status.EXPIRED
    assert lease.lease_expires_at is not None and lease.lease_expires_at <= timezone.now()
    assert Solution.objects.get(pk=lease.solution_id).assignment_count == 0


def test_the_qc_rules_pause_gives_back_the_slots_the_annotators_leases_held():
    campaign, gold = qc_campaign(qc_pause=True, qc_pause_window=1)
    membership = make_member(campaign=campaign)
    qc = queue.assignment_next(campaign=campaign, annotator=membership.user)
    held = plant_lease(campaign=campaign, membership=membership, expires_in=timedelta(hours=1))

    result = submit_ratings(
        assignment=qc,
        annotator=membership.user,
        ratings=constant(0)(gold[qc.solution_id], random.Random(1)),
    )

    assert result.paused
    membership.refresh_from_db()
    assert membership.status == Membership.Status.PAUSED and membership.paused_by_rule
    assert_given_back(held)


@pytest.mark.parametrize("status", [Membership.Status.PAUSED, Membership.Status.REMOVED])
def test_a_managers_pause_or_removal_gives_back_the_slots_at_once(client, status):
    """Also those of a lease already past its expiry that the sweep has not reclaimed yet."""
    campaign = make_campaign()
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER)
    membership = make_member(campaign=campaign)
    live = plant_lease(campaign=campaign, membership=membership, expires_in=timedelta(hours=1))
    stale = plant_lease(campaign=campaign, membership=membership, expires_in=-timedelta(hours=1))
    client.force_login(manager.user)

    client.post(
        reverse("annotators:member", kwargs={"slug": campaign.slug, "pk": membership.pk}),
        {"role": "annotator", "status": status},
    )

    membership.refresh_from_db()
    assert membership.status == status
    assert (membership.paused_at is not None) == (status == Membership.Status.PAUSED)
    assert_given_back(live)
    assert_given_back(stale)


def test_pausing_a_paused_member_keeps_when_and_why():
    campaign = make_campaign()
    membership = make_member(campaign=campaign)
    first = timezone.now() - timedelta(days=1)
    queue.membership_pause(membership=membership, reason="first", now=first)

    ended = queue.membership_pause(membership=membership, reason="second")

    membership.refresh_from_db()
    assert ended == 0
    assert (membership.paused_at, membership.pause_reason) == (first, "first")


def test_it_leaves_other_members_leases_alone():
    campaign = make_campaign()
    membership, other = make_member(campaign=campaign), make_member(campaign=campaign)
    theirs = plant_lease(campaign=campaign, membership=other, expires_in=timedelta(hours=1))

    assert queue.membership_pause(membership=membership) == 0

    theirs.refresh_from_db()
    assert theirs.status == Assignment.Status.LEASED
    assert Solution.objects.get(pk=theirs.solution_id).assignment_count == 1
