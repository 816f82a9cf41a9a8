"""PRM800K's phase 1 mode: the rules of rating, choosing and writing candidate next steps, and
the PRM800K lines it exports, which the importer reads back to the same steps and choices."""

from __future__ import annotations

import json

import pytest

from exports.formats import LabelPolicy, write_export
from imports.pipeline import import_file
from labeling import queue
from labeling.models import Assignment, CandidateLabel, Solution, StepCandidate, StepLabel
from tests import phase1_data as data
from tests.factories import make_campaign, make_member, make_solution

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(tmp_path):
    # Overlap 2: the imported labeler holds one slot, the annotator takes the other.
    campaign = make_campaign(phase1_mode=True, overlap=2)
    import_file(data.write_line(tmp_path / "phase1.jsonl"), campaign=campaign, fmt="prm800k")
    return campaign


@pytest.fixture
def annotator(campaign):
    return make_member(campaign=campaign).user


def serve(campaign, annotator) -> Assignment:
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
    assert assignment is not None
    assignment.campaign = campaign
    return assignment


def rate_all(assignment, annotator, ratings) -> queue.Phase1View:
    view = queue.phase1_open(assignment=assignment)
    assert len(view.candidates) == len(ratings)
    for candidate, rating in zip(view.candidates, ratings, strict=True):
        queue.candidate_rate(
            assignment=assignment, annotator=annotator, candidate_id=candidate.id, rating=rating
        )
    return queue.phase1_open(assignment=assignment)


def choose(assignment, annotator, view, letter) -> queue.Phase1View:
    candidate = next(c for c in view.candidates if c.letter == letter)
    queue.candidate_choose(assignment=assignment, annotator=annotator, candidate_id=candidate.id)
    return queue.phase1_open(assignment=assignment)


def submit(assignment, annotator, **extra):
    return queue.assignment_submit(
        assignment=assignment, annotator=annotator, submission_key=f"k-{assignment.pk}", **extra
    )


def lines(campaign, tmp_path, name="out.jsonl"):
    path = tmp_path / name
    write_export(
        campaign=campaign, fmt="prm800k", out=path, policy=LabelPolicy(annotator_ids="username")
    )
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_it_shows_the_imported_candidates_and_none_of_their_ratings(campaign, annotator):
    view = queue.phase1_open(assignment=serve(campaign, annotator))

    assert [c.text for c in view.candidates] == data.STEP1
    assert [c.letter for c in view.candidates] == ["A", "B", "C"]
    assert all(c.rating is None for c in view.candidates)
    assert view.path == [] and not view.can_submit


def test_a_retried_rating_never_doubles_a_rating(campaign, annotator):
    assignment = serve(campaign, annotator)
    first = queue.phase1_open(assignment=assignment).candidates[0]
    for rating in (1, 1, 0):
        queue.candidate_rate(
            assignment=assignment, annotator=annotator, candidate_id=first.id, rating=rating
        )

    assert list(CandidateLabel.objects.values_list("candidate_id", "rating")) == [(first.id, 0)]


def test_a_choice_of_a_candidate_that_is_not_of_this_step_is_refused(campaign, annotator):
    assignment = serve(campaign, annotator)
    queue.phase1_open(assignment=assignment)
    later = StepCandidate.objects.get(text=data.STEP2[0])

    with pytest.raises(queue.LabelsInvalid, match="not a candidate for step 1 of your solution"):
        queue.candidate_choose(assignment=assignment, annotator=annotator, candidate_id=later.id)
    with pytest.raises(queue.LabelsInvalid, match="not a candidate for step 1"):
        queue.candidate_rate(
            assignment=assignment, annotator=annotator, candidate_id=later.id, rating=1
        )
    elsewhere = make_campaign(phase1_mode=True)
    make_solution(campaign=elsewhere)
    queue.phase1_open(assignment=serve(elsewhere, make_member(campaign=elsewhere).user))
    foreign = StepCandidate.objects.filter(solution__campaign=elsewhere).first()
    with pytest.raises(queue.LabelsInvalid, match="not one of this solution's"):
        queue.candidate_choose(assignment=assignment, annotator=annotator, candidate_id=foreign.id)
    assert not CandidateLabel.objects.filter(chosen=True).exists()


