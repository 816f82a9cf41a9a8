"""The campaign form (settings) and the labelling page's input: one form per action.

Times are measured by the browser and only sanity-checked here: a broken or absent value must
never cost the annotator a rating, so it becomes ``None`` (the view then estimates it) and
absurd values are clamped instead of refused.
"""

from __future__ import annotations

from django import forms
from django.utils.text import slugify

from labeling.backbones import backbone_choices
from labeling.endpoints import (
    endpoint_choices,
    endpoint_model,
    sampler_endpoints,
    scorer_endpoints,
)
from labeling.models import Campaign, FinishReason, Rating

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


class CandidateRateForm(forms.Form):
    """Phase 1 mode: rate one candidate next step (``labeling.queue.phase1``)."""

    candidate = forms.IntegerField(min_value=1)
    rating = forms.TypedChoiceField(choices=Rating.choices, coerce=int)
    flagged = forms.BooleanField(required=False)
    time_ms = MillisecondsField(maximum=STEP_TIME_MAX_MS)


class CandidateForm(forms.Form):
    """Phase 1 mode: the candidate to continue with, or (undo) the one whose action to take
    back, as the page showed it: a retried request finds it done and does nothing."""

    candidate = forms.IntegerField(min_value=1, required=False)


class CandidateChooseForm(CandidateForm):
    """Phase 1 mode: the candidate to continue with (a choice names one)."""

    candidate = forms.IntegerField(min_value=1)


