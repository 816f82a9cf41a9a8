"""The upload form of the imports page."""

from __future__ import annotations

from django import forms
from django.conf import settings

from imports.models import GenerationJob
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


class GenerationForm(forms.Form):
    """K solutions per problem from an OpenAI-compatible endpoint (``imports.generation``)."""

    base_url = forms.CharField(
        max_length=500,
        label="Endpoint",
        help_text="OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (vLLM).",
    )
    model = forms.CharField(max_length=200)
    api_key_env = forms.ChoiceField(
        required=False,
        label="API key from",
        help_text="The environment variable of the worker that holds the key (never stored).",
    )
    samples_per_problem = forms.IntegerField(min_value=1, max_value=1000, initial=4, label="K")
    selection = forms.ChoiceField(choices=GenerationJob.Selection.choices, initial="all")
    subject = forms.CharField(max_length=200, required=False, help_text="For the filter.")
    level = forms.CharField(max_length=20, required=False, help_text="For the filter.")
    search = forms.CharField(max_length=200, required=False, help_text="For the filter.")
    prompt_template = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="{problem} is replaced by the problem's text. Default: PRM800K's format.",
    )
    temperature = forms.FloatField(min_value=0, max_value=2, initial=1.0)
    top_p = forms.FloatField(min_value=0.01, max_value=1, initial=1.0)
    max_tokens = forms.IntegerField(min_value=1, max_value=131072, initial=1024)
    split = forms.CharField(max_length=MAX_PATTERN_CHARS, initial=DEFAULT_SPLIT)
    concurrency = forms.IntegerField(min_value=1, initial=4)
    timeout_s = forms.FloatField(min_value=1, max_value=3600, initial=120, label="Timeout (s)")
    max_retries = forms.IntegerField(min_value=0, max_value=20, initial=5)
    generator = forms.CharField(max_length=200, required=False, help_text="Default: the model.")
    grade = forms.BooleanField(required=False, initial=True, label="Grade final answers")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        names = settings.STEPWISE_GENERATION_KEY_VARS
        self.fields["api_key_env"].choices = [("", "no key"), *((n, n) for n in names)]
        self.fields[
            "concurrency"
        ].help_text = f"Requests at a time, at most {settings.STEPWISE_GENERATION_MAX_CONCURRENCY}."

    def clean_split(self) -> str:
        try:
            return check_mode(self.cleaned_data.get("split"))
        except SplitError as e:
            raise forms.ValidationError(str(e)) from None

    def job_kwargs(self) -> dict:
        data = dict(self.cleaned_data)
        data["problem_filter"] = {k: data.pop(k) for k in ("subject", "level", "search")}
        return data
