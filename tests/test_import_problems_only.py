"""Problems without solutions: a generic JSONL line with no ``solutions`` (or an empty list)
brings its problem alone, so a campaign can be filled with problems before generation samples
their solutions from a model endpoint (a scripted local server here)."""

from __future__ import annotations

import json

import pytest

from imports.pipeline import import_file
from imports.sniff import guess_format
from labeling.models import Problem, Solution
from machines.generation import generation_job_create, generation_job_run
from tests.factories import make_campaign
from tests.generation_servers import StubServer

pytestmark = pytest.mark.django_db

LINES = [
    {"problem": "What is $1+1$?", "ground_truth_answer": "2", "subject": "Algebra", "level": 1},
    {"problem": "What is $2+2$?", "ground_truth_answer": "4", "solutions": []},
    {
        "problem": "What is $3+3$?",
        "ground_truth_answer": "6",
        "solutions": [{"steps": ["3 + 3 = 6.", "# Answer\n\n6"]}],
    },
]


def test_problems_without_solutions_are_imported_then_generated_for(settings, tmp_path):
    path = tmp_path / "problems.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    assert guess_format(LINES[0]) == "jsonl"
    campaign = make_campaign()
    result = import_file(path, campaign=campaign, fmt="jsonl")
    assert (result.problems_created, result.solutions_created) == (3, 1)
    first = Problem.objects.get(campaign=campaign, text="What is $1+1$?")
    assert (first.ground_truth_answer, first.subject, first.level) == ("2", "Algebra", "1")
    assert Solution.objects.filter(campaign=campaign).count() == 1
    # Imported again: nothing new.
    again = import_file(path, campaign=campaign, fmt="jsonl")
    assert (again.problems_created, again.solutions_created) == (0, 0)

    with StubServer() as server:
        settings.STEPWISE_ENDPOINTS = [
            {"name": "box", "kind": "chat", "base_url": server.base_url, "models": ["m"]}
        ]
        job = generation_job_create(
            campaign=campaign,
            created_by=None,
            endpoint="box",
            samples_per_problem=1,
            selection="fewer_than_k",
            enqueue=False,
        )
        job = generation_job_run(job=job)
    assert job.status == "done" and job.requested == 2  # the two problems without a solution
    assert Solution.objects.filter(campaign=campaign).count() == 3


def test_a_problem_line_without_its_problem_text_is_still_refused(tmp_path):
    from imports.reading import ImportValidationError

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"problem": "", "ground_truth_answer": "2"}) + "\n")
    with pytest.raises(ImportValidationError) as refused:
        import_file(path, campaign=make_campaign(), fmt="jsonl")
    assert refused.value.errors[0].field == "problem"
