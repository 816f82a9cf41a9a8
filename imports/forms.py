"""The form of the imports page: an upload."""

from __future__ import annotations

from django import forms

from imports.pipeline import FORMATS
from imports.services import upload_limit_bytes, upload_too_large_message
from imports.splitting import DEFAULT_SPLIT, MAX_PATTERN_CHARS, SplitError, check_mode
from labeling.models import Solution


class UploadForm(forms.Form):
    """A file to import, its format and options (the importer checks the content)."""

    file = forms.FileField()
    format = forms.ChoiceField(
        initial="auto",
        help_text="Guessed from the first record unless you choose; a choice the file does not "
        "match is refused with the format it looks like.",
        choices=[
            ("auto", "guess from the first record"),
            *((name, f"{name}: {f.description}") for name, f in FORMATS.items()),
        ],
    )
    as_gold = forms.ChoiceField(
        choices=[
            ("", "no: regular solutions"),
            (Solution.Kind.QUALITY_CONTROL, "quality control"),
            (Solution.Kind.SCREENING, "screening"),
        ],
        required=False,
        label="Import as gold",
        help_text="ProcessBench labels and JSONL gold_ratings become gold step ratings.",
    )
    generator = forms.CharField(
        max_length=200, required=False, help_text="Generator name for solutions without one."
    )
    grade = forms.BooleanField(
        required=False, initial=True, label="Grade final answers after the import"
    )
    split = forms.CharField(
        max_length=MAX_PATTERN_CHARS,
        required=False,
        initial=DEFAULT_SPLIT,
        label="Split text into steps",
        help_text="auto (default), paragraphs, lines, numbered, or a regular expression "
        "between steps. Use Preview to see the first solutions as they will be split.",
    )

    def clean_split(self) -> str:
        try:
            return check_mode(self.cleaned_data.get("split"))
        except SplitError as e:
            raise forms.ValidationError(str(e)) from None

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > upload_limit_bytes():
            raise forms.ValidationError(upload_too_large_message(upload.size))
        return upload
