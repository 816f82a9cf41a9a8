"""The checks read a step's negations, hypotheses and rounding words, and its plain-text
arithmetic, only when it can matter (a step with an equation, a failure or a final answer): each
step of the fixtures' real solutions, synthetic ones and cases made to fire each check gets the
findings, the count of verified equations and leaves the state that it did when every step was
read in full (the code before the guards, kept here as the reference)."""

from __future__ import annotations

import pytest

from prm.checks import solution as solution_module
from prm.checks.base import (
    HYPOTHESIS_WORDS,
    NEGATION_WORDS,
    ROUNDING_WORDS,
    SELECTION_WORDS,
    Finding,
    close,
    fmt,
)
from prm.checks.solution import SolutionChecks
from prm.checks.step import read_step
from prm.checks.words import number_of, plain_arithmetic, plain_text, word_findings, worded_failures
from prm.features import arithmetic_failures, arithmetic_results
from tests.test_same_answer_at_any_load import real_solutions

MADE = [
    (
        "What is $6 \\times 7$?",
        [
            "We have 6 * 7 = 43.",  # plain-text arithmetic, fails
            "It is not true that 6 * 7 = 43.",  # negated: no finding
            "Is 6 * 7 = 43?",  # a question: no finding
            "If $x = 3$, then $2x + 1 = 8$.",  # a hypothesis
            "So $x = 4$ and $2x = 9$.",
            "3 hours is 200 minutes, and 20% of 50 is 1000.",
            "8 feet + 2 feet = 13 feet",
            "$x > 0$, so $x = -3$.",
            "Roughly, $22/7 = 3.14$ and 7 / 2 = 3.5.",
            "# Answer\n\n41",
        ],
    ),
    (
        "How many integers $n$ satisfy $n^2 < 10$?",
        ["The squares are 1, 4 and 9.", "$n = 3$ works.", "# Answer\n\n7"],
    ),
    ("Compute $2 + 3$.", ["That is $2 + 3 = 5$.", "$\\boxed{6}$"]),
    ("Compute $2 + 3$.", ["That is 5.", "# Answer\n\n6"]),
]


class Unguarded(SolutionChecks):
    """``SolutionChecks`` as it was before the guards: every step read in full."""

    def __init__(self, problem: str) -> None:
        self.previous_numbers: list[float] = []
        super().__init__(problem)

    def _check(self, text: str) -> list[Finding]:
        plain = plain_text(text)
        negated = bool(NEGATION_WORDS.search(plain)) or "?" in text
        hypothesis = negated or bool(HYPOTHESIS_WORDS.search(plain))
        found = []
        outside = plain_arithmetic(text)
        if not negated:
            failures = arithmetic_failures(outside) + worded_failures(outside)
            found += [Finding("arithmetic", f"{run} does not hold") for run in failures]
        self.results += arithmetic_results(outside)
        found += word_findings(text)
        facts = read_step(text)
        rounding = bool(ROUNDING_WORDS.search(text))
        earlier = list(self.results)
        found += self._learn(facts, quiet=negated, hypothesis=hypothesis, rounding=rounding)
        numbers = [number_of(n) for n in solution_module._STEP_NUMBER.findall(_outside(text))]
        selects = bool(SELECTION_WORDS.search(plain))
        if facts.answer is not None and earlier and facts.bare_answer and not (negated or selects):
            answer = facts.answer
            values = self.results + numbers
            if len(earlier) == self.results_before_previous:
                values += self.previous_numbers
            if not any(
                close(v, answer, rounding=rounding)
                or (facts.answer_percent and close(v, answer * 100, rounding=rounding))
                for v in values
            ):
                reason = f"the answer {facts.answer_text} is not {fmt(earlier[-1])}, found last"
                found.append(Finding("final_answer", reason))
        self.previous_numbers = numbers
        self.results_before_previous = len(earlier)
        return found


def _outside(text: str) -> str:
    return solution_module._ANSWER_PART.sub(" ", text)


def _state(checks: SolutionChecks) -> tuple:
    known = {s: (list(v), at) for s, (v, at) in checks.known.items()}
    return (checks.results, known, checks.conditions, checks.results_before_previous)


def _corpus() -> list[tuple[str, list[str]]]:
    from bench.synthetic import records

    rows = [(problem, list(steps)) for problem, steps in real_solutions()]
    rows += [
        (r["question"]["problem"], r["question"]["pre_generated_steps"])
        for r in records(200, seed=5, labelled=False)
    ]
    return rows + MADE


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, list[str]]]:
    return _corpus()


def test_every_step_gets_the_findings_and_verified_count_of_the_unguarded_checks(corpus):
    fired = set()
    for problem, steps in corpus:
        guarded, unguarded = SolutionChecks(problem), Unguarded(problem)
        for step in steps:
            found = guarded.step(step)
            assert found == unguarded.step(step), step
            assert guarded.verified == unguarded.verified, step
            assert _state(guarded) == _state(unguarded), step
            fired |= {f.check for f in found}
    # the corpus exercises what the guards skip: failures, negations, answers
    assert {"arithmetic", "final_answer", "contradiction", "percent", "units"} <= fired


def test_a_step_without_claims_leaves_its_words_unread(monkeypatch):
    read = []
    monkeypatch.setattr(solution_module, "plain_text", lambda text: read.append(text) or text)
    checks = SolutionChecks("What is $6 \\times 7$?")
    checks.step("I notice that the product of the two numbers is $42$.")
    assert read == []
    checks.step("Is 6 * 7 = 43?")
    assert read == ["Is 6 * 7 = 43?"]
