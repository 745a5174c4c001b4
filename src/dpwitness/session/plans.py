"""A session's plan for one query: which mechanism releases it (Laplace, Gaussian at (ε, δ)
or ρ), the undeclared-key selection it needs, and the preview of its accuracy. Pure: the
account's total comes in as a value; nothing is read or spent here."""

from __future__ import annotations

from collections.abc import Sequence

from dpwitness.common.errors import ParameterError
from dpwitness.mechanisms.additive import Gaussian, Laplace
from dpwitness.mechanisms.joint_quantiles import utility_loss
from dpwitness.mechanisms.quantiles import accuracy_note, rank_error
from dpwitness.noise import EPSILON_RANGE, GAUSS_DELTA_RANGE
from dpwitness.privacy.accounting import (
    SELECTION_DELTA_SHARE,
    gaussian_selection_split,
    gaussian_threshold,
    laplace_half_width,
)
from dpwitness.privacy.budget import Budget
from dpwitness.query.planning import PARTITION_DELTA_MARGIN, Plan, Preview, max_delta
from dpwitness.query.queries import Aggregate, Query, Statistic
from dpwitness.session.composing import release_notes


def gaussian_for(
    query: Query, laplace: tuple[Laplace, ...], wanted: str, total: Budget, rho: float | None = None
) -> tuple[tuple[Gaussian, ...] | None, str]:
    """Gaussian mechanisms for ``query`` if ``wanted`` (or if "auto" finds them better than its
    ``laplace`` mechanisms), and the note; with ``rho``, calibrated to ρ-zCDP (each part its share
    of ρ). The account's ``total`` must hold a δ or be a ρ total for a Gaussian release."""
    if wanted == "laplace":
        return None, ""
    undeclared = query.grouped and not query.declared  # Gaussian thresholding: a noisy count selects the keys
    additive = query.statistic in (Statistic.COUNT, Statistic.SUM, Statistic.HISTOGRAM) and (len(query.parts) == 1 or undeclared)
    eligible = additive or (query.statistic is Statistic.MEAN and not undeclared)  # a mean: its count and sum Gaussian
    if not eligible or (not additive and wanted == "auto" and rho is None):  # auto: a mean's error is not one part's
        if rho is not None:
            expected = "only for a count, sum, histogram or mean over declared keys (a ρ release is Gaussian)"
            raise ParameterError("rho", expected, rho)
        if wanted == "gaussian":
            expected = "laplace for this query (gaussian: a count, sum or histogram, or a mean over declared keys)"
            raise ParameterError("mechanism", expected, wanted)
        return None, "mechanism: laplace (auto: the only one for this query; a mean is Gaussian when asked)"
    if rho is not None:
        gaussians = tuple(
            Gaussian(sensitivity=p.l2_sensitivity, rho=rho * p.share, changed_coordinates=p.changed_coordinates)
            for p in query.parts
        )
        main = query.parts[-1]
        selection = f"; keys by Gaussian thresholding at δ = {query.delta:.3g}" if undeclared else ""
        return gaussians, (
            f"mechanism: gaussian at ρ = {rho:g} (zCDP), σ = {gaussians[-1].sigma:.4g}, L2 Δ = {main.l2_sensitivity:.4g}"
            f"{selection}"
        )
    if total.delta <= 0 and not total.is_zcdp:
        if wanted == "gaussian":
            raise ParameterError(
                "mechanism",
                "laplace or auto on this account: its total has no δ and no ρ (a Gaussian release needs "
                "delta_budget=… or a ρ total)",
                wanted,
            )
        return None, "mechanism: laplace (auto: the account has no δ for a Gaussian release)"
    # Over undeclared keys the noise gets δ_noise of the query's δ (the rest pays for the
    # selection); over declared keys all of δ. Either way shared evenly by the noisy parts (a
    # mean's count and centred sum: δ/2 each, so the release's δ adds up to the query's).
    noise_delta = (gaussian_selection_split(query.delta)[0] if undeclared else query.delta) / len(query.parts)
    if noise_delta < GAUSS_DELTA_RANGE[0]:
        if wanted == "auto":
            return None, "mechanism: laplace (auto: δ is too small to split between Gaussian noise and the key selection)"
        least = GAUSS_DELTA_RANGE[0] * len(query.parts) / (1.0 - SELECTION_DELTA_SHARE)
        expected = (
            f"at least {least:.3g} for a Gaussian release over undeclared keys (half of δ pays for the key selection, "
            f"the rest is shared by its {len(query.parts)} noisy part(s))"
        )
        raise ParameterError("delta", expected, query.delta)
    # L2 Δ per part, derived with its L1 Δ (Query.parts): k·√g for a unit in ≤ g keys, not g·k
    gaussians = tuple(
        Gaussian(
            sensitivity=p.l2_sensitivity,
            epsilon=query.epsilon_of(p),
            delta=noise_delta,
            changed_coordinates=p.changed_coordinates,
        )
        for p in query.parts
    )
    laplace_variance, gaussian_variance = laplace[-1].variance, gaussians[-1].variance
    if wanted == "auto" and laplace_variance <= gaussian_variance:
        why = f"variance {laplace_variance:.4g} ≤ Gaussian {gaussian_variance:.4g} at δ = {query.delta:.3g}"
        return None, f"mechanism: laplace (auto: {why})"
    why = f" (auto: variance {gaussian_variance:.4g} < Laplace {laplace_variance:.4g})" if wanted == "auto" else ""
    main = query.parts[-1]
    split = ""
    if undeclared:
        noise, threshold = gaussian_selection_split(query.delta)
        split = f"; δ = {noise:.3g} for the noise + {threshold:.3g} for the key selection (Gaussian thresholding)"
    return gaussians, (
        f"mechanism: gaussian at (ε, δ) = ({query.epsilon:g}, {query.delta:.3g}), σ = {gaussians[-1].sigma:.4g}, "
        f"L2 Δ = {main.l2_sensitivity:.4g} (L1 Δ = {main.sensitivity:g}){split}{why}"
    )


