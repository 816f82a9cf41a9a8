"""The active-learning page read at a glance (issue 25): a plain sentence on whether the PRM
picks better than random and majority vote, the best-of-N lines in distinct colours with a legend
off the plot and the problems behind each N, settings only where the strategy uses them (on the
page and on the settings form), and a first-error F1 of 0 explained."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from labeling.models import Membership
from learning.bestofn import best_of_n_verdict
from learning.charts import best_of_n_chart
from learning.models import ActiveLearningRun, PRMModel
from tests.factories import make_campaign, make_member

CURVE = {
    "n": [1, 2, 4, 8],
    "problems_at_n": [147, 147, 140, 96],
    "accuracy": {
        "PRM (product)": [0.43, 0.41, 0.39, 0.38],
        "random": [0.43, 0.43, 0.43, 0.43],
        "majority": [0.43, 0.45, 0.47, 0.48],
        "oracle": [0.43, 0.55, 0.63, 0.69],
    },
}


def test_the_sentence_says_when_the_prm_picks_worse_than_random_and_majority_vote():
    assert best_of_n_verdict(CURVE) == (
        "At N=8 (96 problems) the PRM picks worse than random (43%) and than majority vote "
        "(48%): 38% of its picks have the right answer. Its scores do not yet help choose "
        "among solutions here."
    )


def test_the_sentence_says_when_it_picks_at_least_as_well():
    better = CURVE | {"accuracy": CURVE["accuracy"] | {"PRM (product)": [0.43, 0.5, 0.55, 0.6]}}
    assert best_of_n_verdict(better).startswith(
        "At N=8 (96 problems) the PRM picks at least as well as random (43%) and majority vote"
    )
    assert best_of_n_verdict({}) == ""


def test_the_sentence_speaks_of_the_largest_n_enough_problems_support():
    # A demo-sized campaign: 14 problems with 1 solution or more, one with 8.
    few = CURVE | {"problems_at_n": [14, 12, 6, 1]}
    assert best_of_n_verdict(few).startswith("At N=2 (12 problems) the PRM picks worse than")
    # None with enough: the best supported N, said in the singular where it is one problem.
    one = CURVE | {"problems_at_n": [1, 1, 1, 1]}
    assert best_of_n_verdict(one).startswith("At N=1 (1 problem) the PRM picks at least as well")
    # Curves stored before the support was counted: the largest N, as before.
    assert best_of_n_verdict(CURVE | {"problems_at_n": []}).startswith("At N=8 the PRM")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("strategy", "shown"), [("uniform", False), ("uncertainty", False), ("convincing-wrong", True)]
)
def test_the_wrong_answer_share_shows_only_for_the_strategies_that_use_it(client, strategy, shown):
    campaign = make_campaign(al_strategy=strategy)
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    body = client.get(reverse("learning:page", kwargs={"slug": campaign.slug})).content.decode()
    assert ('id="al-wrong-share"' in body) is shown


@pytest.mark.django_db
def test_the_page_explains_a_first_error_f1_of_0_and_says_how_the_prm_picks(client):
    campaign = make_campaign()
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    url = reverse("learning:page", kwargs={"slug": campaign.slug})
    PRMModel.objects.create(
        campaign=campaign, version=1, path="prm/x/v1", metrics={"first_error_f1": 0.4}
    )
    assert 'id="al-f1-zero"' not in client.get(url).content.decode()
    PRMModel.objects.create(
        campaign=campaign, version=2, path="prm/x/v2", metrics={"first_error_f1": 0.0}
    )
    ActiveLearningRun.objects.create(campaign=campaign, status="succeeded", best_of_n=CURVE)
    body = client.get(url).content.decode()
    assert 'id="al-f1-zero"' in body and "harmonic mean" in body
    assert "the PRM picks worse than random (43%) and than majority vote (48%)" in body


def test_each_line_of_the_chart_has_its_own_colour_and_dash():
    svg = str(best_of_n_chart(CURVE))
    lines = re.findall(r'<polyline points="[^"]*" class="line (series-[a-z-]+)"([^>]*)>', svg)
    assert len(lines) == 4
    assert len({css for css, _ in lines}) == 4  # a colour each (CSS classes, manage.css)
    assert len({dash for _, dash in lines}) == 4  # and a dash pattern each ("" is solid)


def test_the_colours_have_a_light_and_a_dark_value_with_enough_contrast():
    from pathlib import Path

    css = (Path(__file__).parents[1] / "static/css/manage.css").read_text()

    def luminance(hex_: str) -> float:
        rgb = [int(hex_[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    def contrast(a: str, b: str) -> float:
        hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
        return (hi + 0.05) / (lo + 0.05)

    values = re.findall(r"--series-([a-z-]+): #([0-9a-f]{6})", css)
    light, dark = values[: len(values) // 2], values[len(values) // 2 :]
    assert {n for n, _ in light} == {n for n, _ in dark} and len(light) == 7
    assert all(contrast(c, "ffffff") >= 4.5 for _, c in light)  # the card, light
    assert all(contrast(c, "1f1f23") >= 4.5 for _, c in dark)  # the card, dark
    assert len({c for _, c in light}) == 7 and len({c for _, c in dark}) == 7


def test_the_legend_is_outside_the_plot_and_names_every_line():
    html = str(best_of_n_chart(CURVE))
    svg_end = html.index("</svg>")
    legend = html[html.index('id="best-of-n-legend"') :]
    assert html.index('id="best-of-n-legend"') > svg_end  # after the chart, never on its lines
    for name, value in (("PRM (product)", "38%"), ("random", "43%"), ("oracle", "69%")):
        assert f'{name} <span class="legend-value">{value} at N=8</span>' in legend
    assert legend.count('<svg class="swatch"') == 4  # each with its line's colour and dash
    assert 'class="series-orm"' not in html  # no ORM in this curve: no swatch for it
    # No name written inside the plot any more (the end labels that ran into the lines).
    assert "PRM (product)" not in html[:svg_end].replace("<title>PRM (product)</title>", "")


def test_each_n_on_the_axis_says_how_many_problems_support_it():
    svg = str(best_of_n_chart(CURVE))
    for n, problems in zip(CURVE["n"], CURVE["problems_at_n"], strict=True):
        assert f">N={n}</text>" in svg
        assert f'>{problems}<tspan class="unit"> problems</tspan></text>' in svg


def test_close_ns_keep_their_labels_apart_and_the_last_one_always():
    curve = {
        "n": [1, 2, 4, 8, 16, 32, 40],
        "problems_at_n": [50, 50, 50, 48, 40, 12, 3],
        "accuracy": {"random": [0.5] * 7},
    }
    svg = str(best_of_n_chart(curve))
    assert ">N=40</text>" in svg and ">N=32</text>" not in svg and ">N=16</text>" in svg


def manager_of(client, **fields):
    campaign = make_campaign(**fields)
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    return campaign


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("strategy", "served", "ensemble"),
    [("uniform", False, False), ("ensemble", False, True), ("served-prm", True, False)],
)
def test_the_page_shows_the_served_prm_and_the_ensemble_only_where_they_apply(
    client, settings, strategy, served, ensemble
):
    settings.STEPWISE_ENDPOINTS = [
        {"name": "qwen-prm", "kind": "pooling", "base_url": "http://gpu:8001", "models": ["m"]}
    ]
    campaign = manager_of(client, al_strategy=strategy)
    if strategy == "served-prm":
        campaign.al_scoring_endpoint = "qwen-prm"
        campaign.save()
    body = client.get(reverse("learning:page", kwargs={"slug": campaign.slug})).content.decode()
    assert ('id="al-served-prm"' in body) is served
    assert ('id="al-ensemble"' in body) is ensemble


@pytest.mark.django_db
def test_a_served_prm_chosen_shows_whatever_the_strategy(client, settings):
    settings.STEPWISE_ENDPOINTS = [
        {"name": "qwen-prm", "kind": "pooling", "base_url": "http://gpu:8001", "models": ["m"]}
    ]
    campaign = manager_of(client, al_strategy="uniform", al_scoring_endpoint="qwen-prm")
    body = client.get(reverse("learning:page", kwargs={"slug": campaign.slug})).content.decode()
    assert 'id="al-served-prm"' in body and "Score with the served PRM" in body
    form = client.get(reverse("labeling:campaign-settings", kwargs={"slug": campaign.slug}))
    row = re.search(r"<tr[^>]*>\s*<th><label for=\"id_al_scoring_endpoint\"", form.text)
    assert row and "hidden" not in row.group(0)


@pytest.mark.django_db
def test_the_runs_table_lists_only_the_stages_a_run_timed(client):
    """Issue 40: a column per stage made the table about 20 columns wide (1,181 px in an 894 px
    box); the stages are now rows of a disclosure in one "time (s)" cell, its summary the total."""
    campaign = manager_of(client)
    ActiveLearningRun.objects.create(
        campaign=campaign, status="succeeded", timings={"train": 1.5, "total": 2.0}
    )
    body = client.get(reverse("learning:page", kwargs={"slug": campaign.slug})).content.decode()
    assert "<th>time (s)</th>" in body
    assert "<summary>2.00</summary>" in body
    assert "<dt>train</dt><dd>1.50</dd>" in body
    assert "<dt>ensemble</dt>" not in body
    assert "(s)</th>" not in body.replace("<th>time (s)</th>", "")


def settings_rows(body: str) -> dict[str, str]:
    """Each setting's <tr ...> opening tag on the settings form, by field name."""
    return {
        name: tag for tag, name in re.findall(r"(<tr[^>]*>)\s*<th><label for=\"id_(\w+)\"", body)
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("strategy", "hidden"),
    [
        ("uniform", {"al_wrong_answer_share", "al_control_share", "al_scoring_endpoint"}),
        ("uncertainty", {"al_wrong_answer_share", "al_scoring_endpoint"}),
        ("ensemble", {"al_wrong_answer_share", "al_scoring_endpoint"}),
        ("convincing-wrong", {"al_scoring_endpoint"}),
        ("served-prm", set()),
        ("machines-disagree", {"al_wrong_answer_share"}),  # a served PRM is one more machine
    ],
)
def test_the_settings_form_hides_the_settings_the_strategy_does_not_use(client, strategy, hidden):
    campaign = manager_of(client, al_strategy=strategy)
    body = client.get(reverse("labeling:campaign-settings", kwargs={"slug": campaign.slug})).text
    rows = settings_rows(body)
    watched = {"al_wrong_answer_share", "al_control_share", "al_scoring_endpoint"}
    assert {name for name in watched if " hidden" in rows[name]} == hidden
    assert " hidden" not in rows["al_strategy"] and " hidden" not in rows["al_backbone"]
    # The script follows the select without a reload: each row says where it applies.
    assert (
        'data-al-strategies="convincing-wrong verifier mixed served-prm auto"'
        in (rows["al_wrong_answer_share"])
    )
    assert 'data-al-strategies="served-prm machines-disagree"' in rows["al_scoring_endpoint"]
    assert '<script src="/static/js/settings.js"></script>' in body
    # A hidden setting is still in the form, so saving keeps its value.
    assert 'name="al_wrong_answer_share"' in body


@pytest.mark.django_db
def test_a_setting_with_an_error_is_never_hidden(client):
    from django.forms.models import model_to_dict

    campaign = manager_of(client, al_strategy="uniform")
    data = {k: v for k, v in model_to_dict(campaign).items() if v is not None}
    data |= {"al_wrong_answer_share": "7"}
    url = reverse("labeling:campaign-settings", kwargs={"slug": campaign.slug})
    response = client.post(url, data)
    assert response.status_code == 400
    assert " hidden" not in settings_rows(response.text)["al_wrong_answer_share"]


def test_the_legend_quotes_an_n_that_enough_problems_support():
    few = CURVE | {"problems_at_n": [14, 12, 6, 1]}
    legend = str(best_of_n_chart(few))
    legend = legend[legend.index('id="best-of-n-legend"') :]
    assert 'PRM (product) <span class="legend-value">41% at N=2</span>' in legend
    assert "at N=8" not in legend  # N=8 rests on one problem
