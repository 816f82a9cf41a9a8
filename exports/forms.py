"""The export form: a format and the label policy's options, as a manager sets them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict

from exports.formats.math_shepherd import DEFAULT_STEP_TAG
from exports.formats.registry import FORMATS
from exports.lengths import TRL_DEFAULT_MAX_LENGTH, TRL_DEFAULT_SEPARATOR, tokenizer_choices
from exports.policy import POLICY_OPTIONS, LabelPolicy, Option
from labeling.curation.filters import FilterError, SolutionFilter

TRL_FIELDS = ("tokenizer", "max_length", "step_separator", "keep_labels")


def policy_field(option: Option) -> forms.Field:
    """The form field of one policy option, from its declaration."""
    common = {"initial": option.default, "help_text": option.help, "label": option.label or None}
    if option.choices:
        # Absent from a POST (a client older than the option): its default, as in the API.
        return forms.TypedChoiceField(
            choices=option.choices, required=False, empty_value=option.default, **common
        )
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
    tokenizer = forms.ChoiceField(
        required=False,
        choices=(),
        help_text="trl only: the trainer's tokenizer; the manifest counts the labels TRL's "
        "PRMTrainer would cut off at max_length",
    )
    max_length = forms.IntegerField(
        min_value=8,
        max_value=1_000_000,
        initial=TRL_DEFAULT_MAX_LENGTH,
        required=False,
        help_text="trl only: PRMConfig.max_length",
    )
    step_separator = forms.CharField(
        max_length=40,
        strip=False,
        required=False,
        help_text="trl only: PRMConfig.step_separator (empty: TRL's default, a newline); "
        "for BERT-style tokenizers ' [SEP] '",
    )
    keep_labels = forms.BooleanField(
        required=False,
        label="Keep every label within max_length",
        help_text="trl only, with a tokenizer: rows the trainer would cut lose the start of "
        "their prompt, or are split into windows that each end on a labelled step",
    )
    # The data browser's filters, as its query string: export only what they match.
    selection = forms.CharField(required=False, widget=forms.HiddenInput, max_length=200_000)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for option in POLICY_OPTIONS:
            self.fields[option.name] = policy_field(option)
        self.fields["tokenizer"].choices = [("", "none (no length check)"), *tokenizer_choices()]
        self.order_fields(["format", *(o.name for o in POLICY_OPTIONS), "step_tag", *TRL_FIELDS])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("keep_labels") and not data.get("tokenizer"):
            self.add_error("keep_labels", "Choose the trainer's tokenizer to keep every label.")
        return data

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
        if self.cleaned_data["format"] in ("trl", "trl-parquet"):
            return {
                "tokenizer": self.cleaned_data["tokenizer"] or "",
                "max_length": self.cleaned_data["max_length"] or TRL_DEFAULT_MAX_LENGTH,
                "step_separator": self.cleaned_data["step_separator"] or TRL_DEFAULT_SEPARATOR,
                "keep_labels": self.cleaned_data["keep_labels"],
            }
        return {}
