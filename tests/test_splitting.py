"""The step splitter (``imports.splitting``) on hand-written texts and real extracts.

Real extracts: Qwen2.5-Math responses from ``../shared/data/qwen25math_math_samples`` (MIT, see
``tests/fixtures/qwen25math_math_samples/``), quoted below; GSM8K model solutions and PRM800K
phase 1 trajectories from the fixtures.
"""

from __future__ import annotations

import json
import re

import pytest

from imports.splitting import SplitError, check_mode, split, split_texts
from tests.conftest import FIXTURES

# Qwen2.5-Math, MATH test idx 3, response 5: split on blank lines it is 2 steps, the second
# holding three calculations and the conclusion (display math on single newlines).
QWEN_BOBBI = (
    "To determine the time at which Bobbi and her family will arrive at their destination, we "
    "need to add the travel time to the current time. The current time is 2:30 p.m., and the "
    "travel time is 7200 seconds. We will convert the travel time from seconds to hours, and "
    "then add it to the current time.\n\n"
    "First, we convert 7200 seconds to minutes. There are 60 seconds in a minute, so:\n\\[\n"
    "7200 \\text{ seconds} \\div 60 \\text{ seconds/minute} = 120 \\text{ minutes}\n\\]\n"
    "Next, we convert 120 minutes to hours. There are 60 minutes in an hour, so:\n\\[\n"
    "120 \\text{ minutes} \\div 60 \\text{ minutes/hour} = 2 \\text{ hours}\n\\]\n"
    "Now, we add 2 hours to the current time of 2:30 p.m. Adding 2 hours to 2:30 p.m. gives:\n"
    "\\[\n2:30 \\text{ p.m.} + 2 \\text{ hours} = 4:30 \\text{ p.m.}\n\\]\n"
    "Therefore, Bobbi and her family will arrive at their destination at "
    "\\boxed{4:30 \\text{ p.m.}}."
)
# Qwen2.5-Math, MATH test idx 4, response 1: a numbered list whose items carry display math.
QWEN_FRACTIONS = (
    "To compute \\( \\frac{1}{31} \\div \\frac{1}{93} \\), we need to follow the steps for "
    "dividing fractions. Dividing by a fraction is equivalent to multiplying by its reciprocal. "
    "Here are the steps:\n\n"
    "1. Identify the reciprocal of the divisor. The divisor is \\( \\frac{1}{93} \\), so its "
    "reciprocal is \\( \\frac{93}{1} \\).\n"
    "2. Multiply the dividend by the reciprocal of the divisor. The dividend is "
    "\\( \\frac{1}{31} \\), so we have:\n   \\[\n   \\frac{1}{31} \\div \\frac{1}{93} = "
    "\\frac{1}{31} \\times \\frac{93}{1}\n   \\]\n"
    "3. Perform the multiplication:\n   \\[\n   \\frac{1 \\times 93}{31 \\times 1} = "
    "\\frac{93}{31}\n   \\]\n"
    "4. Simplify the fraction. Since \\( 93 = 3 \\times 31 \\), we can simplify "
    "\\( \\frac{93}{31} \\) as follows:\n   \\[\n   \\frac{93}{31} = \\frac{3 \\times 31}{31} = 3"
    "\n   \\]\n\n"
    "Therefore, the value of \\( \\frac{1}{31} \\div \\frac{1}{93} \\) is \\(\\boxed{3}\\)."
)


def test_chained_calculations_become_one_step_each_with_their_sentence():
    steps = split_texts(QWEN_BOBBI)
    assert len(steps) == 5
    assert steps[1].startswith("First, we convert 7200 seconds") and steps[1].endswith("\\]")
    assert steps[2].startswith("Next, we convert 120 minutes") and steps[2].endswith("\\]")
    assert steps[3].startswith("Now, we add 2 hours") and steps[3].endswith("\\]")
    assert steps[4].startswith("Therefore") and "\\boxed{4:30" in steps[4]
    # nothing is lost or reordered
    assert "".join(steps).replace("\n", "") == QWEN_BOBBI.replace("\n", "")


def test_a_numbered_list_is_one_step_per_item_with_its_formula():
    steps = split_texts(QWEN_FRACTIONS)
    assert [s[:3] for s in steps] == ["To ", "1. ", "2. ", "3. ", "4. ", "The"]
    assert all(s.rstrip().endswith("\\]") for s in steps[2:5])


