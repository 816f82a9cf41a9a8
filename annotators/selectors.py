"""Reads behind the members, invitations and figures pages. No writes here.

Lists that grow with the people (members) are small enough to merge with the snapshot's
per-annotator figures in memory. The review pages' reads are ``annotators.review.selectors``,
the gold pages' ``labeling.gold.selectors``.
"""

from __future__ import annotations

from annotators.models import CampaignSnapshot
from labeling.models import (
    Assignment,
    Campaign,
    Invitation,
    Membership,
)


def annotator_figures(snapshot: CampaignSnapshot | None) -> dict[int, dict]:
    """The snapshot's per-annotator figures by user id (empty without a snapshot)."""
    if snapshot is None:
        return {}
    return {row["id"]: row for row in snapshot.data.get("annotators", [])}


def snapshot_quality(snapshot: CampaignSnapshot | None, *, user_id: int) -> dict | None:
    """One annotator's quality over time, every block (``CampaignSnapshot.quality``), read
    alone: the column holds everyone's."""
    if snapshot is None:
        return None
    return (
        CampaignSnapshot.objects.filter(pk=snapshot.pk)
        .values_list(f"quality__u{user_id}", flat=True)
        .first()
    )


def imported_user_ids(*, campaign: Campaign) -> set[int]:
    """The accounts an import made for the labelers of its files (``Membership.is_imported``)."""
    return set(
        Membership.objects.filter(campaign=campaign, is_imported=True).values_list(
            "user_id", flat=True
        )
    )


def snapshot_submitted_since(snapshot: CampaignSnapshot, *, exists: bool = False) -> int:
    """Solutions submitted after the snapshot's figures were read (when its task started); with
    ``exists``, 1 or 0 (one indexed probe instead of a count)."""
    since = snapshot.started_at or snapshot.computed_at
    submitted = Assignment.objects.filter(
        campaign_id=snapshot.campaign_id,
        status=Assignment.Status.SUBMITTED,
        submitted_at__gt=since,
    )
    return int(submitted.exists()) if exists else submitted.count()


def members_rows(
    *, campaign: Campaign, snapshot: CampaignSnapshot | None, show_imported: bool = False
) -> list[dict]:
    """Every member with their role, state, screening and figures from the snapshot; the
    accounts an import made only with ``show_imported`` (and then by a short id)."""
    figures = annotator_figures(snapshot)
    members = Membership.objects.filter(campaign=campaign)
    if not show_imported:
        members = members.filter(is_imported=False)
    rows = []
    for m in members.select_related("user", "invitation").order_by("user__username"):
        f = figures.get(m.user_id, {})
        rows.append(
            {
                "id": m.pk,
                "user_id": m.user_id,
                "username": m.display_name,
                "imported": m.is_imported,
                "role": m.role,
                "status": m.status,
                "screening": m.screening_shown,
                "screening_score": m.screening_score,
                "joined": m.joined_at,
                "invitation": m.invitation.token_hint if m.invitation else "",
                "assignments": f.get("assignments"),
                "labels": f.get("labels"),
                "median_seconds_per_step": f.get("median_seconds_per_step"),
                "qc_score": f.get("qc_score"),
                "qc_agreement": f.get("qc_agreement"),
                "kappa": f.get("kappa"),
                "last": f.get("last"),
                "quality": f.get("quality"),
                "paused_why": m.pause_summary,
            }
        )
    return rows


def paused_members(*, campaign: Campaign) -> list[Membership]:
    """The campaign's paused members, latest pause first: who, when and why (one query)."""
    return list(
        Membership.objects.filter(campaign=campaign, status=Membership.Status.PAUSED)
        .select_related("user")
        .order_by("-paused_at", "user__username")
    )


def invitations_list(*, campaign: Campaign) -> list[Invitation]:
    return list(
        Invitation.objects.filter(campaign=campaign)
        .select_related("created_by")
        .order_by("-created_at", "-id")[:200]
    )
