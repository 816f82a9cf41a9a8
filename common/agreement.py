"""Cohen's kappa, the chance-corrected agreement of two coders: one home for the formula.

Pure: the screening gate (``labeling.gold.scores``) scores an annotator against gold with it,
and the inter-annotator figures (``annotators.agreement``) score pairs of annotators.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable


def cohen_kappa(pairs: Iterable[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa for two coders over the units both rated: (p_o - p_e) / (1 - p_e).

    ``None`` when there is no unit, or when chance agreement is already perfect (both coders gave
    one and the same value throughout), where the ratio is undefined.
    """
    pairs = list(pairs)
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = sum(first[v] * second[v] for v in first) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)
