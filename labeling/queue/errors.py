"""Why the queue refuses a request: one exception per refusal, each with a code for API clients."""

from __future__ import annotations


class LabelingError(Exception):
    """Why the queue refuses a request: ``code`` is for API clients, the text for people."""

    code = "refused"
    message = "This request was refused."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)

    @property
    def detail(self) -> str:
        return str(self)


class NotAMember(LabelingError):
    code = "not_a_member"
    message = "You are not a member of this campaign."


class CampaignPaused(LabelingError):
    code = "campaign_paused"
    message = "This campaign is paused: no new work is served until a manager resumes it."


class MembershipInactive(LabelingError):
    code = "membership_inactive"
    message = "Your membership of this campaign is not active; ask a campaign manager."


class ScreeningFailed(LabelingError):
    code = "screening_failed"
    message = (
        "You did not pass this campaign's screening, so it has no more work for you. "
        "Thank you for your time."
    )


class NotLeaseHolder(LabelingError):
    code = "not_lease_holder"
    message = "This assignment is not yours."


class LeaseTaken(LabelingError):
    code = "lease_taken"
    message = (
        "Your lease on this solution expired and another annotator has taken its place, "
        "so these labels cannot be accepted. Ask for the next solution."
    )


class AssignmentClosed(LabelingError):
    code = "assignment_closed"
    message = "This assignment is already finished."


class LabelsInvalid(LabelingError):
    """Input that breaks a labelling rule; ``field`` names the offending input."""

    code = "invalid"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class DraftsChanged(LabelingError):
    """The page submitted ratings that are no longer the drafts: another tab or window of the
    same annotator changed them. Nothing is stored; ``differences`` says step by step what the
    page showed and what is saved now (numbered from 1)."""

    code = "drafts_changed"

    def __init__(self, differences: list[str]) -> None:
        super().__init__(
            "Not submitted: your ratings of this solution changed in another tab or window since"
            " this page showed them. " + " ".join(differences) + " The steps below are what is"
            " saved now: check them, then press Enter to submit."
        )
        self.differences = differences
