"""``dpwitness demo | release | witness | explain``: the Laplace release machine."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dpwitness.attacks.tamper import TAMPERS
from dpwitness.budget import Accountant
from dpwitness.data import adult_column, adult_path, generated_ages
from dpwitness.errors import BudgetExceeded, ParameterError
from dpwitness.mechanisms import Laplace
from dpwitness.neighbours import (
    Neighbours,
    count_sensitivity,
    histogram_sensitivity,
    mean_sensitivity_public_n,
    sum_sensitivity,
)
from dpwitness.witness import witness

console = Console(highlight=False)


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr (printed literally: "[web]" is not markup), then exit."""
    Console(stderr=True, highlight=False).print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code)


@contextmanager
def user_errors(*also: type[Exception]) -> Iterator[None]:
    """Turn a bad parameter (or one of ``also``) into a one-line message and exit status 2: nothing released."""
    expected: tuple[type[Exception], ...] = (ParameterError, BudgetExceeded, FileNotFoundError, *also)
    try:
        yield
    except expected as error:
        fail(str(error))


def _print_json(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def demo() -> None:
    """Mean age of the Adult census extract at ε = 1, with its witness (generated data if absent)."""
    ages = adult_column("age")
    source = f"UCI Adult census extract ({adult_path()})"
    if ages is None:
        ages = generated_ages()
        source = "generated ages (../shared/data/adult.csv not found)"
    lower, upper, epsilon = 0.0, 100.0, 1.0
    n = len(ages)
    clipped_mean = float(ages.clip(lower, upper).mean())
    mechanism = Laplace(sensitivity=mean_sensitivity_public_n(lower, upper, n), epsilon=epsilon)
    release = mechanism.release(clipped_mean, query=f"mean(age) over {n:,} rows, bounds [0, 100]")
    report = witness(mechanism)
    low, high = release.interval
    console.print(f"[bold]dpwitness demo[/]: {source}")
    console.print(f"query        mean age, ages clamped to [{lower:g}, {upper:g}]")
    console.print(f"neighbours   replace one record; n = {n:,} is the table's public size, so Δ = (U − L)/n")
    console.print(f"sensitivity  Δ = {mechanism.sensitivity:.6g}")
    console.print(f"epsilon      ε = {epsilon:g}")
    console.print(f"[bold]release      {float(release):.4f}[/]")
    console.print(f"scale        b = Δ/ε = {mechanism.scale:.6g}")
    console.print(f"variance     2b² = {mechanism.variance:.6g} (std {mechanism.std:.4g})")
    console.print(f"95% interval {low:.4f} … {high:.4f}  (± b·ln 20 = ±{release.half_width:.4g})")
    console.print(f"randomness   {release.randomness}")
    colour = "green" if report.ok else "red"
    console.print(f"witness      [{colour}]{report.verdict}[/]")
    console.print(
        "If n were private (add/remove neighbours), release a noisy sum and a noisy count instead: "
        "`dpwitness query FILE --mean age:0:100`."
    )


def release(
    value: Annotated[float, typer.Option(help="The exact query answer f(D).")],
    sensitivity: Annotated[float, typer.Option(help="Δ: the most one record can move f (L1).")],
    epsilon: Annotated[float, typer.Option(help="ε for each release.")],
    seed: Annotated[int | None, typer.Option(help="Reproducible output (NOT for production).")] = None,
    samples: Annotated[int, typer.Option(help="Number of independent releases (each costs ε).")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Release VALUE + Lap(Δ/ε), exactly, with its scale, variance, interval and witness."""
    with user_errors():
        mechanism = Laplace(sensitivity=sensitivity, epsilon=epsilon)
        if samples < 1:
            raise ParameterError("samples", "a whole number ≥ 1", samples)
        accountant = Accountant()
        releases = []
        for i in range(samples):
            # Each resample steps the seed (seed, seed+1, …) so every release is reproducible alone.
            accountant.spend(mechanism.privacy_loss(mechanism.sensitivity), f"release {i + 1}")
            releases.append(mechanism.release(value, seed=None if seed is None else seed + i))
    result = releases[0]
    report = witness(mechanism)
    half = mechanism.interval(0.05)
    values = [float(r) for r in releases]
    payload = {
        "release": values[0] if samples == 1 else values,
        "scale": mechanism.scale,
        "epsilon": mechanism.epsilon,
        "epsilon_spent": accountant.spent,
        "sensitivity": mechanism.sensitivity,
        "variance": mechanism.variance,
        "interval": {"alpha": 0.05, "half_width": half, "ranges": [[float(v) - half, float(v) + half] for v in values]},
        "seeded": result.seeded,
        "randomness": result.randomness,
        "notice": result.notice,
        "witness": report.to_dict(),
    }
    if as_json:
        _print_json(payload)
        return
    table = Table(title="Laplace release", show_header=False)
    shown = ", ".join(f"{v:.6g}" for v in values[:10]) + (" …" if samples > 10 else "")
    for key, text in [
        ("release", shown),
        ("scale b = Δ/ε", f"{mechanism.scale:.6g}"),
        ("variance 2b²", f"{mechanism.variance:.6g}"),
        ("95% interval", f"± {half:.6g} around each release"),
        ("ε spent", f"{accountant.spent:g} ({samples} × {mechanism.epsilon:g}, basic composition)"),
        ("randomness", result.randomness),
        ("witness", report.verdict),
    ]:
        table.add_row(key, text)
    console.print(table)
    if result.notice:
        console.print(f"[yellow]note:[/] {result.notice}")


def witness_command(
    sensitivity: Annotated[float, typer.Option(help="Δ claimed.")],
    epsilon: Annotated[float, typer.Option(help="ε claimed.")],
    tamper: Annotated[str | None, typer.Option(help="Red-team move to apply: 'invert' (scale ε/Δ).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Recompute the worst log density ratio and the variance; exit 1 if the claim is violated."""
    with user_errors():
        if tamper is not None and tamper not in TAMPERS:
            raise ParameterError("tamper", f"one of {sorted(TAMPERS)}", tamper)
        build: Callable[..., Laplace] = TAMPERS[tamper] if tamper else Laplace
        mechanism = build(sensitivity=sensitivity, epsilon=epsilon)
    report = witness(mechanism)
    if as_json:
        _print_json({**report.to_dict(), "tamper": tamper})
    else:
        colour = "green" if report.ok else "red"
        console.print(f"[{colour}]{report.verdict}[/]")
        console.print(
            f"worst log ratio (supremum over outputs and shifts ≤ Δ) {report.worst_log_ratio:.9g}; "
            f"largest at spot-checked outputs {report.observed_log_ratio:.9g}; grid γ = {report.granularity:.3g}"
        )
    raise typer.Exit(0 if report.ok else 1)


def explain() -> None:
    """The worked example and the edge cases, computed live from the mechanism."""
    n, lower, upper, epsilon = 1000, 0.0, 100.0, 1.0
    delta = mean_sensitivity_public_n(lower, upper, n)
    mech = Laplace(sensitivity=delta, epsilon=epsilon)
    wrong = Laplace(sensitivity=upper - lower, epsilon=epsilon)
    console.print("[bold]Worked example[/]: mean of n = 1000 ages in [0, 100] at ε = 1 (n public, replace-one)")
    console.print(f"  Δ = (U − L)/n = {delta:g};  b = Δ/ε = {mech.scale:g};  std = √2·b = {mech.std:.3f}")
    console.print(f"  95% of the noise lies within ±b·ln 20 = ±{mech.interval(0.05):.2f}")
    console.print(f"  witness: {witness(mech).verdict}")
    console.print("[bold]The two traps[/]")
    console.print(
        f"  forgetting to divide by n: Δ = {wrong.sensitivity:g}, b = {wrong.scale:g}: "
        f"{wrong.scale / mech.scale:.0f}× the noise (std {wrong.std:.1f}), not 10×"
    )
    console.print(
        "  using (U − L)/n when n is private (add/remove): n itself leaks; release a noisy sum "
        "and a noisy count (ε split between them) and divide"
    )
    console.print("[bold]Δ under each neighbour relation[/] (ages in [0, 100])")
    rows = [
        ("count", count_sensitivity(Neighbours.ADD_REMOVE), count_sensitivity(Neighbours.REPLACE_ONE)),
        ("sum", sum_sensitivity(Neighbours.ADD_REMOVE, lower, upper), sum_sensitivity(Neighbours.REPLACE_ONE, lower, upper)),
        ("histogram (L1)", histogram_sensitivity(Neighbours.ADD_REMOVE), histogram_sensitivity(Neighbours.REPLACE_ONE)),
        ("mean, n public", math.nan, delta),
    ]
    table = Table("query", "add/remove one", "replace one")
    for name, add_remove, replace in rows:
        add_remove_text = "n is private: noisy sum / noisy count" if math.isnan(add_remove) else f"{add_remove:g}"
        table.add_row(name, add_remove_text, f"{replace:g}")
    console.print(table)
    unit = Laplace(sensitivity=1.0, epsilon=1.0)
    console.print("[bold]Edge cases[/] (Δ = 1, ε = 1)")
    console.print(f"  d = 0: the two output densities coincide, loss {unit.privacy_loss(0):g}")
    console.print(
        f"  negative shift: only |d| matters; log ratio at z = −3 for f = 0 vs 1 is "
        f"{unit.log_density_ratio(-3, 0, 1):+.3f}, for f = 1 vs 0 {unit.log_density_ratio(-3, 1, 0):+.3f}"
    )
    console.print(
        f"  far tails: at z = 10^6 the log ratio is still {unit.log_density_ratio(1e6, 1, 0):.3f} = ε "
        "(Laplace tails are parallel on a log scale; Gaussian ones are not)"
    )
    for eps in (1e-3, 1e3):
        m = Laplace(sensitivity=1.0, epsilon=eps)
        console.print(f"  ε = {eps:g}: b = {m.scale:g}, 95% within ±{m.interval():.4g}")
    console.print("  ε → 0: b = Δ/ε → ∞, unbounded noise, no information; ε → ∞: no noise, no privacy")
    console.print(f"  Δ = 0: {Laplace(sensitivity=0, epsilon=1).guarantee}")
    console.print(
        "ε bounds a log-likelihood ratio (outputs at most e^ε times more likely under one neighbour); "
        "it is not a percentage, and DP is not anonymisation: it limits what any output reveals about one record."
    )


def register(app: typer.Typer) -> None:
    app.command()(demo)
    app.command()(release)
    app.command("witness")(witness_command)
    app.command()(explain)
