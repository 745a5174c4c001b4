"""The event search: every family on the search sample, the best event of each, and each family's resolution."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpwitness.witness.events.model import (
    DISCRETE_LIMIT,
    FEATURE_ROWS,
    INTERVAL_BINS,
    SAMPLES_PER_BIN,
    THRESHOLDS,
    Candidate,
    Feature,
    FloatArray,
    Scorer,
    event_keys,
    names_of,
    row_keys,
)
from dpwitness.witness.events.scalar import (
    SortedValues,
    binned_candidate,
    column_values_candidate,
    interval_candidate,
    key_candidate,
    sorted_threshold_candidate,
)
from dpwitness.witness.events.vector import logistic_direction, tie_features, vector_features


def _best(candidates: Sequence[Candidate | None]) -> Candidate | None:
    return max((c for c in candidates if c is not None), key=lambda c: c.score, default=None)


def search(
    xa: FloatArray,
    xb: FloatArray,
    scorer: Scorer,
    *,
    float_test: bool,
    rng: np.random.Generator,
    names: list[str] | None = None,
    start: int = 0,
    feature_rows: int = FEATURE_ROWS,
    every: bool = False,
    binned_rows: bool = False,
) -> tuple[list[Candidate], list[str]]:
    """The best candidate of each family on the search samples (best first), and the families searched.

    ``names`` label the columns; ``start`` is the first value column (structured rows begin
    with their shape code and length, which take part in the value families only);
    ``feature_rows`` caps the rows used for the derived vector features. With ``every``, the
    best event of every column and feature is returned, not only the best of each family (for a
    later choice on fresh samples). ``binned_rows`` adds whole rows with their continuous columns
    binned (the tight mode's proposals; see :func:`binned_candidate`).
    """

    def pick(candidates: Sequence[Candidate | None]) -> list[Candidate | None]:
        return [c for c in candidates if c is not None] if every else [_best(candidates)]

    columns = xa.shape[1]
    names = names or names_of(columns)
    families: list[str] = ["threshold"]
    by_column = [SortedValues.of(xa[:, j], xb[:, j]) for j in range(columns)]
    discrete = [len(c.distinct()) + (1 if any(c.missing) else 0) <= DISCRETE_LIMIT for c in by_column]
    # coordinates whose values mostly differ (continuous, or too few runs to tell): where a tie means something
    spread = [j for j, c in enumerate(by_column) if not discrete[j] or len(c.distinct()) >= 0.5 * len(c.pooled) > 0]
    found = pick(
        [sorted_threshold_candidate(c, scorer, Feature(names[j], column=j), "threshold") for j, c in enumerate(by_column)]
    )
    if any(discrete):
        found.append(
            _best(
                [
                    column_values_candidate(c, scorer, names[j], j, repeated_only=False)
                    for j, c in enumerate(by_column)
                    if discrete[j]
                ]
            )
        )
        families.append("values")
    ka = kb = None
    if columns > 1:
        ka, kb = row_keys(xa), row_keys(xb)
        found.append(key_candidate(ka, kb, scorer, "X", "joint values", -1, "raw", rows=(xa, xb)))
        families.append("joint values")
    if not all(discrete):
        continuous = [j for j in range(columns) if not discrete[j]]
        found += pick([interval_candidate(by_column[j], scorer, Feature(names[j], column=j)) for j in continuous])
        masses = [column_values_candidate(by_column[j], scorer, names[j], j, repeated_only=True) for j in continuous]
        if ka is not None and kb is not None:
            masses.append(key_candidate(ka, kb, scorer, "X", "point masses", -1, "raw", repeated_only=True, rows=(xa, xb)))
        found += pick(masses)
        families += ["intervals", "point masses"]
        if binned_rows and columns > 1:
            found.append(binned_candidate(xa, xb, scorer, continuous, columns))
    del by_column
    if columns - start > 1:
        families.append("projection")
        weights = logistic_direction(xa[:, start:], xb[:, start:], rng)
        if weights is not None:
            label = " + ".join(f"{w:.3g}·{n}" for w, n in zip(weights, names[start:], strict=True) if w != 0)
            feature = Feature(f"({label})", "weights", weights=weights, start=start)
            found.append(sorted_threshold_candidate(SortedValues.of(feature(xa), feature(xb)), scorer, feature, "projection"))
        derived = vector_features(xa, xb, names, start)
        if derived:
            families.append("sums and differences")
            ra, rb = xa[:feature_rows], xb[:feature_rows]
            sub = Scorer(len(ra), scorer.n_measure, delta=scorer.delta, alpha=scorer.alpha, shrink=scorer.shrink)
            # the ties compete with the sums and differences (one event measured for both: no extra
            # Bonferroni share), and are reported as their own family
            labelled = [(f, "sums and differences") for f in derived]
            labelled += [(f, "ties") for f in tie_features(ra, rb, names, start, spread)]
            found += pick([sorted_threshold_candidate(SortedValues.of(f(ra), f(rb)), sub, f, family) for f, family in labelled])
    if float_test:
        bits = []
        for transform in ("lowest-bit", "exponent+lowest-bit"):
            for j in range(start, columns):
                keys_a, keys_b = event_keys(xa, j, transform), event_keys(xb, j, transform)
                bits.append(key_candidate(keys_a, keys_b, scorer, f"bits({names[j]})", "bit pattern", j, transform))
        found += pick(bits)
        families.append("bit pattern")
    return sorted((c for c in found if c is not None), key=lambda c: -c.score), families


def resolution(family: str, n_search: int) -> float:
    """The smallest event probability a family can represent at this search size (see docs/audit.md)."""
    if family == "point masses":
        return 7.0 / n_search  # a value of this probability repeats in the search samples with probability ≥ 0.99
    if family == "intervals":
        bins = max(4, min(INTERVAL_BINS, 2 * n_search // SAMPLES_PER_BIN))
        return 8.0 / bins  # the window spans at least four bins of the pooled histogram
    if family == "threshold":
        return 2.0 / THRESHOLDS
    return 0.0