class StepWriteForm(forms.Form):
    """Phase 1 mode: the annotator's own next step, at the position the page showed."""

    position = forms.IntegerField(min_value=0)
    text = forms.CharField(max_length=HUMAN_COMPLETION_MAX_CHARS, strip=True)


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
    # A trajectory's final outcome (``labeling/_outcome_rating.html``); empty: not rated.
    outcome_rating = forms.TypedChoiceField(
        required=False,
        choices=[("", "not rated"), ("-1", "-1"), ("0", "0"), ("1", "1")],
        coerce=int,
        empty_value=None,
    )
    # The drafts as the page showed them (``labeling.queue.drafts_version``); absent from a
    # form posted by hand, which then submits whatever the drafts are.
    drafts_seen = forms.CharField(required=False, max_length=20000, strip=False)


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
            "trace_kind",
            "instructions",
            "overlap",
            "lease_seconds",
            "stop_at_first_error",
            "phase1_mode",
            "phase1_endpoint",
            "phase1_model",
            "phase1_samples",
            "qc_rate",
            "requires_screening",
            "screening_threshold",
            "qc_pause",
            "qc_pause_window",
            "qc_pause_threshold",
            "bad_problem_limit",
            "relabel_by_same_annotator",
            "reviewers_see_evidence",
            "grading_rule",
            "active_learning",
            "al_wrong_answer_share",
            "al_retrain_every",
            "al_backbone",
            "al_strategy",
            "al_control_share",
            "al_scoring_endpoint",
            "al_scoring_model",
        ]
        labels = {
            "trace_kind": "What it labels",
            "qc_rate": "Quality-control rate",
            "phase1_mode": "PRM800K phase 1 mode (candidate next steps)",
            "phase1_endpoint": "Phase 1 mode: endpoint that samples candidates",
            "phase1_model": "Phase 1 mode: the endpoint's model",
            "phase1_samples": "Phase 1 mode: candidates sampled per step",
            "qc_pause": "Pause annotators whose QC score falls",
            "qc_pause_window": "Pause rule: last N quality-control questions",
            "qc_pause_threshold": "Pause rule: QC score under which to pause",
            "al_wrong_answer_share": "Active learning: share of convincing wrong answers",
            "al_retrain_every": "Active learning: retrain every N labels",
            "al_backbone": "Active learning: PRM backbone",
            "al_strategy": "Active learning: selection strategy",
            "al_control_share": "Active learning: control arm share",
            "al_scoring_endpoint": "Active learning: served PRM (scoring endpoint)",
            "al_scoring_model": "Active learning: served PRM's model",
            "lease_seconds": "Lease (seconds)",
            "relabel_by_same_annotator": "Rejected work may go back to the same annotator",
            "reviewers_see_evidence": "Reviewers see machine evidence on the review page",
            "grading_rule": "Grading rule (final answers)",
        }
        widgets = {"instructions": forms.Textarea(attrs={"rows": 8})}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["slug"].required = False
        self.fields["slug"].help_text = "Part of the campaign's URLs; from the name if empty."
        if self.instance.pk:
            del self.fields["slug"]
        # Only the operator's list (STEPWISE_PRM_BACKBONES): a manager picks, never types a path.
        self.fields["al_backbone"] = forms.ChoiceField(
            choices=backbone_choices(),
            label=self.Meta.labels["al_backbone"],
            help_text="The backbones this site offers (STEPWISE_PRM_BACKBONES).",
        )
        # Optional: a client that predates the setting (a saved form, a script) keeps the
        # campaign's strategy, or a new campaign's default.
        self.fields["al_strategy"].required = False
        # Optional, as the settings after it: a client that predates it keeps the campaign's.
        self.fields["trace_kind"].required = False
        scoring = _scoring_choices()
        if not scoring and self.instance.al_strategy != Campaign.Strategy.SERVED_PRM:
            # Nothing to steer it: the strategy by the served PRM is not offered until the
            # operator declares a scoring endpoint (a campaign already on it keeps it, with
            # the error that says so).
            strategy = self.fields["al_strategy"]
            if isinstance(strategy, forms.ChoiceField):
                strategy.choices = [
                    c for c in Campaign.Strategy.choices if c[0] != Campaign.Strategy.SERVED_PRM
                ]
        # A PRM served elsewhere: one of the operator's scoring endpoints, by name (never a URL).
        self.fields["al_scoring_endpoint"] = forms.ChoiceField(
            choices=[("", "none"), *scoring],
            required=False,
            label=self.Meta.labels["al_scoring_endpoint"],
            help_text="A PRM the operator serves (STEPWISE_ENDPOINTS, kinds pooling and "
            "step-scores): its scores steer the strategy 'by the served PRM'.",
        )
        self.fields["al_scoring_model"].required = False
        # Phase 1 mode's sampler: one of the operator's chat endpoints, by name.
        self.fields["phase1_endpoint"] = forms.ChoiceField(
            choices=[
                ("", "none: only the imported candidates"),
                *endpoint_choices(sampler_endpoints()),
            ],
            required=False,
            label=self.Meta.labels["phase1_endpoint"],
            help_text="A chat endpoint the operator declared (STEPWISE_ENDPOINTS): it samples "
            "candidate next steps for a prefix the solution's own tree has none for.",
        )
        self.fields["phase1_model"].required = False
        self.fields["phase1_samples"].required = False
        self.fields["al_control_share"].required = False
        self.fields["qc_pause_window"].required = False
        self.fields["qc_pause_threshold"].required = False
        self.fields["grading_rule"].required = False

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

    def clean_qc_pause_window(self) -> int:
        value = self.cleaned_data.get("qc_pause_window")
        if value is None:  # a client that predates the setting keeps the campaign's
            return self.instance.qc_pause_window
        if value < 1:
            raise forms.ValidationError("The rule scores at least one question.")
        return value

    def clean_qc_pause_threshold(self) -> float:
        value = self.cleaned_data.get("qc_pause_threshold")
        if value is None:
            return self.instance.qc_pause_threshold
        return _share(value, "The pause threshold")

    def clean_al_wrong_answer_share(self) -> float:
        return _share(self.cleaned_data["al_wrong_answer_share"], "The share")

    def clean_al_control_share(self) -> float:
        value = self.cleaned_data.get("al_control_share")
        if value is None:  # a client that predates the setting keeps the campaign's
            return self.instance.al_control_share
        return _share(value, "The control arm's share")

    def clean_grading_rule(self) -> str:
        # a client that predates the setting keeps the campaign's (a new one, the default)
        return self.cleaned_data.get("grading_rule") or self.instance.grading_rule

    def clean_al_strategy(self) -> str:
        return self.cleaned_data.get("al_strategy") or self.instance.al_strategy

    def clean_trace_kind(self) -> str:
        """The kind chosen, or the campaign's; it changes only while the campaign has no
        problems (its imports, steps and labels are of the kind they were made as)."""
        value = self.cleaned_data.get("trace_kind") or self.instance.trace_kind
        changed = self.instance.pk and value != self.instance.trace_kind
        if changed and self.instance.problems.exists():
            raise forms.ValidationError(
                "What a campaign labels cannot change once it has problems; make a new campaign."
            )
        return value

    def clean_al_retrain_every(self) -> int:
        value = self.cleaned_data["al_retrain_every"]
        if value < 1:
            raise forms.ValidationError("Retrain after at least one label.")
        return value

    def clean(self) -> dict:
        data = super().clean()
        name = data.get("al_scoring_endpoint") or ""
        if name:
            try:
                data["al_scoring_model"] = endpoint_model(
                    scorer_endpoints(), name, data.get("al_scoring_model") or ""
                )
            except ValueError as e:
                self.add_error("al_scoring_model", str(e))
        else:
            data["al_scoring_model"] = ""
        if data is not None:
            self._phase1_clean(data)
        if data.get("al_strategy") == Campaign.Strategy.SERVED_PRM and not name:
            self.add_error(
                "al_scoring_endpoint", served_prm_missing(declared=bool(scorer_endpoints()))
            )
        if "slug" in self.fields and data.get("name") and not self.errors.get("slug"):
            slug = data.get("slug") or slugify(data["name"])[:80]
            if not slug:
                self.add_error("slug", "Choose a slug: letters, digits, - and _.")
            elif slug in RESERVED_SLUGS or Campaign.objects.filter(slug=slug).exists():
                # One message whether a campaign has it (one the creator may not see) or a
                # path does: the answer tells nothing about other people's campaigns.
                self.add_error("slug", SLUG_UNAVAILABLE % {"slug": slug})
            else:
                data["slug"] = slug
        return data

    def _phase1_clean(self, data: dict) -> None:
        """Phase 1 mode's sampler: a declared chat endpoint and one of its models, or none."""
        sampler = data.get("phase1_endpoint") or ""
        if sampler:
            try:
                data["phase1_model"] = endpoint_model(
                    sampler_endpoints(), sampler, data.get("phase1_model") or ""
                )
            except ValueError as e:
                self.add_error("phase1_model", str(e))
        else:
            data["phase1_model"] = ""
        samples = data.get("phase1_samples")
        if samples is None:  # a client that predates the setting keeps the campaign's
            data["phase1_samples"] = self.instance.phase1_samples
        elif not 1 <= samples <= 16:
            self.add_error("phase1_samples", "Sample 1 to 16 candidates per step.")

    def settings(self) -> dict:
        """The cleaned settings as keyword arguments for the services."""
        return {name: self.cleaned_data[name] for name in self.fields}


