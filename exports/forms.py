"""The export form: a format and the label policy's options, as a manager sets them."""

from __future__ import annotations

from typing import Any

from django import forms

from exports.formats import DEFAULT_STEP_TAG, FORMATS, LabelPolicy

_DEFAULT = LabelPolicy()


class ExportForm(forms.Form):
    format = forms.ChoiceField(
        choices=[(f.name, f"{f.name}: {f.description}") for f in FORMATS.values()],
        initial="trl",
    )
    neutral = forms.ChoiceField(
        choices=[("positive", "positive (as the PRM800K paper)"), ("negative", "negative")],
        initial=_DEFAULT.neutral,
        label="Neutral steps count as",
    )
    cut_after_first_negative = forms.BooleanField(
        required=False, initial=_DEFAULT.cut_after_first_negative
    )
    alternatives = forms.BooleanField(
        required=False,
        initial=_DEFAULT.alternatives,
        label="Alternative completions as extra examples",
    )
    annotators = forms.ChoiceField(
        choices=[
            ("majority", "majority per step (ties: the more negative)"),
            ("unanimous", "unanimous steps only"),
            ("each", "one record per annotator"),
        ],
        initial=_DEFAULT.annotators,
        label="Several annotators",
    )
    include_quality_control = forms.BooleanField(
        required=False, initial=_DEFAULT.include_quality_control
    )
    include_screening = forms.BooleanField(required=False, initial=_DEFAULT.include_screening)
    reviewed_only = forms.BooleanField(
        required=False, initial=_DEFAULT.reviewed_only, label="Only reviewed and accepted"
    )
    test_fraction = forms.FloatField(
        min_value=0.0, max_value=0.99, initial=_DEFAULT.test_fraction, label="Test fraction"
    )
    split_seed = forms.IntegerField(initial=_DEFAULT.split_seed)
    math500 = forms.ChoiceField(
        choices=[
            ("ignore", "treat like any problem"),
            ("test", "force into test"),
            ("exclude", "exclude"),
        ],
        initial=_DEFAULT.math500,
        label="MATH-500 problems",
    )
    step_tag = forms.CharField(
        max_length=20,
        initial=DEFAULT_STEP_TAG,
        strip=False,
        required=False,
        help_text="math-shepherd only",
    )

    def policy(self) -> LabelPolicy:
        data = self.cleaned_data
        return LabelPolicy(
            **{name: data[name] for name in LabelPolicy.__dataclass_fields__ if name in data}
        )

    def options(self) -> dict[str, Any]:
        if self.cleaned_data["format"] == "math-shepherd":
            return {"step_tag": self.cleaned_data["step_tag"] or DEFAULT_STEP_TAG}
        return {}
