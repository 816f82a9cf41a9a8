"""Writes about people and quality: invitations, sign-up, tokens, members, gold, reviews, figures.

Views, the API and Celery tasks call these keyword-only functions; each checks its own rules and
raises a ``ManageError`` (with a message for people) when a request breaks one. Who may call
what is the caller's check (``labeling.permissions.campaign_for``).
"""

from __future__ import annotations

import logging
import secrets
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotators.models import ApiToken, CampaignSnapshot
from annotators.selectors import disputed_steps
from common.jobs import JobKind, job_claim, job_heartbeat, job_update
from labeling.models import (
    Adjudication,
    Assignment,
    Campaign,
    Invitation,
    Membership,
    Rating,
    Review,
    Solution,
    Step,
    StepLabel,
)
from labeling.queue import LabelingError, assignment_review_outcome
from labeling.queue.review import REVIEWABLE

log = logging.getLogger(__name__)

Role = Membership.Role


class ManageError(Exception):
    """A request that breaks one of the rules below; the text is shown to the person."""

    code = "refused"


# --- Campaigns -------------------------------------------------------------------------------


# --- Uploads ---------------------------------------------------------------------------------


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
        was_manager = locked.role == Role.MANAGER and locked.status == Membership.Status.ACTIVE
        stays_manager = role == Role.MANAGER and status == Membership.Status.ACTIVE
        if was_manager and not stays_manager:
            others = (
                Membership.objects.select_for_update()
                .filter(
                    campaign_id=locked.campaign_id,
                    role=Role.MANAGER,
                    status=Membership.Status.ACTIVE,
                )
                .exclude(pk=locked.pk)
            )
            if not others.exists():
                raise ManageError("A campaign needs an active manager: appoint another one first.")
        if role != Role.ANNOTATOR and locked.screening == Membership.Screening.PENDING:
            locked.screening = Membership.Screening.PASSED
        locked.role, locked.status = role, status
        locked.save(update_fields=["role", "status", "screening"])
        if status != Membership.Status.ACTIVE:
            # Expire their live leases; the queue's own reclaim releases the slots below.
            Assignment.objects.filter(
                campaign_id=locked.campaign_id,
                annotator_id=locked.user_id,
                status=Assignment.Status.LEASED,
            ).update(lease_expires_at=timezone.now())
    if status != Membership.Status.ACTIVE:
        from labeling.queue import leases_reclaim

        leases_reclaim(campaign=locked.campaign, limit=None)
    return locked


# --- Gold ratings ----------------------------------------------------------------------------


def solution_gold_set(*, solution: Solution, kind: str, gold: list[int | None]) -> Solution:
    """Make a solution a quality-control or screening question with these gold step ratings,
    or a regular one again (gold ratings cleared).

    ``gold`` has one entry per step, -1/0/1 or None (not scored). A gold solution needs at least
    one gold rating, or it would score nobody.
    """
    steps = list(Step.objects.filter(solution=solution).order_by("index"))
    if kind not in Solution.Kind.values:
        raise ManageError(f"Unknown kind {kind!r}.")
    if len(gold) != len(steps):
        raise ManageError(f"The solution has {len(steps)} steps; {len(gold)} ratings were given.")
    if any(g not in (None, *Rating.values) for g in gold):
        raise ManageError("A gold rating is -1, 0, 1 or empty.")
    if kind == Solution.Kind.REGULAR:
        gold = [None] * len(steps)
    elif all(g is None for g in gold):
        raise ManageError("A quality-control or screening solution needs at least one gold rating.")
    with transaction.atomic():
        for step, rating in zip(steps, gold, strict=True):
            step.gold_rating = rating
        Step.objects.bulk_update(steps, ["gold_rating"])
        Solution.objects.filter(pk=solution.pk).update(kind=kind)
        # Gold solutions are open to everyone, regular ones up to the overlap: recount.
        Solution.objects.filter(pk=solution.pk).refresh_queue_state()
    solution.refresh_from_db()
    return solution


# --- Reviews ---------------------------------------------------------------------------------


