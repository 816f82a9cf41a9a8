"""The two grading rules on a table of real answer pairs, and what a change of rule does to a
campaign (it regrades, as a job, exactly the answers the table says).

The pairs are real final answers and their truths: PRM800K phase 1's GPT-4 answers and MATH's
truths (``../shared/data/prm800k_phase1_human_labels``, derived from OpenAI's PRM800K, MIT:
``tests/fixtures/prm800k_phase1_trajectories/LICENSE*.txt``), Qwen2.5-Math's sampled answers
(``tests/fixtures/qwen25math_math_samples``, MIT) and MATH's own answers in PRM800K's
``math_splits`` (MIT). Only the answer strings are quoted. Each row: answer, truth, the grade
mathematically, the grade as PRM800K graded (which PRM800K's reference grader gives on every row;
``bench/grading.py --rules`` measures it on all 1,147 distinct pairs of the shared data).
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from imports.pipeline import import_file
from labeling import services
from labeling.grading import MATHEMATICAL, PRM800K, Grader, solutions_grade
from labeling.grading.as_prm800k import compare, math_form, plain_form
from labeling.grading.latex_text import latex_text
from labeling.grading.readings import clock_time, letters
from labeling.models import Campaign, Membership, Solution, SolutionBulkAction, SolutionEvent
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_member, make_problem, make_solution

T, F = True, False

# answer, truth, mathematically equal, as PRM800K graded
TABLE = [
    # wrong under any rule before: letters read as a commuting product, a time as a ratio
    ("LXQS", "LQSX", F, F),
    ("QXLS", "LQSX", F, F),
    ("4:30 \\text{ p.m.}", "4:30 p.m.", T, T),
    ("4:30 \\text{ p.m.}", "\\text{4:30 p.m.}", T, T),
    ("4:51:06", "4\\!:\\!51\\!:\\!06 \\text{ p.m.}", T, T),
    ("3:51:06", "4\\!:\\!51\\!:\\!06 \\text{ p.m.}", F, F),
    ("A,B,E", "\\text{A,B,E}", T, T),
    ("even", "\\text{even}", T, T),
    # a choice of rule: the form MATH expects
    ("6/10", "\\frac{3}{5}", T, F),
    ("\\frac{10}{16}", "\\dfrac{5}{8}", T, F),
    ("\\frac{72}{375}", "\\frac{24}{125}", T, F),
    ("\\frac{4950}{9999}", "\\frac{50}{101}", T, F),
    ("2^9 + 2", "514", T, F),
    ("\\dfrac{-33}{3}", "-11", T, F),
    ("\\frac{7!}{16}", "315", T, F),
    ("\\frac{4}{3\\sqrt{3}}", "\\frac{4 \\sqrt{3}}{9}", T, F),
    ("\\frac{2}{\\sqrt{3}+1}", "\\sqrt{3}-1", T, F),
    ("\\left(\\dfrac{1.5}{3},\\dfrac{24.6}{41}\\right)", "(0.5,0.6)", T, F),
    ("y^2 - 6y - 4x + 9 = 0", "y^2 - 4x - 6y + 9 = 0", T, F),
    # ... lists in order, tuples with their brackets
    ("-1, 0, 3, 4", "0, 3, -1, 4", T, F),
    ("1, 5, -3", "-3,1,5", T, F),
    ("1, i, -1, -i", "1,-1,i,-i", T, F),
    ("1,2", "(1, 2)", T, F),
    ("5,7", "(5,7)", T, F),
    # ... and the reference's reading of \frac without brackets: (8-7x)/6 read as 8-7x/6
    ("\\frac{-7x+8}{6}", "\\frac{8-7x}{6}", T, F),
    # equal under both: MATH's normalisation
    ("0.5", "\\frac{1}{2}", T, T),
    ("7/24", "\\frac{7}{24}", T, T),
    ("-\\frac{1}{2}", "-\\frac12", T, T),
    ("\\dfrac{1}{9}", "\\frac19", T, T),
    ("0.79", ".79", T, T),
    ("12", "x = 12", T, T),
    ("60", "60^\\circ", T, T),
    ("27", "27\\%", T, T),
    ("23.40", "\\$23.40", T, T),
    ("5225", "5225 \\text{ cubic inches}", T, T),
    ("108", "108\\text{ degrees}", T, T),
    ("900,\\!000", "900000", T, T),
    ("33800000", "33,\\!800,\\!000", T, T),
    ("900000000", "900,000,000", T, T),
    ("10000", "10{,}000", T, T),
    ("(A)", "\\text{(A)}", T, T),
    ("A", "\\text{(A)}", T, T),
    # ... and sympy where the reference let it see the answer
    ("\\frac{35\\pi}{2}", "\\frac{35}{2} \\pi", T, T),
    ("4 (3 - 2 \\sqrt{2})", "12 - 8 \\sqrt{2}", T, T),
    ("4\\sqrt{4012}", "8\\sqrt{1003}", T, T),
    ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}", T, T),
    ("(49/10)^2", "\\frac{2401}{100}", T, T),
    ("2.5", "2\\frac{1}{2}", T, T),
    ("6\\frac{1}{4}", "\\frac{25}{4}", T, T),
    ("12 \\frac{3}{5}", "12\\frac{3}{5}", T, T),
    ("-3.5", "-\\frac{7}{2}", T, T),
    ("(-\\frac{1}{2},3,-\\frac{5}{2})", "\\left(-\\frac{1}{2}, 3, -\\frac{5}{2}\\right)", T, T),
    ("(-4 \\sqrt{3}, -4)", "(-4 \\sqrt{3},-4)", T, T),
    ("[0, 3)", "[0,3)", T, T),
    ("x^4 - 4 x^3 + x^2 + 6 x + 2", "x^4-4x^3+x^2+6x+2", T, T),
    (
        "\\begin{pmatrix} 5/6 & 1/3 & -1/6 \\\\ 1/3 & 1/3 & 1/3 \\\\ -1/6 & 1/3 & 5/6 "
        "\\end{pmatrix}",
        "\\begin{pmatrix} \\frac{5}{6} & \\frac{1}{3} & -\\frac{1}{6} \\\\ \\frac{1}{3} & "
        "\\frac{1}{3} & \\frac{1}{3} \\\\ -\\frac{1}{6} & \\frac{1}{3} & \\frac{5}{6} "
        "\\end{pmatrix}",
        T,
        T,
    ),
    # unequal under both
    ("7200", "28800", F, F),
    ("\\frac{189}{1600}", "\\frac{63}{400}", F, F),
    ("34,000,000", "33,\\!800,\\!000", F, F),
    ("2\\sqrt{2}", "4", F, F),
    ("2x + 1, -2x - 1", "-2x-1", F, F),
    ("\\log\\frac{2007}{2005}", "\\log\\left(\\frac{2007}{2006}\\right)", F, F),
    (
        "\\begin{pmatrix} -a \\\\ b \\end{pmatrix}",
        "\\begin{pmatrix} 4 \\\\ -3 \\end{pmatrix}",
        F,
        F,
    ),
]
RULE_COLUMN = {MATHEMATICAL: 2, PRM800K: 3}


@pytest.mark.parametrize("rule", [MATHEMATICAL, PRM800K])
def test_each_rule_grades_the_table_as_it_says(rule):
    graded = Grader.shared().grade_many([(a, t) for a, t, *_ in TABLE], rule=rule)
    wrong = [
        (row[0], row[1], row[RULE_COLUMN[rule]], graded[(row[0], row[1])])
        for row in TABLE
        if graded[(row[0], row[1])] is not row[RULE_COLUMN[rule]]
    ]
    assert wrong == []  # (answer, truth, expected, graded)


def test_the_table_holds_the_issue_s_cases_and_both_kinds_of_row():
    pairs = {(a, t) for a, t, *_ in TABLE}
    for case in [("6/10", "\\frac{3}{5}"), ("2^9 + 2", "514"), ("1,2", "(1, 2)")]:
        assert case in pairs
    assert ("LXQS", "LQSX") in pairs and ("4:30 \\text{ p.m.}", "4:30 p.m.") in pairs
    differ = [row for row in TABLE if row[2] != row[3]]
    assert len(TABLE) == 63 and len(differ) == 17


# -- the parts, on the reference grader's observed behaviour -------------------------------------


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        ("\\frac{x+1}{2}", "x+1/2"),  # no brackets: the reference's reading
        ("\\frac12", "1/2"),
        ("\\sqrt[3]{2}", "√(2)"),  # the index is lost
        ("\\binom{5}{2}", "52"),  # an unknown command vanishes
        ("\\mbox{four}", ""),
        ("\\sin x", "sinx"),
        ("\\left( 1, 2 \\right)", "( 1, 2 )"),
        ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "[ 1 2; 3 4 ]"),
        ("x \\in \\mathbb{R}", "x ∈R"),
    ],
)
def test_latex_reads_as_the_reference_grader_read_it(latex, text):
    assert latex_text(latex) == text


@pytest.mark.parametrize(
    ("answer", "math", "plain"),
    [
        ("\\text{4:30 p.m.}", "4:30p.m.", "4:30p.m."),
        ("4:30 \\text{ p.m.}", "4:30", "4:30p.m."),
        ("\\dfrac{1}{9}", "\\frac{1}{9}", "1/9"),
        ("6/10", "\\frac{6}{10}", "6/10"),
        ("28,800", "28,800", "28800"),
        ("k = 5", "5", "k=5"),
        ("\\$23.40", "23.40", "23.40"),
        ("5225 \\text{ cubic inches}", "5225", "5225cubic"),
        ("\\text{Sunday}", "Sunday", "sun"),  # the units pass eats "day"
    ],
)
def test_both_normalisations_write_answers_as_the_reference_did(answer, math, plain):
    assert (math_form(answer), plain_form(answer)) == (math, plain)


def test_sympy_is_asked_only_what_the_reference_let_it_see():
    asked = []

    def equal(truth: str, answer: str) -> bool:
        asked.append((truth, answer))
        return True

    assert compare("\\frac{10}{16}", "\\frac{5}{8}", equal) is False  # two fractions
    assert compare("2^9 + 2", "514", equal) is False  # an integer truth
    assert compare("abc", "cab", equal) is False  # three letters
    assert compare("x^{2}", "x^2 + 0", equal) is True  # braces dropped: x^2 is fine
    assert compare("2^{10}", "1024", equal) is False
    assert compare("(1, 2)", "[1, 2]", equal) is False  # brackets differ
    assert asked == [("x^2+0", "x^2")]


def test_an_unbounded_difference_is_undecided_under_prm800k_s_rule():
    # the reference would hand 10**10**10 to sympy (its guard looks for ^ only)
    assert Grader.shared().grade_many([("10**10**10", "7.5")], rule=PRM800K) == {
        ("10**10**10", "7.5"): None
    }


@pytest.mark.parametrize(
    ("answer", "items"),
    [
        ("LQSX", ["lqsx"]),
        ("\\text{Softball, Kickball, Picnic}", ["softball", "kickball", "picnic"]),
        ("\\mbox{four}", ["four"]),
        ("x y", ["xy"]),
        ("x", None),
        ("(C)", None),
        ("x, y", None),
        ("2x", None),
        ("\\pi r", None),
    ],
)
def test_an_answer_of_letters_is_text(answer, items):
    assert letters(answer) == items


@pytest.mark.parametrize(
    ("answer", "time"),
    [
        ("4:30 \\text{ p.m.}", (4, 30, None, "p")),
        ("\\text{1:03 PM}", (1, 3, None, "p")),
        ("05\\!:\\!00", (5, 0, None, None)),
        ("19:60", None),  # a ratio
        ("3:1", None),
        ("13:00 p.m.", None),
    ],
)
def test_a_clock_time_is_read_as_one(answer, time):
    found = clock_time(answer)
    assert (found and (found.hours, found.minutes, found.seconds, found.meridiem)) == time


def test_words_and_times_are_decided_alike_under_both_rules_except_a_list_s_order():
    pairs = [("9:24", "9:24 a.m."), ("16:30", "4:30 p.m."), ("4:30 a.m.", "4:30 p.m.")]
    pairs += [("Devon", "\\text{Devon}"), ("Devon", "5"), ("CD", "DC")]
    for rule in (MATHEMATICAL, PRM800K):
        graded = Grader.shared().grade_many(pairs, rule=rule)
        assert [graded[p] for p in pairs] == [True, True, False, True, False, False]
    reordered = ("Kickball, Softball, Picnic", "\\text{Softball, Kickball, Picnic}")
    assert Grader.shared().grade_many([reordered])[reordered] is True
    assert Grader.shared().grade_many([reordered], rule=PRM800K)[reordered] is False


# -- a campaign's rule ---------------------------------------------------------------------------


def table_campaign(rule: str) -> tuple[Campaign, dict[int, tuple]]:
    """A campaign with one problem per table row (its truth) and one solution (its answer)."""
    campaign = make_campaign(grading_rule=rule)
    rows = {}
    for i, row in enumerate(TABLE):
        problem = make_problem(campaign=campaign, text=f"Problem {i}", ground_truth_answer=row[1])
        rows[make_solution(campaign=campaign, problem=problem, answer=row[0]).pk] = row
    return campaign, rows


def grades(campaign: Campaign) -> dict[int, bool | None]:
    return dict(Solution.objects.filter(campaign=campaign).values_list("pk", "answer_is_correct"))


@pytest.mark.django_db
def test_a_campaign_regraded_under_the_other_rule_changes_exactly_the_answers_the_table_says():
    campaign, rows = table_campaign(MATHEMATICAL)
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    solutions_grade(solutions=Solution.objects.filter(campaign=campaign))
    assert grades(campaign) == {pk: row[2] for pk, row in rows.items()}

    services.campaign_update(campaign=campaign, actor=manager, grading_rule=PRM800K)

    job = SolutionBulkAction.objects.get(campaign=campaign)
    assert (job.action, job.status, job.total) == ("regrade", "done", len(TABLE))
    assert grades(campaign) == {pk: row[3] for pk, row in rows.items()}
    expected = {pk for pk, row in rows.items() if row[2] != row[3]}
    assert job.changed == len(expected) == 17
    events = SolutionEvent.objects.filter(action=SolutionEvent.Action.REGRADED)
    assert {e.solution_id for e in events} == expected
    assert {(e.detail["from"], e.detail["to"], e.detail["rule"]) for e in events} == {
        (True, False, PRM800K)
    }
    assert all(e.actor_id == manager.pk for e in events)

    services.campaign_update(campaign=campaign, grading_rule=MATHEMATICAL)  # and back
    assert grades(campaign) == {pk: row[2] for pk, row in rows.items()}


@pytest.mark.django_db
def test_a_new_campaign_grades_mathematically_and_keeping_the_rule_regrades_nothing():
    campaign = make_campaign()
    assert campaign.grading_rule == MATHEMATICAL
    services.campaign_update(campaign=campaign, overlap=2)
    assert not SolutionBulkAction.objects.exists()


@pytest.mark.django_db
def test_an_import_in_prm800k_s_format_into_an_empty_campaign_sets_prm800k_s_rule():
    fresh, busy = make_campaign(), make_campaign()
    make_solution(campaign=busy, answer="2")
    path = FIXTURES / "prm800k_raw_samples" / "phase2_train_examples.jsonl"

    for campaign in (fresh, busy):
        import_file(path, campaign=campaign, fmt="prm800k")

    rules = dict(Campaign.objects.values_list("pk", "grading_rule"))
    assert (rules[fresh.pk], rules[busy.pk]) == (PRM800K, MATHEMATICAL)


@pytest.mark.django_db
def test_the_settings_change_the_rule_and_the_campaign_page_shows_it_and_its_regrade(client):
    campaign, _ = table_campaign(MATHEMATICAL)
    client.force_login(make_member(campaign=campaign, role=Membership.Role.MANAGER).user)
    settings = reverse("labeling:campaign-settings", kwargs={"slug": campaign.slug})
    body = client.get(settings).content.decode()
    assert '<select name="grading_rule"' in body and "as PRM800K graded" in body

    data = {
        "name": campaign.name,
        "overlap": 1,
        "lease_seconds": 1800,
        "qc_rate": 0,
        "screening_threshold": 0.5,
        "bad_problem_limit": 2,
        "al_wrong_answer_share": 0.8,
        "al_retrain_every": 500,
        "al_backbone": "bow",
        "grading_rule": PRM800K,
    }
    response = client.post(settings, data, follow=True)

    assert "graded again under the new rule" in response.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).grading_rule == PRM800K
    page = client.get(reverse("labeling:campaign", kwargs={"slug": campaign.slug}))
    text = page.content.decode()
    assert "Final answers graded: as PRM800K graded" in text
    assert "grade the final answers again</strong> of 63 solutions" in text
