"""The data browser's filter spec (labeling/curation/filters.py) and curation services
(labeling/curation/actions.py): each filter on a Solution queryset, sorts and keyset pages, and what
requeue, archive and restore do to the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.http import QueryDict
from django.utils import timezone

from labeling.curation import actions as curation
from labeling.curation.filters import FilterError, SolutionFilter, solutions_page
from labeling.curation.history import solution_history
from labeling.models import Assignment, Membership, Solution, SolutionBulkAction, SolutionEvent
from labeling.queue import assignment_next
from tests.factories import (
    make_campaign,
    make_labelled,
    make_member,
    make_problem,
    make_review,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return make_campaign(slug="filters", overlap=1)


def _ids(campaign, query: str) -> set[int]:
    f = SolutionFilter.from_params(QueryDict(query))
    return set(f.apply(Solution.objects.filter(campaign=campaign)).values_list("pk", flat=True))


def test_it_searches_problem_and_step_text_for_words_and_phrases(campaign):
    triangle = make_problem(campaign=campaign, text="Find the area of the right triangle.")
    a = make_solution(campaign=campaign, problem=triangle)
    b = make_solution(campaign=campaign, steps=["We complete the square here.", "Done."])
    c = make_solution(campaign=campaign, steps=["Square the right side.", "Complete."])
    assert _ids(campaign, "q=triangle") == {a.pk}
    assert _ids(campaign, 'q="complete the square"') == {b.pk}
    assert _ids(campaign, "q=square") == {b.pk, c.pk}


def test_it_filters_by_kind_answer_generator_and_import_job(campaign):
    wrong = make_solution(campaign=campaign, answer_is_correct=False, generator="g1")
    right = make_solution(campaign=campaign, answer_is_correct=True, generator="g2")
    ungraded = make_solution(campaign=campaign, import_job_id=7)
    qc = make_solution(campaign=campaign, kind="qc", gold=[1, 1, 1])
    assert _ids(campaign, "answer=wrong") == {wrong.pk}
    assert _ids(campaign, "answer=right&answer=ungraded") == {right.pk, ungraded.pk, qc.pk}
    assert _ids(campaign, "kind=qc") == {qc.pk}
    assert _ids(campaign, "generator=g1,g2") == {wrong.pk, right.pk}
    assert _ids(campaign, "import_job=7") == {ungraded.pk}


def test_it_filters_on_what_submitted_labels_say(campaign):
    alice, bob = make_user(username="alice"), make_user(username="bob")
    negative = make_solution(campaign=campaign)
    make_labelled(solution=negative, ratings=[1, -1], annotator=alice)
    disputed = make_solution(campaign=campaign)
    make_labelled(solution=disputed, ratings=[1, 1, 1], annotator=alice)
    make_labelled(solution=disputed, ratings=[1, 0, 1], annotator=bob)
    drafted = make_solution(campaign=campaign)
    make_labelled(solution=drafted, ratings=[-1], annotator=bob, status="leased")
    assert _ids(campaign, "negative=true") == {negative.pk}
    assert _ids(campaign, "negative=false") == {disputed.pk, drafted.pk}
    assert _ids(campaign, "disagree=true") == {disputed.pk}
    assert _ids(campaign, f"annotator={bob.pk}") == {disputed.pk}
    assert _ids(campaign, "flagged=true") == set()


def test_it_filters_by_review_status_and_prm_range(campaign):
    accepted = make_solution(campaign=campaign, prm_score=0.9)
    make_review(assignment=make_labelled(solution=accepted, ratings=[1]))
    rejected = make_solution(campaign=campaign, prm_score=0.2)
    make_review(assignment=make_labelled(solution=rejected, ratings=[1]), decision="rejected")
    none = make_solution(campaign=campaign)
    assert _ids(campaign, "review=accepted") == {accepted.pk}
    assert _ids(campaign, "review=rejected,unreviewed") == {rejected.pk, none.pk}
    assert _ids(campaign, "prm_min=0.5") == {accepted.pk}
    assert _ids(campaign, "prm_min=0.1&prm_max=0.5") == {rejected.pk}


def test_queue_states_are_disjoint(campaign):
    annotator = make_member(campaign=campaign).user
    leased = make_solution(campaign=campaign, priority=9)
    assignment_next(campaign=campaign, annotator=annotator)
    done = make_solution(campaign=campaign, is_open=False)
    archived = make_solution(campaign=campaign, archived=True, is_open=False)
    fresh = make_solution(campaign=campaign)
    assert _ids(campaign, "state=leased") == {leased.pk}
    assert _ids(campaign, "state=complete") == {done.pk}
    assert _ids(campaign, "state=archived") == {archived.pk}
    assert _ids(campaign, "state=open") == {fresh.pk}


def test_bad_values_name_their_parameter():
    for query, field in [
        ("kind=nope", "kind"),
        ("prm_min=high", "prm_min"),
        ("negative=maybe", "negative"),
        ("sort=random", "sort"),
        ("annotator=-1", "annotator"),
    ]:
        with pytest.raises(FilterError) as error:
            SolutionFilter.from_params(QueryDict(query))
        assert error.value.field == field


def test_filters_round_trip_through_query_parameters():
    f = SolutionFilter.from_params(
        QueryDict('q="a b"&kind=qc&kind=screening&negative=true&prm_min=0.5&sort=prm&other=1')
    )
    again = SolutionFilter.from_params(f.to_params())
    assert again == f
    assert f.values == {
        "q": '"a b"',
        "kind": ["qc", "screening"],
        "negative": True,
        "prm_min": 0.5,
    }


@pytest.mark.parametrize("sort", ["queue", "prm", "disagreement", "newest", "id"])
def test_keyset_pages_walk_every_match_once_in_order(campaign, sort):
    for i in range(7):
        s = make_solution(campaign=campaign, priority=i % 3, prm_score=None if i == 2 else i / 10)
        if i % 2:
            make_labelled(solution=s, ratings=[1, 1])
            make_labelled(solution=s, ratings=[1, -1])
    f = SolutionFilter(sort=sort)
    everything = list(f.ordered(Solution.objects.filter(campaign=campaign)))
    seen, cursor = [], None
    while True:
        page = solutions_page(Solution.objects.filter(campaign=campaign), f, cursor=cursor, size=2)
        seen += [s.pk for s in page.solutions]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [s.pk for s in everything]
    assert len(seen) == 7


def test_queue_order_lists_what_the_queue_serves_next_first(campaign):
    complete = make_solution(campaign=campaign, priority=9, is_open=False)
    archived = make_solution(campaign=campaign, priority=8, archived=True)
    low = make_solution(campaign=campaign, priority=1)
    high = make_solution(campaign=campaign, priority=5)
    ordered = SolutionFilter(sort="queue").ordered(Solution.objects.filter(campaign=campaign))
    assert [s.pk for s in ordered] == [high.pk, low.pk, complete.pk, archived.pk]
    seen, cursor = [], None
    while True:  # pages of one, across from what the queue serves to the rest
        page = solutions_page(
            Solution.objects.filter(campaign=campaign), SolutionFilter(), cursor=cursor, size=1
        )
        seen += [s.pk for s in page.solutions]
        if not (cursor := page.next_cursor):
            break
    assert seen == [high.pk, low.pk, complete.pk, archived.pk]
    served = assignment_next(campaign=campaign, annotator=make_member(campaign=campaign).user)
    assert served.solution_id == high.pk


def test_a_filter_less_one_value_keeps_the_others():
    f = SolutionFilter.from_params({"state": "open,leased", "negative": "true", "sort": "prm"})
    assert f.without("state", "open").querystring() == "state=leased&negative=true&sort=prm"
    assert f.without("negative").querystring() == "state=open&state=leased&sort=prm"
    assert f.without("state", "open").without("state", "leased").values == {"negative": True}


# --- Curation --------------------------------------------------------------------------------


def test_an_archived_solution_leaves_the_queue_and_keeps_its_labels(campaign):
    solution = make_solution(campaign=campaign, priority=5)
    other = make_solution(campaign=campaign, priority=1)
    make_labelled(solution=solution, ratings=[1], status="submitted")
    Solution.objects.filter(pk=solution.pk).update(is_open=True, assignment_count=0)
    manager = make_user()
    assert curation.solutions_archive(
        campaign=campaign, solutions=Solution.objects.filter(pk=solution.pk), actor=manager
    )
    annotator = make_member(campaign=campaign).user
    served = assignment_next(campaign=campaign, annotator=annotator)
    assert served.solution_id == other.pk
    # A recount (the queue's repair) does not reopen it.
    Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    solution.refresh_from_db()
    assert (solution.archived, solution.is_open) == (True, False)
    assert Assignment.objects.filter(solution=solution, status="submitted").exists()
    assert SolutionEvent.objects.get(solution=solution).action == "archived"


def test_restore_reopens_only_what_still_wants_labels(campaign):
    wants = make_solution(campaign=campaign, archived=True, is_open=False)
    full = make_solution(campaign=campaign, archived=True, is_open=False, assignment_count=1)
    curation.solutions_restore(campaign=campaign, solutions=Solution.objects.all())
    wants.refresh_from_db()
    full.refresh_from_db()
    assert (wants.archived, wants.is_open) == (False, True)
    assert (full.archived, full.is_open) == (False, False)


def test_requeue_serves_a_finished_solution_to_one_more_annotator(campaign):
    solution = make_solution(campaign=campaign)
    first = make_member(campaign=campaign).user
    assignment = assignment_next(campaign=campaign, annotator=first)
    Assignment.objects.filter(pk=assignment.pk).update(status="submitted")
    solution.refresh_from_db()
    assert solution.is_open is False
    second = make_member(campaign=campaign).user
    assert assignment_next(campaign=campaign, annotator=second) is None
    curation.solutions_requeue(campaign=campaign, solutions=Solution.objects.filter(pk=solution.pk))
    solution.refresh_from_db()
    assert (solution.extra_labels, solution.is_open) == (1, True)
    served = assignment_next(campaign=campaign, annotator=second)
    assert served.solution_id == solution.pk
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (2, False)


def test_a_bulk_action_over_many_is_a_job_that_applies_to_all_or_none(campaign, monkeypatch):
    monkeypatch.setattr(curation, "INLINE_MAX", 2)
    for _ in range(5):
        make_solution(campaign=campaign, answer_is_correct=False)
    keep = make_solution(campaign=campaign, answer_is_correct=True)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    job = curation.bulk_action_create(
        campaign=campaign,
        action="archive",
        solution_filter=SolutionFilter.from_params({"answer": "wrong"}),
        created_by=manager,
    )
    assert (job.status, job.total) == ("pending", 5)  # a worker's job (no broker in tests)
    job = curation.bulk_action_run(job=job)
    assert (job.status, job.changed, job.progress) == ("done", 5, 1.0)
    assert Solution.objects.filter(archived=True).count() == 5
    assert not Solution.objects.get(pk=keep.pk).archived

    def broken(**kwargs):
        Solution.objects.filter(pk=keep.pk).update(archived=True)
        raise RuntimeError("disk full")

    monkeypatch.setitem(curation._RUNNERS, SolutionBulkAction.Action.RESTORE, broken)
    failed = SolutionBulkAction.objects.create(
        campaign=campaign, action="restore", selection={"answer": ["right"]}, total=1
    )
    with pytest.raises(RuntimeError, match="disk full"):  # recorded, then raised for the task
        curation.bulk_action_run(job=failed)
    failed.refresh_from_db()
    assert failed.status == "failed" and "disk full" in failed.error
    assert not Solution.objects.get(pk=keep.pk).archived  # all or nothing
    assert curation.bulk_action_run(job=failed).status == "failed"  # runs once


def test_a_live_lease_does_not_stop_an_archive(campaign):
    solution = make_solution(campaign=campaign)
    annotator = make_member(campaign=campaign).user
    assignment_next(campaign=campaign, annotator=annotator)
    curation.solutions_archive(campaign=campaign, solutions=Solution.objects.filter(pk=solution.pk))
    assert _ids(campaign, "state=archived") == {solution.pk}
    leased = Assignment.objects.get(solution=solution)
    assert leased.lease_expires_at > timezone.now() - timedelta(seconds=1)


def test_a_new_ground_truth_grades_the_problems_solutions_again(campaign):
    problem = make_problem(campaign=campaign, ground_truth_answer="5")
    four = make_solution(campaign=campaign, problem=problem, answer="4", answer_is_correct=False)
    five = make_solution(campaign=campaign, problem=problem, answer="5", answer_is_correct=True)
    graded = curation.problem_ground_truth_set(problem=problem, answer="4", actor=None)
    four.refresh_from_db()
    five.refresh_from_db()
    assert (graded, four.answer_is_correct, five.answer_is_correct) == (2, True, False)
    history = solution_history(solution=four)
    assert [e.what for e in history] == ["ground truth edited"]


def test_bulk_make_gold_from_the_consensus(campaign):
    disputed = make_solution(campaign=campaign)
    make_labelled(solution=disputed, ratings=[1, 1, -1])
    make_labelled(solution=disputed, ratings=[1, 0])
    make_labelled(solution=disputed, ratings=[1, 0, 1])
    unlabelled = make_solution(campaign=campaign)
    job = curation.bulk_action_create(
        campaign=campaign,
        action="gold_qc",
        solution_filter=SolutionFilter.from_params({"id": [disputed.pk, unlabelled.pk]}),
    )
    assert (job.status, job.total, job.changed) == ("done", 2, 1)
    disputed.refresh_from_db()
    unlabelled.refresh_from_db()
    gold = list(disputed.steps.order_by("index").values_list("gold_rating", flat=True))
    assert (disputed.kind, gold) == ("qc", [1, 0, -1])  # step 3: a tie, the more negative
    assert unlabelled.kind == "regular"
    assert disputed.is_open  # gold questions are served to every annotator


def test_the_disagreement_sort_counts_the_steps_annotators_disagree_on(campaign):
    two, one, none, alone = (make_solution(campaign=campaign) for _ in range(4))
    for solution, first, second in [
        (two, [1, 1, -1], [1, -1, 1]),
        (one, [1, 0], [1, 1]),
        (none, [1, 1], [1, 1]),
    ]:
        make_labelled(solution=solution, ratings=first)
        make_labelled(solution=solution, ratings=second)
    make_labelled(solution=alone, ratings=[-1])
    make_labelled(solution=alone, ratings=[1], status="leased")  # a draft disagrees with nobody
    ordered = SolutionFilter(sort="disagreement").ordered(Solution.objects.all())
    assert [(s.pk, s.sort_key) for s in ordered] == [
        (two.pk, 2),
        (one.pk, 1),
        (none.pk, 0),
        (alone.pk, 0),
    ]