def review_submit(
    *,
    assignment: Assignment,
    reviewer: AbstractBaseUser,
    decision: str,
    comment: str = "",
    corrections: dict[int, int] | None = None,
) -> Review:
    """Accept (optionally correcting ratings) or reject (with a comment) a submitted assignment.

    ``corrections`` map a rated step's index to the rating it should have had; a correction
    equal to the annotator's rating is dropped. Exports with "only reviewed" take accepted work
    with its corrections. A rejection sends the solution back to the queue and keeps the
    rejected labels (``labeling.queue.assignment_review_outcome``, in this transaction); exports
    include them, flagged, only with ``include_rejected``. A later review of the same assignment
    replaces the earlier one, and turning a rejection into an acceptance (or back) moves the
    slot again. Nobody reviews their own work.
    """
    comment = (comment or "").strip()
    corrections = corrections or {}
    if assignment.status not in REVIEWABLE:
        raise ManageError("Only submitted work can be reviewed.")
    if assignment.annotator_id == reviewer.pk:
        raise ManageError("You cannot review your own work.")
    if decision not in Review.Decision.values:
        raise ManageError("A review accepts or rejects.")
    if decision == Review.Decision.REJECTED:
        if not comment:
            raise ManageError("Say why you reject it: the annotator reads your comment.")
        if corrections:
            raise ManageError(
                "Rejected work is never exported as training data: correct it, or reject it."
            )
    rated = dict(
        StepLabel.objects.filter(assignment=assignment, rating__isnull=False).values_list(
            "step__index", "rating"
        )
    )
    kept: dict[str, int] = {}
    for index, rating in corrections.items():
        if index not in rated:
            raise ManageError(f"Step {index} was not rated by the annotator: nothing to correct.")
        if rating not in Rating.values:
            raise ManageError(f"Step {index}: a rating is -1, 0 or 1.")
        if rating != rated[index]:
            kept[str(index)] = rating
    with transaction.atomic():
        try:
            assignment_review_outcome(
                assignment=assignment, rejected=decision == Review.Decision.REJECTED
            )
        except LabelingError as error:
            raise ManageError(str(error)) from error
        review, _ = Review.objects.update_or_create(
            assignment=assignment,
            defaults={
                "reviewer": reviewer,
                "decision": decision,
                "comment": comment,
                "corrections": kept,
                "created_at": timezone.now(),
            },
        )
    return review


# --- Adjudication ----------------------------------------------------------------------------


def adjudication_decide(
    *, campaign: Campaign, step: Step, decided_by: AbstractBaseUser, rating: int, note: str = ""
) -> Adjudication:
    """Set the final rating of a step on which annotators disagree; earlier decisions are kept.

    The step must be one of the campaign's regular solutions and disputed now (two or more
    current assignments rated it differently), or already decided (a decision may be changed
    after the dispute ended, e.g. once a rejection removed one side). A new decision replaces
    the current one, which stays with ``replaced_at`` set. The annotators' labels are not
    touched: agreement figures keep reading them; exports use the decision with
    ``annotators="adjudicated"``.
    """
    if rating not in Rating.values:
        raise ManageError("A rating is -1, 0 or 1.")
    solution = step.solution
    if solution.campaign_id != campaign.pk or solution.kind != Solution.Kind.REGULAR:
        raise ManageError("Only steps of this campaign's regular solutions are adjudicated.")
    now = timezone.now()
    with transaction.atomic():
        current = (
            Adjudication.objects.select_for_update()
            .filter(step=step, replaced_at__isnull=True)
            .first()
        )
        if current is None and not disputed_steps(campaign=campaign).filter(step_id=step.pk):
            raise ManageError("The annotators agree on this step: there is nothing to decide.")
        if current is not None:
            current.replaced_at = now
            current.save(update_fields=["replaced_at"])
        try:
            with transaction.atomic():
                return Adjudication.objects.create(
                    step=step,
                    campaign=campaign,
                    rating=rating,
                    note=(note or "").strip(),
                    decided_by=decided_by,
                    decided_at=now,
                )
        except IntegrityError as error:
            raise ManageError(
                "Another reviewer decided this step at the same moment: reload and look again."
            ) from error


# --- Figures (snapshots) ---------------------------------------------------------------------

# A requested snapshot that has not finished after this long is presumed lost (a worker died);
# the next page view may request another.
SNAPSHOT_LOST_AFTER = timedelta(minutes=10)
SNAPSHOTS_KEPT = 5