def test_a_formula_alone_in_its_paragraph_stays_with_the_sentence_introducing_it():
    text = "We multiply the two values:\n\n\\[10 \\cdot 6 = 60.\\]\n\nSo the answer is 60."
    assert split_texts(text) == [
        "We multiply the two values:\n\n\\[10 \\cdot 6 = 60.\\]",
        "So the answer is 60.",
    ]
    # after a finished sentence it is a step of its own (as PRM800K's labelers saw it)
    assert len(split_texts("The second power is A * A.\n\n$$A^2 = B$$")) == 2


@pytest.mark.parametrize(
    "formula",
    [
        "$$\nx^2 = 4\n$$",
        "\\[\nx^2 = 4\n\\]",
        "\\begin{align*}\nx^2 &= 4 \\\\\n\nx &= 2\n\\end{align*}",
    ],
)
def test_display_math_is_never_cut_even_across_blank_lines(formula):
    steps = split_texts(f"So we get:\n{formula}\nand we are done.")
    assert any(formula in s for s in steps)


def test_a_code_fence_stays_whole():
    code = "```python\nx = 1\n\ny = 2\n```"
    steps = split_texts(f"We check it with code:\n\n{code}\n\nIt prints 3.")
    assert code in steps


def test_prm800k_answer_heading_stays_with_the_answer():
    assert split_texts("So $x = 2$.\n\n# Answer\n\n2") == ["So $x = 2$.", "# Answer\n\n2"]


def test_a_reasoning_models_think_section_is_cut_into_paragraphs():
    text = "<think>\nLet me see.\n\nMaybe 2.\n</think>\n\nThe answer is $2$."
    assert split_texts(text) == ["Let me see.", "Maybe 2.", "The answer is $2$."]
    # a section cut off by max_tokens has no closing tag
    assert split_texts("<think>\nA.\n\nB.") == ["A.", "B."]


def test_a_paragraph_that_is_too_long_is_cut_at_sentence_ends_not_in_math():
    sentence = "We add $a + b. C + d$ to the total and keep going with the sum. "
    steps = split_texts(sentence * 40)
    assert len(steps) > 1
    assert all(len(s) <= 1500 for s in steps)
    assert all(s.count("$") % 2 == 0 for s in steps)
    assert " ".join(steps).split() == (sentence * 40).split()


def test_gsm8k_calculator_notes_are_hidden_and_kept_raw():
    steps = split("She has 16 - 3 = <<16-3=13>>13 eggs\nShe makes 13 * 2 = $<<13*2=26>>26\nA: 26")
    assert [s.text for s in steps] == [
        "She has 16 - 3 = 13 eggs",
        "She makes 13 * 2 = $26",
        "A: 26",
    ]
    assert steps[0].raw == "She has 16 - 3 = <<16-3=13>>13 eggs"
    assert steps[2].raw == steps[2].text


def test_real_gsm8k_model_solutions_are_one_step_per_line():
    path = FIXTURES / "gsm8k_model_solutions" / "example_model_solutions.sample.jsonl"
    for line in path.read_text().splitlines():
        record = json.loads(line)
        for value in record.values():
            if isinstance(value, dict) and "solution" in value:
                lines = value["solution"].split("\n")
                steps = split(value["solution"])
                assert [s.raw for s in steps] == lines
                assert not any("<<" in s.text for s in steps)


def test_prm800k_steps_come_back_from_their_joined_text():
    path = FIXTURES / "prm800k_phase1_trajectories" / "phase1_train.trajectories.sample.jsonl"
    same = total = 0
    for line in path.read_text().splitlines():
        record = json.loads(line)
        steps = []
        for step in record["label"]["steps"]:
            chosen = step.get("chosen_completion")
            if chosen is not None:
                steps.append(step["completions"][chosen]["text"].strip())
            elif step.get("human_completion"):
                human = step["human_completion"]
                steps.append((human["text"] if isinstance(human, dict) else human).strip())
        total += 1
        same += split_texts("\n\n".join(steps)) == steps
    assert total >= 5
    assert same / total >= 0.9


