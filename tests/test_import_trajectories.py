"""Agent trajectories in: OpenAI-style chat, Anthropic-style blocks and AgentProcessBench's records;
and out again in AgentProcessBench's format, label for label."""

from __future__ import annotations

import json

import pytest

from exports.formats import ExportError, LabelPolicy, write_export
from imports.pipeline import ImportValidationError, import_file
from imports.sniff import guess_format
from labeling.models import Assignment, Campaign, Problem, Solution, Step, StepLabel
from labeling.traces import AGENT
from tests.conftest import FIXTURES
from tests.factories import make_campaign

pytestmark = pytest.mark.django_db

HERE = FIXTURES / "agent_trajectories"
OPENAI = HERE / "openai_chat.jsonl"
ANTHROPIC = HERE / "anthropic_messages.jsonl"
APB = HERE / "agentprocessbench.jsonl"
FILES = {"agent-openai": OPENAI, "agent-anthropic": ANTHROPIC, "agentprocessbench": APB}


def read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def agent_campaign(**fields) -> Campaign:
    return make_campaign(trace_kind="agent", stop_at_first_error=False, **fields)


def assistant_labels(record: dict) -> list[int | None]:
    """A record's step labels in the order of its assistant turns (None where unlabelled)."""
    labels = record.get("step_labels") or {}
    return [
        labels.get(str(i)) for i, m in enumerate(record["messages"]) if m["role"] == "assistant"
    ]


def exported(campaign, tmp_path, name="apb.jsonl") -> list[dict]:
    write_export(campaign=campaign, fmt="agentprocessbench", out=tmp_path / name)
    return read(tmp_path / name)


# --- round trips: every step label and final label unchanged, per format ---------------------


@pytest.mark.parametrize("fmt", list(FILES))
def test_an_import_exported_as_agentprocessbench_keeps_every_step_and_final_label(fmt, tmp_path):
    campaign = agent_campaign()
    import_file(FILES[fmt], campaign=campaign, fmt=fmt, grade=False)
    labelled = [r for r in read(FILES[fmt]) if r.get("step_labels")]
    records = exported(campaign, tmp_path)

    assert len(records) == len(labelled) > 0
    by_task = {r["question"]: r for r in records}
    for source in labelled:
        back = by_task[
            Problem.objects.get(campaign=campaign, solutions__source_ref=source["id"]).text
        ]
        assert assistant_labels(back) == assistant_labels(source)
        assert back["final_label"] == source["final_label"]
        assert back["id"] == source["id"]
        if fmt != "agent-anthropic":  # the chat shapes come back message for message
            assert back["messages"] == source["messages"]
            assert back["step_labels"] == source["step_labels"]


def test_agentprocessbench_comes_back_field_for_field(tmp_path):
    campaign = agent_campaign()
    import_file(APB, campaign=campaign, fmt="agentprocessbench", grade=False)
    records = {r["id"]: r for r in exported(campaign, tmp_path)}
    for source in read(APB):
        back = records[source["id"]]
        for key in ("question", "messages", "tools", "ground_truth", "answer_text"):
            assert back[key] == source[key], key
        assert back["step_labels"] == source["step_labels"]
        assert back["final_label"] == source["final_label"]


def test_the_export_round_trips_a_second_time_unchanged(tmp_path):
    first = agent_campaign()
    import_file(APB, campaign=first, fmt="agentprocessbench", grade=False)
    once = tmp_path / "once.jsonl"
    by_name = LabelPolicy(annotator_ids="username")  # pseudonyms differ between campaigns
    write_export(campaign=first, fmt="agentprocessbench", out=once, policy=by_name)
    second = agent_campaign()
    import_file(once, campaign=second, fmt="agentprocessbench", grade=False)
    twice = tmp_path / "twice.jsonl"
    write_export(campaign=second, fmt="agentprocessbench", out=twice, policy=by_name)
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(read(once), key=key) == sorted(read(twice), key=key)


# --- what each field became ------------------------------------------------------------------


