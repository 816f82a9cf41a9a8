"""Forms of the manager's pages (members, invitations, gold) and the sign-up page; the review
pages' are ``annotators.review.forms``."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm

from labeling.models import Membership, Solution

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
