"""A served PRM orders a new campaign from its first minute (issue 38), as PRM800K's generations
began: a PRM trained elsewhere chose what people labelled first.

A real local server speaks vLLM's ``/pooling`` protocol (``tests/pooling_server.py``) with a model
whose judgement the test knows: it finds a step convincing or flags it by what the step says. The
campaign is imported through the upload path, has no label, and steers by the served PRM: after
one scoring job the head of its queue holds the served PRM's most convincing wrong answers in
PRM800K's proportions and no run failed; 50 more solutions imported later are scored on their
own (only those 50 are sent) and the queue is ordered again.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from imports.services import import_job_create, import_job_run
from labeling.models import Solution, Step
from learning.models import ActiveLearningRun
from learning.run import active_learning_run
from machines.models import ScoringJob, ServedScore
from machines.served import scoring_job_run
from tests.factories import make_campaign
from tests.pooling_server import STEP_TOKEN, PoolingServer

CONVINCING, RIGHT, FLAGGED = 0.97, 0.8, 0.05


class JudgingPRM:
    """The served model: P(correct) of each step by what the step says of itself."""

    def pairs(self, text: str) -> list[list[float]]:
        steps = text.split(STEP_TOKEN)[:-1]
        out = []
        for step in steps:
            p = FLAGGED if "doubtful" in step else CONVINCING if "surely" in step else RIGHT
            out.append([round(1 - p, 6), p])
        return out


def _upload(problems: range, *, solutions: int) -> SimpleUploadedFile:
    """Per problem a right answer, a wrong one the served PRM finds convincing, and a wrong one it
    flags (``solutions`` in all), as the generic JSONL import reads them (answers graded on
    import)."""
    lines: list[dict] = []
    left = solutions
    for k in problems:
        a, b = k + 2, k + 3
        right = a + b
        lines.append(
            {
                "problem": f"Problem {k}: what is ${a} + {b}$?",
                "ground_truth_answer": str(right),
                "solutions": [
                    {"steps": [f"We add {a} and {b}.", f"# Answer\n\n{right}"]},
                    {"steps": [f"We surely add {a} and {b}.", f"# Answer\n\n{right + 1}"]},
                    {"steps": [f"A doubtful sum of {a} and {b}.", f"# Answer\n\n{right - 1}"]},
                ][:left],
            }
        )
        left -= len(lines[-1]["solutions"])
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return SimpleUploadedFile("problems.jsonl", io.BytesIO(body).read())


def _import(campaign, problems: range, *, solutions: int) -> None:
    upload = _upload(problems, solutions=solutions)
    job = import_job_create(campaign=campaign, created_by=None, upload=upload, fmt="jsonl")
    job = import_job_run(job=job)
    assert job.status == "done", job.errors


def _queue(campaign) -> list[tuple[int, bool | None, str]]:
    """The open solutions in queue order, with their grade and first step."""
    rows = list(
        Solution.objects.filter(campaign=campaign, kind="regular", is_open=True)
        .order_by("-priority", "pk")
        .values_list("pk", "answer_is_correct")
    )
    first = dict(
        Step.objects.filter(solution__campaign=campaign, index=0).values_list("solution_id", "text")
    )
    return [(pk, correct, first[pk]) for pk, correct in rows]


def _kind(first_step: str) -> str:
    if "doubtful" in first_step:
        return "flagged"
    return "convincing" if "surely" in first_step else "right"


@pytest.mark.django_db
def test_a_served_prm_orders_a_campaign_without_labels_and_scores_what_is_imported_later(
    settings, monkeypatch, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.STEPWISE_SCORING_BACKOFF_MS = 0
    monkeypatch.setenv("SERVED_PRM_KEY", "sk-steer-test")
    with PoolingServer(model=JudgingPRM()) as server:  # type: ignore[arg-type]
        settings.STEPWISE_ENDPOINTS = [
            {
                "name": "prm",
                "kind": "pooling",
                "base_url": server.url,
                "models": ["Qwen/Qwen2.5-Math-PRM-7B"],
                "key_env": "SERVED_PRM_KEY",
            }
        ]
        campaign = make_campaign(
            active_learning=True,
            al_strategy="served-prm",
            al_scoring_endpoint="prm",
            al_control_share=0.0,
            qc_rate=0.0,
        )
        _import(campaign, range(40), solutions=120)  # no label
        assert Solution.objects.filter(campaign=campaign, answer_is_correct=False).count() == 80

        # The import asked the served PRM for its new solutions; its end orders the queue.
        job = ScoringJob.objects.get(campaign=campaign)
        assert job.only_new
        job = scoring_job_run(job=job)
        assert job.status == "done", job.error
        assert job.total == job.scored == 120
        run = ActiveLearningRun.objects.get(campaign=campaign)
        run = active_learning_run(run=run)
        assert run.status == "succeeded", run.error
        assert run.model is None and run.training_labels == 0
        assert run.queue_head["ordered_by"]["kind"] == "served"
        assert "served PRM" in run.queue_head["ordered_by"]["name"]

        head = [_kind(text) for _, _, text in _queue(campaign)[:40]]
        # PRM800K's proportions: 80% of every prefix wrong answers, the most convincing first
        assert head.count("convincing") == 32 and head.count("right") == 8
        for k in range(1, 41):
            wrong = head[:k].count("convincing") + head[:k].count("flagged")
            assert abs(wrong - 0.8 * k) <= 1, (k, head[:k])
        assert ActiveLearningRun.objects.filter(status="failed").count() == 0

        # 50 more solutions (of 17 problems) imported later: only they are sent to the server
        sent_before = len(server.script.inputs())
        _import(campaign, range(40, 57), solutions=50)
        new = Solution.objects.filter(campaign=campaign).exclude(
            pk__in=ServedScore.objects.values("solution_id")
        )
        assert new.count() == 50
        job = ScoringJob.objects.filter(campaign=campaign).order_by("-pk").first()
        assert job is not None and job.only_new
        job = scoring_job_run(job=job)
        assert job.status == "done", job.error
        assert job.total == job.scored == 50
        sent = server.script.inputs()[sent_before:]
        assert len(sent) == 50
        assert ServedScore.objects.filter(campaign=campaign).count() == 170

    again = ActiveLearningRun.objects.filter(campaign=campaign).order_by("-pk").first()
    assert again is not None and again.pk != run.pk
    again = active_learning_run(run=again)
    assert again.status == "succeeded", again.error
    queue = _queue(campaign)
    assert len(queue) == 170
    assert again.queue_head["scored"] == 170  # the new ones took their places in the order
    head = [_kind(text) for _, _, text in queue[:57]]
    assert head.count("flagged") == 0 and abs(head.count("convincing") - 0.8 * 57) <= 1
    priorities = Solution.objects.filter(campaign=campaign).values_list("priority", flat=True)
    assert min(priorities) > 0
