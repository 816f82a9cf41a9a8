"""The other formats: PRM800K phase 1 trajectories, ProcessBench, and JSONL in its three shapes."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command

from imports.pipeline import ImportValidationError, import_file
from labeling.models import Assignment, Membership, Problem, Solution, StepLabel
from tests.conftest import FIXTURES
from tests.factories import make_campaign

pytestmark = pytest.mark.django_db

TRAJECTORIES = FIXTURES / "prm800k_phase1_trajectories" / "phase1_train.trajectories.sample.jsonl"
PROCESSBENCH = FIXTURES / "processbench_samples" / "processbench_verbatim_samples.jsonl"
GSM8K = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"
QWEN = FIXTURES / "qwen25math_math_samples" / "math_cot.sample.jsonl"


def read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(tmp_path, *records, name="problems.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# --- prm800k-trajectories ----------------------------------------------------------------------


def test_trajectories_keep_every_candidate_with_its_rating():
    campaign = make_campaign()
    result = import_file(TRAJECTORIES, campaign=campaign, fmt="prm800k-trajectories", grade=False)

    lines = read(TRAJECTORIES)
    assert result.assignments_created == result.solutions_created == len(lines) == 5
    for line in lines:
        problem = Problem.objects.get(campaign=campaign, unique_id=line["question"]["unique_id"])
        assert problem.subject == line["question"]["subject"]
        assert problem.level == str(line["question"]["level"])
        assert problem.ground_truth_solution == line["question"]["ground_truth_solution"]
        labels = StepLabel.objects.filter(step__solution__problem=problem).order_by("step__index")
        assert len(labels) == len(line["label"]["steps"])
        for label, step in zip(labels, line["label"]["steps"], strict=True):
            own = label.completions(label.step.text)
            if label.completion_index is None:  # the step is the human completion
                assert label.step.text == step["human_completion"]
                assert label.human_completion == {
                    "text": step["human_completion"],
                    "rating": None,
                    "source": "human",
                    "flagged": None,
                }
            assert [c["text"] for c in own] == [c["text"] for c in step["completions"]]
            assert [c["rating"] for c in own] == [c["rating"] for c in step["completions"]]
            assert label.chosen_completion == step["chosen_completion"]
        # candidates keep all their keys (answer, is_solution, error_reason)
        alternatives = [a for label in labels for a in label.alternatives]
        originals = [c for step in line["label"]["steps"] for c in step["completions"]]
        assert all(a in originals for a in alternatives)


def test_trajectory_labels_belong_to_one_account():
    campaign = make_campaign()
    import_file(TRAJECTORIES, campaign=campaign, fmt="prm800k-trajectories", grade=False)
    assert set(Assignment.objects.values_list("annotator__username", flat=True)) == {
        "prm800k-phase1"
    }
    assert Membership.objects.get(campaign=campaign).role == Membership.Role.ANNOTATOR
    assert set(Assignment.objects.values_list("submitted_at", flat=True)) == {None}


def test_trajectory_finish_reasons_are_inferred_from_the_path():
    campaign = make_campaign()
    import_file(TRAJECTORIES, campaign=campaign, fmt="prm800k-trajectories", grade=False)
    reasons = dict(Assignment.objects.values_list("solution__problem__unique_id", "finish_reason"))
    expected = {}
    for line in read(TRAJECTORIES):
        inferred = line["label"]["finish_reason_inferred"]
        last = Assignment.objects.get(
            solution__problem__unique_id=line["question"]["unique_id"]
        ).labels.order_by("-step__index")[0]
        expected[line["question"]["unique_id"]] = (
            "solution"
            if inferred == "solution"
            else "found_error"
            if last.rating == -1
            else "give_up"
        )
    assert reasons == expected
    assert set(reasons.values()) == {"solution", "found_error", "give_up"}


def test_trajectories_take_the_answer_of_the_final_step():
    campaign = make_campaign()
    import_file(TRAJECTORIES, campaign=campaign, fmt="prm800k-trajectories")
    finished = Solution.objects.filter(assignments__finish_reason="solution")
    assert finished.exists()
    for solution in finished:
        assert solution.answer
        assert solution.answer_is_correct is not None


def test_a_labeler_option_names_the_trajectories_account():
    import_file(
        TRAJECTORIES,
        campaign=make_campaign(),
        fmt="prm800k-trajectories",
        grade=False,
        labeler="phase1-team",
    )
    assert set(Assignment.objects.values_list("annotator__username", flat=True)) == {"phase1-team"}


# --- processbench --------------------------------------------------------------------------------


def test_processbench_records_are_plain_solutions_by_default():
    campaign = make_campaign()
    result = import_file(PROCESSBENCH, campaign=campaign, fmt="processbench")

    records = read(PROCESSBENCH)
    assert result.solutions_created == len(records) == 9
    for record in records:
        solution = Solution.objects.get(campaign=campaign, source_ref=record["id"])
        assert list(solution.steps.values_list("text", flat=True)) == record["steps"]
        assert solution.kind == "regular"
        assert solution.generator == record["generator"]
        assert solution.answer_is_correct is record["final_answer_correct"]
        assert set(solution.steps.values_list("gold_rating", flat=True)) == {None}
        assert solution.problem.ground_truth_answer == ""


def test_processbench_labels_become_gold_ratings_as_gold():
    campaign = make_campaign()
    import_file(PROCESSBENCH, campaign=campaign, fmt="processbench", as_gold="qc")
    for record in read(PROCESSBENCH):
        solution = Solution.objects.get(campaign=campaign, source_ref=record["id"])
        gold = list(solution.steps.values_list("gold_rating", flat=True))
        k = record["label"]
        if k == -1:
            assert gold == [1] * len(record["steps"])
        else:
            assert gold[:k] == [1] * k and gold[k] == -1
            assert gold[k + 1 :] == [None] * (len(gold) - k - 1)
        assert solution.kind == "qc"


def test_a_processbench_label_past_the_last_step_is_refused(tmp_path):
    record = read(PROCESSBENCH)[0] | {"label": 99}
    with pytest.raises(ImportValidationError, match=r"problems.jsonl:1: label: 99 is past"):
        import_file(write(tmp_path, record), campaign=make_campaign(), fmt="processbench")


# --- jsonl: generic ------------------------------------------------------------------------------


def test_jsonl_takes_steps_as_given_or_split_from_text(tmp_path):
    record = {
        "problem": "What is $1+1$?",
        "ground_truth_answer": "2",
        "subject": "Arithmetic",
        "level": "Level 1",
        "solutions": [
            {"steps": ["One plus one.", "It is $\\boxed{2}$."], "generator": "a"},
            {"text": "First.\n\nSecond,\nstill second.\n\n# Answer\n\n3"},
            {"text": "Line one.\nLine two.\nA: 2", "answer": "2"},
        ],
    }
    campaign = make_campaign()
    result = import_file(write(tmp_path, record), campaign=campaign, fmt="jsonl")

    assert (result.problems_created, result.solutions_created) == (1, 3)
    steps = [list(s.steps.values_list("text", flat=True)) for s in Solution.objects.order_by("pk")]
    # The default splitter (``auto``) keeps PRM800K's "# Answer" heading with the answer, as
    # PRM800K's own last step is written; ``paragraphs`` is the splitter imports had before.
    assert steps == [
        ["One plus one.", "It is $\\boxed{2}$."],
        ["First.", "Second,\nstill second.", "# Answer\n\n3"],
        ["Line one.", "Line two.", "A: 2"],
    ]
    answers = list(Solution.objects.order_by("pk").values_list("answer", "answer_is_correct"))
    assert answers == [("2", True), ("3", False), ("2", True)]
    problem = Problem.objects.get()
    assert (problem.subject, problem.level) == ("Arithmetic", "1")

    other = make_campaign(slug="paragraphs")
    import_file(write(tmp_path, record), campaign=other, fmt="jsonl", split="paragraphs")
    solutions = Solution.objects.filter(campaign=other).order_by("pk")
    assert [list(s.steps.values_list("text", flat=True)) for s in solutions] == [
        ["One plus one.", "It is $\\boxed{2}$."],
        ["First.", "Second,\nstill second.", "# Answer", "3"],
        ["Line one.", "Line two.", "A: 2"],
    ]


def test_calculator_notes_are_hidden_in_steps_given_as_a_list_and_kept_raw(tmp_path):
    record = {
        "problem": "Tom has 60 apples and gives away 20. How many are left?",
        "ground_truth_answer": "40",
        "solutions": [{"steps": ["60-20=<<60-20=40>>40 apples are left.", "#### 40"]}],
    }
    import_file(write(tmp_path, record), campaign=make_campaign(), fmt="jsonl")
    steps = list(Solution.objects.get().steps.values_list("text", "raw_text"))
    assert steps == [
        ("60-20=40 apples are left.", "60-20=<<60-20=40>>40 apples are left."),
        ("#### 40", ""),
    ]


def test_jsonl_gold_ratings_make_quality_control_solutions(tmp_path):
    record = {
        "problem": "What is $2+2$?",
        "ground_truth_answer": "4",
        "solutions": [
            {"steps": ["2+2=5", "# Answer\n\n5"], "gold_ratings": [-1, None], "kind": "screening"},
            {"steps": ["2+2=4", "# Answer\n\n4"], "gold_ratings": [1, 1]},
        ],
    }
    import_file(write(tmp_path, record), campaign=make_campaign(), fmt="jsonl", as_gold="qc")
    kinds = [
        (s.kind, list(s.steps.values_list("gold_rating", flat=True)))
        for s in Solution.objects.order_by("pk")
    ]
    assert kinds == [("screening", [-1, None]), ("qc", [1, 1])]


def test_jsonl_gold_ratings_need_a_kind(tmp_path):
    record = {
        "problem": "p",
        "ground_truth_answer": "4",
        "solutions": [{"steps": ["a"], "gold_ratings": [1]}],
    }
    with pytest.raises(ImportValidationError, match=r"solutions\[0\]\.gold_ratings: only qc"):
        import_file(write(tmp_path, record), campaign=make_campaign(), fmt="jsonl")


@pytest.mark.parametrize(
    ("solution", "error"),
    [
        ({"steps": []}, "solutions[0].steps: must not be empty"),
        ({"steps": ["a", ""]}, "solutions[0].steps[1]: must not be empty"),
        ({"text": "  \n\n "}, "solutions[0].text: must not be empty"),
        ({"answer": "1"}, "solutions[0].steps: missing field (give steps or text)"),
        (
            {"steps": ["a"], "gold_ratings": [3], "kind": "qc"},
            "solutions[0].gold_ratings[0]: must be -1, 0, 1 or null, not 3",
        ),
    ],
)
def test_jsonl_bad_solutions(tmp_path, solution, error):
    record = {"problem": "p", "ground_truth_answer": "1", "solutions": [solution]}
    with pytest.raises(ImportValidationError) as caught:
        import_file(write(tmp_path, record), campaign=make_campaign(), fmt="jsonl")
    assert str(caught.value) == f"problems.jsonl:1: {error}"
    assert not Problem.objects.exists()


def test_jsonl_refuses_a_record_of_no_known_shape(tmp_path):
    # (A problem alone, {"problem": "p"}, is a known shape: tests/test_import_problems_only.py.)
    with pytest.raises(ImportValidationError, match=r"problems\.jsonl:1: solutions: missing field"):
        import_file(write(tmp_path, {"title": "p"}), campaign=make_campaign(), fmt="jsonl")


# --- jsonl: GSM8K and Qwen shapes --------------------------------------------------------------


def test_gsm8k_model_solutions_import_one_solution_per_model():
    campaign = make_campaign()
    import_file(GSM8K, campaign=campaign, fmt="jsonl")
    for record in read(GSM8K):
        problem = Problem.objects.get(campaign=campaign, text=record["question"])
        assert problem.ground_truth_answer == record["ground_truth"].rsplit("A: ", 1)[1]
        assert problem.ground_truth_solution == record["ground_truth"]
        for name in ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification"):
            solution = problem.solutions.get(generator=name)
            text = record[name]["solution"]
            # Calculator notes (<<16-3=13>>) are not shown; the step keeps them as raw text.
            lines = text.split("\n")
            steps = list(solution.steps.values_list("text", "raw_text"))
            assert [t for t, _ in steps] == [re.sub(r"<<[^<>]*>>", "", line) for line in lines]
            assert [raw or t for t, raw in steps] == lines
            assert solution.answer == text.rsplit("A: ", 1)[1]
            assert solution.answer_is_correct is record[name]["is_correct"]


def test_qwen_samples_import_one_solution_per_distinct_response():
    campaign = make_campaign()
    result = import_file(QWEN, campaign=campaign, fmt="jsonl")
    records = read(QWEN)
    assert result.solutions_created == sum(len(set(r["response"])) for r in records)
    for record in records:
        problem = Problem.objects.get(campaign=campaign, text=record["question"])
        assert problem.ground_truth_answer == record["gt"]
        assert problem.level == record["level"].removeprefix("Level ")
        first = {}  # identical responses are one solution: the first one's
        for i, response in enumerate(record["response"]):
            first.setdefault(response, i)
        for response, i in first.items():
            solution = problem.solutions.get(source_ref=f"{record['idx']}/{i}")
            assert solution.generator == "qwen2.5-math-instruct"
            assert solution.answer == record["pred"][i]
            assert solution.verifier_score == record["pred_score"][i][0]
            assert solution.answer_is_correct is record["score"][i]
            steps = solution.steps.values_list("text", flat=True)
            assert "\n\n".join(steps) == response.strip()


def test_the_command_imports_a_format_and_says_what_it_did(tmp_path, capsys):
    call_command("import_solutions", GSM8K, "--campaign=gsm8k", "--format=jsonl", "--no-grade")
    out = capsys.readouterr()
    assert "created campaign 'gsm8k'" in out.out
    assert "solutions +12" in out.out
    assert out.err == ""  # no progress bar when the output is not a terminal
    assert not Solution.objects.exclude(answer_is_correct=None).exists()
    call_command("grade_answers", "--campaign=gsm8k")
    assert not Solution.objects.filter(answer_is_correct=None).exists()


@pytest.mark.postgres
def test_a_large_import_refreshes_the_planner_statistics_of_what_it_wrote(monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from imports import pipeline

    campaign = make_campaign()
    with CaptureQueriesContext(connection) as small:
        import_file(GSM8K, campaign=campaign, fmt="jsonl", grade=False)
    assert not [q for q in small.captured_queries if q["sql"].startswith("ANALYZE")]

    monkeypatch.setattr(pipeline, "ANALYZE_AFTER_ROWS", 1)  # the fixture stands in for a big file
    with CaptureQueriesContext(connection) as large:
        import_file(QWEN, campaign=campaign, fmt="jsonl", grade=False)
    analyzed = [q["sql"] for q in large.captured_queries if q["sql"].startswith("ANALYZE")]
    assert analyzed == [
        f'ANALYZE "{table}"'
        for table in (
            "labeling_problem",
            "labeling_solution",
            "labeling_step",
            "labeling_assignment",
            "labeling_steplabel",
        )
    ]
