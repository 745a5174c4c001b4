"""``dpwitness audit`` and ``dpwitness attack differencing | membership | floating-point | tamper``."""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dpwitness.cli.core import fail, user_errors
from dpwitness.common.data import adult_column, adult_missing, generated_ages
from dpwitness.common.encoding import dumps
from dpwitness.common.errors import ExitCode, ParameterError, import_failed, require
from dpwitness.common.validation import check_count

console = Console(highlight=False, emoji=False)
attack_app = typer.Typer(
    help="The red team: attacks that show what DP bounds, and the mistakes the witness catches.", no_args_is_help=True
)

JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]


def _plot_needs_matplotlib(path: Path | None) -> Path | None:
    """Check for matplotlib while the options are parsed: before any run, not after."""
    if path is not None:
        require("matplotlib", "plot", "a figure (--plot)")
    return path


PlotOption = Annotated[
    Path | None,
    typer.Option("--plot", help="Write a PNG figure to this path (needs matplotlib).", callback=_plot_needs_matplotlib),
]
SeedOption = Annotated[int | None, typer.Option(help="Reproducible run (seeded randomness: NOT for production releases).")]


@contextmanager
def _user_errors() -> Iterator[None]:
    """A bad parameter or a misbehaving mechanism: one line on stderr, exit status 2."""
    from dpwitness.witness.audit import MechanismError

    with user_errors(MechanismError):
        yield


def _print_json(payload: Any) -> None:
    sys.stdout.write(dumps(payload, indent=2) + "\n")


def _plot_done(path: Path | None) -> None:
    if path is not None:
        Console(stderr=True, highlight=False).print(f"plot written to {path}")


def load_function(target: str) -> Callable[..., Any]:
    """``package.module:function`` or ``path/to/file.py:function`` → the callable."""
    module_name, sep, function_name = target.rpartition(":")
    if not sep or not module_name or not function_name:
        raise ParameterError("MECHANISM", "MODULE:FUNCTION or path/to/file.py:FUNCTION", target)
    if module_name.endswith(".py") or "/" in module_name:
        path = Path(module_name)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ParameterError("MECHANISM", "a loadable Python file", module_name)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:  # the user's module failed to import: bad input, not our bug
            raise import_failed("MECHANISM", target, error) from None
    else:
        if str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:  # the module exists but imports something missing
                raise import_failed("MECHANISM", target, error) from None
            raise ParameterError(
                "MECHANISM", "an importable module (run from its folder, or give path/to/file.py)", f"{module_name} ({error})"
            ) from None
        except Exception as error:
            raise import_failed("MECHANISM", target, error) from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ParameterError("MECHANISM", f"the name of a function in {module_name}", function_name)
    return function  # type: ignore[no-any-return]