def test_a_choice_needs_every_candidate_rated_and_not_a_negative_one(campaign, annotator):
    assignment = serve(campaign, annotator)
    view = queue.phase1_open(assignment=assignment)
    a, b, _ = view.candidates
    queue.candidate_rate(assignment=assignment, annotator=annotator, candidate_id=a.id, rating=-1)
    with pytest.raises(queue.LabelsInvalid, match=r"Rate every candidate for step 1 first \(B, C"):
        queue.candidate_choose(assignment=assignment, annotator=annotator, candidate_id=a.id)
    with pytest.raises(queue.LabelsInvalid, match="Rate every candidate"):
        queue.step_write(assignment=assignment, annotator=annotator, position=0, text="Mine.")
    rate_all(assignment, annotator, [-1, 1, 0])
    with pytest.raises(queue.LabelsInvalid, match="negative step cannot be continued"):
        queue.candidate_choose(assignment=assignment, annotator=annotator, candidate_id=a.id)

    queue.candidate_choose(assignment=assignment, annotator=annotator, candidate_id=b.id)
    # A retried choice changes nothing.
    queue.candidate_choose(assignment=assignment, annotator=annotator, candidate_id=b.id)
    view = queue.phase1_open(assignment=assignment)
    assert [s.text for s in view.path] == [data.STEP1[1]]
    assert [c.text for c in view.candidates] == data.STEP2


def test_following_the_imported_path_labels_the_same_solution(campaign, annotator, tmp_path):
    assignment = serve(campaign, annotator)
    served = assignment.solution_id
    view = rate_all(assignment, annotator, [0, 1, -1])
    view = choose(assignment, annotator, view, "B")
    view = rate_all(assignment, annotator, [1, 1])
    view = choose(assignment, annotator, view, "A")
    view = rate_all(assignment, annotator, [1])
    view = choose(assignment, annotator, view, "A")
    assert view.ended and view.candidates == []

    result = submit(assignment, annotator)

    assert (result.finish_reason, result.solution_id, result.rated_steps) == ("solution", served, 3)
    ours = next(r for r in lines(campaign, tmp_path) if r["labeler"] == annotator.username)
    assert ours["label"]["steps"] == [
        {
            "completions": [
                {"text": data.STEP1[0], "rating": 0, "flagged": False},
                {"text": data.STEP1[1], "rating": 1, "flagged": False},
                {"text": data.STEP1[2], "rating": -1, "flagged": False},
            ],
            "human_completion": None,
            "chosen_completion": 1,
        },
        {
            "completions": [
                {"text": data.STEP2[0], "rating": 1, "flagged": False},
                {"text": data.STEP2[1], "rating": 1, "flagged": False},
            ],
            "human_completion": None,
            "chosen_completion": 0,
        },
        {
            "completions": [{"text": data.STEP3, "rating": 1, "flagged": False}],
            "human_completion": None,
            "chosen_completion": 0,
        },
    ]
    assert ours["label"]["finish_reason"] == "solution"
    assert ours["question"] == {"problem": data.PROBLEM, "ground_truth_answer": "14"}


def test_a_written_step_grows_its_own_solution_and_round_trips(campaign, annotator, tmp_path):
    assignment = serve(campaign, annotator)
    served = Solution.objects.get(pk=assignment.solution_id)
    view = rate_all(assignment, annotator, [-1, 1, 0])
    view = choose(assignment, annotator, view, "B")
    rate_all(assignment, annotator, [1, -1])
    mine = "So $2 + 12 = 14$.\n\n# Answer\n\n14"
    queue.step_write(assignment=assignment, annotator=annotator, position=1, text=mine)
    # Resent: the step is not written twice, nor at the next position.
    queue.step_write(assignment=assignment, annotator=annotator, position=1, text=mine)
    assert queue.phase1_open(assignment=assignment).ended

    result = submit(assignment, annotator)
    # A resent submission (the page's one key per assignment) is replayed, not stored again.
    assert submit(assignment, annotator) == result
    assert StepLabel.objects.filter(assignment_id=assignment.pk).count() == 2

    grown = Solution.objects.get(pk=result.solution_id)
    assert grown.pk != served.pk and not grown.pre_generated
    assert list(grown.steps.values_list("text", flat=True)) == [data.STEP1[1], mine]
    assert grown.answer == "14"
    served.refresh_from_db()
    assert (served.assignment_count, grown.assignment_count) == (1, 1)
    assert Assignment.objects.get(pk=assignment.pk).solution_id == grown.pk

    exported = lines(campaign, tmp_path)
    ours = next(r for r in exported if r["labeler"] == annotator.username)
    assert ours["label"]["steps"][1] == {
        "completions": [
            {"text": data.STEP2[0], "rating": 1, "flagged": False},
            {"text": data.STEP2[1], "rating": -1, "flagged": False},
        ],
        "human_completion": {"text": mine, "rating": None, "source": "human", "flagged": False},
        "chosen_completion": None,
    }
    # Into a fresh campaign: the same steps, ratings and choices, line for line.
    path = tmp_path / "ours.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in exported))
    fresh = make_campaign()
    import_file(path, campaign=fresh, fmt="prm800k")
    again = lines(fresh, tmp_path, "again.jsonl")
    key = lambda r: r["labeler"]  # noqa: E731
    assert sorted(again, key=key) == sorted(exported, key=key)
    twin = Solution.objects.get(campaign=fresh, content_hash=grown.content_hash)
    assert list(twin.steps.values_list("text", flat=True)) == [data.STEP1[1], mine]


