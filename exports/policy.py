"""The label policy: how human step labels become training examples, and which are exported.

Each option is declared once, as a field of :class:`LabelPolicy` carrying an :class:`Option`
(default, help, choices, bounds). The export form, the API serializer and the command's flags are
built from :data:`POLICY_OPTIONS`, so they cannot drift from the policy or from each other.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labeling.models import Solution

# MATH-500's 500 problems, one ``problem_sha256`` per line (how the list was made and from what:
# exports/data/math500/SOURCE.md; the problems themselves are in ../shared/data/math500/).
MATH500_HASHES_PATH = Path(__file__).resolve().parent / "data" / "math500" / "problem_sha256.txt"
SPLIT_HASH = "sha256 of the stripped problem text, salted with split_seed"

# Where an exported label came from, named on every label (``machine_labels``: machines.labels).
HUMAN = "human"
ADJUDICATED = "adjudicated"  # a reviewer's decision (annotators="adjudicated")
MACHINE = "machine:consensus"  # where rollouts and a judge agree


class ExportError(ValueError):
    """A request for an export that cannot be honoured (unknown format, bad option)."""


@dataclass(frozen=True)
class Option:
    """One policy option as people set it: on the export page, over the API, on the command line.

    ``choices`` pairs each value with what it means; ``min_value`` and ``max_value`` are
    inclusive. ``name`` is the policy field's, filled in by :data:`POLICY_OPTIONS`.
    """

    default: Any
    help: str
    label: str = ""
    choices: tuple[tuple[str, str], ...] = ()
    min_value: float | None = None
    max_value: float | None = None
    name: str = ""

    @property
    def type(self) -> type:
        """``bool``, ``str``, ``int`` or ``float``: the default's type is the option's."""
        return type(self.default)

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(value for value, _ in self.choices)

    @property
    def flag(self) -> str:
        """The command-line flag: ``--cut-after-first-negative``."""
        return "--" + self.name.replace("_", "-")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` cannot be this option's, or None when it can."""
        if self.choices and value not in self.values:
            return f"{self.name} must be one of {self.values}, not {value!r}"
        low, high = self.min_value, self.max_value
        if (low is not None and value < low) or (high is not None and value > high):
            return f"{self.name} must be from {low} to {high}, not {value!r}"
        return None


def option(default: Any, help: str, **declaration: Any) -> Any:
    """A policy field with its default and how it is offered (see :class:`Option`)."""
    return dataclasses.field(
        default=default, metadata={"option": Option(default, help, **declaration)}
    )


