"""Real data for the active-learning tests: the demo's extracts of public datasets (``demo/``).

Open work: 300 GSM8K model solutions and 111 Qwen2.5-Math MATH samples, graded on import (about
half have a wrong final answer); labelled history: the 60 PRM800K phase 1 trajectories with their
real human step ratings (575 labels), what the first PRM trains on.
"""

from __future__ import annotations

from django.conf import settings

from imports.pipeline import import_file
from labeling.models import Campaign
from tests.factories import make_campaign

DEMO = settings.BASE_DIR / "demo"
OPEN_WORK = [("gsm8k_model_solutions.jsonl", "jsonl"), ("qwen25math_math_samples.jsonl", "jsonl")]
LABELLED = [("prm800k_phase1_trajectories.jsonl", "prm800k-trajectories")]


def demo_campaign(*, labelled: bool = True, **fields) -> Campaign:
    fields.setdefault("qc_rate", 0.0)
    # The tests of a strategy's order hold it exactly: no control arm drawn at random among it
    # (the control arm has its own tests, tests/test_al_strategies.py, which set the share).
    fields.setdefault("al_control_share", 0.0)
    campaign = make_campaign(**fields)
    for name, fmt in OPEN_WORK + (LABELLED if labelled else []):
        import_file(DEMO / name, campaign=campaign, fmt=fmt)
    return campaign