def _parse_json(option: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ParameterError(option, "JSON (a number, a list, an object…)", text) from None


# --- audit -------------------------------------------------------------------------------------


def audit_command(
    mechanism: Annotated[str, typer.Argument(help="MODULE:FUNCTION (or file.py:FUNCTION) taking (data, rng[, size]).")],
    d: Annotated[str, typer.Option("--d", help="The first input, as JSON.")],
    epsilon: Annotated[float, typer.Option(help="The ε the mechanism claims.")],
    d_prime: Annotated[
        str | None, typer.Option("--d-prime", help="Its neighbour, as JSON (omit to search the standard neighbours of --d).")
    ] = None,
    delta: Annotated[float, typer.Option(help="The δ it claims.")] = 0.0,
    samples: Annotated[int | None, typer.Option(help="Runs per input (default: adaptive).")] = None,
    confidence: Annotated[float, typer.Option(help="Confidence of the lower bound.")] = 0.95,
    seed: SeedOption = None,
    float_test: Annotated[
        bool, typer.Option("--float-test", help="Also judge exact floating-point outputs (porous supports).")
    ] = False,
    max_seconds: Annotated[float, typer.Option(help="Time budget of an adaptive audit.")] = 60.0,
    relation: Annotated[str, typer.Option(help="Neighbour search: answers, add-remove or replace-one.")] = "answers",
    tight: Annotated[
        bool,
        typer.Option("--tight", help="After the verdict, keep sampling until --max-seconds to certify the largest ε_lb."),
    ] = False,
    as_json: JsonOption = False,
    plot: PlotOption = None,
) -> None:
    """Audit a Python function as a black box; exit 1 if it violates its claimed ε, 3 if inconclusive."""
    from dpwitness.witness.audit import Sampler, audit

    with _user_errors():
        function = load_function(mechanism)
        first = _parse_json("--d", d)
        second = None if d_prime is None else _parse_json("--d-prime", d_prime)
        result = audit(
            function,
            first,
            second,
            epsilon=epsilon,
            delta=delta,
            samples=samples,
            confidence=confidence,
            seed=seed,
            float_test=float_test,
            max_seconds=max_seconds,
            relation=relation,
            progress=None if not as_json else False,
            tight=tight,
        )
        if plot is not None:
            from dpwitness.attacks.plots import plot_distributions

            shown, shown_prime, label = first, second, "first output coordinate"
            if second is None:  # neighbour search: draw the worst pair it found
                from dpwitness.witness.neighbour_search import neighbour_pairs

                worst = (result.pair or "").split(": d = ", 1)[0]
                found = {name: (a, b) for name, a, b in neighbour_pairs(first, relation=relation)}
                shown, shown_prime = found[worst]
                label = f"worst pair ({worst}), first output coordinate"
            sampler = Sampler(function, deadline=math.inf)
            rng = np.random.default_rng(seed)
            a = sampler.draw(shown, rng, 50_000, "d")[:, 0]
            b = sampler.draw(shown_prime, rng, 50_000, "d_prime")[:, 0]
            plot_distributions(plot, a, b, epsilon=epsilon, title=f"{mechanism}: {label}")
    if as_json:
        _print_json(result.to_dict())
    else:
        colour = {"ok": "green", "violated": "red", "inconclusive": "yellow"}[result.verdict]
        console.print(f"[{colour}]{escape(str(result))}[/]")  # the pair quotes the user's input: never markup
        console.print(f"[dim]model: {result.model}[/]")
        if result.power:
            console.print(f"[dim]{escape(result.power_statement())}[/]")
        for line in result.pairs_tried:
            console.print(f"  pair {escape(line)}")
    _plot_done(plot)
    raise typer.Exit({"ok": 0, "violated": 1, "inconclusive": 3}[result.verdict])


# --- attacks ------------------------------------------------------------------------------------


def _column(name: str) -> tuple[np.ndarray[Any, np.dtype[np.float64]], str]:
    values = adult_column(name)
    if values is not None:
        return values, f"UCI Adult, column {name!r}"
    if name != "age":
        raise FileNotFoundError(f"{adult_missing()}, and generated data has only 'age' (asked for {name!r})")
    return generated_ages(), f"generated ages ({adult_missing()})"


def _verdict(exceeds: bool) -> str:
    """The comparison of a rate's interval with its DP cap, coloured."""
    from dpwitness.attacks.rates import CONSISTENT, EXCEEDS

    return f"[red]{EXCEEDS}[/]" if exceeds else f"[green]{CONSISTENT}[/]"


def _ladder(top: int) -> list[int]:
    steps, r = [], 1
    while r < top:
        steps.append(r)
        r = r * 10 if str(r).startswith("1") else r * 2  # 1, 10, 20, 200…: readable, roughly ×3
    return [*steps, top]


@attack_app.command("differencing")
def differencing_command(
    column: Annotated[str | None, typer.Option(help="Numeric column (local default: age).")] = None,
    rows: Annotated[int, typer.Option(help="Use the first ROWS rows of the Adult extract.")] = 1000,
    target: Annotated[int, typer.Option(help="Row to recover (0-based): Q_{t+1} − Q_t.")] = 4,
    lower: Annotated[float, typer.Option(help="Clamping bound L.")] = 0.0,
    upper: Annotated[float, typer.Option(help="Clamping bound U.")] = 100.0,
    epsilon: Annotated[float, typer.Option(help="ε per answered query.")] = 1.0,
    repeats: Annotated[int, typer.Option(help="Most repetitions of the query pair (a ladder up to it is shown).")] = 10,
    trials: Annotated[int, typer.Option(help="Monte-Carlo repetitions behind each success probability.")] = 20_000,
    seed: SeedOption = None,
    server: Annotated[str | None, typer.Option(help="Attack a running dpwitness service at this URL instead.")] = None,
    token: Annotated[str | None, typer.Option(help="The service token (with --server).")] = None,
    table: Annotated[str | None, typer.Option(help="The service table (with --server).")] = None,
    as_json: JsonOption = False,
    plot: PlotOption = None,
) -> None:
    """Partial sums reveal one row exactly; DP answers cap the attacker at e^ε/(1 + e^ε)."""
    if server is not None:
        _differencing_server(server, token, table, column, epsilon, repeats, as_json)
        return
    from dpwitness.attacks.differencing import differencing_attack

    with _user_errors():
        values, source = _column(column or "age")
        check_count("rows", rows)
        values = values[:rows]
        exact = differencing_attack(values, target=target, bounds=(lower, upper), seed=seed)
        noisy = [
            differencing_attack(
                values, target=target, bounds=(lower, upper), epsilon=epsilon, repeats=r, seed=seed, trials=trials
            )
            for r in _ladder(repeats)
        ]
    if as_json:
        _print_json(
            {
                "source": source,
                "rows": len(values),
                "target": target,
                "exact": exact.to_dict(),
                "dp": [n.to_dict() for n in noisy],
            }
        )
    else:
        console.print(
            f"[bold]differencing attack[/] on {source}: rows 0…{len(values) - 1}, target row {target}, "
            f"values clamped to [{lower:g}, {upper:g}]"
        )
        console.print(f"row {target} holds {exact.true_value:g}; the attacker decides between it and {exact.alternative:g}")
        grid = Table(
            "answers",
            "repeats",
            "ε spent",
            "target's loss",
            "estimate",
            "recovered",
            "success [95% interval]",
            "bound e^ε/(1+e^ε)",
            "verdict",
        )
        grid.add_row("exact", "1", "∞ (no noise)", "∞", f"{exact.estimate:g}", "yes", "1.000", "1.000", "no DP")
        for n in noisy:
            grid.add_row(
                f"DP, ε = {epsilon:g} each",
                str(n.repeats),
                f"{n.epsilon_spent:g}",
                f"{n.target_loss:.3g}",
                f"{n.estimate:.2f}",
                "yes" if n.recovered else "no",
                f"{n.success_probability:.3f} [{n.success_interval[0]:.3f}, {n.success_interval[1]:.3f}]",
                f"{n.bound:.3f}",
                _verdict(n.success_interval[0] > n.bound),
            )
        console.print(grid)
        console.print(
            f"[dim]Success over {trials:,} simulated attacks each, Clopper–Pearson 95% two-sided; "
            "a rate is flagged only when its whole interval lies above the bound.[/]"
        )
    if plot is not None:
        from dpwitness.attacks.plots import plot_bars

        labels = ["exact"] + [f"DP ×{n.repeats}" for n in noisy]
        plot_bars(
            plot,
            labels,
            [1.0] + [n.success_probability for n in noisy],
            [1.0] + [n.bound for n in noisy],
            title="differencing attack: success vs the DP bound",
            ylabel="P(target recovered)",
        )
        _plot_done(plot)


def _differencing_server(
    server: str, token: str | None, table: str | None, column: str | None, epsilon: float, repeats: int, as_json: bool
) -> None:
    try:
        from dpwitness.serve.attack import differencing_against_server
    except ImportError as error:
        missing = f"attacking a server needs the web extra ({error.name} is missing): pip install 'dpwitness[web]'"
        fail(missing, ExitCode.MISSING_PART)
    if not token:
        fail("--server needs --token")
    try:
        payload = differencing_against_server(
            url=server, token=token, table=table, column=column, epsilon=epsilon, repeats=repeats
        )
    except Exception as error:  # the service's own error types: report, don't trace
        fail(f"the attack on {server} failed: {error}")
    if as_json:
        _print_json(payload)
        return
    grid = Table("", "", title=f"differencing attack against {server}", show_header=False)
    for key, value in payload.items():
        grid.add_row(
            str(key),
            dumps(value) if isinstance(value, (dict, list)) else str(value),
        )
    console.print(grid)


@attack_app.command("membership")
def membership_command(
    column: Annotated[str, typer.Option(help="Numeric column whose mean is released.")] = "age",
    target_row: Annotated[int, typer.Option(help="The target: this row's person (0-based).")] = 0,
    lower: Annotated[float, typer.Option(help="Clamping bound L.")] = 0.0,
    upper: Annotated[float, typer.Option(help="Clamping bound U.")] = 100.0,
    epsilon: Annotated[float, typer.Option(help="ε of the release.")] = 1.0,
    trials: Annotated[int, typer.Option(help="Releases with the target in, and as many with it out.")] = 20_000,
    seed: SeedOption = None,
    as_json: JsonOption = False,
    plot: PlotOption = None,
) -> None:
    """Was this person in the data? The likelihood-ratio attack against a DP mean, next to the ε-DP cap."""
    from dpwitness.attacks.membership import LEVELS, REPORT_CONFIDENCE, membership_attack, tpr_bound

    with _user_errors():
        values, source = _column(column)
        if not 0 <= target_row < len(values):
            raise ParameterError("target-row", f"a row index in [0, {len(values) - 1}]", target_row)
        population = np.delete(values, target_row)
        result = membership_attack(
            population, target_value=float(values[target_row]), bounds=(lower, upper), epsilon=epsilon, trials=trials, seed=seed
        )
    if as_json:
        _print_json({"source": source, **result.to_dict()})
    else:
        console.print(
            f"[bold]membership inference[/] on {source}: mean of {column} over {result.population + 1:,} people, "
            f"target row {target_row} "
            f"({column} = {result.target_value:g}), ε = {epsilon:g}, {trials:,} releases each way"
        )
        own = result.target_loss
        grid = Table(
            "measure",
            "attack [interval]",
            "threshold's FPR (upper end)",
            "ε-DP cap (at that FPR)",
            "verdict",
            f"cap for this target (loss {own:.3g})",
        )
        grid.add_row("AUC", f"{result.auc:.4f}", "", "", "", "")
        for level in LEVELS:
            check = result.tpr_check(level, confidence=REPORT_CONFIDENCE)
            grid.add_row(
                f"TPR at FPR = {level:g}",
                check.tpr.interval_text(),
                f"{check.fpr:.4f} ({check.fpr_upper:.4f})",
                f"{check.cap_at_level:.4f} ({check.tpr.cap:.4f})",
                _verdict(check.tpr.exceeds),
                f"{float(tpr_bound(level, own)):.4f}",
            )
        low, high = result.advantage_interval(REPORT_CONFIDENCE)
        grid.add_row(
            "advantage TPR − FPR",
            f"{result.advantage:.4f} [{low:.4f}, {high:.4f}]",
            "",
            f"{result.bound:.4f} = tanh(ε/2)",
            _verdict(low > result.bound),
            f"{math.tanh(own / 2):.4f}",
        )
        grid.add_row("likelihood ratio", "", "", f"{result.likelihood_ratio_bound:.4f} = e^ε", "", f"{math.exp(own):.4f}")
        console.print(grid)
        console.print(
            f"[dim]Intervals: Clopper–Pearson, two-sided, each at {REPORT_CONFIDENCE:.2%} so the four verdicts hold jointly "
            "with 95% confidence (advantage: DKW band). The FPR of a threshold is itself estimated from the releases "
            "without the target, so each TPR is held to the cap at the upper end of its FPR's interval; a rate is "
            "flagged only when its whole interval lies above the cap.[/]"
        )
    if plot is not None:
        from dpwitness.attacks.plots import plot_membership

        plot_membership(plot, result)
        _plot_done(plot)


@attack_app.command("floating-point")
def floating_point_command(
    value: Annotated[float, typer.Option(help="The true query value x.")] = 0.0,
    neighbour: Annotated[float, typer.Option(help="The neighbouring value x′.")] = 1.0,
    sensitivity: Annotated[float, typer.Option(help="Δ.")] = 1.0,
    epsilon: Annotated[float, typer.Option(help="ε.")] = 1.0,
    samples: Annotated[int, typer.Option(help="Releases from each input.")] = 10_000,
    seed: SeedOption = None,
    as_json: JsonOption = False,
    plot: PlotOption = None,
) -> None:
    """Mironov's attack: how many outputs name their input exactly, naive numpy vs dpwitness."""
    from dpwitness.attacks.floating_point import floating_point_attack

    with _user_errors():
        result = floating_point_attack(
            value=value, neighbour=neighbour, sensitivity=sensitivity, epsilon=epsilon, samples=samples, seed=seed
        )
    if as_json:
        _print_json(result.to_dict())
    else:
        console.print(
            f"[bold]floating-point attack[/] (Mironov 2012): x = {value:g} vs x′ = {neighbour:g}, "
            f"Δ = {sensitivity:g}, ε = {epsilon:g}"
        )
        grid = Table(
            "release", "outputs that identify the input exactly [95% interval]", "from x", "from x′", "ε-DP cap", "verdict"
        )
        for label, side in (("x + numpy.random.laplace", result.naive), ("dpwitness (grid γ·ℤ)", result.dpwitness)):
            low, high = side.interval
            grid.add_row(
                label,
                f"{side.identification_rate:.2%} [{low:.2%}, {high:.2%}]",
                str(side.identified_value),
                str(side.identified_neighbour),
                f"{side.cap:.0%}",
                _verdict(low > side.cap),
            )
        console.print(grid)
        console.print(
            "An identifying output has probability 0 under the other input (the cap is 0): the real ε of the naive "
            f"release is ∞. Clopper–Pearson intervals over {2 * samples:,} outputs per release."
        )
    if plot is not None:
        from dpwitness.attacks.plots import plot_panels

        a, b = result.naive_outputs
        hits = result.naive_identified
        plot_panels(
            plot,
            [
                (f"naive outputs (ε = {epsilon:g}): the bins look private…", a, b, epsilon),
                (f"…but {result.naive.identification_rate:.0%} of outputs name their input", a[~hits[0]], b[~hits[1]], epsilon),
            ],
        )
        _plot_done(plot)


@attack_app.command("tamper")
def tamper_command(
    name: Annotated[list[str] | None, typer.Option("--name", help="A mistake to run (repeatable; default: all).")] = None,
    epsilon: Annotated[float, typer.Option(help="The ε each mistaken mechanism claims.")] = 0.5,
    samples: Annotated[int | None, typer.Option(help="Runs per input for the auditor (default: adaptive).")] = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
    plot: PlotOption = None,
) -> None:
    """Run each classic mistake through the witness and the auditor; exit 1 when they are flagged (claims violated),
    3 if the auditor could not flag every one (inconclusive)."""
    from dpwitness.attacks.tamper import MISTAKES, tamper_attack

    with _user_errors():
        results = tamper_attack(name, epsilon=epsilon, samples=samples, seed=seed, progress=False)
    if as_json:
        _print_json(
            {"epsilon": epsilon, "mistakes": [r.to_dict() for r in results], "all_flagged": all(r.flagged for r in results)}
        )
    else:
        grid = Table(
            "mistake",
            "true loss",
            "analytic witness",
            "auditor ε_lb",
            "verdict",
            "runs/input",
            "seconds",
            title=f"tamper: claimed ε = {epsilon:g}",
        )
        for r in results:
            witness = f"{'✘' if r.witness_loss > epsilon else '✔'} loss {r.witness_loss:.3g}" if r.witness_applies else "n/a"
            grid.add_row(
                r.name,
                f"{r.true_loss:.3g}",
                witness,
                f"{r.audit.epsilon_lower_bound:.3g}",
                f"[{'red' if r.flagged else 'yellow'}]{r.audit.verdict}[/]",
                f"{r.audit.samples:,}",
                f"{r.audit.seconds:.2f}",
            )
        console.print(grid)
        for r in results:
            console.print(f"[dim]{r.name}: {r.description}. Witness: {r.witness_verdict}[/]")
    if plot is not None:
        from dpwitness.attacks.plots import plot_panels
        from dpwitness.witness.audit import Sampler

        panels = []
        rng = np.random.default_rng(seed)
        for r in results:
            case = MISTAKES[r.name].case(epsilon)
            sampler = Sampler(case.mechanism, deadline=math.inf)
            panels.append(
                (
                    r.name,
                    sampler.draw(case.d, rng, 20_000, "d")[:, 0],
                    sampler.draw(case.d_prime, rng, 20_000, "d_prime")[:, 0],
                    epsilon,
                )
            )
        plot_panels(plot, panels)
        _plot_done(plot)
    # Every mistake violates its claim: flagging them all is the README's "a claim was violated" (1);
    # one the auditor could not flag leaves the run inconclusive (3).
    raise typer.Exit(ExitCode.VIOLATED if all(r.flagged for r in results) else ExitCode.INCONCLUSIVE)


def register(app: typer.Typer) -> None:
    """Add ``audit`` and the ``attack`` sub-app to ``app``."""
    app.command("audit")(audit_command)
    app.add_typer(attack_app, name="attack")
