"""Writes about people: invitations, sign-up, API tokens, members.

Views, the API and Celery tasks call these keyword-only functions; each checks its own rules and
raises a ``ManageError`` (with a message for people) when a request breaks one. Who may call
what is the caller's check (``labeling.permissions.campaign_for``).
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotators.models import ApiToken
from labeling.models import Campaign, Invitation, Membership
from labeling.queue import membership_pause

log = logging.getLogger(__name__)

Role = Membership.Role


class ManageError(Exception):
    """A request that breaks one of the rules below; the text is shown to the person."""

    code = "refused"


# --- Invitations -----------------------------------------------------------------------------


class InvitationRefused(ManageError):
    """Why an invitation link cannot be used; ``code`` is one of the states or ``unknown``."""

    MESSAGES = {
        "unknown": "This invitation link is not valid. Check that you copied all of it.",
        Invitation.State.EXPIRED: "This invitation link has expired. Ask for a new one.",
        Invitation.State.USED_UP: "This invitation link has been used as often as it may be.",
        Invitation.State.REVOKED: "This invitation link was withdrawn.",
        "removed": "You were removed from this campaign; ask one of its managers.",
    }

    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(self.MESSAGES[code])


def invitation_create(
    *,
    campaign: Campaign,
    created_by: AbstractBaseUser | None,
    role: str = Role.ANNOTATOR,
    max_uses: int = 1,
    expires_in: timedelta = timedelta(days=7),
    note: str = "",
) -> tuple[Invitation, str]:
    """A new invitation and its token (shown once: only its hash is kept)."""
    if role not in Role.values:
        raise ManageError(f"Unknown role {role!r}.")
    if max_uses < 1:
        raise ManageError("An invitation allows at least one use.")
    if expires_in <= timedelta(0):
        raise ManageError("An invitation must expire in the future.")
    token = secrets.token_urlsafe(24)
    invitation = Invitation.objects.create(
        campaign=campaign,
        role=role,
        token_hash=Invitation.hash_token(token),
        token_hint=token[:6],
        max_uses=max_uses,
        expires_at=timezone.now() + expires_in,
        created_by=created_by,
        note=note,
    )
    return invitation, token


def invitation_find(*, token: str) -> Invitation:
    """The invitation of a token, whatever its state; ``InvitationRefused("unknown")`` if none."""
    invitation = (
        Invitation.objects.select_related("campaign")
        .filter(token_hash=Invitation.hash_token(token or ""))
        .first()
    )
    if invitation is None:
        raise InvitationRefused("unknown")
    return invitation


def invitation_revoke(*, invitation: Invitation) -> Invitation:
    """Withdraw a link; people who already joined with it stay members."""
    if invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
    return invitation


def invitation_redeem(*, token: str, user: AbstractBaseUser) -> Membership:
    """Join the invitation's campaign with its role; returns the membership.

    The invitation row is locked, so two people cannot both take the last use. Someone who is
    already a member keeps their membership as it is and uses nothing up; someone a manager
    removed cannot come back through a link.
    """
    with transaction.atomic():
        invitation = (
            Invitation.objects.select_for_update()
            .filter(token_hash=Invitation.hash_token(token or ""))
            .first()
        )
        if invitation is None:
            raise InvitationRefused("unknown")
        existing = Membership.objects.filter(user=user, campaign_id=invitation.campaign_id).first()
        if existing is not None:
            if existing.status == Membership.Status.REMOVED:
                raise InvitationRefused("removed")
            return existing
        state = invitation.state()
        if state != Invitation.State.ACTIVE:
            raise InvitationRefused(state)
        membership = Membership.objects.create(
            user=user,
            campaign_id=invitation.campaign_id,
            role=invitation.role,
            invitation=invitation,
            # Only annotators are screened; reviewers and managers are chosen by a manager.
            screening=(
                Membership.Screening.PENDING
                if invitation.role == Role.ANNOTATOR
                else Membership.Screening.PASSED
            ),
        )
        Invitation.objects.filter(pk=invitation.pk).update(uses=F("uses") + 1)
    return membership


def user_signup(*, token: str, username: str, password: str, email: str = "") -> Membership:
    """Create an account through an invitation and join with it, in one transaction.

    The link is checked first, so a dead link creates no account.
    """
    with transaction.atomic():
        invitation = invitation_find(token=token)
        if (state := invitation.state()) != Invitation.State.ACTIVE:
            raise InvitationRefused(state)
        user = get_user_model().objects.create_user(
            username=username, password=password, email=email
        )
        return invitation_redeem(token=token, user=user)


# --- API tokens ------------------------------------------------------------------------------

# Most live keys one person may hold: enough for every script, few enough to review on a page.
API_TOKENS_PER_USER = 20


def api_token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new API key for ``user``: the row and the key itself, which is never stored or shown
    again (only its sha256 is kept)."""
    name = (name or "").strip()
    if not name:
        raise ManageError("Give the token a name (what it is for).")
    if len(name) > 100:
        raise ManageError("A token's name is at most 100 characters.")
    live = ApiToken.objects.filter(user=user, revoked_at__isnull=True)
    if live.count() >= API_TOKENS_PER_USER:
        raise ManageError(f"At most {API_TOKENS_PER_USER} live tokens; revoke one first.")
    if live.filter(name=name).exists():
        raise ManageError(f"You already have a live token named {name!r}.")
    key = ApiToken.PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, key_hash=ApiToken.hash_key(key), key_hint=key[:10]
    )
    return token, key


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    """Refuse the key from now on (the row stays, for its history)."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


# --- Members ---------------------------------------------------------------------------------


def membership_update(
    *, membership: Membership, role: str | None = None, status: str | None = None
) -> Membership:
    """Change a member's role or state (active, paused, removed).

    A campaign keeps at least one active manager. Pausing or removing someone ends their live
    leases at once, so the solutions they held go back to the queue.
    """
    role = role or membership.role
    status = status or membership.status
    if role not in Role.values or status not in Membership.Status.values:
        raise ManageError("Unknown role or state.")
    with transaction.atomic():
        locked = Membership.objects.select_for_update().get(pk=membership.pk)
        was_manager = locked.role == Role.MANAGER and locked.is_active
        stays_manager = role == Role.MANAGER and status == Membership.Status.ACTIVE
        if was_manager and not stays_manager:
            others = (
                Membership.objects.managers()
                .select_for_update()
                .filter(campaign_id=locked.campaign_id)
                .exclude(pk=locked.pk)
            )
            if not others.exists():
                raise ManageError("A campaign needs an active manager: appoint another one first.")
        if role != Role.ANNOTATOR and locked.screening == Membership.Screening.PENDING:
            locked.screening = Membership.Screening.PASSED
        changes = ["role", "screening"]
        if locked.status == Membership.Status.PAUSED and status == Membership.Status.ACTIVE:
            # The QC pause rule starts afresh: only QC questions answered from now count.
            locked.resumed_at = timezone.now()
            changes.append("resumed_at")
        locked.role = role
        if status == Membership.Status.ACTIVE:
            locked.status = status
            changes.append("status")
        locked.save(update_fields=changes)
        if status != Membership.Status.ACTIVE:
            # Paused by hand (no rule's reason or figures) or removed: their leases end and
            # the solutions they held go back to the queue at once.
            membership_pause(membership=locked, status=status)
    return locked
