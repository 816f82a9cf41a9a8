"""The manager's active-learning page: settings, runs, PRM versions, the queue head; retrain now."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from common import charts
from labeling.permissions import (
    MANAGE,
    campaign_for,
    campaign_nav,
)
from learning import selectors, strategies
from learning.applies import setting_applies
from learning.auto import AUTO_RULE
from learning.bestofn import best_of_n_verdict
from learning.charts import best_of_n_chart
from learning.stages import STAGES
from learning.triggers import active_learning_trigger
from machines.served import ScoringRefused, campaign_scoring, scoring_job_start


@login_required
@require_GET
def active_learning(request: HttpRequest, slug: str) -> HttpResponse:
    """Settings, runs, the active model's metrics over versions and the head of the queue."""
    campaign, membership = campaign_for(request.user, slug, roles=MANAGE)
    models = selectors.prm_models(campaign=campaign)
    head = selectors.queue_head(campaign=campaign)
    runs = selectors.active_learning_runs(campaign=campaign)
    versions = [(f"v{m.version}", m.metrics.get("auroc")) for m in models]
    measured = next((run for run in runs if run.best_of_n), None)
    curve = measured.best_of_n if measured else {}
    efficiency_run = next((run for run in runs if run.data_efficiency), None)
    served, served_error = None, ""
    try:
        served = campaign_scoring(campaign)
    except ScoringRefused as e:
        served_error = str(e)
    context = campaign_nav(request.user, campaign, membership) | {
        "runs": runs,
        "run_in_progress": next((run for run in runs if run.is_active), None),
        # Once no run is in progress: how the latest one ended (the page's last poll shows it).
        "last_run": runs[0] if runs else None,
        "models": models,
        "active_model": next((m for m in models if m.is_active), None),
        "head": head,
        "auroc_chart": charts.line(
            title="Held-out step AUROC of each PRM version",
            points=versions,
            fmt=lambda v: f"{v:.3f}",
        ),
        "histogram_chart": charts.columns(
            title=f"PRM scores of the first {head.size} solutions in the queue",
            points=head.histogram,
        ),
        "strategy_reason": strategies.DEFAULT_REASON,
        "rule_pays": strategies.RULE_PAYS,
        "auto_rule": AUTO_RULE,
        # What auto ordered the queue by and why: the last run that chose.
        "auto_choice": next((r.queue_head["auto"] for r in runs if "auto" in r.queue_head), ""),
        # What ordered the queue: the latest run that said (a run before labels, too).
        "ordered": next((r.queue_head for r in runs if r.queue_head.get("ordered_by")), {}),
        "efficiency_run": efficiency_run,
        "efficiency": efficiency_run.data_efficiency if efficiency_run else {},
        "served": served,
        "served_error": served_error,
        "served_count": selectors.served_count(campaign=campaign, served=served),
        "scoring_job": selectors.scoring_job_latest(campaign=campaign),
        "best_of_n_run": measured,
        # Where the run's files are, for the command that gives the same figures.
        "media_root": settings.MEDIA_ROOT,
        "best_of_n": curve,
        "best_of_n_rows": [
            (name, list(zip(curve["n"], values, strict=True)))
            for name, values in curve.get("accuracy", {}).items()
        ],
        "best_of_n_chart": best_of_n_chart(curve) if curve.get("accuracy") else None,
        "best_of_n_verdict": best_of_n_verdict(curve),
        "uses_wrong_share": setting_applies("al_wrong_answer_share", strategy=campaign.al_strategy),
        "shows_served": served_error
        or setting_applies(
            "al_scoring_endpoint",
            strategy=campaign.al_strategy,
            value=campaign.al_scoring_endpoint,
        ),
        "ensemble_members": strategies.ENSEMBLE_MEMBERS
        if campaign.al_strategy == strategies.ENSEMBLE
        else None,
        "first_error_f1_zero": any(m.metrics.get("first_error_f1") == 0 for m in models),
        # Only the stages some run timed (the ensemble's only where a run ordered by it).
        "stages": [s for s in TIMED if any(s in run.timings for run in runs)],
    }
    return render(request, "learning/active_learning.html", context)


# The stages a run times, in the order it runs them (``learning.stages.STAGES``), and its total.
TIMED = (*(stage.name for stage in STAGES if stage.timed), "total")


@login_required
@require_POST
def active_learning_retrain(request: HttpRequest, slug: str) -> HttpResponse:
    """ "Retrain now": queue a run (or find the one already queued or running)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    # No flash message: the page itself says the run is queued, and replaces that notice with
    # the outcome when the run ends (a message would stay until the next reload).
    active_learning_trigger(campaign=campaign, requested_by=request.user)
    return redirect("learning:page", slug=campaign.slug)


@login_required
@require_POST
def active_learning_score(request: HttpRequest, slug: str) -> HttpResponse:
    """ "Score with the served PRM": queue a scoring job (or find the one already queued)."""
    campaign, _ = campaign_for(request.user, slug, roles=MANAGE)
    try:
        scoring_job_start(campaign=campaign, requested_by=request.user)
    except ScoringRefused as e:
        messages.error(request, str(e))
    return redirect("learning:page", slug=campaign.slug)
