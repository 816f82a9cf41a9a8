"""Forms of the manager's pages, the sign-up page and the review page."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm
from django.utils.text import slugify

from annotators.models import Membership
from annotators.services import upload_limit_bytes, upload_too_large_message
from labeling.models import Campaign, Review, Solution

# Paths under /campaigns/ that are not campaigns.
RESERVED_SLUGS = {"new"}
RATING_CHOICES = [("", "—"), ("1", "+1 positive"), ("0", "0 neutral"), ("-1", "−1 negative")]


def _share(value: float, name: str) -> float:
    if not 0.0 <= value <= 1.0:
        raise forms.ValidationError(f"{name} is a share between 0 and 1.")
    return value


class CampaignForm(forms.ModelForm):
    """Every setting of a campaign. The slug is chosen once (URLs and exports carry it)."""

    class Meta:
        model = Campaign
        fields = [
            "name",
            "slug",
            "instructions",
            "overlap",
            "lease_seconds",
            "stop_at_first_error",
            "qc_rate",
            "requires_screening",
            "screening_threshold",
            "bad_problem_limit",
            "active_learning",
            "al_wrong_answer_share",
            "al_retrain_every",
            "al_backbone",
        ]
        labels = {
            "qc_rate": "Quality-control rate",
            "al_wrong_answer_share": "Active learning: share of convincing wrong answers",
            "al_retrain_every": "Active learning: retrain every N labels",
            "al_backbone": "Active learning: PRM backbone",
            "lease_seconds": "Lease (seconds)",
        }
        widgets = {"instructions": forms.Textarea(attrs={"rows": 8})}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["slug"].required = False
        self.fields["slug"].help_text = "Part of the campaign's URLs; from the name if empty."
        if self.instance.pk:
            del self.fields["slug"]

    def clean_overlap(self) -> int:
        value = self.cleaned_data["overlap"]
        if value < 1:
            raise forms.ValidationError("At least one annotator labels each solution.")
        return value

    def clean_lease_seconds(self) -> int:
        value = self.cleaned_data["lease_seconds"]
        if value < 60:
            raise forms.ValidationError("A lease lasts at least 60 seconds.")
        return value

    def clean_bad_problem_limit(self) -> int:
        value = self.cleaned_data["bad_problem_limit"]
        if value < 1:
            raise forms.ValidationError("At least one report takes a solution out.")
        return value

    def clean_qc_rate(self) -> float:
        return _share(self.cleaned_data["qc_rate"], "The quality-control rate")

    def clean_screening_threshold(self) -> float:
        return _share(self.cleaned_data["screening_threshold"], "The screening threshold")

    def clean_al_wrong_answer_share(self) -> float:
        return _share(self.cleaned_data["al_wrong_answer_share"], "The share")

    def clean_al_retrain_every(self) -> int:
        value = self.cleaned_data["al_retrain_every"]
        if value < 1:
            raise forms.ValidationError("Retrain after at least one label.")
        return value

    def clean(self) -> dict:
        data = super().clean()
        if "slug" in self.fields and data.get("name") and not self.errors.get("slug"):
            slug = data.get("slug") or slugify(data["name"])[:80]
            if not slug:
                self.add_error("slug", "Choose a slug: letters, digits, - and _.")
            elif slug in RESERVED_SLUGS:
                self.add_error("slug", f"{slug!r} is reserved; choose another.")
            elif Campaign.objects.filter(slug=slug).exists():
                self.add_error("slug", f"The slug {slug!r} is taken; choose another.")
            else:
                data["slug"] = slug
        return data

    def settings(self) -> dict:
        """The cleaned settings as keyword arguments for the services."""
        return {name: self.cleaned_data[name] for name in self.fields}


class UploadForm(forms.Form):
    """A file to import, its format and options (the importer checks the content)."""

    file = forms.FileField()
    format = forms.ChoiceField(
        choices=[
            ("jsonl", "jsonl: problems with solutions (generic, GSM8K, Qwen2.5-Math)"),
            ("prm800k", "prm800k: PRM800K label lines (phase 1 or 2)"),
            ("prm800k-trajectories", "prm800k-trajectories: PRM800K phase 1 trajectories"),
            ("processbench", "processbench: ProcessBench records"),
        ]
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


class ReviewForm(forms.Form):
    """Accept (with optional corrections) or reject (with a comment) one assignment.

    One ``step_<index>`` field per rated step: empty keeps the annotator's rating.
    """

    decision = forms.ChoiceField(
        choices=[
            (Review.Decision.ACCEPTED, "Accept (with the corrections below, if any)"),
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


class ReviewFilterForm(forms.Form):
    """The review list's filters (GET)."""

    STATES = [
        ("unreviewed", "not reviewed yet"),
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