def test_prm800k_steps_come_back_from_text_joined_by_single_newlines():
    """PRM800K's generator wrote one step per line ("newline delimited") and set the final
    ``# Answer`` off with blank lines: those blank lines do not make the rest one paragraph."""
    path = FIXTURES / "prm800k_phase1_trajectories" / "phase1_train.trajectories.sample.jsonl"
    same = total = 0
    for line in path.read_text().splitlines():
        record = json.loads(line)
        steps = []
        for step in record["label"]["steps"]:
            chosen = step.get("chosen_completion")
            if chosen is not None:
                steps.append(step["completions"][chosen]["text"].strip())
        total += 1
        same += split_texts("\n".join(steps)) == steps
    assert total >= 5
    assert same / total >= 0.9


def test_newline_delimited_steps_with_an_answer_section_are_one_step_a_line():
    text = "We add 2 and 3.\nThat gives 5.\nSo the answer is 5.\n\n# Answer\n\n5"
    assert split_texts(text) == [
        "We add 2 and 3.",
        "That gives 5.",
        "So the answer is 5.",
        "# Answer\n\n5",
    ]
    # a blank line elsewhere still means the steps are paragraphs
    assert split_texts("One.\nStill one.\n\nTwo.") == ["One.\nStill one.", "Two."]


def test_one_step_a_line_keeps_formulas_figures_and_lists_with_their_line():
    text = "\n".join(
        [
            "The sum of the terms is",
            "$222a + 222b + 222c = 222(a + b + c)$",
            "So we get the system \\begin{align*}",
            "x + y &= 2,\\\\",
            "x - y &= 0.",
            "\\end{align*}",
            "Let's draw it.",
            "[asy]",
            "draw((0,0)--(1,1));",
            "[/asy]",
            "So we have two cases:",
            "1. $x > 0$.",
            "2. $x < 0$.",
            "Either way $x^2 > 0$.",
        ]
    )
    assert split_texts(text) == [
        "The sum of the terms is\n$222a + 222b + 222c = 222(a + b + c)$",
        "So we get the system \\begin{align*}\nx + y &= 2,\\\\\nx - y &= 0.\n\\end{align*}",
        "Let's draw it.\n[asy]\ndraw((0,0)--(1,1));\n[/asy]",
        "So we have two cases:\n1. $x > 0$.\n2. $x < 0$.",
        "Either way $x^2 > 0$.",
    ]
    # a sentence that has ended keeps the next formula line to itself; money is not math
    assert split_texts("It is $5$.\n$x = 5$") == ["It is $5$.", "$x = 5$"]
    assert split_texts("She pays $5 for one.\nShe pays $10 for two.") == [
        "She pays $5 for one.",
        "She pays $10 for two.",
    ]
    # a figure never closed is text like any other
    assert split_texts("Draw it.\n[asy]\ndraw(A);\n\nNext.") == [
        "Draw it.\n[asy]\ndraw(A);",
        "Next.",
    ]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("paragraphs", ["a\nb", "c"]),
        ("lines", ["a", "b", "c"]),
        (r"\n\n", ["a\nb", "c"]),
        ("numbered", ["a\nb\n\nc"]),
    ],
)
def test_each_mode(mode, expected):
    assert split_texts("a\nb\n\nc", mode) == expected


def test_numbered_mode_cuts_numbers_steps_and_bullets():
    text = "Step 1: add.\nmore\nStep 2: divide.\n- a bullet\n* another\n3) third"
    assert split_texts(text, "numbered") == [
        "Step 1: add.\nmore",
        "Step 2: divide.",
        "- a bullet",
        "* another",
        "3) third",
    ]


def test_paragraphs_mode_cuts_at_blank_lines_else_at_lines():
    for text in (QWEN_BOBBI, QWEN_FRACTIONS, "a\nb\nc", "a\n\nb\n  \nc"):
        text = text.replace("\r\n", "\n").strip()
        blank = re.compile(r"\n[ \t]*\n")
        parts = blank.split(text) if blank.search(text) else text.split("\n")
        assert split_texts(text, "paragraphs") == [p.strip() for p in parts if p.strip()]
    assert split_texts("a\nb\nc", "paragraphs") == ["a", "b", "c"]
    assert split_texts("a\n\nb\n  \nc", "paragraphs") == ["a", "b", "c"]


@pytest.mark.parametrize("mode", ["(", "a*", "x" * 300, ""])
def test_a_bad_pattern_is_refused(mode):
    if mode == "":
        assert check_mode(mode) == "auto"
        return
    with pytest.raises(SplitError):
        check_mode(mode)


def test_empty_text_has_no_steps():
    assert split("  \n\n ") == []
    assert split("<<1+1=2>>") == []
