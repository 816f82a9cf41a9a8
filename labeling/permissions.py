"""Who may see what: one place that turns (user, campaign, roles) into access or a refusal.

Views call ``campaign_for(request.user, slug, roles=...)``: it returns the campaign and the user's
membership, raises ``Http404`` for anyone with no active membership (so a campaign's existence
does not leak to outsiders) and ``PermissionDenied`` for members whose role is not enough.
Site admins (superusers) pass every check; their membership may be ``None``.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import PermissionDenied
from django.http import Http404

from labeling.models import Campaign
from labeling.queue import Membership, NotAMember

Role = Membership.Role
MANAGE = (Role.MANAGER,)
REVIEW = (Role.MANAGER, Role.REVIEWER)
LABEL = (Role.MANAGER, Role.REVIEWER, Role.ANNOTATOR)


def membership_for(user, campaign: Campaign) -> Membership | None:
    """The user's active membership of the campaign, if any (``MembershipQuerySet.active``)."""
    if not user.is_authenticated:
        return None
    return Membership.objects.active().filter(user=user, campaign=campaign).first()


def campaign_for(
    user, slug: str, *, roles: Iterable[str] = LABEL
) -> tuple[Campaign, Membership | None]:
    """The campaign ``slug`` if ``user`` holds one of ``roles`` in it (404 / 403 otherwise)."""
    campaign = Campaign.objects.filter(slug=slug).first()
    if campaign is None:
        raise Http404("No such campaign")
    membership = membership_for(user, campaign)
    if user.is_authenticated and user.is_superuser:
        return campaign, membership
    if membership is None:
        raise Http404("No such campaign")
    if membership.role not in set(roles):
        raise PermissionDenied("Your role in this campaign does not allow this.")
    return campaign, membership


def campaign_of_member(*, slug: str, user) -> Campaign:
    """The campaign with this slug if the user holds any membership of it, else ``NotAMember``.

    The queue's own check, on its hot path (one plain query): a paused or removed member gets
    the campaign here and the queue's refusal (403, ``Membership.is_active``) after, where
    ``campaign_for`` would 404. Who gets in is the same (tests/test_rules_membership.py).
    """
    campaigns = Campaign.objects.raw(
        f"SELECT c.* FROM {Campaign._meta.db_table} c JOIN {Membership._meta.db_table} m"
        " ON m.campaign_id = c.id WHERE c.slug = %s AND m.user_id = %s",
        [slug, user.pk],
    )
    campaign = next(iter(campaigns), None)
    if campaign is None:
        raise NotAMember("No such campaign.")
    return campaign


def campaigns_visible_to(user):
    """Campaigns the user is a member of (all of them for site admins)."""
    if user.is_superuser:
        return Campaign.objects.all()
    return Campaign.objects.with_member(user)


def may_create_campaigns(user) -> bool:
    """``STEPWISE_CAMPAIGN_CREATORS``: anyone logged in (``users``) or staff only (``staff``)."""
    from django.conf import settings

    if not user.is_authenticated:
        return False
    if settings.STEPWISE_CAMPAIGN_CREATORS == "staff":
        return user.is_staff or user.is_superuser
    return True


def campaign_nav(user, campaign: Campaign, membership: Membership | None) -> dict:
    """What the campaign menu (``labeling/_campaign_nav.html``) needs to know about the viewer."""
    from django.urls import reverse

    role = membership.role if membership else None
    return {
        "campaign": campaign,
        "membership": membership,
        "can_manage": user.is_superuser or role in MANAGE,
        "can_review": user.is_superuser or role in REVIEW,
        "label_url": reverse("labeling:label", kwargs={"slug": campaign.slug}),
    }


def campaign_page(
    request,
    template: str,
    campaign: Campaign,
    membership: Membership | None,
    context: dict | None = None,
    *,
    status: int = 200,
):
    """Render a campaign page with what the campaign menu needs to know about the viewer."""
    from django.shortcuts import render

    base = campaign_nav(request.user, campaign, membership)
    return render(request, template, base | (context or {}), status=status)
