"""Forms of the manager's pages, the sign-up page and the review page."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm

from labeling.models import Membership, Review, Solution

RATING_CHOICES = [("", "—"), ("1", "+1 positive"), ("0", "0 neutral"), ("-1", "−1 negative")]


class InvitationForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.ANNOTATOR)
    max_uses = forms.IntegerField(
        min_value=1, max_value=100_000, initial=1, label="Uses", help_text="1: single use."
    )
    expires_in_days = forms.IntegerField(
        min_value=1, max_value=365, label="Expires in (days)", initial=7
    )
    note = forms.CharField(max_length=200, required=False, help_text="Who it is for.")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["expires_in_days"].initial = settings.STEPWISE_INVITATION_DAYS

    @property
    def expires_in(self) -> timedelta:
        return timedelta(days=self.cleaned_data["expires_in_days"])


class MemberForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)
    status = forms.ChoiceField(choices=Membership.Status.choices)


class SignUpForm(UserCreationForm):
    """A new account, made through an invitation link."""

    email = forms.EmailField(required=False)

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class ReviewForm(forms.Form):
    """Accept (with optional corrections) or reject (with a comment) one assignment.

    One ``step_<index>`` field per rated step: empty keeps the annotator's rating.
    """

    decision = forms.ChoiceField(
        choices=[
            (Review.Decision.ACCEPTED, "Accept (with the corrections in the table above, if any)"),
            (Review.Decision.REJECTED, "Reject"),
        ],
        widget=forms.RadioSelect,
    )
    comment = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="Required to reject: the annotator reads it.",
    )

    def __init__(self, *args, step_indexes: list[int], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for index in step_indexes:
            self.fields[f"step_{index}"] = forms.ChoiceField(
                choices=RATING_CHOICES, required=False, label=f"Step {index + 1}"
            )

    def corrections(self) -> dict[int, int]:
        return {
            int(name.removeprefix("step_")): int(value)
            for name, value in self.cleaned_data.items()
            if name.startswith("step_") and value not in ("", None)
        }


class GoldForm(forms.Form):
    """A solution's kind and its gold step ratings (``gold_<index>``, empty: not scored)."""

    kind = forms.ChoiceField(choices=Solution.Kind.choices)

    def __init__(self, *args, step_indexes: list[int], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for index in step_indexes:
            self.fields[f"gold_{index}"] = forms.ChoiceField(
                choices=RATING_CHOICES, required=False, label=f"Step {index + 1}"
            )
        self.step_indexes = step_indexes

    def gold(self) -> list[int | None]:
        values = [self.cleaned_data.get(f"gold_{i}") for i in self.step_indexes]
        return [int(v) if v not in ("", None) else None for v in values]


class ReviewFilterForm(forms.Form):
    """The review list's filters (GET)."""

    STATES = [
        ("unreviewed", "not reviewed yet"),
        ("sent", "sent for review by a manager"),
        ("accepted", "accepted"),
        ("rejected", "rejected"),
        ("all", "all"),
    ]
    SORTS = [("-submitted", "newest first"), ("submitted", "oldest first")]

    state = forms.ChoiceField(choices=STATES, required=False)
    annotator = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    kind = forms.ChoiceField(
        choices=[("", "any kind"), *Solution.Kind.choices], required=False, label="Kind"
    )
    low_qc = forms.BooleanField(required=False, label="Low QC agreement")
    disagreement = forms.BooleanField(required=False, label="Disagrees with others")
    sort = forms.ChoiceField(choices=SORTS, required=False)

    def __init__(self, *args, annotators: list[tuple[int, str]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotator"].choices = [("", "anyone"), *annotators]


class AdjudicationForm(forms.Form):
    """A reviewer's final rating of a disputed step, and why."""

    rating = forms.TypedChoiceField(
        choices=RATING_CHOICES[1:], coerce=int, widget=forms.RadioSelect, label="Final rating"
    )
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text="Optional: why, for the other reviewers and the audit trail.",
    )


class AdjudicationFilterForm(forms.Form):
    """The adjudication queue's filter (GET)."""

    STATES = [("open", "not decided yet"), ("decided", "decided"), ("all", "all")]

    state = forms.ChoiceField(choices=STATES, required=False)
