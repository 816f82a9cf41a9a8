"""Forms of the review and adjudication pages: a review, a final rating, and the lists' filters."""

from __future__ import annotations

from django import forms

from annotators.forms import RATING_CHOICES
from labeling.models import Review, Solution


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
