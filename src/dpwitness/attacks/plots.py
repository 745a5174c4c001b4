"""Pictures of the attacks (matplotlib, Agg backend; the ``plot`` extra): ROC curves, the two
output distributions, and the empirical log ratio of the outputs against ±ε."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dpwitness.common.errors import require

if TYPE_CHECKING:
    from dpwitness.attacks.membership import MembershipResult

FloatArray = npt.NDArray[np.float64]


def _pyplot() -> Any:
    matplotlib = require("matplotlib", "plot", "a figure (--plot)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def log_ratio_by_bin(
    a: FloatArray, b: FloatArray, bins: int = 60, minimum: int = 30
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Bin centres, the two histograms (as probabilities), and ln(P_a/P_b) where both bins hold ≥ ``minimum`` outputs."""
    edges = np.histogram_bin_edges(np.concatenate([a, b]), bins=bins)
    ca, _ = np.histogram(a, edges)
    cb, _ = np.histogram(b, edges)
    centres = (edges[:-1] + edges[1:]) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where((ca >= minimum) & (cb >= minimum), np.log(ca / len(a)) - np.log(cb / len(b)), np.nan)
    return centres, ca / len(a), cb / len(b), ratio


def _distributions(
    axes: Sequence[Any], a: FloatArray, b: FloatArray, epsilon: float, labels: tuple[str, str], title: str
) -> None:
    centres, pa, pb, ratio = log_ratio_by_bin(a, b)
    width = centres[1] - centres[0] if len(centres) > 1 else 1.0
    axes[0].bar(centres, pa, width=width, alpha=0.5, label=labels[0])
    axes[0].bar(centres, pb, width=width, alpha=0.5, label=labels[1])
    axes[0].set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    axes[1].plot(centres, ratio, "o-", markersize=2)
    for sign in (1, -1):
        axes[1].axhline(sign * epsilon, color="red", linestyle="--", linewidth=1)
    axes[1].set_ylabel("ln P(bin|d) / P(bin|d′)", fontsize=7)
    axes[1].set_xlabel("output", fontsize=7)


def plot_distributions(
    path: str | Path, a: FloatArray, b: FloatArray, *, epsilon: float, title: str, labels: tuple[str, str] = ("d", "d′")
) -> Path:
    """The two output distributions and their binned log ratio against ±ε."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    _distributions(axes, a, b, epsilon, labels, title)
    return _save(fig, plt, path)


def plot_panels(path: str | Path, panels: Sequence[tuple[str, FloatArray, FloatArray, float]]) -> Path:
    """One column per (title, outputs on d, outputs on d′, ε): distributions over log ratio."""
    plt = _pyplot()
    columns = max(1, len(panels))
    fig, axes = plt.subplots(2, columns, figsize=(3.2 * columns, 5.5), squeeze=False)
    for j, (title, a, b, epsilon) in enumerate(panels):
        _distributions(axes[:, j], a, b, epsilon, ("d", "d′"), title)
    return _save(fig, plt, path)


def plot_membership(path: str | Path, result: MembershipResult) -> Path:
    """ROC (log-log, with the ε-DP cap) and the released means with the target in and out."""
    from dpwitness.attacks.membership import tpr_bound

    plt = _pyplot()
    fig, (roc_axis, dist_axis) = plt.subplots(1, 2, figsize=(11, 4.5))
    fpr, tpr = result.roc
    grid = np.logspace(-5, 0, 200)
    roc_axis.plot(np.clip(fpr, 1e-5, 1), np.clip(tpr, 1e-5, 1), label=f"likelihood-ratio attack (AUC {result.auc:.3f})")
    roc_axis.plot(grid, tpr_bound(grid, result.epsilon), "r--", label=f"ε-DP cap, ε = {result.epsilon:g}")
    roc_axis.plot(grid, grid, ":", color="grey", label="chance")
    roc_axis.set_xscale("log")
    roc_axis.set_yscale("log")
    roc_axis.set_xlabel("false positive rate")
    roc_axis.set_ylabel("true positive rate")
    roc_axis.legend(fontsize=8)
    roc_axis.set_title("membership inference ROC", fontsize=10)
    edges = np.histogram_bin_edges(np.concatenate([result.releases_in, result.releases_out]), bins=60)
    dist_axis.hist(result.releases_out, edges, alpha=0.5, label="target out")
    dist_axis.hist(result.releases_in, edges, alpha=0.5, label="target in")
    dist_axis.set_title("released mean", fontsize=10)
    dist_axis.legend(fontsize=8)
    return _save(fig, plt, path)


def plot_bars(
    path: str | Path, labels: Sequence[str], values: Sequence[float], bounds: Sequence[float], *, title: str, ylabel: str
) -> Path:
    """Measured values beside their bounds (differencing success, identification rates…)."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(max(5.0, 1.1 * len(labels)), 4))
    x = np.arange(len(labels))
    axis.bar(x - 0.2, values, width=0.4, label="measured")
    axis.bar(x + 0.2, [b if math.isfinite(b) else 0.0 for b in bounds], width=0.4, label="DP bound")
    axis.set_xticks(x, labels, rotation=20, fontsize=8)
    axis.set_ylabel(ylabel)
    axis.set_title(title, fontsize=10)
    axis.legend(fontsize=8)
    return _save(fig, plt, path)


def _save(fig: Any, plt: Any, path: str | Path) -> Path:
    target = Path(path)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target
