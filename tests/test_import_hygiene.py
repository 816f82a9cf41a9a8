"""Input no import may carry: NaN and infinities, NUL characters, lone surrogates, deep nesting,
text over the configured bounds, and ids used twice. Each is refused at validation with file,
line and field, on the command line too, and nothing is written."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from imports.pipeline import ImportValidationError, import_file
from labeling.models import Problem, Solution, Step
from tests.conftest import FIXTURES
from tests.factories import make_campaign

pytestmark = pytest.mark.django_db

PROCESSBENCH = FIXTURES / "processbench_samples" / "processbench_verbatim_samples.jsonl"


def _generic(**solution) -> dict:
    return {
        "problem": "What is 1 + 1?",
        "ground_truth_answer": "2",
        "solutions": [{"steps": ["1 + 1 = 2.", "# Answer\n\n2"], **solution}],
    }


def _write(tmp_path, *lines: str, name="in.jsonl"):
    path = tmp_path / name
    path.write_text(
        "".join(line + "\n" for line in lines), encoding="utf-8", errors="surrogatepass"
    )
    return path


def _errors(path, fmt="jsonl", **options) -> list[str]:
    campaign = make_campaign()
    with pytest.raises(ImportValidationError) as caught:
        import_file(path, campaign=campaign, fmt=fmt, **options)
    assert not Problem.objects.exists() and not Solution.objects.exists()
    return [str(e) for e in caught.value.errors]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_number_is_refused_with_its_field(tmp_path, token):
    line = json.dumps(_generic(verifier_score=0.5)).replace("0.5", token)
    good = json.dumps(_generic(verifier_score=0.5, id="a"))
    errors = _errors(_write(tmp_path, good, line))
    assert len(errors) == 1
    assert errors[0].startswith("in.jsonl:2: solutions[0].verifier_score: ")
    assert "NaN and infinities are refused" in errors[0]


def test_a_non_finite_number_anywhere_in_a_prm800k_line_is_refused(tmp_path):
    raw = (FIXTURES / "prm800k_raw_samples" / "phase2_train_examples.jsonl").open().readline()
    record = json.loads(raw)
    record["question"]["pre_generated_verifier_score"] = 0.25
    line = json.dumps(record).replace("0.25", "NaN")
    errors = _errors(_write(tmp_path, line), fmt="prm800k")
    assert errors == [
        "in.jsonl:1: question.pre_generated_verifier_score: NaN is not a number (NaN and "
        "infinities are refused)"
    ]


def test_a_nul_character_is_refused_with_its_field(tmp_path):
    line = json.dumps(_generic(steps=["1 + 1\u0000 = 2."]))
    errors = _errors(_write(tmp_path, line))
    assert errors == [
        "in.jsonl:1: solutions[0].steps[0]: contains a NUL character (\\u0000), which text "
        "cannot hold"
    ]


def test_a_lone_surrogate_is_refused_with_its_field(tmp_path):
    line = json.dumps(_generic()).replace("What is", "What \\ud800 is")
    errors = _errors(_write(tmp_path, line))
    assert errors == [
        "in.jsonl:1: problem: contains a lone surrogate (\\ud800-\\udfff), which is not text"
    ]


def test_deeply_nested_json_is_refused(tmp_path):
    def nested(depth: int) -> str:
        return json.dumps(_generic())[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}"

    errors = _errors(_write(tmp_path, nested(100_000), nested(40)))
    assert errors[0] == "in.jsonl:1: nested more than 32 levels deep"
    assert errors[1].startswith("in.jsonl:2: extra") and "nested more than 32" in errors[1]


def test_the_command_line_names_the_line_without_a_traceback(tmp_path):
    campaign = make_campaign(slug="hyg")
    path = _write(tmp_path, json.dumps(_generic(steps=["a\u0000"])))
    with pytest.raises(CommandError) as caught:
        call_command("import_solutions", str(path), "--campaign", "hyg", "--format", "jsonl")
    assert "in.jsonl:1: solutions[0].steps[0]: contains a NUL character" in str(caught.value)
    assert not Solution.objects.filter(campaign=campaign).exists()


def test_step_count_step_length_and_answer_length_are_bounded(tmp_path, settings):
    settings.STEPWISE_IMPORT_MAX_STEPS = 3
    settings.STEPWISE_IMPORT_MAX_STEP_CHARS = 50
    settings.STEPWISE_IMPORT_MAX_ANSWER_CHARS = 10
    errors = _errors(
        _write(
            tmp_path,
            json.dumps(_generic(steps=["a", "b", "c", "d"])),
            json.dumps(_generic(steps=["x" * 51])),
            json.dumps(_generic(answer="1" * 11)),
        )
    )
    assert errors == [
        "in.jsonl:1: steps: 4 steps; a solution has at most 3 (STEPWISE_IMPORT_MAX_STEPS)",
        "in.jsonl:2: steps[0]: 51 characters; a step has at most 50 "
        "(STEPWISE_IMPORT_MAX_STEP_CHARS)",
        "in.jsonl:3: answer: 11 characters; an answer has at most 10 "
        "(STEPWISE_IMPORT_MAX_ANSWER_CHARS)",
    ]


def test_the_default_bounds_let_real_datasets_through():
    for fmt, path in (
        ("prm800k", FIXTURES / "prm800k_raw_samples" / "phase2_train_examples.jsonl"),
        ("processbench", PROCESSBENCH),
    ):
        result = import_file(path, campaign=make_campaign(), fmt=fmt, grade=False)
        assert result.solutions_created > 0


def test_a_unique_id_on_two_problems_is_refused(tmp_path):
    first = {**_generic(), "unique_id": "test/algebra/1.json"}
    second = {**_generic(), "problem": "What is 2 + 2?", "unique_id": "test/algebra/1.json"}
    again = {**_generic(), "unique_id": "test/algebra/1.json"}  # the same problem: fine
    errors = _errors(_write(tmp_path, json.dumps(first), json.dumps(again), json.dumps(second)))
    assert errors == [
        "in.jsonl:3: unique_id: 'test/algebra/1.json' is already the unique_id of another "
        "problem (line 1)"
    ]


def test_a_solution_id_twice_is_refused(tmp_path):
    record = _generic(id="s-1")
    record["solutions"].append({"steps": ["2 = 1 + 1."], "id": "s-1"})
    errors = _errors(_write(tmp_path, json.dumps(record)))
    assert errors == ["in.jsonl:1: solutions[1].id: 's-1' is already the id of a solution (line 1)"]
    lines = PROCESSBENCH.read_text().splitlines()
    errors = _errors(_write(tmp_path, lines[0], lines[1], lines[0]), fmt="processbench")
    assert len(errors) == 1 and errors[0].startswith("in.jsonl:3: id: ")


def test_reimporting_with_as_gold_applies_the_gold_the_file_carries():
    campaign = make_campaign()
    import_file(PROCESSBENCH, campaign=campaign, fmt="processbench", grade=False)
    assert not Step.objects.filter(gold_rating__isnull=False).exists()
    result = import_file(PROCESSBENCH, campaign=campaign, fmt="processbench", as_gold="qc")
    n = len(PROCESSBENCH.read_text().splitlines())
    assert result.solutions_created == 0 and result.solutions_gold_applied == n
    assert Solution.objects.filter(campaign=campaign, kind="qc").count() == n
    assert Step.objects.filter(gold_rating__isnull=False).exists()
    for solution in Solution.objects.filter(campaign=campaign):
        assert solution.is_open  # gold solutions serve every annotator
    again = import_file(PROCESSBENCH, campaign=campaign, fmt="processbench", as_gold="qc")
    assert again.solutions_gold_applied == 0


def test_an_upload_with_such_values_fails_with_its_line_and_field_not_an_internal_error(
    client, settings, tmp_path
):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    from imports.models import ImportJob
    from imports.services import import_job_run
    from tests.factories import make_member

    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = make_campaign(slug="hyg-up")
    client.force_login(make_member(campaign=campaign, role="manager").user)
    lines = [
        json.dumps(_generic(verifier_score=0.5)).replace("0.5", "NaN"),
        json.dumps(_generic(steps=["a\u0000"])),
        json.dumps(_generic()).replace("What is", "What \\udfff is"),
    ]
    content = "".join(line + "\n" for line in lines).encode()
    client.post(
        reverse("imports:list", kwargs={"slug": "hyg-up"}),
        {"format": "jsonl", "file": SimpleUploadedFile("odd.jsonl", content)},
    )
    job = import_job_run(job=ImportJob.objects.get())
    assert job.status == "failed"
    found = [(e["line"], e["field"]) for e in job.errors]
    assert found == [
        (1, "solutions[0].verifier_score"),
        (2, "solutions[0].steps[0]"),
        (3, "problem"),
    ]
    page = client.get(reverse("imports:list", kwargs={"slug": "hyg-up"})).content.decode()
    assert "internal error" not in page.lower()
    assert not Solution.objects.filter(campaign=campaign).exists()