def test_each_assistant_turn_is_one_step_and_the_rest_is_context():
    campaign = agent_campaign()
    result = import_file(OPENAI, campaign=campaign, fmt="agent-openai", grade=False)
    assert result.solutions_created == 3
    rivers = Solution.objects.get(campaign=campaign, source_ref="oa-rivers")
    steps = list(rivers.steps.order_by("index"))
    assert len(steps) == 4
    first = steps[0].content
    assert first["message"] == 2
    assert first["tool_calls"] == [
        {"id": "call_1", "name": "search", "arguments": {"query": "Danube length km"}}
    ]
    assert first["results"][0]["content"].startswith("The Danube is about 2,850 km")
    assert steps[0].text == AGENT.step_text("", first)
    assert "Tool call: search" in steps[0].text and "Tool result: The Danube" in steps[0].text
    assert rivers.problem.text == "How many kilometres longer is the Danube than the Rhine?"
    assert rivers.problem.ground_truth_answer == "1620"
    assert rivers.answer == "The Danube is about 1,620 km longer than the Rhine."
    assert [m["role"] for m in rivers.trace["messages"]][:2] == ["system", "user"]
    assert rivers.trace["tools"][0]["function"]["name"] == "search"
    assert rivers.trace["steps"] == [2, 4, 6, 8]


def test_parallel_calls_each_get_their_result():
    campaign = agent_campaign()
    import_file(OPENAI, campaign=campaign, fmt="agent-openai", grade=False)
    step = Step.objects.get(solution__source_ref="oa-landmarks", index=0)
    assert [r["tool_call_id"] for r in step.content["results"]] == ["call_1", "call_2"]
    assert step.content["text"] == ""


