"""Importing raw PRM800K label lines: every field lands in the models, losslessly."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model

from bench.synthetic import records
from imports.pipeline import ImportValidationError, import_file
from labeling.models import Assignment, Membership, Problem, Solution, Step, StepLabel
from tests.conftest import FIXTURES
from tests.factories import make_campaign

pytestmark = pytest.mark.django_db

RAW = FIXTURES / "prm800k_raw_samples"
FILES = [RAW / "phase1_train_examples.jsonl", RAW / "phase2_train_examples.jsonl"]


def fixture_lines() -> list[dict]:
    return [json.loads(line) for path in FILES for line in path.read_text().splitlines()]


def write_lines(tmp_path, lines: list[dict], name: str = "lines.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def line_from_models(assignment: Assignment) -> dict:
    """A PRM800K line rebuilt from the models alone, by the mapping in labeling/models.py."""
    solution, problem = assignment.solution, assignment.solution.problem
    question = {"problem": problem.text, "ground_truth_answer": problem.ground_truth_answer}
    steps = {s.pk: s for s in solution.steps.all()}
    if solution.pre_generated:
        question |= {
            "ground_truth_solution": problem.ground_truth_solution,
            "pre_generated_steps": [s.text for s in solution.steps.order_by("index")],
            "pre_generated_answer": solution.answer,
            "pre_generated_verifier_score": solution.verifier_score,
        }
    labels = assignment.labels.order_by("step__index")
    return {
        "labeler": assignment.annotator.username,
        "timestamp": assignment.submitted_at.astimezone(UTC).replace(tzinfo=None).isoformat(),
        "generation": solution.generation,
        "is_quality_control_question": solution.kind == Solution.Kind.QUALITY_CONTROL,
        "is_initial_screening_question": solution.kind == Solution.Kind.SCREENING,
        "question": question,
        "label": {
            "steps": [
                {
                    "completions": label.completions(steps[label.step_id].text),
                    "human_completion": label.human_completion,
                    "chosen_completion": label.chosen_completion,
                }
                for label in labels
            ],
            "total_time": assignment.total_time_ms,
            "finish_reason": assignment.finish_reason or None,
        },
    }


def import_fixtures(campaign, **kwargs):
    return [import_file(path, campaign=campaign, fmt="prm800k", **kwargs) for path in FILES]


def test_the_12_fixture_lines_import_field_for_field():
    campaign = make_campaign()
    import_fixtures(campaign, grade=False)

    expected = fixture_lines()
    assert Assignment.objects.filter(campaign=campaign).count() == len(expected) == 12
    for line in expected:
        assignment = Assignment.objects.get(
            campaign=campaign,
            annotator__username=line["labeler"],
            submitted_at=datetime.fromisoformat(line["timestamp"]).replace(tzinfo=UTC),
        )
        assert line_from_models(assignment) == line


def test_it_counts_what_it_created():
    campaign = make_campaign()
    phase1, phase2 = import_fixtures(campaign, grade=False)
    assert (phase1.lines, phase1.solutions_created, phase1.assignments_created) == (3, 3, 3)
    assert phase1.steps_created == phase1.step_labels_created == 42
    assert (phase2.lines, phase2.solutions_created, phase2.assignments_created) == (9, 9, 9)
    assert phase2.steps_created == Step.objects.filter(solution__pre_generated=True).count()
    assert phase2.step_labels_created == sum(
        len(line["label"]["steps"]) for line in fixture_lines()[3:]
    )
    assert phase1.problems_created + phase2.problems_created == Problem.objects.count()


def test_each_labeler_becomes_an_annotator_account_of_the_campaign():
    campaign = make_campaign()
    import_fixtures(campaign, grade=False)

    labelers = {line["labeler"] for line in fixture_lines()}
    users = get_user_model().objects.filter(username__in=labelers)
    assert users.count() == len(labelers) == 11
    assert not any(user.has_usable_password() for user in users)
    roles = Membership.objects.filter(campaign=campaign).values_list("user__username", "role")
    assert dict(roles) == dict.fromkeys(labelers, Membership.Role.ANNOTATOR)


def test_a_phase1_path_is_the_chosen_else_human_else_first_completion():
    campaign = make_campaign()
    import_file(FILES[0], campaign=campaign, fmt="prm800k", grade=False)
    first = fixture_lines()[0]

    solution = Solution.objects.get(
        campaign=campaign, assignments__annotator__username=first["labeler"]
    )
    assert solution.pre_generated is False
    texts = list(solution.steps.values_list("text", flat=True))
    assert texts[0] == first["label"]["steps"][0]["completions"][0]["text"]  # chosen 0
    assert texts[1] == first["label"]["steps"][1]["human_completion"]["text"]  # human
    assert texts[5] == first["label"]["steps"][5]["completions"][4]["text"]  # chosen 4
    assert solution.answer == "29"  # from the last step's "# Answer"
    human = StepLabel.objects.get(step__solution=solution, step__index=1)
    assert (human.completion_index, human.rating, len(human.alternatives)) == (None, None, 5)


def test_a_line_with_a_timestamp_is_submitted_at_that_utc_microsecond():
    campaign = make_campaign()
    import_file(FILES[1], campaign=campaign, fmt="prm800k", grade=False)
    assignment = Assignment.objects.get(annotator__username=fixture_lines()[3]["labeler"])
    assert assignment.submitted_at == datetime(2022, 11, 22, 16, 51, 29, 980606, tzinfo=UTC)
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.source == "prm800k"


def test_reimporting_the_same_files_creates_nothing():
    campaign = make_campaign()
    import_fixtures(campaign)
    counts = [m.objects.count() for m in (Problem, Solution, Step, Assignment, StepLabel)]

    again = import_fixtures(campaign)

    assert [m.objects.count() for m in (Problem, Solution, Step, Assignment, StepLabel)] == counts
    for result in again:
        assert result.problems_created == result.solutions_created == 0
        assert result.assignments_created == result.step_labels_created == 0
        assert result.solutions_existing == result.assignments_existing == result.lines


def test_a_line_twice_in_a_file_is_one_assignment(tmp_path):
    line = fixture_lines()[5]
    campaign = make_campaign()
    result = import_file(write_lines(tmp_path, [line, line]), campaign=campaign, fmt="prm800k")
    assert (result.assignments_created, result.assignments_existing) == (1, 1)


def test_the_same_file_can_go_into_two_campaigns():
    first, second = make_campaign(), make_campaign()
    import_fixtures(first, grade=False)
    import_fixtures(second, grade=False)
    assert Assignment.objects.filter(campaign=second).count() == 12
    assert get_user_model().objects.count() == 11


def test_several_labelers_of_one_pre_generated_solution_share_it(tmp_path):
    line = fixture_lines()[3]
    other = json.loads(json.dumps(line)) | {"labeler": "another-labeler"}
    campaign = make_campaign(overlap=3)
    result = import_file(write_lines(tmp_path, [line, other]), campaign=campaign, fmt="prm800k")

    assert (result.solutions_created, result.assignments_created) == (1, 2)
    solution = Solution.objects.get(campaign=campaign)
    assert (solution.assignment_count, solution.is_open) == (2, True)


def test_labelled_solutions_take_their_slots_in_the_queue():
    campaign = make_campaign(overlap=1)
    import_fixtures(campaign, grade=False)
    # A label holds a slot as a submitted assignment does: one that gave up leaves it free (the
    # fixture has one such line), as the queue's own rule (``Assignment.holds_slot``) says.
    gave_up = set(
        Assignment.objects.filter(finish_reason="give_up").values_list("solution_id", flat=True)
    )
    assert len(gave_up) == 1
    states = dict(Solution.objects.values_list("pk", "assignment_count"))
    assert {pk: n for pk, n in states.items() if pk in gave_up} == dict.fromkeys(gave_up, 0)
    assert set(
        Solution.objects.exclude(pk__in=gave_up).values_list("assignment_count", "is_open")
    ) == {(1, False)}
    assert set(Solution.objects.filter(pk__in=gave_up).values_list("is_open", flat=True)) == {True}
    # ... the same counts the queue's recount gives
    Solution.objects.filter(campaign=campaign).refresh_queue_state()
    assert dict(Solution.objects.values_list("pk", "assignment_count")) == states


def test_unlabelled_lines_become_open_solutions_without_assignments(tmp_path):
    path = write_lines(tmp_path, list(records(8, labelled=False)))
    campaign = make_campaign(overlap=2)
    result = import_file(path, campaign=campaign, fmt="prm800k", grade=False)

    assert (result.solutions_created, result.assignments_created, result.users_created) == (8, 0, 0)
    assert set(Solution.objects.values_list("assignment_count", "is_open")) == {(0, True)}
    assert all(s.answer and s.verifier_score is not None for s in Solution.objects.all())


def test_quality_control_and_screening_lines_keep_their_kind(tmp_path):
    qc, screening = (json.loads(json.dumps(line)) for line in fixture_lines()[3:5])
    qc["is_quality_control_question"] = True
    screening["is_initial_screening_question"] = True
    campaign = make_campaign()
    import_file(write_lines(tmp_path, [qc, screening]), campaign=campaign, fmt="prm800k")

    kinds = dict(Solution.objects.values_list("assignments__annotator__username", "kind"))
    assert kinds == {qc["labeler"]: "qc", screening["labeler"]: "screening"}
    for line in (qc, screening):
        assignment = Assignment.objects.get(annotator__username=line["labeler"])
        assert line_from_models(assignment) == line


def test_it_grades_the_answers_after_the_rows_are_in():
    campaign = make_campaign()
    results = import_fixtures(campaign)

    graded = dict(Solution.objects.values_list("answer", "answer_is_correct"))
    assert graded["29"] is True  # phase 1 path ending "# Answer\n\n29", truth 29
    assert graded["7200"] is False  # phase 2, truth 28800
    assert graded["\\frac{1}{9}"] is not None
    assert (
        sum(r.solutions_graded for r in results)
        == Solution.objects.exclude(answer_is_correct=None).count()
    )


def test_no_grade_leaves_answers_ungraded():
    campaign = make_campaign()
    import_fixtures(campaign, grade=False)
    assert not Solution.objects.exclude(answer_is_correct=None).exists()


def test_a_phase2_label_must_rate_the_pre_generated_steps_in_order(tmp_path):
    line = json.loads(json.dumps(fixture_lines()[3]))
    line["label"]["steps"][2]["completions"][0]["text"] = "Something else."
    with pytest.raises(ImportValidationError) as caught:
        import_file(write_lines(tmp_path, [line]), campaign=make_campaign(), fmt="prm800k")
    assert str(caught.value).startswith(
        "lines.jsonl:1: label.steps[2].completions[0].text: is not question.pre_generated_steps[2]"
    )
    assert not Solution.objects.exists()


def test_a_later_import_that_labels_an_existing_solution_recounts_its_slots(tmp_path):
    line = fixture_lines()[3]
    other = json.loads(json.dumps(line)) | {"labeler": "another-labeler"}
    campaign = make_campaign(overlap=2)
    import_file(write_lines(tmp_path, [line], "one.jsonl"), campaign=campaign, fmt="prm800k")
    solution = Solution.objects.get(campaign=campaign)
    assert (solution.assignment_count, solution.is_open) == (1, True)

    result = import_file(
        write_lines(tmp_path, [other], "two.jsonl"), campaign=campaign, fmt="prm800k"
    )

    assert (result.solutions_existing, result.assignments_created) == (1, 1)
    solution.refresh_from_db()
    assert (solution.assignment_count, solution.is_open) == (2, False)
    assert StepLabel.objects.filter(assignment__annotator__username="another-labeler").count() == 7


def test_a_phase2_problem_fills_in_the_solution_a_phase1_line_lacked(tmp_path):
    phase2 = fixture_lines()[3]
    phase1 = json.loads(json.dumps(fixture_lines()[0]))
    phase1["question"]["problem"] = phase2["question"]["problem"]
    phase1["question"]["ground_truth_answer"] = phase2["question"]["ground_truth_answer"]
    campaign = make_campaign()
    import_file(write_lines(tmp_path, [phase1, phase2]), campaign=campaign, fmt="prm800k")

    problem = Problem.objects.get(campaign=campaign)
    assert problem.ground_truth_solution == phase2["question"]["ground_truth_solution"]
    for line in (phase1, phase2):
        assignment = Assignment.objects.get(annotator__username=line["labeler"])
        assert line_from_models(assignment) == line
