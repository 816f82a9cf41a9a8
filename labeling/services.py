"""Writes on campaigns: create one (its creator becomes its manager), change its settings, pause it.

The queue's own writes (claim, drafts, submit) live in ``labeling.queue``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from labeling.models import (
    Campaign,
    Membership,
    Solution,
)
from labeling.traces import DEFAULT_KIND, trace_kind

# Settings that decide whether a solution is open (``Solution.is_open``): changing them recounts.
_QUEUE_SETTINGS = ("overlap", "bad_problem_limit")


def campaign_create(*, creator: AbstractBaseUser, **fields: Any) -> Campaign:
    """Create a campaign; its creator becomes its manager (exempt from screening). A campaign
    made without instructions gets its kind's (``labeling.traces``: AgentProcessBench's meanings
    of the ratings for trajectories), so annotators never start without them."""
    if not fields.get("instructions"):
        kind = trace_kind(fields.get("trace_kind") or DEFAULT_KIND)
        fields["instructions"] = kind.default_instructions
    with transaction.atomic():
        campaign = Campaign.objects.create(created_by=creator, **fields)
        Membership.objects.create(
            user=creator,
            campaign=campaign,
            role=Membership.Role.MANAGER,
            screening=Membership.Screening.PASSED,
        )
    return campaign


def campaign_update(*, campaign: Campaign, **fields: Any) -> Campaign:
    """Change a campaign's settings. A new overlap or bad-problem limit reopens or closes
    solutions at once (``refresh_queue_state``), so the queue follows the new rule."""
    changed = [name for name, value in fields.items() if getattr(campaign, name) != value]
    for name, value in fields.items():
        setattr(campaign, name, value)
    with transaction.atomic():
        campaign.save()
        if any(name in _QUEUE_SETTINGS for name in changed):
            Solution.objects.filter(campaign=campaign).refresh_queue_state()
    return campaign


def campaign_pause_set(*, campaign: Campaign, paused: bool) -> Campaign:
    """Pause (the queue serves nothing, leases run out) or resume a campaign."""
    Campaign.objects.filter(pk=campaign.pk).update(is_paused=paused)
    campaign.is_paused = paused
    return campaign
