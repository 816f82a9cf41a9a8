"""The queue under real concurrency: threads, each with its own PostgreSQL connection.

SQLite serialises writers, so these only make sense on PostgreSQL (CI runs them there).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from labeling import queue
from labeling.models import Assignment, Solution
from tests.factories import make_campaign, make_member, make_solution

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ANNOTATORS = 50
# Each thread holds its own connection, and PostgreSQL's max_connections (100 by default) is
# shared by everything on the server, other test runs included: at most this many threads run
# at once; each works through its share of the items in turn.
DB_THREADS = int(os.environ.get("STEPWISE_TEST_DB_THREADS", "16"))


def run_threads(target, args_list):
    """Run ``target(*args)`` per item, ``DB_THREADS`` at a time, the threads starting together
    (behind a barrier); re-raise the first error."""
    shares = [args_list[i::DB_THREADS] for i in range(min(DB_THREADS, len(args_list)))]
    barrier = threading.Barrier(len(shares))
    errors = []

    def wrapped(share):
        try:
            barrier.wait()
            for args in share:
                target(*args)
        except BaseException as error:  # reported in the main thread below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrapped, args=(share,)) for share in shares]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a worker thread hung"
    if errors:
        raise errors[0]


def slot_holders(solution_id):
    return [
        a
        for a in Assignment.objects.filter(solution_id=solution_id).only("status", "finish_reason")
        if a.holds_slot
    ]


def free_slots_not_had_by(user, campaign):
    """Solutions with a free slot (recounted from the assignments) the user never had."""
    held = (
        Assignment.objects.filter(Assignment.holds_slot_q(), solution=OuterRef("pk"))
        .order_by()
        .values("solution")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return list(
        Solution.objects.filter(campaign=campaign)
        .exclude(assignments__annotator=user)
        .annotate(held=Coalesce(Subquery(held), 0))
        .filter(held__lt=campaign.overlap)
        .values_list("pk", flat=True)
    )


def assert_counters_match_the_assignments(campaign):
    for solution in Solution.objects.filter(campaign=campaign):
        held = len(slot_holders(solution.pk))
        assert solution.assignment_count == held, solution
        assert solution.is_open == (held < campaign.overlap), solution


@pytest.mark.parametrize("overlap", [1, 3])
def test_fifty_annotators_at_once_never_exceed_the_overlap_nor_repeat_a_solution(overlap):
    campaign = make_campaign(overlap=overlap)
    solutions = [make_solution(campaign=campaign, steps=["a", "b"]) for _ in range(120 // overlap)]
    users = [make_member(campaign=campaign).user for _ in range(ANNOTATORS)]
    missed = []  # (annotator, solution) left with a free slot when the annotator was told "no work"

    def annotate(user):
        while True:
            assignment = queue.assignment_next(campaign=campaign, annotator=user)
            if assignment is None:
                break
            queue.assignment_submit(
                assignment=assignment,
                annotator=user,
                submission_key=uuid.uuid4().hex,
                ratings=[1, 1],
            )
        # Slots are only ever taken in this test, so anything free now was free at that answer.
        missed.extend((user.pk, pk) for pk in free_slots_not_had_by(user, campaign))

    run_threads(annotate, [(user,) for user in users])

    assert missed == []
    pairs = Counter(Assignment.objects.values_list("annotator_id", "solution_id"))
    assert max(pairs.values()) == 1
    for solution in solutions:
        assert len(slot_holders(solution.pk)) == overlap
    assert Assignment.objects.count() == len(solutions) * overlap
    assert set(Assignment.objects.values_list("status", flat=True)) == {"submitted"}
    assert_counters_match_the_assignments(campaign)


def test_concurrent_requests_of_one_annotator_lease_one_solution():
    campaign = make_campaign(overlap=1)
    for _ in range(20):
        make_solution(campaign=campaign)
    user = make_member(campaign=campaign).user
    served = []
    run_threads(
        lambda: served.append(queue.assignment_next(campaign=campaign, annotator=user).pk),
        [() for _ in range(10)],
    )
    assert len(set(served)) == 1
    assert Assignment.objects.count() == 1
    assert_counters_match_the_assignments(campaign)


def test_expired_leases_are_reclaimed_once_while_annotators_claim_at_once():
    campaign = make_campaign(overlap=2)
    for _ in range(40):
        make_solution(campaign=campaign, steps=["a"])
    stale = [make_member(campaign=campaign).user for _ in range(ANNOTATORS // 2)]
    for user in stale:
        queue.assignment_next(campaign=campaign, annotator=user)
    Assignment.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    fresh = [make_member(campaign=campaign).user for _ in range(ANNOTATORS // 2)]

    def claim_and_submit(user):
        for _ in range(3):
            assignment = queue.assignment_next(campaign=campaign, annotator=user)
            if assignment is None:
                return
            queue.assignment_submit(
                assignment=assignment, annotator=user, submission_key=uuid.uuid4().hex, ratings=[1]
            )

    run_threads(claim_and_submit, [(user,) for user in stale + fresh])
    queue.leases_reclaim(campaign=campaign, limit=None)
    assert_counters_match_the_assignments(campaign)
    pairs = Counter(Assignment.objects.values_list("annotator_id", "solution_id"))
    assert max(pairs.values()) == 1
    assert not Assignment.objects.filter(status="leased").exists()
