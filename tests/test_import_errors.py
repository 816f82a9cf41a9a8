"""Bad input: each case names file, line and field, and nothing at all is written."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from imports.pipeline import ImportValidationError, import_file
from labeling.models import Assignment, Campaign, Membership, Problem, Solution, Step, StepLabel
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_problem

pytestmark = pytest.mark.django_db

GOOD = json.loads(
    (FIXTURES / "prm800k_raw_samples" / "phase2_train_examples.jsonl").open().readline()
)


def good() -> dict:
    return json.loads(json.dumps(GOOD))


def nothing_written() -> bool:
    models = (Problem, Solution, Step, Assignment, StepLabel, Membership, get_user_model())
    return not any(m.objects.exists() for m in models)


def errors_of(path, fmt="prm800k", **options) -> list[str]:
    with pytest.raises(ImportValidationError) as caught:
        import_file(path, campaign=make_campaign(), fmt=fmt, **options)
    assert nothing_written()
    return [str(e) for e in caught.value.errors]


def write(tmp_path, *lines, name="phase2.jsonl"):
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_a_line_that_is_not_json_is_named(tmp_path):
    errors = errors_of(write(tmp_path, good(), '{"labeler": "x", '))
    assert len(errors) == 1
    assert errors[0].startswith("phase2.jsonl:2: not valid JSON")


def test_a_line_that_is_not_an_object(tmp_path):
    assert errors_of(write(tmp_path, "[1, 2]")) == ["phase2.jsonl:1: must be a JSON object"]


def test_a_missing_field(tmp_path):
    line = good()
    del line["question"]["problem"]
    assert errors_of(write(tmp_path, good(), line)) == [
        "phase2.jsonl:2: question.problem: missing field"
    ]


def test_a_field_of_the_wrong_type(tmp_path):
    line = good()
    line["question"]["pre_generated_steps"][3] = 42
    assert errors_of(write(tmp_path, line)) == [
        "phase2.jsonl:1: question.pre_generated_steps[3]: must be a string"
    ]


def test_a_rating_outside_minus_one_to_one(tmp_path):
    line = good()
    line["label"]["steps"][4]["completions"][0]["rating"] = 2
    assert errors_of(write(tmp_path, line)) == [
        "phase2.jsonl:1: label.steps[4].completions[0].rating: must be -1, 0, 1 or null, not 2"
    ]


@pytest.mark.parametrize(
    ("where", "field"),
    [("question", "question.pre_generated_steps"), ("label", "label.steps")],
)
def test_empty_steps(tmp_path, where, field):
    line = good()
    line[where]["pre_generated_steps" if where == "question" else "steps"] = []
    assert errors_of(write(tmp_path, line)) == [f"phase2.jsonl:1: {field}: must not be empty"]


def test_an_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    assert errors_of(path) == ["empty.jsonl: the file holds no records"]


def test_an_unknown_format(tmp_path):
    assert errors_of(write(tmp_path, good()), fmt="csv") == [
        "phase2.jsonl: unknown format 'csv' (one of prm800k, prm800k-trajectories, "
        "processbench, jsonl)"
    ]


def test_a_missing_file(tmp_path):
    assert errors_of(tmp_path / "nope.jsonl") == ["nope.jsonl: no such file"]


def test_an_unknown_finish_reason(tmp_path):
    line = good()
    line["label"]["finish_reason"] = "bored"
    assert errors_of(write(tmp_path, line))[0].startswith(
        "phase2.jsonl:1: label.finish_reason: must be one of found_error, solution"
    )


def test_a_bad_last_line_stops_the_good_lines_before_it(tmp_path):
    lines = [
        json.loads(x)
        for x in (FIXTURES / "prm800k_raw_samples")
        .joinpath("phase2_train_examples.jsonl")
        .read_text()
        .splitlines()
    ]
    lines[-1]["timestamp"] = "yesterday"
    errors = errors_of(write(tmp_path, *lines))
    assert errors == ["phase2.jsonl:9: timestamp: not an ISO 8601 timestamp: 'yesterday'"]


def test_it_reports_up_to_20_errors_and_then_stops(tmp_path):
    with pytest.raises(ImportValidationError) as caught:
        import_file(write(tmp_path, *["nope"] * 30), campaign=make_campaign(), fmt="prm800k")
    assert len(caught.value.errors) == 20
    assert caught.value.truncated
    assert str(caught.value).endswith("(stopped after 20 errors)")
    assert [e.line for e in caught.value.errors] == list(range(1, 21))


def test_one_problem_with_two_ground_truths_in_a_file(tmp_path):
    other = good()
    other["question"]["ground_truth_answer"] = "1"
    assert errors_of(write(tmp_path, good(), other)) == [
        "phase2.jsonl:2: ground_truth_answer: '1' differs from '28800' on line 1 for this problem"
    ]


def test_a_ground_truth_that_contradicts_the_campaign_rolls_everything_back(tmp_path):
    campaign = make_campaign()
    make_problem(campaign=campaign, text=GOOD["question"]["problem"], ground_truth_answer="5")
    lines = [
        json.loads(x)
        for x in (FIXTURES / "prm800k_raw_samples")
        .joinpath("phase2_train_examples.jsonl")
        .read_text()
        .splitlines()
    ]
    with pytest.raises(ImportValidationError) as caught:
        import_file(write(tmp_path, *lines[1:], lines[0]), campaign=campaign, fmt="prm800k")
    assert str(caught.value) == (
        "phase2.jsonl:9: ground_truth_answer: '28800', but the campaign has this problem with '5'"
    )
    assert Problem.objects.count() == 1
    assert not Solution.objects.exists()
    assert not get_user_model().objects.exists()


def test_the_command_fails_with_the_errors_and_writes_nothing(tmp_path):
    line = good()
    line["question"]["pre_generated_steps"][3] = 42
    with pytest.raises(CommandError) as caught:
        call_command(
            "import_solutions", write(tmp_path, line), "--campaign=new", "--format=prm800k"
        )
    assert "phase2.jsonl:1: question.pre_generated_steps[3]: must be a string" in str(caught.value)
    assert nothing_written()
    assert not Campaign.objects.exists()


def test_the_command_refuses_a_missing_campaign_when_told_not_to_create_it(tmp_path):
    with pytest.raises(CommandError, match="no campaign 'new'"):
        call_command(
            "import_solutions",
            write(tmp_path, good()),
            "--campaign=new",
            "--format=prm800k",
            "--no-create",
        )
    assert not Campaign.objects.exists()


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda s: s["completions"][0].update(flagged=0),
            "label.steps[1].completions[0].flagged: must be true or false or null",
        ),
        (
            lambda s: s["completions"][0].update(rating=True),
            "label.steps[1].completions[0].rating: must be -1, 0, 1 or null, not true",
        ),
        (
            lambda s: s["completions"][0].pop("text"),
            "label.steps[1].completions[0].text: missing field",
        ),
        (lambda s: s.pop("human_completion"), "label.steps[1].human_completion: missing field"),
        (
            lambda s: s.update(human_completion="a correction"),
            "label.steps[1].human_completion: must be an object",
        ),
        (
            lambda s: s.update(chosen_completion=3),
            "label.steps[1].chosen_completion: 3 is not an index of its completions",
        ),
        (
            lambda s: s.update(chosen_completion="0"),
            "label.steps[1].chosen_completion: must be an integer or null",
        ),
        (lambda s: s.update(completions={}), "label.steps[1].completions: must be a list"),
    ],
)
def test_a_malformed_label_step_is_named_precisely(tmp_path, change, error):
    line = good()
    change(line["label"]["steps"][1])
    assert errors_of(write(tmp_path, line)) == [f"phase2.jsonl:1: {error}"]


def test_an_error_while_writing_stops_the_reading_ahead_and_rolls_back(tmp_path):
    from bench.synthetic import records

    lines = list(records(2500, labelled=False))  # several write batches
    campaign = make_campaign()
    make_problem(campaign=campaign, text=lines[0]["question"]["problem"], ground_truth_answer="-1")
    with pytest.raises(ImportValidationError, match=r"phase2\.jsonl:1: ground_truth_answer"):
        import_file(write(tmp_path, *lines), campaign=campaign, fmt="prm800k")
    assert Problem.objects.count() == 1
    assert not Solution.objects.exists()


# --- agent trajectories ----------------------------------------------------------------------

TRAJECTORIES = FIXTURES / "agent_trajectories"


def trajectory(name: str = "agentprocessbench.jsonl", at: int = 0) -> dict:
    lines = (TRAJECTORIES / name).read_text().splitlines()
    return json.loads(lines[at])


def trajectory_errors(path, fmt) -> list[str]:
    with pytest.raises(ImportValidationError) as caught:
        import_file(path, campaign=make_campaign(trace_kind="agent"), fmt=fmt)
    assert nothing_written()
    return [str(e) for e in caught.value.errors]


def test_a_tool_result_without_its_call_is_refused_with_its_field(tmp_path):
    record = trajectory()
    record["messages"][3]["tool_call_id"] = "call_99"
    path = write(tmp_path, trajectory(at=1), record, name="apb.jsonl")
    assert trajectory_errors(path, "agentprocessbench") == [
        "apb.jsonl:2: messages[3].tool_call_id: 'call_99' answers no tool call made before it "
        "(a result without its call)"
    ]


def test_an_anthropic_tool_result_without_its_call_is_refused_with_its_block(tmp_path):
    record = trajectory("anthropic_messages.jsonl")
    record["messages"][2]["content"][0]["tool_use_id"] = "tu_9"
    path = write(tmp_path, record, name="claude.jsonl")
    assert trajectory_errors(path, "agent-anthropic") == [
        "claude.jsonl:1: messages[2].content[0].tool_use_id: 'tu_9' answers no tool call made "
        "before it (a result without its call)"
    ]


def test_labels_keyed_to_a_user_turn_are_refused(tmp_path):
    record = trajectory()
    record["step_labels"]["1"] = 1  # message 1 is the user's task
    path = write(tmp_path, record, name="apb.jsonl")
    assert trajectory_errors(path, "agentprocessbench") == [
        "apb.jsonl:1: step_labels.1: message 1 is a user turn; only assistant turns are steps"
    ]


def test_labels_keyed_to_a_tool_result_are_refused(tmp_path):
    record = trajectory("openai_chat.jsonl")
    record["step_labels"]["3"] = 0
    path = write(tmp_path, record, name="chat.jsonl")
    assert trajectory_errors(path, "agent-openai") == [
        "chat.jsonl:1: step_labels.3: message 3 is a tool turn; only assistant turns are steps"
    ]


def test_a_step_index_out_of_range_is_refused(tmp_path):
    record = trajectory()
    record["step_labels"]["40"] = -1
    path = write(tmp_path, record, name="apb.jsonl")
    assert trajectory_errors(path, "agentprocessbench") == [
        "apb.jsonl:1: step_labels.40: message 40 is out of range: the trajectory has 25 messages"
    ]


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda r: r["step_labels"].update({"2": 5}),
            "step_labels.2: must be -1, 0, 1 or null, not 5",
        ),
        (lambda r: r.update(final_label="yes"), 'final_label: must be -1, 0, 1 or null, not "yes"'),
        (
            lambda r: r["messages"][2].update(role="robot"),
            "messages[2].role: 'robot' is not system, developer, user, assistant or tool",
        ),
        (lambda r: r.pop("question"), "question: missing field"),
        (
            lambda r: r.update(messages=r["messages"][:2], step_labels={}),
            "messages: no assistant turn: a trajectory needs at least one step to rate",
        ),
        (
            lambda r: r["step_labels"].update({"two": 1}),
            "step_labels.two: a key is a message's index in messages (0, 1, ...)",
        ),
        (
            lambda r: r["messages"][2]["tool_calls"][0]["function"].pop("name"),
            "messages[2].tool_calls[0].function.name: missing field",
        ),
    ],
)
def test_a_malformed_trajectory_is_named_precisely(tmp_path, change, error):
    record = trajectory()
    change(record)
    path = write(tmp_path, record, name="apb.jsonl")
    assert trajectory_errors(path, "agentprocessbench") == [f"apb.jsonl:1: {error}"]