def gaussian_selection(query: Query, gaussians: tuple[Gaussian, ...], rho: float | None) -> tuple[float, float]:
    """(τ, δ_threshold) of a Gaussian release of ``query`` over undeclared keys: the threshold on
    the noisy count (its sampler's σ, grid step and table distance) for the query's unit, by
    :func:`dpwitness.privacy.accounting.gaussian_threshold`. ``gaussians`` are the query's calibrated
    parts, its count first. With ``rho`` the noise is ρ-zCDP and all of the query's δ is the
    selection's; at (ε, δ) half of it (:func:`gaussian_selection_split`)."""
    count = gaussians[0]
    assert query.parts[0].aggregate is Aggregate.COUNT and count.noise is not None
    selection = query.delta if rho is not None else gaussian_selection_split(query.delta)[1]
    bound = query.contribution
    tau, _ = gaussian_threshold(
        sigma=count.noise.sigma,
        step=count.noise.granularity,
        tv=count.noise.tv_distance(),
        max_keys=min(bound.max_groups, bound.max_rows),
        max_count=min(bound.max_rows_per_group, bound.max_rows),
        delta=selection * PARTITION_DELTA_MARGIN,
    )
    return tau, selection


def selection_exposure(query: Query, max_rows: int | None, total: Budget) -> float | None:
    """A release of ``query`` over undeclared keys costs δ: it needs a declared ``max_rows``, a δ
    of at most 1/(10·max_rows) and a δ budget in the account's ``total``. Returns max_rows·δ, the bound on the expected
    number of unique keys it exposes (None for declared keys)."""
    if not query.grouped or query.declared:
        return None
    if max_rows is None:
        raise ParameterError(
            "max_rows",
            "a declared bound on the table's rows (privacy units with privacy_unit) for a release over "
            "undeclared keys, whose δ is sized to it; or declare the keys",
            None,
        )
    cap = max_delta(max_rows)
    if query.delta > cap * (1 + 1e-12):
        raise ParameterError("delta", f"at most 1/(10·max_rows) = {cap:.3g} for max_rows = {max_rows}", query.delta)
    if total.delta <= 0:
        raise ParameterError(
            "delta_budget", "a total δ > 0 (delta_budget=…) for a release over undeclared keys, which costs δ", 0.0
        )
    return max_rows * query.delta


