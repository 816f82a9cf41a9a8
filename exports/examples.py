"""From a solution's labels to labelled paths and training examples, under a label policy.

The training formats (TRL, Math-Shepherd, ProcessBench) all start here: one annotator's labels
along the solution's path, several annotators combined, cut at the first error, and each rated
alternative candidate as an example of its own; with the policy's ``machine_labels``, machine
labels beside the human ones or after them (``machines.labels``), every label with its source.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from exports.policy import ADJUDICATED, HUMAN, MACHINE, LabelPolicy
from exports.reader import AssignmentData, SolutionData
from labeling.consensus import majority_label


@dataclass(slots=True)
class LabelledPath:
    """A solution's steps ``steps[:len(labels)]`` with binary labels, and other candidates.

    ``candidates`` are ``(position, text, label)``: the path before ``position`` followed by
    ``text`` is an example of its own. ``annotator`` is None when several were combined, and
    ``exports.policy.MACHINE`` for a path of machine labels alone. ``sources`` names where each
    label came from; ``models`` the machines whose agreement gave its machine labels.
    """

    annotator: str | None
    labels: list[bool]
    candidates: list[tuple[int, str, bool]]
    # ``annotators="weighted"``: P(positive) of each label (the label is whether it is >= 0.5).
    probabilities: list[float] | None = None
    sources: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)

    @property
    def machine(self) -> bool:
        return self.annotator == MACHINE


def _annotator_labels(
    assignment: AssignmentData, policy: LabelPolicy
) -> tuple[list[bool], list[tuple[int, str, bool]]]:
    """One annotator's labels along the path, and their rated candidates.

    The path stops at its first gap or unrated step: a label after a hole has no prefix to sit
    on. A reviewer's correction replaces the rating it corrects. A step the labeler wrote
    themselves (PRM800K's human completion taking the place of every candidate) counts as
    positive unless it was rated: they wrote it as the right next step.
    """
    labels: list[bool] = []
    candidates: list[tuple[int, str, bool]] = []
    corrections = assignment.corrections
    for expected, lab in enumerate(assignment.labels):
        if lab.index != expected:
            break
        rating = lab.rating
        if corrections and str(lab.index) in corrections:
            rating = int(corrections[str(lab.index)])
        hc = lab.human_completion
        if rating is None and lab.completion_index is None and hc is not None:
            rating = 1
        if policy.alternatives:
            # The prefix before this position is fully labelled, so its candidates stand.
            for alt in lab.alternatives:
                value = policy.label(alt.get("rating"))
                if value is not None:
                    candidates.append((lab.index, alt["text"], value))
            if hc is not None and lab.completion_index is not None:
                hc_rating = 1 if hc.get("rating") is None else hc["rating"]
                candidates.append((lab.index, hc["text"], bool(policy.label(hc_rating))))
        value = policy.label(rating)
        if value is None:
            break
        labels.append(value)
    return labels, candidates


def _vote(votes: list[bool], mode: str) -> bool | None:
    """Combine several annotators' labels of one step: None means no agreed label."""
    if mode == "unanimous":
        positive = sum(votes)
        return None if positive and len(votes) - positive else positive > 0
    return majority_label(votes)  # also adjudicated's fallback


def labelled_paths(solution: SolutionData, policy: LabelPolicy) -> list[LabelledPath]:
    """The solution's labelled paths under the policy: one per annotator, or one combined.

    Only current work makes examples: rejected work and superseded versions, which the raw
    formats may carry flagged, never do. With ``adjudicated`` a reviewer's decision on a step
    replaces the annotators' vote there. With ``machine_labels``: ``fill`` continues each path
    with the machine labels of the steps after it that no human rated (a solution nobody
    labelled gets a path of machine labels alone); ``consensus`` adds that machine path beside
    the human ones.
    """
    per_annotator = [
        (a.annotator, *_annotator_labels(a, policy)) for a in solution.assignments if a.is_current
    ]
    paths = _human_paths(solution, policy, per_annotator) if per_annotator else []
    weighted = policy.annotators == "weighted"
    if policy.machine_labels == "fill" and solution.machine:
        rated = solution.human_rated()
        for path in paths:
            _machine_extend(path, solution, policy, skip=rated)
        if not paths:
            paths = [_machine_path(solution, policy, weighted)]
    elif policy.machine_labels == "consensus" and solution.machine:
        paths.append(_machine_path(solution, policy, weighted))
    for path in paths:
        if policy.cut_after_first_negative and False in path.labels:
            del path.labels[path.labels.index(False) + 1 :]
            del path.sources[len(path.labels) :]
            if path.probabilities is not None:
                del path.probabilities[len(path.labels) :]
        # A candidate needs its whole prefix labelled (and, when cutting, free of errors).
        end = len(path.labels)
        if policy.cut_after_first_negative and end and not path.labels[-1]:
            end -= 1
        path.candidates = [c for c in path.candidates if c[0] <= end]
    # A machine path whose first step has no machine label says nothing.
    return [p for p in paths if p.labels or not p.machine]


def _human_paths(
    solution: SolutionData,
    policy: LabelPolicy,
    per_annotator: list[tuple[str, list[bool], list[tuple[int, str, bool]]]],
) -> list[LabelledPath]:
    """The annotators' paths, one each or combined, before any cut."""
    decided = solution.adjudications if policy.annotators == "adjudicated" else {}
    weighted = policy.annotators == "weighted"
    probabilities: list[float] = []
    if policy.annotators == "each" or (len(per_annotator) == 1 and not decided and not weighted):
        return [
            LabelledPath(name, labels, cands, sources=[HUMAN] * len(labels))
            for name, labels, cands in per_annotator
        ]
    labels: list[bool] = []
    sources: list[str] = []
    for position in range(max(len(lbls) for _, lbls, _ in per_annotator)):
        source = HUMAN
        if position in decided:
            value = policy.label(decided[position])
            source = ADJUDICATED
        elif weighted and position in solution.probabilities:
            probability = solution.probabilities[position]
            probabilities.append(probability)
            value = probability >= 0.5
        else:
            votes = [lbls[position] for _, lbls, _ in per_annotator if len(lbls) > position]
            value = _vote(votes, policy.annotators)
        if value is None:
            break
        labels.append(value)
        sources.append(source)
    grouped: dict[tuple[int, str], list[bool]] = {}
    for _, _, cands in per_annotator:
        for position, text, value in cands:
            grouped.setdefault((position, text), []).append(value)
    candidates = []
    for (position, text), votes in grouped.items():
        value = _vote(votes, policy.annotators)
        if value is not None:
            candidates.append((position, text, value))
    path = LabelledPath(None, labels, candidates, sources=sources)
    if weighted:
        # A step without a posterior (no current rating of its own) takes its vote's label.
        by_position = iter(probabilities)
        path.probabilities = [
            next(by_position) if p in solution.probabilities else float(v)
            for p, v in enumerate(labels)
        ]
    return [path]


def _machine_path(solution: SolutionData, policy: LabelPolicy, weighted: bool) -> LabelledPath:
    """The solution's machine labels alone, from its first step while they last."""
    path = LabelledPath(MACHINE, [], [], [] if weighted else None)
    _machine_extend(path, solution, policy, skip=set())
    return path


def _machine_extend(
    path: LabelledPath, solution: SolutionData, policy: LabelPolicy, *, skip: set[int]
) -> None:
    """Continue a path with the machine labels of the steps after it, up to the first step that
    has none or that is in ``skip`` (the steps people rated: ``fill`` leaves those to them)."""
    models = set(path.models)
    position = len(path.labels)
    while position in solution.machine and position not in skip:
        machine = solution.machine[position]
        value = bool(policy.label(machine.rating))
        path.labels.append(value)
        path.sources.append(MACHINE)
        if path.probabilities is not None:
            path.probabilities.append(float(value))
        models.update(machine.models)
        position += 1
    path.models = sorted(models)


class Example(NamedTuple):
    """One training example: step texts, their labels, and where each label came from."""

    texts: list[str]
    labels: list[bool]
    # ``annotators="weighted"``: P(positive) per label; None otherwise.
    probabilities: list[float] | None
    sources: list[str]
    models: list[str]  # the machines behind its machine labels ("rollout:MODEL", ...)


def training_examples(
    solution: SolutionData, policy: LabelPolicy
) -> Iterator[tuple[list[str], list[bool]]]:
    """(step texts, labels) of every training example the solution gives."""
    for example in training_examples_sourced(solution, policy):
        yield example.texts, example.labels


def training_examples_soft(
    solution: SolutionData, policy: LabelPolicy
) -> Iterator[tuple[list[str], list[bool], list[float] | None]]:
    """``training_examples`` with each label's P(positive) under ``annotators="weighted"``
    (None otherwise). A candidate's own label is a vote: its probability is 0 or 1."""
    for example in training_examples_sourced(solution, policy):
        yield example.texts, example.labels, example.probabilities


def training_examples_sourced(solution: SolutionData, policy: LabelPolicy) -> Iterator[Example]:
    """Every training example the solution gives, each label with its source. A candidate (an
    alternative a person rated) is a human label after its path's prefix."""
    for path in labelled_paths(solution, policy):
        n = len(path.labels)
        soft = path.probabilities
        if n:
            yield Example(solution.steps[:n], path.labels, soft, path.sources, path.models)
        for position, text, value in path.candidates:
            prefix = path.sources[:position]
            yield Example(
                [*solution.steps[:position], text],
                [*path.labels[:position], value],
                None if soft is None else [*soft[:position], float(value)],
                [*prefix, HUMAN],
                path.models if MACHINE in prefix else [],
            )
