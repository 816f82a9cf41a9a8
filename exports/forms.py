"""The export form: a format and the label policy's options, as a manager sets them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict

from exports.formats.options import FORMAT_OPTIONS, FormatOption
from exports.formats.registry import FORMATS
from exports.policy import POLICY_OPTIONS, LabelPolicy, Option
from labeling.curation.filters import FilterError, SolutionFilter


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


def format_option_field(option: FormatOption) -> forms.Field:
    """The form field of one format option, from its declaration. Never required: a format
    without the option ignores it, and an empty one means its default."""
    common: dict[str, Any] = {
        "required": False,
        "help_text": f"{option.scope}: {option.help}",
        "label": option.label or None,
    }
    if (declared := option.choices) is not None:
        # Only what the operator declared (read when the form is shown): the page never reads
        # a path.
        return forms.ChoiceField(choices=lambda: [("", option.blank_choice), *declared()], **common)
    if option.type is bool:
        return forms.BooleanField(**common)
    if option.type is int:
        return forms.IntegerField(
            min_value=option.min_value,
            max_value=option.max_value,
            initial=option.default,
            **common,
        )
    # A default of spaces alone (the separator's newline) cannot be shown in a one-line box:
    # the box starts empty, which means the default.
    initial = option.default if option.default.strip() else None
    return forms.CharField(
        max_length=option.max_chars, strip=not option.keep_spaces, initial=initial, **common
    )


class ExportForm(forms.Form):
    format = forms.ChoiceField(
        choices=[(f.name, f"{f.name}: {f.description}") for f in FORMATS.values()],
        initial="trl",
    )
    # The data browser's filters, as its query string: export only what they match.
    selection = forms.CharField(required=False, widget=forms.HiddenInput, max_length=200_000)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for option in POLICY_OPTIONS:
            self.fields[option.name] = policy_field(option)
        for format_option in FORMAT_OPTIONS:
            self.fields[format_option.name] = format_option_field(format_option)
        self.order_fields(
            ["format", *(o.name for o in POLICY_OPTIONS), *(o.name for o in FORMAT_OPTIONS)]
        )

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
        """The chosen format's options, each left empty as its default."""
        fmt = self.cleaned_data["format"]
        return {
            o.name: self.cleaned_data[o.name] or o.default
            for o in FORMAT_OPTIONS
            if fmt in o.formats
        }