@dataclass(frozen=True)
class LabelPolicy:
    """How human step labels become training examples, and which of them are exported.

    The raw formats (``prm800k``, ``csv``) keep every rating and use only the options that
    select (kinds, review, split); the others apply all of them.
    """

    neutral: str = option(
        "positive",
        "A neutral (0) rating counts as positive, as in the PRM800K paper, or as negative.",
        label="Neutral steps count as",
        choices=(("positive", "positive (as the PRM800K paper)"), ("negative", "negative")),
    )
    cut_after_first_negative: bool = option(
        True,
        "A path ends at its first negative step: what follows an error says little about "
        "the steps.",
    )
    alternatives: bool = option(
        True,
        "Each other rated candidate at a step (PRM800K's alternatives, a human correction) "
        "becomes its own example: the path before it plus that candidate. Without them a "
        "phase 1 export has almost no negative steps.",
        label="Alternative completions as extra examples",
    )
    annotators: str = option(
        "majority",
        "How the labels of several annotators on one solution are combined.",
        label="Several annotators",
        choices=(
            ("majority", "majority per step (ties: the more negative)"),
            ("unanimous", "unanimous steps only (the path stops where they disagree)"),
            ("each", "one record per annotator"),
            (
                "adjudicated",
                "a reviewer's adjudication where there is one, else the majority",
            ),
            (
                "weighted",
                "weighted by reliability (Dawid-Skene from overlap and gold): each step's label "
                "is the posterior, as a probability in TRL JSONL and CSV, a field in PRM800K",
            ),
        ),
    )
    annotator_ids: str = option(
        "pseudonym",
        "How exports name annotators: a stable pseudonym per person and campaign (the mapping "
        "to usernames is for the campaign's managers), or their username.",
        label="Annotators appear as",
        choices=(
            ("pseudonym", "a stable pseudonym (no personal data)"),
            ("username", "their username"),
        ),
    )
    include_quality_control: bool = option(
        True, "Export the labels of quality-control solutions too."
    )
    include_screening: bool = option(True, "Export the labels of screening solutions too.")
    reviewed_only: bool = option(
        False,
        "Only assignments a reviewer accepted (rejected work only with “Rejected work too, "
        "flagged”).",
        label="Only reviewed and accepted",
    )
    include_rejected: bool = option(
        False,
        "Also the labels of work a reviewer rejected (kept when the solution went back to the "
        "queue), flagged as rejected. Raw formats (prm800k, csv) only: no training example is "
        "made from them.",
        label="Rejected work too, flagged",
    )
    include_superseded: bool = option(
        False,
        "Also the earlier versions of work its annotator amended before review, flagged as "
        "superseded (the latest version is always exported). Raw formats (prm800k, csv) only.",
        label="Earlier versions of amended work too, flagged",
    )
    test_fraction: float = option(
        0.0,
        "Share of problems in a test file (0: one file). A problem goes to test when a salted "
        "hash of its text falls below it: never split, and stable across runs and machines.",
        label="Test fraction",
        min_value=0.0,
        max_value=0.99,
    )
    split_seed: int = option(
        0,
        "The salt of the train/test hash: another seed, another split.",
        min_value=-(2**31),
        max_value=2**31 - 1,
    )
    math500: str = option(
        "ignore",
        "MATH-500 problems (the PRM literature's test set): left to the hash, forced into "
        "test, or left out.",
        label="MATH-500 problems",
        choices=(
            ("ignore", "treat like any problem"),
            ("test", "force into test"),
            ("exclude", "exclude"),
        ),
    )

    machine_labels: str = option(
        "never",
        "Machine labels (rollouts and a judge, Machine evidence) beside the human ones. A step has "
        "one where rollouts and a judge agree: at least one rollout and one judge verdict on "
        "it, and every one of them says the same. Rollouts say correct when at least one "
        "completion from the step reaches the right answer and wrong when none does "
        "(Math-Shepherd's hard estimate); the judge says correct for the steps before the "
        "first error it names and wrong for that step (nothing after it). Both correct: +1; "
        "both wrong: -1. consensus adds them as examples of their own (also on solutions "
        "nobody labelled); fill uses them only for steps no human rated. Every label then "
        "carries its source (human, adjudicated, machine:consensus).",
        label="Machine labels",
        choices=(
            ("never", "never (human labels only)"),
            ("consensus", "add where rollouts and judge agree, as examples of their own"),
            ("fill", "where rollouts and judge agree, only on steps no human rated"),
        ),
    )

    def __post_init__(self) -> None:
        for declared in POLICY_OPTIONS:
            problem = declared.problem(getattr(self, declared.name))
            if problem:
                raise ExportError(problem)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> LabelPolicy:
        data = dict(data or {})
        unknown = set(data) - {o.name for o in POLICY_OPTIONS}
        if unknown:
            raise ExportError(f"unknown policy options: {', '.join(sorted(unknown))}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def splits(self) -> tuple[str, ...]:
        """The files an export writes: one, or a train and a test file."""
        if self.test_fraction > 0 or self.math500 == "test":
            return ("train", "test")
        return ("all",)

    @property
    def kinds(self) -> list[str]:
        kinds = [Solution.Kind.REGULAR]
        if self.include_quality_control:
            kinds.append(Solution.Kind.QUALITY_CONTROL)
        if self.include_screening:
            kinds.append(Solution.Kind.SCREENING)
        return kinds

    def split_for_problem(self, problem_text: str) -> str | None:
        """The file (split) a problem's solutions go to, or None when the policy leaves it out."""
        if self.math500 != "ignore" and is_math500(problem_text):
            return "test" if self.math500 == "test" else None
        if self.splits == ("all",):
            return "all"
        if self.test_fraction == 0:
            return "train"
        key = f"{self.split_seed}\0{problem_text.strip()}".encode()
        position = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2.0**64
        return "test" if position < self.test_fraction else "train"

    def label(self, rating: int | None) -> bool | None:
        """A rating as the binary label trainers see; None stays None (not rated)."""
        if rating is None:
            return None
        if rating == 0:
            return self.neutral == "positive"
        return rating > 0


POLICY_OPTIONS: tuple[Option, ...] = tuple(
    dataclasses.replace(f.metadata["option"], name=f.name) for f in dataclasses.fields(LabelPolicy)
)


def problem_sha256(problem_text: str) -> str:
    """The hex sha256 of a problem's text (UTF-8, surrounding space stripped): how MATH-500's
    problems are listed in ``MATH500_HASHES_PATH``."""
    return hashlib.sha256(problem_text.strip().encode()).hexdigest()


@functools.cache
def math500_hashes() -> frozenset[str]:
    with open(MATH500_HASHES_PATH, encoding="ascii") as f:
        return frozenset(line.strip() for line in f if line.strip())


def is_math500(problem_text: str) -> bool:
    """Whether a problem's text is one of MATH-500's (exact text, surrounding space aside)."""
    return problem_sha256(problem_text) in math500_hashes()
