"""The campaign settings form's rows, each shown only for the strategies it applies to
(``learning.applies``): ``{{ form|al_settings_table }}`` in place of ``{{ form.as_table }}``."""

from __future__ import annotations

from django import template
from django.forms import BaseForm, BoundField
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString

from learning.applies import setting_applies, setting_strategies

register = template.Library()


@register.filter
def al_settings_table(form: BaseForm) -> SafeString:
    """The form as table rows (Django's own table layout, ``learning/_settings_table.html``)."""
    return render_to_string("learning/_settings_table.html", form.get_context())


@register.filter
def al_row_attrs(field: BoundField) -> SafeString | str:
    """A row's attributes: the strategies its setting applies to (the page's script follows the
    select with them) and ``hidden`` where the chosen one does not use it. A setting with an
    error is never hidden."""
    strategies = setting_strategies(field.name)
    if strategies is None or "al_strategy" not in field.form.fields:
        return ""
    value = field.value()
    if setting_applies(field.name, strategy="", value=value):
        return ""  # kept whatever the strategy
    chosen = field.form["al_strategy"].value() or ""
    shown = field.errors or setting_applies(field.name, strategy=chosen, value=value)
    return format_html(
        ' data-al-strategies="{}"{}', " ".join(strategies), "" if shown else " hidden"
    )


@register.filter
def al_summary(campaign) -> str:
    """Active learning in one line for the campaign page, as the active-learning page says it:
    the strategy really chosen and only the settings it reads (never the convincing-wrong share
    under a strategy that does not use it)."""
    if not campaign.active_learning:
        return "off"
    strategy = campaign.al_strategy
    parts = [f"on: {campaign.get_al_strategy_display()}"]
    # Auto reads the share only while it tries convincing wrong answers: not its strategy.
    if strategy != "auto" and setting_applies("al_wrong_answer_share", strategy=strategy):
        share = campaign.al_wrong_answer_share
        parts.append(f"{share:.0%} convincing wrong answers at the head of the queue")
    if strategy != "uniform" and setting_applies("al_control_share", strategy=strategy):
        parts.append(f"{campaign.al_control_share:.0%} of the queue placed at random (control)")
    parts.append(f"retrain every {campaign.al_retrain_every:,} labels")
    return "; ".join(parts)
