"""Composing a release from a query's exact aggregates: one noisy release per part (noise
added once, by the plan's mechanisms), keys selected or declared, then post-processing into the
statistic (a mean, a variance, quantiles) with the notes that state every rule applied.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpwitness.mechanisms.joint_quantiles import joint_quantiles
from dpwitness.mechanisms.quantiles import quantile_notes, quantile_release
from dpwitness.mechanisms.release import Release
from dpwitness.query.planning import Plan
from dpwitness.query.queries import Aggregate, Aggregates, Key, Query, Statistic
from dpwitness.session.composite import CompositeRelease, _at
from dpwitness.witness.sensitivity import library_backing


def compose(
    query: Query, plan: Plan, exact: Aggregates, streams: Sequence[np.random.SeedSequence | None], *, seed: int | None
) -> Release:
    """The release of ``query``: each part's noise added once, then keys and post-processing.

    :param query: the checked query (its parts, keys, bounds and statistic).
    :param plan: its plan: one mechanism per part, the cost, δ/ρ and the key-selection threshold.
    :param exact: the engine's exact aggregates, part name → number or {key: number}.
    :param streams: one seeded stream per part (:func:`dpwitness.session.streams.query_streams`), or
        None for each: the secure source.
    :param seed: the session's seed, recorded on the release (None: secure randomness).
    """
    if query.joint:
        return _joint(query, plan, exact, streams[0], seed=seed)
    keys = _release_keys(query, exact)
    released: list[Release] = []
    for part, mechanism, stream in zip(query.parts, plan.mechanisms, streams, strict=True):
        value = exact.get(part.aggregate.value, 0.0)
        generator = None if stream is None else np.random.Generator(np.random.PCG64(stream))
        # Every finite aggregate is released as it is: past 2^61 grid steps the sampler adds the
        # noise in Python integers (noise.add_noise_on_grid), so nothing is clipped or refused.
        if keys is None:
            release = mechanism.release(float(value), seed=generator)  # type: ignore[arg-type]
        else:
            assert isinstance(value, dict)
            vector = np.array([value.get(k, 0.0) for k in keys], dtype=np.float64)
            noisy = replace(mechanism, dimension=max(len(keys), 1)).release(vector if keys else np.zeros(1), seed=generator)
            noisy_values = np.atleast_1d(np.asarray(noisy.value, dtype=np.float64)).tolist()
            release = replace(noisy, value=dict(zip(keys, noisy_values, strict=False)))
            if part.aggregate is Aggregate.COUNT and plan.threshold is not None:
                assert isinstance(release.value, dict)
                keys = [k for k, v in release.value.items() if v >= plan.threshold]
                release = replace(release, value={k: release.value[k] for k in keys})
        label = f"{part.aggregate.value} part of {query.label}"
        released.append(replace(release, seed=seed, query=label, sensitivity_search=library_backing(query)))
    if keys is not None:
        released = [replace(r, value={k: _at(r.value, k) for k in keys}) for r in released]
    common: dict[str, Any] = {
        "query": query.label,
        "neighbours": query.relation_text,
        "epsilon": plan.cost,
        "delta": plan.delta,
        "notes": release_notes(query, plan),
        "seed": seed,
        "sensitivity_search": library_backing(query),
        "key_columns": _key_columns(query),
        "rho": plan.rho if math.isinf(plan.cost) else None,
    }
    if query.statistic in (Statistic.COUNT, Statistic.HISTOGRAM, Statistic.SUM):
        return replace(released[-1], **common, selection=plan.selection)
    assert query.bounds is not None
    if query.statistic is Statistic.QUANTILE:
        assert query.quantiles is not None and query.bins is not None
        common["notes"] = (*common["notes"], *quantile_notes(query.quantiles, query.bins, query.bounds))
        return quantile_release(
            released[0], quantiles=query.quantiles, bounds=query.bounds, bins=query.bins, keys=query.keys, common=common
        )
    value = _derive(query, released)
    main = released[-1]
    return CompositeRelease(
        value=value,
        sensitivity=main.sensitivity,
        scale=math.nan,
        randomness=main.randomness,
        seeded=main.seeded,
        parts=tuple(released),
        bounds=query.bounds,
        selection=plan.selection,
        **common,
    )


def _joint(query: Query, plan: Plan, exact: Aggregates, stream: np.random.SeedSequence | None, *, seed: int | None) -> Release:
    """JointExp over the engine's exact count per bin (no Laplace noise on them): every level in one
    draw, calibrated to the query's Δ (k rows per unit: k × one row's) and charged ``query.epsilon`` once."""
    assert query.quantiles is not None and query.bins is not None and query.bounds is not None
    cells = exact.get(Aggregate.COUNT.value, {})
    assert isinstance(cells, dict)
    generator = None if stream is None else np.random.Generator(np.random.PCG64(stream))
    release = joint_quantiles(
        [cells.get(j, 0) for j in range(query.bins)],
        query.quantiles,
        bounds=query.bounds,
        epsilon=query.epsilon,
        neighbours=query.relation,
        seed=generator,
        query=query.label,
        sensitivity=query.parts[0].sensitivity,
    )
    values = [float(v) for v in np.atleast_1d(np.asarray(release.value, dtype=np.float64))]
    value: Any = values[0] if len(values) == 1 else dict(zip(query.quantiles, values, strict=True))
    return replace(
        release,
        value=value,
        neighbours=query.relation_text,
        notes=(*release_notes(query, plan), *release.notes),
        seed=seed,
        key_columns=_key_columns(query),
        sensitivity_search=library_backing(query),
    )


def _key_columns(query: Query) -> tuple[str, ...]:
    """The names of a keyed release's key columns, in its keys' order."""
    if query.statistic is Statistic.QUANTILE:
        several = query.quantiles is not None and len(query.quantiles) > 1
        return (*query.by, "q") if several else query.by
    return query.group_columns


def _derive(query: Query, parts: list[Release]) -> float | dict[Key, float]:
    assert query.bounds is not None
    low, high = query.bounds
    centre, h = query.centre, query.half_range

    def one(values: list[float]) -> float:
        n = values.pop(0)
        if n < 1:  # nothing (or noise only): the centre, the least wrong guess
            return centre if query.statistic is Statistic.MEAN else 0.0
        if query.statistic is Statistic.MEAN:
            return min(high, max(low, centre + values[0] / n))
        return min(h * h, max(0.0, values[1] / n - (values[0] / n) ** 2))

    if isinstance(parts[-1].value, dict):
        return {k: one([_at(p.value, k) for p in parts]) for k in parts[-1].value}
    return one([float(p.value) for p in parts])  # type: ignore[arg-type]


def _release_keys(query: Query, exact: Aggregates) -> list[Key] | None:
    if not query.grouped:
        return None
    if query.declared:
        return list(query.cells)
    counts = exact.get(Aggregate.COUNT.value, {})
    assert isinstance(counts, dict)
    try:
        return sorted(counts)
    except TypeError:
        return sorted(counts, key=repr)


def release_notes(query: Query, plan: Plan) -> tuple[str, ...]:
    """The notes a release of ``query`` under ``plan`` states: the plan's choice, the filter, dropped
    nulls, clamping, contribution bounding and the other rules its Δ and noise rely on."""
    notes: list[str] = [plan.choice] if plan.choice else []
    if query.filtered == "value":
        notes.append(f"only rows where {query.where} are kept (a record may leave or enter the filter: Δ counts 0 or its value)")
    elif query.filtered == "position":
        notes.append(
            f"only rows where {query.where} are kept, positions in the order of {', '.join(query.order_by)}: "
            "adding a record shifts positions (one in, one out), so Δ is that of replace-one under either relation"
        )
    used = [c for c in (query.column, *query.by) if c is not None]
    if used:
        notes.append(f"rows with a null or NaN {' or '.join(used)} are dropped; counts are of the remaining rows")
    if query.bounds is not None:
        notes.append(
            f"values of {query.column} are clamped to [{query.bounds[0]:g}, {query.bounds[1]:g}] "
            "(the interval covers the noise, not the clamping bias)"
        )
    if query.privacy_unit is not None:
        bound = query.contribution
        how = (
            f"at most {bound.max_groups} key(s) and {bound.max_rows_per_group} row(s) per key"
            if query.grouped and query.max_groups is not None
            else f"at most {bound.max_rows} row(s)"
        )
        notes.append(f"each {query.privacy_unit} keeps {how}, chosen at random; Δ counts {bound.max_rows} row(s) per unit")
    shares = ", ".join(f"{p.aggregate.value} ε = {query.epsilon_of(p):g} (Δ = {p.sensitivity:g})" for p in query.parts)
    if query.statistic is Statistic.MEAN:
        notes.append(f"mean = (L+U)/2 + noisy centred sum / noisy count (n counts non-null values: not public); {shares}")
    elif query.statistic is Statistic.VARIANCE:
        notes.append(f"variance = noisy Σ(v−c)²/n − (noisy Σ(v−c)/n)², cut to [0, ((U−L)/2)²]; {shares}")
    if query.grouped and not query.joint:  # JointExp adds no noise to the bin counts (its own notes)
        coordinates = query.parts[-1].changed_coordinates
        vector = (
            f"one Gaussian vector over the keys, L2 Δ = {query.parts[-1].l2_sensitivity:.4g}"
            if plan.gaussian
            else f"one Laplace vector over the keys, L1 Δ = {query.parts[-1].sensitivity:g}"
        )
        notes.append(f"{vector}; a unit moves ≤ {coordinates} key(s)")
        if query.keys is not None:
            notes.append("keys are declared (public): every declared key is released, rows with other keys are dropped")
        elif not query.declared and plan.threshold_delta is not None:  # Gaussian thresholding
            selection = plan.selection
            assert selection is not None
            bound = query.contribution
            keys, largest = min(bound.max_groups, bound.max_rows), min(bound.max_rows_per_group, bound.max_rows)
            parts = (
                f"δ = {selection['delta_noise']:.3g} for the noise + {plan.threshold_delta:.3g} for the selection"
                if not plan.rho_only
                else f"ρ for the noise + δ = {plan.threshold_delta:.3g} for the selection"
            )
            notes.append(
                f"keys come from the data: only keys whose noisy count ≥ τ = {plan.threshold:.4g} are released "
                f"(Gaussian thresholding: τ = Δ∞ + 2γ + σ·Φ⁻¹(1 − δ_threshold/L0 + η) with Δ∞ = {largest:g}, L0 = {keys}, "
                f"σ = {selection['sigma']:.4g}; {parts})"
            )
        elif not query.declared:
            notes.append(
                f"keys come from the data: only keys whose noisy count ≥ {plan.threshold:.4g} are released "
                f"(partition selection, costs δ = {plan.delta:.3g})"
            )
        if not query.declared and plan.exposure is not None:
            notes.append(
                f"at most {plan.exposure:.3g} unique keys (max_rows·δ) are expected to be exposed, for the declared max_rows"
            )
    return tuple(notes)
