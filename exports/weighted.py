"""``annotators=weighted``: labels weighted by who gave them (Dawid and Skene, 1979).

Each annotator has a confusion matrix, per true rating (-1, 0, +1), of the ratings they give;
each step's true rating has a posterior given the ratings it received. Expectation-maximisation
from the majority: the E step computes every step's posterior from the current matrices and the
class prior, the M step re-estimates matrices and prior from the posteriors (add-one smoothing,
so an annotator seen on few steps stays close to uniform). Steps with a gold rating (QC and
screening) have a known truth: their posterior is fixed to it, so gold anchors the matrices, and
overlap does the rest: an annotator who agrees with reliable colleagues is trusted, a careless
or adversarial one is discounted or read backwards.

Fitted once per export over every current (submitted, not rejected) rating of the exported kinds;
the annotators' own ratings, as the agreement figures use them (reviewers' corrections are not
the annotator's). ``P(positive)`` is the posterior of +1, plus that of 0 when neutral counts as
positive. Numpy arrays over the labels: a million labels fit in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeling.models import Step, StepLabel

RATINGS = (-1, 0, 1)
ITERATIONS = 50
TOLERANCE = 1e-6


@dataclass(frozen=True)
class Fit:
    """A fitted model: posteriors per step (rows in ``keys`` order), matrices, prior."""

    posterior: np.ndarray  # (steps, 3): P(true rating = -1, 0, +1)
    confusion: np.ndarray  # (annotators, 3 true, 3 given)
    prior: np.ndarray  # (3,)
    iterations: int


def dawid_skene(
    *,
    steps: np.ndarray,
    annotators: np.ndarray,
    ratings: np.ndarray,
    n_steps: int,
    n_annotators: int,
    gold: dict[int, int] | None = None,
    iterations: int = ITERATIONS,
) -> Fit:
    """Fit on observations ``(steps[i], annotators[i], ratings[i])`` (ratings as 0, 1, 2 for -1,
    0, +1); ``gold`` maps a step to its known rating (same coding)."""
    gold = gold or {}
    counts = np.zeros((n_steps, 3))
    np.add.at(counts, (steps, ratings), 1.0)
    posterior = (counts + 1e-3) / (counts + 1e-3).sum(axis=1, keepdims=True)
    known = np.fromiter(gold.keys(), dtype=np.int64, count=len(gold))
    truth = np.zeros((len(gold), 3))
    truth[np.arange(len(gold)), np.fromiter(gold.values(), dtype=np.int64, count=len(gold))] = 1
    if len(gold):
        posterior[known] = truth
    done = 0
    while done < iterations:
        done += 1
        confusion = np.ones((n_annotators, 3, 3))  # add-one smoothing
        # Advanced indices around a slice: row i adds posterior[steps[i]] to every true rating
        # of (annotator, given rating); numpy's stubs do not type a slice inside the index.
        np.add.at(confusion, (annotators, slice(None), ratings), posterior[steps])  # type: ignore[arg-type]
        confusion /= confusion.sum(axis=2, keepdims=True)
        prior = (posterior.sum(axis=0) + 1) / (n_steps + 3)
        log = np.tile(np.log(prior), (n_steps, 1))
        np.add.at(log, steps, np.log(confusion[annotators, :, ratings]))
        log -= log.max(axis=1, keepdims=True)
        new = np.exp(log)
        new /= new.sum(axis=1, keepdims=True)
        if len(gold):
            new[known] = truth
        change = np.abs(new - posterior).max()
        posterior = new
        if change < TOLERANCE:
            break
    return Fit(posterior=posterior, confusion=confusion, prior=prior, iterations=done)


def positive_probability(posterior: np.ndarray, *, neutral_positive: bool) -> np.ndarray:
    """P(the binary label is positive) from posteriors over (-1, 0, +1)."""
    return posterior[..., 2] + (posterior[..., 1] if neutral_positive else 0.0)


def campaign_probabilities(
    *, campaign_id: int, kinds: list[str], neutral_positive: bool
) -> dict[tuple[int, int], float]:
    """``(solution id, step index) -> P(positive)`` for every step with a current rating of a
    solution of ``kinds``, from a Dawid-Skene fit over all of them and their gold."""
    rows = list(
        StepLabel.objects.submitted_rated()
        .filter(assignment__campaign_id=campaign_id, assignment__solution__kind__in=kinds)
        .order_by()
        .values_list("step__solution_id", "step__index", "assignment__annotator_id", "rating")
        .iterator(chunk_size=20_000)
    )
    if not rows:
        return {}
    keys: dict[tuple[int, int], int] = {}
    people: dict[int, int] = {}
    steps = np.empty(len(rows), dtype=np.int64)
    annotators = np.empty(len(rows), dtype=np.int64)
    ratings = np.empty(len(rows), dtype=np.int64)
    for i, (solution_id, index, annotator, rating) in enumerate(rows):
        steps[i] = keys.setdefault((solution_id, index), len(keys))
        annotators[i] = people.setdefault(annotator, len(people))
        ratings[i] = int(rating or 0) + 1  # never None: rating__isnull=False
    gold = {
        keys[(solution_id, index)]: rating + 1
        for solution_id, index, rating in Step.objects.filter(
            solution__campaign_id=campaign_id, solution__kind__in=kinds, gold_rating__isnull=False
        ).values_list("solution_id", "index", "gold_rating")
        if (solution_id, index) in keys and rating is not None
    }
    fit = dawid_skene(
        steps=steps,
        annotators=annotators,
        ratings=ratings,
        n_steps=len(keys),
        n_annotators=len(people),
        gold=gold,
    )
    p = positive_probability(fit.posterior, neutral_positive=neutral_positive)
    return {key: float(p[row]) for key, row in keys.items()}