def check_part_epsilons(query: Query) -> None:
    """Each noisy part of ``query``: its share of ε within the range its noise is calibrated for (a mean's two
    parts get half each by default): the statistic's ε is refused, saying why, before any spend."""
    low, high = EPSILON_RANGE
    shares = [query.epsilon_of(p) for p in query.parts]
    if len(shares) > 1 and not all(low <= e <= high for e in shares):
        need = max(low / p.share for p in query.parts)
        top = min(high / p.share for p in query.parts)
        split = ", ".join(f"{p.aggregate.value} {p.share:g}" for p in query.parts)
        raise ParameterError(
            "epsilon",
            f"in [{need:g}, {top:g}] for this {query.statistic.value}: its {len(shares)} noisy parts share ε ({split}) and "
            f"each part's noise is calibrated for ε in [{low:g}, {high:g}] (docs/statistics.md)",
            query.epsilon,
        )


def preview_of(query: Query, plan: Plan, alpha: float, session_notes: Sequence[str] = ()) -> Preview:
    """The scale and interval ``plan`` gives ``query`` at ``alpha`` (``session_notes``: what every
    release of the session says, such as the schema used), stated before any spend."""
    parts = tuple(
        {
            "aggregate": p.aggregate.value,
            "epsilon": query.epsilon_of(p),
            "sensitivity": p.sensitivity,
            "scale": p.sensitivity / query.epsilon_of(p),
            "half_width": laplace_half_width(p.sensitivity / query.epsilon_of(p), alpha),
        }
        for p in query.parts
    )
    main = query.parts[-1]
    scale = main.sensitivity / query.epsilon_of(main)
    sensitivity = main.sensitivity
    notes = [*release_notes(query, plan), *session_notes]
    half_width = laplace_half_width(scale, alpha)
    interval: tuple[float, float] | None = (-half_width, half_width)
    if query.statistic in (Statistic.MEAN, Statistic.VARIANCE):
        interval = None
        notes.append("the interval depends on the private n: ≈ ±(w_sum + |mean − centre|·w_count)/n, see parts")
    if query.joint:  # JointExp: a bound on the sum of the levels' rank errors, stated before the spend
        assert query.bounds is not None and query.bins is not None and query.quantiles is not None
        rank = utility_loss(
            sensitivity=main.sensitivity, epsilon=query.epsilon, bins=query.bins, levels=len(query.quantiles), alpha=alpha
        )
        interval, scale = None, 2.0 * main.sensitivity / query.epsilon
        width = (query.bounds[1] - query.bounds[0]) / query.bins
        kept = {k: v for k, v in parts[0].items() if k != "half_width"}  # no value interval: a rank bound
        parts = ({**kept, "scale": scale, "rank_error": rank, "bin_width": width},)
        notes.append(
            f"JointExp: all {len(query.quantiles)} levels in one draw over {query.bins} bins of width {width:.4g}, "
            f"ε charged once; with probability ≥ {1 - alpha:g} the levels' rank errors sum to ≤ {rank:.4g} rows "
            "more than the best grid tuple's"
        )
    elif query.statistic is Statistic.QUANTILE:  # the accuracy is a rank error, stated before the spend
        assert query.bounds is not None and query.bins is not None and plan.mechanisms[0].noise is not None
        rank = rank_error(plan.mechanisms[0].noise.scale, query.bins, alpha)
        interval = None
        parts = ({**parts[0], "rank_error": rank, "bin_width": (query.bounds[1] - query.bounds[0]) / query.bins},)
        notes.append(accuracy_note(rank=rank, bounds=query.bounds, bins=query.bins, alpha=alpha))
    if plan.gaussian:  # σ and the normal interval, not Laplace's b
        gaussians = [m for m in plan._all if isinstance(m, Gaussian)]
        parts = tuple(
            {
                **{k: v for k, v in part.items() if k != "epsilon" or m.rho is None},  # a ρ part has no ε
                "mechanism": "gaussian",
                "sensitivity": m.sensitivity,
                "scale": m.sigma,
                "half_width": m.interval(alpha),
                **({"rho": m.rho} if m.rho is not None else {}),
            }
            for part, m in zip(parts, gaussians, strict=True)
        )
        scale, sensitivity = gaussians[-1].sigma, gaussians[-1].sensitivity
        interval = (-gaussians[-1].interval(alpha), gaussians[-1].interval(alpha))
    return Preview(query.label, plan.cost, sensitivity, scale, interval, alpha, parts, plan.threshold, plan.delta, tuple(notes))


__all__ = ["check_part_epsilons", "gaussian_for", "gaussian_selection", "preview_of", "selection_exposure"]
