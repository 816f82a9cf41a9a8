"""Nothing a person did is lost: rejection sends work back, amendments keep the earlier version,
adjudications keep the annotators' ratings and earlier decisions; exports reach all of them."""

from __future__ import annotations

import csv
import json

import pytest

from annotators.review.selectors import disputed_steps
from annotators.review.services import adjudication_decide, review_submit
from annotators.services import ManageError
from annotators.stats import campaign_stats
from exports.formats import LabelPolicy, write_export
from labeling import queue
from labeling.models import Adjudication, Assignment, Solution, StepLabel
from tests.factories import (
    export_name,
    make_campaign,
    make_member,
    make_solution,
    make_user,
    submit_ratings,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return make_campaign(slug="lost", overlap=1)


@pytest.fixture
def people(campaign):
    return {
        name: make_member(campaign=campaign, user=make_user(username=name), role=role).user
        for name, role in [("rev", "reviewer"), ("ann", "annotator"), ("bob", "annotator")]
    }


def labelled_by(campaign, annotator, ratings):
    """The annotator asks for work and submits ``ratings``; the submitted assignment."""
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
    assert assignment is not None
    submit_ratings(assignment=assignment, annotator=annotator, ratings=ratings)
    assignment.refresh_from_db()
    return assignment


def counters(solution) -> tuple[int, bool]:
    solution.refresh_from_db()
    return solution.assignment_count, solution.is_open


def recounted(solution) -> tuple[int, bool]:
    """What ``refresh_queue_state`` (the repair recount) says the counters should be."""
    Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    return counters(solution)


def export_rows(campaign, tmp_path, fmt, **policy):
    out = tmp_path / f"{fmt}-{len(list(tmp_path.iterdir()))}"
    write_export(campaign=campaign, fmt=fmt, out=out, policy=LabelPolicy(**policy))
    path = next(
        p
        for p in tmp_path.iterdir()
        if p.name.startswith(out.name + ".") and "manifest" not in p.name
    )
    text = path.read_text()
    if fmt == "csv":
        return list(csv.DictReader(text.splitlines()))
    return [json.loads(line) for line in text.splitlines()]


# --- Reject means relabel ------------------------------------------------------------------------


def test_a_rejection_releases_the_slot_and_another_annotator_is_served(campaign, people):
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    work = labelled_by(campaign, people["ann"], [1, -1])
    assert counters(solution) == (1, False)

    review_submit(assignment=work, reviewer=people["rev"], decision="rejected", comment="No.")

    work.refresh_from_db()
    assert work.status == Assignment.Status.REJECTED
    assert counters(solution) == (0, True) == recounted(solution)
    # Not to the annotator whose work was rejected (the default)...
    assert queue.assignment_next(campaign=campaign, annotator=people["ann"]) is None
    # ...but to someone else.
    served = queue.assignment_next(campaign=campaign, annotator=people["bob"])
    assert served.solution_id == solution.pk
    assert counters(solution) == (1, False)
    # The rejected labels and the comment stay.
    assert list(StepLabel.objects.filter(assignment=work).values_list("rating", flat=True)) == [
        1,
        -1,
    ]
    assert work.review.comment == "No."


def test_with_the_campaign_setting_the_same_annotator_relabels(campaign, people):
    campaign.relabel_by_same_annotator = True
    campaign.save()
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    work = labelled_by(campaign, people["ann"], [1, -1])
    review_submit(assignment=work, reviewer=people["rev"], decision="rejected", comment="Again.")

    again = queue.assignment_next(campaign=campaign, annotator=people["ann"])

    assert again.solution_id == solution.pk and again.pk != work.pk
    submit_ratings(assignment=again, annotator=people["ann"], ratings=[1, 1])
    assert Assignment.objects.filter(solution=solution, annotator=people["ann"]).count() == 2
    assert counters(solution) == (1, False) == recounted(solution)


def test_changing_a_review_moves_the_slot_and_the_counts_stay_right(campaign, people):
    solution = make_solution(campaign=campaign, steps=["a"])
    work = labelled_by(campaign, people["ann"], [1])

    review_submit(assignment=work, reviewer=people["rev"], decision="rejected", comment="No.")
    assert counters(solution) == (0, True) == recounted(solution)
    review_submit(assignment=work, reviewer=people["rev"], decision="rejected", comment="Still.")
    assert counters(solution) == (0, True)
    review_submit(assignment=work, reviewer=people["rev"], decision="accepted")
    work.refresh_from_db()
    assert work.status == Assignment.Status.SUBMITTED
    assert counters(solution) == (1, False) == recounted(solution)
    review_submit(assignment=work, reviewer=people["rev"], decision="rejected", comment="No!")
    assert counters(solution) == (0, True) == recounted(solution)


def test_accepting_after_the_solution_was_relabelled_keeps_both_and_closes_it(campaign, people):
    solution = make_solution(campaign=campaign, steps=["a"])
    work = labelled_by(campaign, people["ann"], [1])
    review_submit(assignment=work, reviewer=people["rev"], decision="rejected", comment="No.")
    labelled_by(campaign, people["bob"], [-1])

    review_submit(assignment=work, reviewer=people["rev"], decision="accepted")

    assert counters(solution) == (2, False) == recounted(solution)


def test_a_rejected_bad_problem_report_stops_counting(campaign, people):
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    assignment = queue.assignment_next(campaign=campaign, annotator=people["ann"])
    submit_ratings(
        assignment=assignment, annotator=people["ann"], ratings=[], finish_reason="bad_problem"
    )
    assignment.refresh_from_db()
    solution.refresh_from_db()
    assert solution.bad_problem_reports == 1

    review_submit(
        assignment=assignment, reviewer=people["rev"], decision="rejected", comment="It is fine."
    )

    solution.refresh_from_db()
    assert (solution.bad_problem_reports, solution.assignment_count) == (0, 0)
    Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    solution.refresh_from_db()
    assert (solution.bad_problem_reports, solution.assignment_count) == (0, 0)


def test_rejected_labels_are_exported_flagged_only_when_asked_and_never_trained_on(
    campaign, people, tmp_path
):
    make_solution(campaign=campaign, steps=["a", "b"])
    work = labelled_by(campaign, people["ann"], [1, -1])
    review_submit(assignment=work, reviewer=people["rev"], decision="rejected", comment="No.")
    labelled_by(campaign, people["bob"], [1, 1])

    plain = export_rows(campaign, tmp_path, "csv")
    flagged = export_rows(campaign, tmp_path, "csv", include_rejected=True)
    lines = export_rows(campaign, tmp_path, "prm800k", include_rejected=True)
    trl = export_rows(campaign, tmp_path, "trl", include_rejected=True)

    ann, bob = (export_name(campaign, people[name]) for name in ("ann", "bob"))
    assert {(r["annotator"], r["assignment_status"]) for r in plain} == {(bob, "submitted")}
    flagged_rows = sorted((r["annotator"], r["rating"], r["assignment_status"]) for r in flagged)
    want = [(ann, "-1", "rejected"), (ann, "1", "rejected")]
    want += [(bob, "1", "submitted"), (bob, "1", "submitted")]
    assert flagged_rows == sorted(want)
    rejected_line = next(line for line in lines if line["labeler"] == ann)
    assert rejected_line["stepwise_status"] == "rejected"
    assert rejected_line["stepwise_review_comment"] == "No."
    assert "stepwise_status" not in next(line for line in lines if line["labeler"] == bob)
    assert [row["labels"] for row in trl] == [[True, True]]


def test_the_figures_still_count_rejected_work(campaign, people):
    make_solution(campaign=campaign, steps=["a", "b"])
    work = labelled_by(campaign, people["ann"], [1, -1])
    review_submit(assignment=work, reviewer=people["rev"], decision="rejected", comment="No.")

    stats = campaign_stats(campaign=campaign)

    ann = next(row for row in stats["annotators"] if row["username"] == "ann")
    assert ann["labels"] == 2


# --- Amendments --------------------------------------------------------------------------------


def test_an_amendment_is_a_new_version_and_keeps_the_earlier_one(campaign, people, tmp_path):
    solution = make_solution(campaign=campaign, steps=["a", "b", "c"])
    first = labelled_by(campaign, people["ann"], [1, 1, 1])

    amended = queue.assignment_amend(
        assignment=first, annotator=people["ann"], ratings=[1, -1], flags=[1]
    )

    first.refresh_from_db()
    assert first.status == Assignment.Status.SUPERSEDED
    assert amended.supersedes_id == first.pk and amended.status == Assignment.Status.SUBMITTED
    assert amended.finish_reason == "found_error"
    assert list(StepLabel.objects.filter(assignment=first).values_list("rating", flat=True)) == [
        1,
        1,
        1,
    ]
    assert list(StepLabel.objects.filter(assignment=amended).values_list("rating", "flagged")) == [
        (1, False),
        (-1, True),
    ]
    assert counters(solution) == (1, False) == recounted(solution)
    # Exports take the latest version; the earlier one only when asked, flagged.
    latest = export_rows(campaign, tmp_path, "csv")
    history = export_rows(campaign, tmp_path, "csv", include_superseded=True)
    assert [(r["assignment_id"], r["rating"]) for r in latest] == [
        (str(amended.pk), "1"),
        (str(amended.pk), "-1"),
    ]
    assert sorted((r["assignment_status"], r["rating"]) for r in history) == [
        ("submitted", "-1"),
        ("submitted", "1"),
        ("superseded", "1"),
        ("superseded", "1"),
        ("superseded", "1"),
    ]
    trl = export_rows(campaign, tmp_path, "trl", include_superseded=True)
    assert [row["labels"] for row in trl] == [[True, False]]


def test_reviewed_or_someone_elses_work_cannot_be_amended(campaign, people):
    make_solution(campaign=campaign, steps=["a"])
    work = labelled_by(campaign, people["ann"], [1])

    with pytest.raises(queue.NotLeaseHolder):
        queue.assignment_amend(assignment=work, annotator=people["bob"], ratings=[-1])
    review_submit(assignment=work, reviewer=people["rev"], decision="accepted")
    with pytest.raises(queue.AssignmentClosed):
        queue.assignment_amend(assignment=work, annotator=people["ann"], ratings=[-1])
    assert Assignment.objects.filter(annotator=people["ann"]).count() == 1


def test_an_amendment_follows_the_submission_rules(campaign, people):
    make_solution(campaign=campaign, steps=["a", "b"])
    work = labelled_by(campaign, people["ann"], [1, 1])

    with pytest.raises(queue.LabelsInvalid):
        queue.assignment_amend(assignment=work, annotator=people["ann"], ratings=[1])
    with pytest.raises(queue.LabelsInvalid):
        queue.assignment_amend(assignment=work, annotator=people["ann"], ratings=[-1, 1])
    work.refresh_from_db()
    assert work.status == Assignment.Status.SUBMITTED


def test_an_amendment_does_not_count_as_served_work_for_quality_control(campaign, people):
    make_solution(campaign=campaign, steps=["a"])
    work = labelled_by(campaign, people["ann"], [1])
    campaign.qc_rate = 0.5
    campaign.save()
    before = queue.qc_turn(campaign=campaign, annotator=people["ann"])

    queue.assignment_amend(assignment=work, annotator=people["ann"], ratings=[0])

    assert queue.qc_turn(campaign=campaign, annotator=people["ann"]) == before


# --- Adjudication ------------------------------------------------------------------------------


@pytest.fixture
def disputed(people):
    campaign = make_campaign(slug="adj", overlap=2)
    for user in people.values():
        make_member(
            campaign=campaign, user=user, role="reviewer" if user.username == "rev" else "annotator"
        )
    solution = make_solution(campaign=campaign, steps=["a", "b", "c"])
    labelled_by(campaign, people["ann"], [1, 1, 1])
    labelled_by(campaign, people["bob"], [1, -1])
    return campaign, solution


def test_a_decision_replaces_the_earlier_one_and_both_are_kept(disputed, people, tmp_path):
    campaign, solution = disputed
    step = solution.steps.get(index=1)

    first = adjudication_decide(
        campaign=campaign, step=step, decided_by=people["rev"], rating=1, note="fine"
    )
    second = adjudication_decide(
        campaign=campaign, step=step, decided_by=people["rev"], rating=-1, note="no, wrong"
    )

    first.refresh_from_db()
    assert first.replaced_at is not None and second.replaced_at is None
    assert list(Adjudication.objects.filter(step=step).values_list("rating", flat=True)) == [
        -1,
        1,
    ]
    # The annotators' ratings are untouched and still exported, each.
    each = export_rows(campaign, tmp_path, "csv")
    ann, bob = (export_name(campaign, people[name]) for name in ("ann", "bob"))
    assert sorted((r["annotator"], r["step_index"], r["rating"]) for r in each) == sorted(
        [(ann, "0", "1"), (ann, "1", "1"), (ann, "2", "1"), (bob, "0", "1"), (bob, "1", "-1")]
    )
    per_annotator = export_rows(campaign, tmp_path, "trl", annotators="each")
    assert sorted(row["labels"] for row in per_annotator) == [[True, False], [True, True, True]]


def test_the_adjudicated_export_takes_the_decision_else_the_majority(disputed, people, tmp_path):
    campaign, solution = disputed
    step = solution.steps.get(index=1)

    # Majority: a tie on step 1 goes to the more negative label, and the path ends there.
    assert [r["labels"] for r in export_rows(campaign, tmp_path, "trl")] == [[True, False]]
    adjudication_decide(campaign=campaign, step=step, decided_by=people["rev"], rating=1)
    rows = export_rows(campaign, tmp_path, "trl", annotators="adjudicated")
    assert [r["labels"] for r in rows] == [[True, True, True]]
    assert [r["labels"] for r in export_rows(campaign, tmp_path, "trl")] == [[True, False]]


def test_only_disputed_steps_are_adjudicated(disputed, people):
    campaign, solution = disputed

    with pytest.raises(ManageError, match="agree"):
        adjudication_decide(
            campaign=campaign, step=solution.steps.get(index=0), decided_by=people["rev"], rating=1
        )
    with pytest.raises(ManageError, match="rating"):
        adjudication_decide(
            campaign=campaign, step=solution.steps.get(index=1), decided_by=people["rev"], rating=5
        )


def test_a_rejected_rating_does_not_make_a_disagreement(disputed, people):
    campaign, solution = disputed
    assert list(disputed_steps(campaign=campaign).values_list("step_id", flat=True)) == [
        solution.steps.get(index=1).pk
    ]
    bob = Assignment.objects.get(annotator=people["bob"], solution=solution)

    review_submit(assignment=bob, reviewer=people["rev"], decision="rejected", comment="No.")

    assert not disputed_steps(campaign=campaign).exists()


def test_skipping_rejected_or_superseded_work_is_refused_and_keeps_its_labels(campaign, people):
    make_solution(campaign=campaign, steps=["a"])
    work = labelled_by(campaign, people["ann"], [1])
    amended = queue.assignment_amend(assignment=work, annotator=people["ann"], ratings=[0])
    review_submit(assignment=amended, reviewer=people["rev"], decision="rejected", comment="No.")

    for assignment in (work, amended):
        assignment.refresh_from_db()
        with pytest.raises(queue.AssignmentClosed):
            queue.assignment_skip(assignment=assignment, annotator=people["ann"])
        assert StepLabel.objects.filter(assignment=assignment).count() == 1
    assert {a.status for a in Assignment.objects.filter(annotator=people["ann"])} == {
        "superseded",
        "rejected",
    }


def test_a_solution_with_amended_work_can_still_be_deleted(campaign, people):
    solution = make_solution(campaign=campaign, steps=["a"])
    work = labelled_by(campaign, people["ann"], [1])
    queue.assignment_amend(assignment=work, annotator=people["ann"], ratings=[0])

    solution.delete()

    assert not Assignment.objects.filter(annotator=people["ann"]).exists()
