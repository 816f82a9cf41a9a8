"""Writes on campaigns: create one (its creator becomes its manager), change its settings, pause it.
A new grading rule grades the campaign's answers again, as a job.

The queue's own writes (claim, drafts, submit) live in ``labeling.queue``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction

from labeling.models import (
    Campaign,
    Membership,
    Solution,
    SolutionBulkAction,
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


def campaign_update(
    *, campaign: Campaign, actor: AbstractBaseUser | AnonymousUser | None = None, **fields: Any
) -> Campaign:
    """Change a campaign's settings. A new overlap or bad-problem limit reopens or closes
    solutions at once (``refresh_queue_state``), so the queue follows the new rule. A new
    grading rule grades every answer again (``campaign_regrade``) once the change is saved."""
    changed = [name for name, value in fields.items() if getattr(campaign, name) != value]
    for name, value in fields.items():
        setattr(campaign, name, value)
    with transaction.atomic():
        campaign.save()
        if any(name in _QUEUE_SETTINGS for name in changed):
            Solution.objects.filter(campaign=campaign).refresh_queue_state()
    if "grading_rule" in changed:
        campaign_regrade(campaign=campaign, actor=actor)
    return campaign


def campaign_grading_rule_adopt(*, campaign: Campaign, rule: str) -> bool:
    """Give a campaign that has no solutions yet the grading rule its first solutions were
    labelled under (an import in PRM800K's formats); returns whether it changed.

    Only then: a campaign that already holds graded solutions keeps its rule (a manager changes
    it in the settings, which regrades). Nothing to regrade: there is nothing graded yet.
    """
    if campaign.grading_rule == rule or Solution.objects.filter(campaign=campaign).exists():
        return False
    Campaign.objects.filter(pk=campaign.pk).update(grading_rule=rule)
    campaign.grading_rule = rule
    return True


def campaign_regrade(
    *, campaign: Campaign, actor: AbstractBaseUser | AnonymousUser | None = None
) -> SolutionBulkAction:
    """Grade every solution of the campaign again under its grading rule: the data browser's
    bulk action ``regrade`` over all of them, one job (run in this request when small, else by
    a worker; ``labeling.curation.actions``)."""
    from labeling.curation.actions import bulk_action_create
    from labeling.curation.filters import SolutionFilter

    return bulk_action_create(
        campaign=campaign,
        action=SolutionBulkAction.Action.REGRADE,
        solution_filter=SolutionFilter.from_params({}),
        created_by=actor,
    )


def campaign_pause_set(*, campaign: Campaign, paused: bool) -> Campaign:
    """Pause (the queue serves nothing, leases run out) or resume a campaign."""
    Campaign.objects.filter(pk=campaign.pk).update(is_paused=paused)
    campaign.is_paused = paused
    return campaign