def _scoring_choices() -> list[tuple[str, str]]:
    return endpoint_choices(scorer_endpoints())


# Paths under /campaigns/ that are not campaigns.
def served_prm_missing(*, declared: bool) -> str:
    """Why the strategy by the served PRM cannot run: no endpoint chosen, or none declared."""
    if declared:
        return "The strategy by the served PRM needs a scoring endpoint: choose one."
    return (
        "The strategy by the served PRM needs a scoring endpoint, and this site declares none: "
        "the operator must declare one (STEPWISE_ENDPOINTS, kind pooling or step-scores) first."
    )


RESERVED_SLUGS = {"new"}
SLUG_UNAVAILABLE = "The slug %(slug)r is taken or reserved; choose another."


class AmendForm(forms.Form):
    """An amendment of submitted work: ``step_<index>`` ratings from step 0 (empty: not rated,
    which ends the rated prefix), ``flag_<index>`` for unsure steps, and one correction."""

    human_completion = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        label="Correction of the first negative step (optional)",
    )

    def __init__(self, *args, step_indexes: list[int], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.step_indexes = step_indexes
        for index in step_indexes:
            self.fields[f"step_{index}"] = forms.ChoiceField(
                choices=AMEND_RATINGS, required=False, label=f"Step {index + 1}"
            )
            self.fields[f"flag_{index}"] = forms.BooleanField(required=False, label="unsure")

    def clean(self) -> dict:
        data = super().clean()
        ratings: list[int] = []
        for index in self.step_indexes:
            value = data.get(f"step_{index}")
            if value in ("", None):
                break
            ratings.append(int(value))
        if not ratings:
            raise forms.ValidationError("Rate at least the first step.")
        data["ratings"] = ratings
        data["flags"] = [i for i in range(len(ratings)) if data.get(f"flag_{i}")]
        return data

    def rows(self):
        """(step index, rating field, flag field) for the template."""
        return [(i, self[f"step_{i}"], self[f"flag_{i}"]) for i in self.step_indexes]


AMEND_RATINGS = [("", "—"), ("1", "+1"), ("0", "0"), ("-1", "−1")]