def test_anthropic_blocks_become_calls_and_tool_messages():
    campaign = agent_campaign()
    import_file(ANTHROPIC, campaign=campaign, fmt="agent-anthropic", grade=False)
    runner = Solution.objects.get(source_ref="an-bladerunner")
    roles = [m["role"] for m in runner.trace["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    step = runner.steps.get(index=1)
    assert step.content["tool_calls"][0] == {
        "id": "tu_2",
        "name": "search",
        "arguments": {"query": "Do Androids Dream of Electric Sheep author"},
    }
    assert step.content["results"][0]["content"].startswith("Philip K. Dick")
    odd = Solution.objects.get(source_ref="an-odd")
    assert odd.trace["messages"][0] == {"role": "system", "content": "Answer with a number."}
    assert odd.trace["tools"][0]["function"]["parameters"]["required"] == ["code"]


def test_a_user_turn_between_steps_goes_with_the_next_step():
    campaign = agent_campaign()
    import_file(APB, campaign=campaign, fmt="agentprocessbench", grade=False)
    step = Step.objects.get(solution__source_ref="apb-airline", index=2)
    assert step.content["before"] == [{"role": "user", "content": "Yes, go ahead."}]


def test_people_labels_are_imported_as_a_submitted_assignment_with_the_outcome():
    campaign = agent_campaign()
    import_file(APB, campaign=campaign, fmt="agentprocessbench", grade=False)
    dates = Assignment.objects.get(solution__source_ref="apb-dates")
    assert dates.status == Assignment.Status.SUBMITTED
    assert dates.annotator.username == "agentprocessbench"
    assert dates.outcome_rating == 1
    ratings = list(
        StepLabel.objects.filter(assignment=dates)
        .order_by("step__index")
        .values_list("rating", flat=True)
    )
    source = next(r for r in read(APB) if r["id"] == "apb-dates")
    assert ratings == assistant_labels(source)
    assert len(ratings) == 12


def test_the_recorded_outcome_is_the_answer_correctness():
    campaign = agent_campaign()
    import_file(OPENAI, campaign=campaign, fmt="agent-openai", grade=False)
    correct = dict(Solution.objects.values_list("source_ref", "answer_is_correct"))
    assert correct == {"oa-rivers": True, "oa-miles": False, "oa-landmarks": True}
    import_file(APB, campaign=campaign, fmt="agentprocessbench", grade=False)
    # final_label 0 records no outcome either way: the answer is graded (or stays unknown)
    assert Solution.objects.get(source_ref="apb-airline").answer_is_correct is None


def test_identical_content_imported_twice_creates_nothing():
    campaign = agent_campaign()
    for fmt, path in FILES.items():
        import_file(path, campaign=campaign, fmt=fmt, grade=False)
    counts = [m.objects.count() for m in (Problem, Solution, Step, Assignment, StepLabel)]
    for fmt, path in FILES.items():
        again = import_file(path, campaign=campaign, fmt=fmt, grade=False)
        assert again.solutions_created == again.assignments_created == 0
    assert [m.objects.count() for m in (Problem, Solution, Step, Assignment, StepLabel)] == counts


def test_each_shape_is_guessed_from_its_first_record():
    for fmt, path in FILES.items():
        assert guess_format(read(path)[0]) == fmt


# --- the campaign's kind decides -------------------------------------------------------------


def test_a_math_campaign_refuses_trajectories_and_an_agent_campaign_refuses_math(tmp_path):
    with pytest.raises(ImportValidationError) as caught:
        import_file(OPENAI, campaign=make_campaign(), fmt="agent-openai")
    assert "it labels math solutions" in str(caught.value.errors[0])
    math = FIXTURES / "processbench_samples" / "processbench_verbatim_samples.jsonl"
    with pytest.raises(ImportValidationError) as caught:
        import_file(math, campaign=agent_campaign(), fmt="processbench")
    assert "agent trajectories" in str(caught.value.errors[0])
    assert not Solution.objects.exists()


def test_prm800k_export_of_trajectories_is_refused_with_its_reason(tmp_path):
    campaign = agent_campaign()
    import_file(APB, campaign=campaign, fmt="agentprocessbench", grade=False)
    with pytest.raises(ExportError, match="prm800k cannot export this campaign: PRM800K's"):
        write_export(campaign=campaign, fmt="prm800k", out=tmp_path / "x.jsonl")


def test_the_trainers_formats_carry_the_assistant_steps(tmp_path):
    campaign = agent_campaign()
    import_file(APB, campaign=campaign, fmt="agentprocessbench", grade=False)
    policy = LabelPolicy(cut_after_first_negative=False)
    write_export(campaign=campaign, fmt="trl", out=tmp_path / "t.jsonl", policy=policy)
    rows = {r["prompt"]: r for r in read(tmp_path / "t.jsonl")}
    dates = Solution.objects.get(source_ref="apb-dates")
    row = rows[dates.problem.text]
    assert row["completions"] == list(dates.steps.order_by("index").values_list("text", flat=True))
    assert row["completions"][0].startswith("Let me run the failing test")
    assert "Tool call: bash" in row["completions"][0]
    source = next(r for r in read(APB) if r["id"] == "apb-dates")
    assert row["labels"] == [r >= 0 for r in assistant_labels(source)]
    write_export(campaign=campaign, fmt="math-shepherd", out=tmp_path / "m.jsonl", policy=policy)
    assert any("Tool call: bash" in r["input"] for r in read(tmp_path / "m.jsonl"))
    write_export(campaign=campaign, fmt="csv", out=tmp_path / "c.csv")
    assert "Tool call: bash" in (tmp_path / "c.csv").read_text()


def test_the_upload_preview_shows_each_turn_as_a_step():
    from django.core.files.uploadedfile import SimpleUploadedFile

    from imports.services import import_preview

    upload = SimpleUploadedFile("chat.jsonl", OPENAI.read_bytes())
    preview = import_preview(upload=upload, fmt="agent-openai")
    assert preview["errors"] == []
    first = preview["solutions"][0]
    assert first["problem"] == "How many kilometres longer is the Danube than the Rhine?"
    assert len(first["steps"]) == 4
    assert first["steps"][0]["text"].startswith("I will look up the Danube's length first.")
