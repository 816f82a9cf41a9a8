"""The forms of the machines' pages: a generation request and a request for machine evidence."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.validators import MaxValueValidator

from imports.splitting import DEFAULT_SPLIT, MAX_PATTERN_CHARS, SplitError, check_mode
from machines.endpoints import CHAT, endpoints_of
from machines.models import EvidenceJob, GenerationJob
from machines.prompts import FIELDS as PROMPT_FIELDS
from machines.prompts import MAX_TEMPLATE_CHARS, TemplateError, template_check


class GenerationForm(forms.Form):
    """K solutions per problem from a chat endpoint (``machines.generation``): the model is
    chosen among the declared endpoints' models (``machines.endpoints``); a URL may be typed only
    where the operator allows free-form URLs."""

    URL = "url:"  # the choice that means "the URL below"

    model = forms.ChoiceField(
        label="Model",
        help_text="The endpoints and models the operator declared (STEPWISE_ENDPOINTS).",
    )
    base_url = forms.CharField(
        max_length=500,
        required=False,
        label="Endpoint URL",
        help_text="OpenAI-compatible base URL on a host the operator allows; no key is sent.",
    )
    url_model = forms.CharField(
        max_length=200, required=False, label="Model at that URL", help_text="As it names it."
    )
    samples_per_problem = forms.IntegerField(min_value=1, max_value=1000, initial=4, label="K")
    selection = forms.ChoiceField(choices=GenerationJob.Selection.choices, initial="all")
    subject = forms.CharField(max_length=200, required=False, help_text="For the filter.")
    level = forms.CharField(max_length=20, required=False, help_text="For the filter.")
    search = forms.CharField(max_length=200, required=False, help_text="For the filter.")
    prompt_template = forms.CharField(
        max_length=MAX_TEMPLATE_CHARS,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="The fields "
        + ", ".join("{" + name + "}" for name in PROMPT_FIELDS)
        + " are replaced by the problem's; {problem} is required. A literal brace is {{ or }}. "
        "Default: PRM800K's format.",
    )
    temperature = forms.FloatField(min_value=0, max_value=2, initial=1.0)
    top_p = forms.FloatField(min_value=0.01, max_value=1, initial=1.0)
    max_tokens = forms.IntegerField(min_value=1, max_value=131072, initial=1024)
    split = forms.CharField(max_length=MAX_PATTERN_CHARS, initial=DEFAULT_SPLIT)
    concurrency = forms.IntegerField(min_value=1, initial=4)
    timeout_s = forms.FloatField(
        min_value=1,
        max_value=3600,
        required=False,
        label="Timeout (s)",
        help_text="Per request; blank: the endpoint's.",
    )
    max_retries = forms.IntegerField(min_value=0, max_value=20, initial=5)
    generator = forms.CharField(max_length=200, required=False, help_text="Default: the model.")
    grade = forms.BooleanField(required=False, initial=True, label="Grade final answers")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        groups: list = [
            (e.title, [(f"{e.name}:{m}", m) for m in e.models]) for e in endpoints_of(CHAT)
        ]
        if settings.STEPWISE_ENDPOINT_URLS:
            groups.append(("Elsewhere", [(self.URL, "the URL below")]))
        else:
            del self.fields["base_url"], self.fields["url_model"]
        self.fields["model"].choices = groups
        if not groups:
            self.fields["model"].help_text = (
                "No endpoint is declared on this site: the operator declares them in "
                "STEPWISE_ENDPOINTS (docs/generation.md)."
            )
        limit = settings.STEPWISE_GENERATION_MAX_CONCURRENCY
        self.fields["concurrency"].max_value = limit
        self.fields["concurrency"].validators.append(MaxValueValidator(limit))
        self.fields["concurrency"].widget.attrs["max"] = limit
        self.fields[
            "concurrency"
        ].help_text = f"Requests at a time, at most {limit} (and the endpoint's own bound)."

    def clean_split(self) -> str:
        try:
            return check_mode(self.cleaned_data.get("split"))
        except SplitError as e:
            raise forms.ValidationError(str(e)) from None

    def clean_prompt_template(self) -> str:
        try:
            return template_check(self.cleaned_data.get("prompt_template") or "")
        except TemplateError as e:
            raise forms.ValidationError(str(e)) from None

    def clean(self) -> dict:
        data = super().clean()
        if data.get("model") == self.URL:
            if not data.get("base_url"):
                self.add_error("base_url", "Give the endpoint's URL.")
            if not data.get("url_model"):
                self.add_error("url_model", "Name the model to ask at that URL.")
        return data

    @classmethod
    def initial_after(cls, job: GenerationJob | None) -> dict:
        """The endpoint and model of ``job`` (the campaign's last) as the form's initial
        values: the next job asks the same model unless someone changes it."""
        if job is None:
            return {}
        if job.endpoint:
            return {"model": f"{job.endpoint}:{job.model}"}
        return {"model": cls.URL, "base_url": job.base_url, "url_model": job.model}

    def job_kwargs(self) -> dict:
        """The fields as ``generation_job_create`` takes them."""
        data = dict(self.cleaned_data)
        data["problem_filter"] = {k: data.pop(k) for k in ("subject", "level", "search")}
        choice = data.pop("model")
        base_url, url_model = data.pop("base_url", ""), data.pop("url_model", "")
        if choice == self.URL:
            data |= {"endpoint": "", "base_url": base_url, "model": url_model}
        else:
            name, _, model = choice.partition(":")
            data |= {"endpoint": name, "model": model}
        return data


class EvidenceForm(forms.Form):
    """Machine evidence for some solutions (``machines.evidence``): rollouts from steps or a
    judge, from a declared chat endpoint's model (``endpoint:model``). The solutions are the
    data browser's filter carried in the query string, or one solution and step from the item
    page."""

    kind = forms.ChoiceField(choices=EvidenceJob.Kind.choices, initial=EvidenceJob.Kind.ROLLOUTS)
    model = forms.ChoiceField(
        label="Model",
        help_text="The chat endpoints and models the operator declared (STEPWISE_ENDPOINTS).",
    )
    samples_per_step = forms.IntegerField(
        min_value=1, max_value=64, initial=8, label="Rollouts per step (k)"
    )
    step = forms.IntegerField(
        min_value=1, required=False, help_text="Roll out from this step only (blank: every step)."
    )
    budget_tokens = forms.IntegerField(
        min_value=0, initial=0, label="Token budget", help_text="0: no budget."
    )
    max_tokens = forms.IntegerField(min_value=1, max_value=131072, initial=1024)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [
            (e.title, [(f"{e.name}:{m}", m) for m in e.models]) for e in endpoints_of(CHAT)
        ]

    def job_kwargs(self) -> dict:
        """The fields as ``evidence_job_create`` takes them (the selection apart)."""
        data = dict(self.cleaned_data)
        endpoint, _, model = data.pop("model").partition(":")
        step = data.pop("step")
        return data | {
            "endpoint": endpoint,
            "model": model,
            "steps": [] if step is None else [step - 1],
        }
