"""Input of the labelling page: one form per action, each cleaning what the browser sends.

Times are measured by the browser and only sanity-checked here: a broken or absent value must
never cost the annotator a rating, so it becomes ``None`` (the view then estimates it) and
absurd values are clamped instead of refused.
"""

from __future__ import annotations

from django import forms

from labeling.models import FinishReason, Rating

# A step read for longer than this was not being read (the tab was left open); a solution
# worked on for longer than this was abandoned and resumed. Clamped, not refused.
STEP_TIME_MAX_MS = 30 * 60 * 1000
TOTAL_TIME_MAX_MS = 4 * 60 * 60 * 1000
HUMAN_COMPLETION_MAX_CHARS = 5000


def clamp_ms(value: int | None, *, maximum: int) -> int | None:
    """A duration in milliseconds within ``[0, maximum]``; ``None`` stays ``None``."""
    if value is None:
        return None
    return max(0, min(int(value), maximum))


class MillisecondsField(forms.Field):
    """A client-measured duration: lenient (garbage reads as unknown) and clamped."""

    def __init__(self, *, maximum: int, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.maximum = maximum

    def to_python(self, value) -> int | None:
        if value in self.empty_values:
            return None
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        if number != number or number in (float("inf"), float("-inf")):  # NaN, infinities
            return None
        return clamp_ms(int(number), maximum=self.maximum)


class RateForm(forms.Form):
    step_index = forms.IntegerField(min_value=0)
    rating = forms.TypedChoiceField(choices=Rating.choices, coerce=int)
    flagged = forms.BooleanField(required=False)
    time_ms = MillisecondsField(maximum=STEP_TIME_MAX_MS)


class FlagForm(forms.Form):
    step_index = forms.IntegerField(min_value=0)
    flagged = forms.TypedChoiceField(
        choices=[("1", "flag"), ("0", "unflag")], coerce=lambda v: v == "1"
    )


class UndoForm(forms.Form):
    # The step the page showed as last rated: a retried undo finds it gone and does nothing,
    # instead of removing the rating before it too.
    step_index = forms.IntegerField(min_value=0, required=False)


class SubmitForm(forms.Form):
    submission_key = forms.CharField(max_length=64)
    human_completion = forms.CharField(
        required=False, max_length=HUMAN_COMPLETION_MAX_CHARS, strip=True
    )
    # Empty: the service decides (``solution`` or ``found_error``). The page offers only the
    # two ways out that do not need every step rated.
    finish_reason = forms.ChoiceField(
        required=False,
        choices=[
            ("", "finished"),
            (FinishReason.GIVE_UP.value, FinishReason.GIVE_UP.label),
            (FinishReason.BAD_PROBLEM.value, FinishReason.BAD_PROBLEM.label),
        ],
    )
    total_time_ms = MillisecondsField(maximum=TOTAL_TIME_MAX_MS)
