"""PRM800K in, PRM800K out: the real sample lines imported then exported are the input."""

from __future__ import annotations

import json
from operator import itemgetter

import pytest

from exports.formats import LabelPolicy, write_export
from imports.pipeline import import_file
from tests.conftest import FIXTURES
from tests.factories import make_campaign

pytestmark = pytest.mark.django_db

SAMPLES = sorted((FIXTURES / "prm800k_raw_samples").glob("*.jsonl"))


def read(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def by_line(records):
    return sorted(records, key=lambda r: (r["timestamp"], r["labeler"]))


def test_the_twelve_prm800k_samples_come_back_identical_record_by_record(tmp_path):
    campaign = make_campaign()
    records = []
    for path in SAMPLES:
        import_file(path, campaign=campaign, fmt="prm800k", grade=False)
        records += read(path)
    assert len(records) == 12

    # PRM800K's labelers are already pseudonyms (imported as the users' names): kept as they are.
    manifest = write_export(
        campaign=campaign,
        fmt="prm800k",
        out=tmp_path / "prm800k.jsonl",
        policy=LabelPolicy(annotator_ids="username"),
    )
    exported = read(tmp_path / "prm800k.jsonl")

    assert len(exported) == 12
    for got, want in zip(by_line(exported), by_line(records), strict=True):
        assert got == want  # dicts: key order aside
    assert manifest["counts"]["all"]["records"] == 12

    # By default the labeler is our pseudonym; every other field is unchanged.
    write_export(campaign=campaign, fmt="prm800k", out=tmp_path / "default.jsonl")
    default = read(tmp_path / "default.jsonl")
    assert {r["labeler"] for r in default}.isdisjoint({r["labeler"] for r in records})
    assert all(r["labeler"].startswith("annotator-") for r in default)
    key = itemgetter("timestamp", "question")
    assert sorted(
        ({**r, "labeler": None} for r in default), key=lambda r: json.dumps(key(r))
    ) == sorted(({**r, "labeler": None} for r in records), key=lambda r: json.dumps(key(r)))


def test_the_round_trip_holds_with_answer_grading_and_a_split(tmp_path):
    """Grading fills answer_is_correct, and a split only spreads the lines over two files."""
    campaign = make_campaign()
    records = []
    for path in SAMPLES:
        import_file(path, campaign=campaign, fmt="prm800k", grade=True)
        records += read(path)
    manifest = write_export(
        campaign=campaign,
        fmt="prm800k",
        out=tmp_path / "p.jsonl",
        policy=LabelPolicy(test_fraction=0.5, annotator_ids="username"),
    )
    exported = [r for f in manifest["files"] for r in read(tmp_path / f["name"])]
    assert by_line(exported) == by_line(records)
    assert all(manifest["counts"][s]["records"] for s in ("train", "test"))