def test_stopping_after_negative_candidates_finds_an_error(campaign, annotator, tmp_path):
    assignment = serve(campaign, annotator)
    view = rate_all(assignment, annotator, [-1, 1, 0])
    view = choose(assignment, annotator, view, "B")
    with pytest.raises(queue.LabelsInvalid, match="no final answer yet"):
        submit(assignment, annotator)
    view = rate_all(assignment, annotator, [-1, -1])
    assert view.stopped_at_error and view.selected is None

    result = submit(assignment, annotator)

    assert result.finish_reason == "found_error"
    labels = StepLabel.objects.filter(assignment_id=assignment.pk).order_by("step__index")
    assert [(lab.rating, lab.completion_index, lab.chosen_completion) for lab in labels] == [
        (1, 1, 1),
        (-1, 0, None),
    ]
    # PRM800K's reading of such a line: the last step is its first candidate.
    assert labels[1].step.text == data.STEP2[0]


def test_undo_takes_back_the_last_rating_then_the_choice(campaign, annotator):
    assignment = serve(campaign, annotator)
    view = rate_all(assignment, annotator, [0, 1, 0])
    view = choose(assignment, annotator, view, "B")
    queue.candidate_rate(
        assignment=assignment, annotator=annotator, candidate_id=view.candidates[0].id, rating=1
    )
    view = queue.phase1_open(assignment=assignment)
    assert view.undo_candidate == view.candidates[0].id

    assert queue.phase1_undo(
        assignment=assignment, annotator=annotator, candidate_id=view.candidates[0].id
    )
    # Retried: it names the rating just taken back, so the choice before it stays.
    assert (
        queue.phase1_undo(
            assignment=assignment, annotator=annotator, candidate_id=view.candidates[0].id
        )
        is None
    )
    assert len(queue.phase1_open(assignment=assignment).path) == 1
    queue.phase1_undo(assignment=assignment, annotator=annotator)
    view = queue.phase1_open(assignment=assignment)
    assert view.path == [] and [c.rating for c in view.candidates] == [0, 1, 0]


def test_nobody_else_sees_a_step_someone_wrote(campaign, annotator):
    first = serve(campaign, annotator)
    rate_all(first, annotator, [0, 1, 0])
    queue.step_write(assignment=first, annotator=annotator, position=0, text="My own start.")
    campaign.overlap = 3
    campaign.save()
    Solution.objects.filter(campaign=campaign).refresh_queue_state()
    other = make_member(campaign=campaign).user
    second = serve(campaign, other)

    view = queue.phase1_open(assignment=second)
    assert [c.text for c in view.candidates] == data.STEP1
    assert all(c.rating is None for c in view.candidates)


def test_a_plain_solution_grows_in_place_when_nobody_labelled_it(annotator):
    campaign = make_campaign(phase1_mode=True)
    member = make_member(campaign=campaign).user
    solution = make_solution(campaign=campaign, steps=["Let x = 1.", "Then x + 1 = 3."])
    assignment = serve(campaign, member)
    view = rate_all(assignment, member, [1])
    view = choose(assignment, member, view, "A")
    rate_all(assignment, member, [-1])
    queue.step_write(
        assignment=assignment,
        annotator=member,
        position=1,
        text="Then x + 1 = 2.\n\n# Answer\n\n2",
    )

    result = submit(assignment, member)

    assert result.solution_id == solution.pk
    assert list(solution.steps.values_list("text", flat=True)) == [
        "Let x = 1.",
        "Then x + 1 = 2.\n\n# Answer\n\n2",
    ]
    # The model's own step is kept as the candidate it was.
    assert StepCandidate.objects.filter(text="Then x + 1 = 3.", solution=solution).exists()


def test_the_api_refuses_a_list_of_ratings_in_phase_1_mode(campaign, annotator):
    assignment = serve(campaign, annotator)
    with pytest.raises(queue.LabelsInvalid, match="one at a time"):
        submit(assignment, annotator, ratings=[1])


def test_a_skip_drops_the_drafts_and_written_steps(campaign, annotator):
    assignment = serve(campaign, annotator)
    rate_all(assignment, annotator, [0, 1, 0])
    queue.step_write(assignment=assignment, annotator=annotator, position=0, text="Mine.")
    queue.assignment_skip(assignment=assignment, annotator=annotator)
    assert not CandidateLabel.objects.exists()
    assert not StepCandidate.objects.filter(source="human").exists()
