"""Inter-annotator agreement on step ratings: Krippendorff's alpha and pairwise Cohen's kappa.

Pure functions over ``(unit, coder, value)`` triples, where a unit is a step, a coder an annotator
and a value a rating (-1, 0, +1). Missing ratings are simply absent triples: alpha uses every unit
rated by at least two coders, kappa every unit both coders of a pair rated. A figure that is
undefined (no pairable units, or no variation at all so chance agreement is already perfect) is
``None`` rather than a number that would look meaningful on a dashboard.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from itertools import combinations

from common.agreement import cohen_kappa

__all__ = ["cohen_kappa", "krippendorff_alpha", "pairwise_kappa", "per_coder"]

Triple = tuple[Hashable, Hashable, int]


def _nominal(a: int, b: int) -> float:
    return 0.0 if a == b else 1.0


def _interval(a: int, b: int) -> float:
    return float((a - b) ** 2)


METRICS: dict[str, Callable[[int, int], float]] = {"nominal": _nominal, "interval": _interval}


def _units(triples: Iterable[Triple]) -> dict[Hashable, dict[Hashable, int]]:
    units: dict[Hashable, dict[Hashable, int]] = defaultdict(dict)
    for unit, coder, value in triples:
        units[unit][coder] = value
    return units


def krippendorff_alpha(triples: Iterable[Triple], *, metric: str = "nominal") -> float | None:
    """Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's alpha-reliability").

    alpha = 1 - D_o / D_e, from the coincidence matrix of values within units that have at least
    two values. ``metric`` is ``nominal`` (any difference counts fully) or ``interval`` (squared
    difference: a -1 against a +1 disagrees four times as much as a 0 against a +1).
    """
    delta = METRICS[metric]
    coincidences: Counter[tuple[int, int]] = Counter()
    for coders in _units(triples).values():
        values = list(coders.values())
        m = len(values)
        if m < 2:
            continue
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    coincidences[(a, b)] += 1.0 / (m - 1)
    n_c: Counter[int] = Counter()
    for (a, _b), weight in coincidences.items():
        n_c[a] += weight
    n = sum(n_c.values())
    if n <= 1:
        return None
    observed = sum(w * delta(a, b) for (a, b), w in coincidences.items()) / n
    expected = sum(n_c[a] * n_c[b] * delta(a, b) for a in n_c for b in n_c) / (n * (n - 1))
    if expected == 0:
        return None
    return 1.0 - observed / expected


@dataclass(frozen=True)
class PairAgreement:
    coder_a: Hashable
    coder_b: Hashable
    shared: int
    percent: float
    kappa: float | None


@dataclass(frozen=True)
class CoderAgreement:
    coder: Hashable
    shared: int
    percent: float | None
    kappa: float | None


def pairwise_kappa(triples: Iterable[Triple]) -> list[PairAgreement]:
    """Cohen's kappa and raw agreement for every pair of coders with at least one shared unit."""
    shared: dict[tuple[Hashable, Hashable], list[tuple[int, int]]] = defaultdict(list)
    for coders in _units(triples).values():
        for a, b in combinations(sorted(coders, key=str), 2):
            shared[(a, b)].append((coders[a], coders[b]))
    return [
        PairAgreement(
            coder_a=a,
            coder_b=b,
            shared=len(values),
            percent=sum(x == y for x, y in values) / len(values),
            kappa=cohen_kappa(values),
        )
        for (a, b), values in sorted(shared.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1])))
    ]


def per_coder(pairs: Iterable[PairAgreement]) -> dict[Hashable, CoderAgreement]:
    """Each coder's agreement with the others: raw agreement and kappa averaged over their pairs,
    weighted by the number of units shared (pairs with an undefined kappa count for raw agreement
    only)."""
    totals: dict[Hashable, list[float]] = defaultdict(lambda: [0, 0.0, 0, 0.0])
    for p in pairs:
        for coder in (p.coder_a, p.coder_b):
            t = totals[coder]
            t[0] += p.shared
            t[1] += p.percent * p.shared
            if p.kappa is not None:
                t[2] += p.shared
                t[3] += p.kappa * p.shared
    return {
        coder: CoderAgreement(
            coder=coder,
            shared=int(n),
            percent=pct / n if n else None,
            kappa=k / nk if nk else None,
        )
        for coder, (n, pct, nk, k) in totals.items()
    }
