"""The upload form of the imports page."""

from __future__ import annotations

from django import forms

from imports.services import upload_limit_bytes, upload_too_large_message
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
            ("jsonl", "jsonl: problems with solutions (generic, GSM8K, Qwen2.5-Math)"),
            ("prm800k", "prm800k: PRM800K label lines (phase 1 or 2)"),
            ("prm800k-trajectories", "prm800k-trajectories: PRM800K phase 1 trajectories"),
            ("processbench", "processbench: ProcessBench records"),
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

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > upload_limit_bytes():
            raise forms.ValidationError(upload_too_large_message(upload.size))
        return upload
