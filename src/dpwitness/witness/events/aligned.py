"""Events on nested outputs aligned by their value paths: whole-part value sets and the parts' log ratios combined."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from dpwitness.witness.events.model import (
    BINS_FEW,
    BINS_MANY,
    DISCRETE_LIMIT,
    Alignment,
    Candidate,
    Feature,
    FloatArray,
    PartScore,
    Scorer,
    row_keys,
)
from dpwitness.witness.events.scalar import SortedValues, binned_candidate, key_candidate, sorted_threshold_candidate


def aligned_candidates(
    xa: FloatArray, xb: FloatArray, alignment: Alignment, scorer: Scorer, found: Sequence[Candidate]
) -> list[Candidate]:
    """Events for nested outputs, on rows aligned by ``alignment``: ``found`` (a search's candidates
    on the aligned rows), whole-part value sets (exact, and binned), and a threshold on the sum of
    the parts' estimated log likelihood ratios (:class:`PartScore`: parts that draw their own noise
    multiply their ratios, so the sum approximates the Neyman–Pearson statistic of the whole output).
    Every event returned reads raw rows (it carries the alignment)."""
    extra: list[Candidate] = []
    scores: list[PartScore] = []
    for name, first, end in alignment.parts:
        pa, pb = xa[:, first:end], xb[:, first:end]
        own: list[Candidate | None] = [
            key_candidate(row_keys(pa), row_keys(pb), scorer, name, "joint values", -1, "raw", rows=(pa, pb))
        ]
        edges = _part_edges(pa, pb)
        continuous = [j for j, edge in enumerate(edges) if edge is not None]
        if continuous:
            own.append(binned_candidate(pa, pb, scorer, continuous, end - first))
        extra += [replace(c, event=replace(c.event, block=(first, end))) for c in own if c is not None]
        scores.append(PartScore.of(pa, pb, first, end, edges))
    feature = Feature("Σ log ratio(part)", "parts", parts=tuple(scores))
    combined = sorted_threshold_candidate(SortedValues.of(feature(xa), feature(xb)), scorer, feature, "parts combined")
    if combined is not None:
        extra.append(combined)
    return [replace(c, event=replace(c.event, aligned=alignment)) for c in [*found, *extra]]


def _part_edges(pa: FloatArray, pb: FloatArray) -> list[FloatArray | None]:
    """Bin edges for each column of a part with many values (None: a discrete column, kept exact):
    a few pooled quantiles, and each value holding ≥ 1% of the outputs as a bin of its own (a
    ``False`` beside the noisy answers of a sparse vector)."""
    edges: list[FloatArray | None] = []
    count = BINS_FEW if pa.shape[1] <= 2 else BINS_MANY
    for j in range(pa.shape[1]):
        pooled = np.concatenate([pa[:, j], pb[:, j]])
        pooled = pooled[np.isfinite(pooled)]
        values, counts = np.unique(pooled, return_counts=True)
        if len(values) <= DISCRETE_LIMIT // 64:
            edges.append(None)
            continue
        atoms = values[counts >= 0.01 * len(pooled)]
        rest = pooled[~np.isin(pooled, atoms)]
        cuts = np.quantile(rest, np.linspace(0, 1, count + 1)[1:-1]) if len(rest) else np.empty(0)
        # with side="left", x == atom lands between nextafter(atom, −∞) and atom: a bin of its own
        edges.append(np.unique(np.concatenate([cuts, np.nextafter(atoms, -np.inf), atoms])))
    return edges
