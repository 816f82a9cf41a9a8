"""The export form: a format and the label policy's options, as a manager sets them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict

from exports.formats.math_shepherd import DEFAULT_STEP_TAG
from exports.formats.registry import FORMATS
from exports.policy import POLICY_OPTIONS, LabelPolicy, Option
from labeling.curation.filters import FilterError, SolutionFilter


def policy_field(option: Option) -> forms.Field:
    """The form field of one policy option, from its declaration."""
    common = {"initial": option.default, "help_text": option.help, "label": option.label or None}
    if option.choices:
        return forms.ChoiceField(choices=option.choices, **common)
    if option.type is bool:
        # An unticked box is absent from the POST: False, not missing.
        return forms.BooleanField(required=False, **common)
    number = forms.FloatField if option.type is float else forms.IntegerField
    return number(min_value=option.min_value, max_value=option.max_value, **common)


class ExportForm(forms.Form):
    format = forms.ChoiceField(
        choices=[(f.name, f"{f.name}: {f.description}") for f in FORMATS.values()],
        initial="trl",
    )
    step_tag = forms.CharField(
        max_length=20,
        initial=DEFAULT_STEP_TAG,
        strip=False,
        required=False,
        help_text="math-shepherd only",
    )
    # The data browser's filters, as its query string: export only what they match.
    selection = forms.CharField(required=False, widget=forms.HiddenInput, max_length=200_000)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for option in POLICY_OPTIONS:
            self.fields[option.name] = policy_field(option)
        self.order_fields(["format", *(o.name for o in POLICY_OPTIONS), "step_tag"])

    def clean_selection(self) -> SolutionFilter | None:
        raw = self.cleaned_data.get("selection") or ""
        try:
            selection = SolutionFilter.from_params(QueryDict(raw))
        except FilterError as error:
            raise forms.ValidationError(f"The selection is broken: {error.message}") from None
        return selection or None

    def policy(self) -> LabelPolicy:
        return LabelPolicy(**{o.name: self.cleaned_data[o.name] for o in POLICY_OPTIONS})

    def options(self) -> dict[str, Any]:
        if self.cleaned_data["format"] == "math-shepherd":
            return {"step_tag": self.cleaned_data["step_tag"] or DEFAULT_STEP_TAG}
        return {}
