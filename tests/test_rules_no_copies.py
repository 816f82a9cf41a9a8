"""No copy of a rule outside its home: the spellings of the lease, disagreement and membership
rules appear in their homes only (``labeling/models/``); everything else calls them. A new copy
fails here with the file and line, and the rule's home to call instead."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = (
    "common",
    "labeling",
    "annotators",
    "imports",
    "machines",
    "exports",
    "learning",
    "stepwise",
    "bench",
)
HOMES = {ROOT / "labeling" / "models"}

COPIES = {
    "a live or expired lease (Assignment.live_lease_q, expired_lease_q)": re.compile(
        r"lease_expires_at(__gt|__gte|__lt|__lte)\b|lease_expires_at\s*[<>]=?\s*(now|%s)"
    ),
    "annotators disagree (StepLabelQuerySet.disputed, disputed_steps, disputed_step_count)": (
        re.compile(r"low__lt\s*=\s*F\(|min\(\w*\.?rating\)\s*<>\s*max|exclude\(rating=OuterRef")
    ),
    "an active membership (MembershipQuerySet.active, CampaignQuerySet.with_member)": re.compile(
        r"memberships__status|status=Membership\.Status\.ACTIVE\b(?!\w)"
    ),
}


def _sources():
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts or any(home in path.parents for home in HOMES):
                continue
            yield path


def test_no_rule_is_spelled_outside_its_home():
    found = []
    for path in _sources():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for rule, pattern in COPIES.items():
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {rule}: {line.strip()}")
    assert not found, "copies of a rule (call its home instead):\n" + "\n".join(found)