def snapshot_current(*, campaign: Campaign, refresh: bool = True) -> CampaignSnapshot | None:
    """The newest finished snapshot; with ``refresh``, a missing or stale one is recomputed.

    Stale: older than ``STEPWISE_SNAPSHOT_MAX_AGE`` seconds. The page shows the old figures with
    their time until the new ones are in.
    """
    snapshot = (
        CampaignSnapshot.objects.filter(campaign=campaign, status=CampaignSnapshot.Status.DONE)
        .order_by("-computed_at", "-id")
        .first()
    )
    if refresh and (snapshot is None or snapshot_is_stale(snapshot)):
        snapshot_request(campaign=campaign)
    return snapshot


def snapshot_is_stale(snapshot: CampaignSnapshot) -> bool:
    """Older than ``STEPWISE_SNAPSHOT_MAX_AGE``; or older than ``STEPWISE_SNAPSHOT_MIN_AGE``
    with solutions submitted after its figures were read (the minimum age keeps a busy campaign
    from recomputing after every submission)."""
    from annotators.selectors import snapshot_submitted_since

    age = timezone.now() - snapshot.computed_at
    if age > timedelta(seconds=settings.STEPWISE_SNAPSHOT_MAX_AGE):
        return True
    if age < timedelta(seconds=settings.STEPWISE_SNAPSHOT_MIN_AGE):
        return False
    return snapshot_submitted_since(snapshot, exists=True) > 0


def snapshot_pending(*, campaign: Campaign) -> CampaignSnapshot | None:
    """The snapshot being computed (or waiting for a worker), if any."""
    return (
        CampaignSnapshot.objects.filter(
            campaign=campaign,
            status__in=[CampaignSnapshot.Status.PENDING, CampaignSnapshot.Status.RUNNING],
            requested_at__gte=timezone.now() - SNAPSHOT_LOST_AFTER,
        )
        .order_by("-requested_at")
        .first()
    )


def snapshot_request(*, campaign: Campaign) -> CampaignSnapshot:
    """Have a worker compute fresh figures, unless a computation is already under way."""
    pending = snapshot_pending(campaign=campaign)
    if pending is not None:
        return pending
    snapshot = CampaignSnapshot.objects.create(campaign=campaign)
    SNAPSHOT_JOBS.send(snapshot.pk)
    return snapshot


def _snapshot_send(snapshot_id: int) -> None:
    from annotators.tasks import snapshot_refresh_task

    transaction.on_commit(lambda: snapshot_refresh_task.delay(snapshot_id))


SNAPSHOT_JOBS = JobKind(
    name="snapshots",
    model=CampaignSnapshot,
    send=_snapshot_send,
    created_field="requested_at",
    finished_field=None,
)


def snapshot_run(*, snapshot: CampaignSnapshot) -> CampaignSnapshot:
    """Compute and store a snapshot's figures (the Celery task); keeps the newest few.

    Claimed like every durable job (``common.jobs``): one attempt at a time, a heartbeat while
    it computes, the result written only while this attempt owns it.
    """
    from annotators.stats import campaign_stats

    attempt = job_claim(SNAPSHOT_JOBS, snapshot.pk)
    if attempt is None:
        snapshot.refresh_from_db()
        return snapshot
    started = time.monotonic()
    try:
        with job_heartbeat(SNAPSHOT_JOBS, snapshot.pk, attempt):
            data = campaign_stats(campaign=snapshot.campaign)
    except Exception as error:
        log.exception("snapshot %s failed", snapshot.pk)
        job_update(
            SNAPSHOT_JOBS,
            snapshot.pk,
            attempt,
            status=CampaignSnapshot.Status.FAILED,
            error=f"{type(error).__name__}: {error}",
        )
        raise
    job_update(
        SNAPSHOT_JOBS,
        snapshot.pk,
        attempt,
        status=CampaignSnapshot.Status.DONE,
        computed_at=timezone.now(),
        seconds=time.monotonic() - started,
        data=data,
    )
    keep = (
        CampaignSnapshot.objects.filter(
            campaign_id=snapshot.campaign_id, status=CampaignSnapshot.Status.DONE
        )
        .order_by("-computed_at", "-id")
        .values_list("pk", flat=True)[:SNAPSHOTS_KEPT]
    )
    CampaignSnapshot.objects.filter(campaign_id=snapshot.campaign_id).exclude(
        pk__in=list(keep)
    ).exclude(
        status__in=[CampaignSnapshot.Status.PENDING, CampaignSnapshot.Status.RUNNING]
    ).delete()
    snapshot.refresh_from_db()
    return snapshot
