"""The built-in PRM on an agent trajectory campaign: an active-learning run trains it on people's
labels of assistant turns, evaluates it on held-out tasks, scores the open trajectories and orders
the queue, with the outcome (graded from the answer here) playing answer correctness's part.

The trajectories are written here (``trajectory_records``): arithmetic tasks an agent solves with
a calculator tool, right (it multiplies) or wrong (it adds), in AgentProcessBench's shape.
"""

from __future__ import annotations

import json

import pytest

from imports.pipeline import import_file
from labeling.models import Solution, Step
from labeling.traces import AGENT
from learning.models import ActiveLearningRun, PRMModel
from learning.run import active_learning_run
from tests.factories import make_campaign

CALCULATOR = {
    "type": "function",
    "function": {
        "name": "python",
        "description": "Run a Python snippet and return what it prints.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
    },
}


def call(k: int, code: str) -> list[dict]:
    return [
        {
            "id": f"call_{k}",
            "type": "function",
            "function": {"name": "python", "arguments": json.dumps({"code": code})},
        }
    ]


def trajectory_records(tasks: int = 48) -> list[dict]:
    """Four trajectories per task: two labelled by a person (one right, one wrong), two open."""
    out = []
    for t in range(tasks):
        a, b = 12 + t, 7 + (t * 5) % 13
        question = f"Use the calculator to find the product of {a} and {b}."
        for variant in range(4):
            wrong = variant % 2 == 1
            op = "+" if wrong else "*"
            result = a + b if wrong else a * b
            messages = [
                {"role": "system", "content": "You are a careful assistant with a calculator."},
                {"role": "user", "content": question},
                {
                    "role": "assistant",
                    "content": f"I will compute {a} {op} {b}.",
                    "tool_calls": call(1, f"print({a} {op} {b})"),
                },
                {"role": "tool", "tool_call_id": "call_1", "content": str(result)},
                {
                    "role": "assistant",
                    "content": "Let me check it once more.",
                    "tool_calls": call(2, f"print({result} == {a} {op} {b})"),
                },
                {"role": "tool", "tool_call_id": "call_2", "content": "True"},
                {"role": "assistant", "content": f"The product is {result}."},
            ]
            record: dict[str, object] = {
                "id": f"t{t}-v{variant}",
                "question": question,
                "messages": messages,
                "tools": [CALCULATOR],
                "ground_truth": str(a * b),
                "answer_text": str(result),
            }
            if variant < 2:
                record["step_labels"] = (
                    {"2": -1, "4": 0, "6": -1} if wrong else {"2": 1, "4": 0, "6": 1}
                )
                record["final_label"] = -1 if wrong else 1
            out.append(record)
    return out


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


# A whole run: grading, training and scoring the bow PRM (about 15 s on 2 cores).
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_trains_and_evaluates_the_prm_on_turns_and_orders_the_trajectory_queue(
    media, tmp_path
):
    campaign = make_campaign(
        slug="agents-al",
        trace_kind="agent",
        stop_at_first_error=False,
        active_learning=True,
        al_strategy="convincing-wrong",
        al_control_share=0.0,
    )
    path = tmp_path / "trajectories.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in trajectory_records()))
    import_file(path, campaign=campaign, fmt="agentprocessbench")

    open_ = Solution.objects.filter(campaign=campaign, is_open=True)
    assert open_.count() == 96
    # No outcome recorded on the open ones: the answer graded against the ground truth decides.
    assert open_.filter(answer_is_correct=False).count() == 48
    assert open_.filter(answer_is_correct=True).count() == 48
    # What the PRM sees of a turn: the kind's step text (its words, the call and the result).
    step = Step.objects.filter(solution__campaign=campaign, index=0).first()
    assert step.text == AGENT.step_text("", step.content)
    assert "Tool call: python" in step.text and "Tool result:" in step.text

    run = active_learning_run(run=ActiveLearningRun.objects.create(campaign=campaign))

    assert run.status == "succeeded", run.error
    model = PRMModel.objects.get(campaign=campaign)
    assert model.is_active and run.model == model
    assert model.training_labels == run.training_labels == 96 * 3  # every labelled turn
    assert run.metrics["split"] in ("test", "validation")
    # Adding where the task says multiply is learnable from the turns' text: better than chance.
    assert run.metrics["auroc"] > 0.5
    order = list(
        open_.order_by("-priority", "pk").values_list("answer_is_correct", "prm_score", "priority")
    )
    assert all(score is not None for _, score, _ in order)
    head = order[:10]
    assert (
        run.queue_head["wrong"]
        == sum(1 for c, _, _ in order[: run.queue_head["size"]] if c is False)
        > 0
    )
    assert [c for c, _, _ in head].count(False) >= 7  # PRM800K's 80% convincing wrong answers
