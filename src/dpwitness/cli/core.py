"""``dpwitness demo | release | witness | explain``: the Laplace release machine."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpwitness.attacks.tamper import TAMPERS
from dpwitness.common.data import adult_column, adult_missing, adult_path, generated_ages
from dpwitness.common.encoding import dumps
from dpwitness.common.errors import BudgetExceeded, ExitCode, MissingPart, ParameterError
from dpwitness.common.figures import tidy
from dpwitness.common.validation import check_count
from dpwitness.mechanisms.additive import Gaussian, Laplace
from dpwitness.privacy.budget import Accountant, Budget
from dpwitness.privacy.neighbours import (
    Neighbours,
    count_sensitivity,
    histogram_sensitivity,
    mean_sensitivity_public_n,
    sum_sensitivity,
)
from dpwitness.witness import witness
from dpwitness.witness.analytic import GaussianWitnessReport

console = Console(highlight=False, emoji=False)
_stderr = Console(stderr=True, highlight=False, emoji=False)
_json_errors = False


def errors_as_json(enabled: bool) -> None:
    """Under ``--json`` every error is one JSON object on stdout (set by the command group)."""
    global _json_errors
    _json_errors = enabled


def exit_code_for(error: BaseException) -> ExitCode:
    """The documented exit code of an expected error (see :class:`dpwitness.common.errors.ExitCode`)."""
    if isinstance(error, MissingPart):
        return ExitCode.MISSING_PART
    if isinstance(error, BudgetExceeded):
        return ExitCode.VIOLATED
    return ExitCode.BAD_INPUT


def error_kind(error: BaseException) -> str:
    """The JSON ``kind`` of an expected error: "refused" for a spend that does not fit (exit 1,
    like a violated claim, but nothing was wrong with the mechanism), else its exit code's name."""
    if isinstance(error, BudgetExceeded):
        return "refused"
    return exit_code_for(error).name.lower()


def fail(message: str, code: int = ExitCode.BAD_INPUT, *, parameter: str | None = None, kind: str | None = None) -> NoReturn:
    """One line on stderr, printed literally (no markup, no emoji codes), then exit with ``code``.

    Under ``--json`` the line is ``{"error": {"message", "exit_code", "kind"[, "parameter"]}}`` on stdout;
    ``kind`` is the exit code's name ("violated", "bad_input"…) unless given ("refused": a budget refusal).
    """
    if _json_errors:
        shown = kind if kind is not None else ExitCode(code).name.lower()
        error: dict[str, Any] = {"message": message, "exit_code": int(code), "kind": shown}
        if parameter is not None:
            error["parameter"] = parameter
        sys.stdout.write(dumps({"error": error}) + "\n")
    else:
        _stderr.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)
    raise typer.Exit(int(code))


#: What a command run without --ledger says about its budget (``query`` and ``sql``: one line, from :func:`ledger_note`).
NO_LEDGER = "no --ledger: this budget lasts for this call only (nothing is recorded; use --ledger to keep an account)"


def ledger_note(ledger: object | None) -> str | None:
    """The line a command prints (and its JSON's ``budget_note``) about its budget's lifetime:
    :data:`NO_LEDGER` without a ledger, None with one."""
    return NO_LEDGER if ledger is None else None


@contextmanager
def user_errors(*also: type[Exception]) -> Iterator[None]:
    """Turn a bad parameter (or one of ``also``) into a one-line message and its exit code: nothing released.

    Bad input exits 2, a refused spend (budget exceeded) 1, a missing optional part 4.
    """
    expected: tuple[type[Exception], ...] = (ParameterError, BudgetExceeded, FileNotFoundError, MissingPart, *also)
    try:
        yield
    except expected as error:
        if isinstance(error, ParameterError):
            error = as_flags(error, current_flags())
        fail(str(error), exit_code_for(error), parameter=getattr(error, "parameter", None), kind=error_kind(error))


def check_port(host: str, port: int) -> None:
    """Raise :class:`ParameterError` naming ``--port`` (or ``--host``) unless a server can listen
    on ``host``:``port`` now: bound the way uvicorn binds (``SO_REUSEADDR``; IPv6 when ``host``
    has a ':'), then released, so a port in use is bad input (exit 2) before any URL is printed.
    """
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except socket.gaierror:
            raise ParameterError("--host", "an address of this machine to listen on", host) from None
        except OSError as error:
            if error.errno == errno.EADDRNOTAVAIL:
                raise ParameterError("--host", "an address of this machine to listen on", host) from None
            if error.errno == errno.EADDRINUSE:
                expected = f"a port free on {host} (this one is already in use: stop what listens there or pick another)"
            elif error.errno == errno.EACCES:
                expected = f"a port this user may listen on at {host} (ports below 1024 need privileges)"
            else:
                expected = f"a port that can be bound on {host} ({error.strerror or type(error).__name__})"
            raise ParameterError("--port", expected, port) from None
        except OverflowError:
            raise ParameterError("--port", "a whole number in [0, 65535]", port) from None


@contextmanager
def flag_names(flags: dict[str, str] | None = None) -> Iterator[None]:
    """Re-raise a :class:`ParameterError` naming the command-line flag instead of the Python
    parameter (``delta_budget`` → ``--delta-budget``; ``flags`` overrides, e.g. epsilon → --budget),
    with the Python spellings in its message (``raise_budget(delta=…)``, ``max_rows``) as flags too."""
    try:
        yield
    except ParameterError as error:
        raise as_flags(error, {**current_flags(), **(flags or {})}) from None


def command_flags(command: Any) -> dict[str, str]:
    """{Python parameter name: the flag (or ARGUMENT) that sets it} for a click command."""
    flags: dict[str, str] = {}
    for param in getattr(command, "params", ()):
        if param.name is None:
            continue
        if param.param_type_name == "argument":
            flags[param.name] = param.name.upper()
        elif param.opts:
            flags[param.name] = max(param.opts, key=len)
            flags.setdefault(param.name.rstrip("_"), flags[param.name])  # sum_ → --sum
    return flags


def current_flags() -> dict[str, str]:
    """The flags of the command now running (empty outside a command)."""
    from typer._click.globals import get_current_context  # typer 0.29 runs its own click (pinned in the lock)

    context = get_current_context(silent=True)
    return command_flags(context.command) if context is not None else {}


def flag_for(parameter: str, flags: dict[str, str]) -> str:
    """The flag that sets ``parameter`` on the command line (``parameter`` itself if none does)."""
    if parameter.startswith("--"):
        return parameter
    return flags.get(parameter, parameter)


_RAISE_CALLS = {"epsilon": "--raise-budget", "delta": "--raise-delta-budget", "rho": "--raise-rho"}


def as_flags(error: ParameterError, flags: dict[str, str]) -> ParameterError:
    """``error`` with its parameter and the Python names in its message spelled as flags."""
    import re

    text = str(error)
    rest = text[len(error.parameter) :] if text.startswith(error.parameter) else text
    rest = re.sub(r"raise_budget\((\w+)=…\)", lambda m: _RAISE_CALLS.get(m.group(1), "--raise-budget"), rest)
    for name in sorted(_PYTHON_NAMES, key=len, reverse=True):  # a Python spelling in the message
        if name in flags:
            rest = re.sub(rf"(?<![\w\-.]){re.escape(name)}(=…|=)?(?![\w(])", flags[name], rest)
    for name, flag in flags.items():  # a keyword argument spelled in the message (epsilon=…)
        if flag.startswith("--"):
            rest = re.sub(rf"(?<![\w\-.]){re.escape(name)}=(…)?(?![\w'\"])", f"{flag} ", rest)
    flag = flag_for(error.parameter, flags)
    shown = flag
    if flag in flags.values() and error.parameter in _PART_OF_A_STATISTIC:
        shown = f"{flag} ({error.parameter})"  # e.g. "--sum (bounds)": the part of the flag's value that is wrong
    renamed = ParameterError.__new__(ParameterError)
    renamed.parameter = flag
    renamed.expected = error.expected
    ValueError.__init__(renamed, shown + rest)
    return renamed


#: Parameters that are a piece of a statistic's flag value (``--sum COL:L:U``), not flags of their own.
_PART_OF_A_STATISTIC = ("bounds", "column", "q")


#: Python parameter names that may appear in a message, spelled --like-this on the command line.
_PYTHON_NAMES = (
    "delta_budget",
    "max_rows_per_key",
    "max_rows_per_unit",
    "max_rows",
    "max_contributions",
    "max_groups",
    "privacy_unit",
    "order_by",
    "mechanism",
)


def _print_json(payload: dict[str, Any]) -> None:
    sys.stdout.write(dumps(payload, indent=2) + "\n")


def demo() -> None:
    """Mean age of the Adult census extract at ε = 1, with its witness (generated data if absent)."""
    ages = adult_column("age")
    source = f"UCI Adult census extract ({adult_path()})"
    if ages is None:
        ages = generated_ages()
        source = f"generated ages ({adult_missing()})"
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
        "`dpwitness query FILE --dtype age:integer --mean age:0:100` (or with FILE.schema.toml beside it)."
    )


def _mechanism_for(
    mechanism: str, sensitivity: float, epsilon: float | None, delta: float | None, rho: float | None
) -> Laplace | Gaussian:
    """The CLI's mechanism choice, checked before anything is drawn or spent."""
    if mechanism not in ("laplace", "gaussian"):
        raise ParameterError("mechanism", "'laplace' or 'gaussian'", mechanism)
    if mechanism == "gaussian":
        return Gaussian(sensitivity=sensitivity, epsilon=epsilon, delta=delta, rho=rho)
    if delta is not None:
        raise ParameterError("delta", "given only with --mechanism gaussian (Laplace is pure ε-DP)", delta)
    if rho is not None:
        raise ParameterError("rho", "given only with --mechanism gaussian", rho)
    if epsilon is None:
        raise ParameterError("epsilon", "given (a number in [0.001, 1000])", None)
    return Laplace(sensitivity=sensitivity, epsilon=epsilon)


def release(
    value: Annotated[float, typer.Option(help="The exact query answer f(D).")],
    sensitivity: Annotated[float, typer.Option(help="Δ: the most one record can move f (L1 for Laplace, L2 for Gaussian).")],
    epsilon: Annotated[float | None, typer.Option(help="ε for each release.")] = None,
    mechanism_name: Annotated[str, typer.Option("--mechanism", help="'laplace' (ε-DP) or 'gaussian' ((ε, δ) or ρ).")] = "laplace",
    delta: Annotated[float | None, typer.Option(help="δ for each Gaussian release.")] = None,
    rho: Annotated[float | None, typer.Option(help="ρ (zCDP) for each Gaussian release, instead of ε and δ.")] = None,
    seed: Annotated[int | None, typer.Option(help="Reproducible output (NOT for production).")] = None,
    samples: Annotated[int, typer.Option(help="Number of independent releases (each costs ε).")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Release VALUE + exact grid noise (Laplace by default, or Gaussian), with its scale, interval and witness."""
    with user_errors():
        mechanism = _mechanism_for(mechanism_name, sensitivity, epsilon, delta, rho)
        check_count("samples", samples)
        accountant = Accountant()
        releases = []
        for i in range(samples):
            # Each resample steps the seed (seed, seed+1, …) so every release is reproducible alone.
            if isinstance(mechanism, Gaussian):
                spend_epsilon = math.inf if mechanism.epsilon is None else mechanism.epsilon
                accountant.spend(
                    spend_epsilon,
                    f"release {i + 1}",
                    delta=mechanism.delta or 0.0,
                    rho=mechanism.rho_spent,
                    selection_delta=0.0,
                    tv_distance=mechanism.tv_spent,
                )
            else:  # charged its ε, as a session charges a statistic (its grid's exact loss is ≤ ε); Δ = 0 costs nothing
                accountant.spend(0.0 if mechanism.sensitivity == 0 else mechanism.epsilon, f"release {i + 1}")
            releases.append(mechanism.release(value, seed=None if seed is None else seed + i))
    result = releases[0]
    report = witness(mechanism)
    half = mechanism.interval(0.05)
    values = [float(r) for r in releases]
    # One accounted figure for the JSON and the table: float noise of the sum cut (0.30000000000000004 → 0.3)
    spent = Budget(tidy(accountant.spent.epsilon), tidy(accountant.spent.delta), tidy(accountant.spent.rho))
    payload = {
        **result.to_dict(),
        "mechanism": mechanism_name,
        "epsilon_spent": spent.epsilon if math.isfinite(spent.epsilon) else None,  # a ρ release has no ε (JSON has no ∞)
        "witness": report.to_dict(),
    }
    if isinstance(mechanism, Gaussian):
        payload.update(
            sigma=mechanism.sigma, analytic_sigma=mechanism.analytic_sigma, delta_spent=spent.delta, rho_spent=spent.rho
        )
    if samples > 1:  # one value and one interval per release, in the same keys as a single release
        payload["value"] = values
        payload["interval"] = [[v - half, v + half] for v in values]
    if as_json:
        _print_json(payload)
        return
    shown = ", ".join(f"{v:.6g}" for v in values[:10]) + (" …" if samples > 10 else "")
    if isinstance(mechanism, Gaussian):
        title = "Gaussian release"
        rows = [
            ("value", shown),
            ("σ (sampled)", f"{mechanism.sigma:.6g} (analytic Gaussian σ {mechanism.analytic_sigma:.6g})"),
            ("variance σ²", f"{mechanism.variance:.6g}"),
            ("95% interval", f"± {half:.6g} around each release"),
            ("spent", f"{_full(spent)} ({samples} release{'s' if samples > 1 else ''}; better of basic and zCDP composition)"),
        ]
    else:
        title = "Laplace release"
        rows = [
            ("value", shown),
            ("scale b = Δ/ε", f"{mechanism.scale:.6g}"),
            ("variance 2b²", f"{mechanism.variance:.6g}"),
            ("95% interval", f"± {half:.6g} around each release"),
            ("ε spent", f"{spent.epsilon:.12g} ({samples} × {spent.epsilon / samples:.12g}, basic composition)"),
        ]
    table = Table(title=title, show_header=False)
    for key, text in [*rows, ("randomness", result.randomness), ("witness", report.verdict)]:
        table.add_row(key, text)
    console.print(table)
    if result.notice:
        console.print(f"[yellow]note:[/] {result.notice}")


def _full(budget: Budget) -> str:
    """A spent budget as the JSON states it (12 significant digits, as :func:`~dpwitness.common.figures.tidy` keeps)."""
    parts = [f"ε = {budget.epsilon:.12g}"] if math.isfinite(budget.epsilon) else []
    parts.append(f"δ = {budget.delta:.12g}")
    if budget.rho and math.isfinite(budget.rho):
        parts.append(f"ρ = {budget.rho:.12g}")
    return ", ".join(parts)


def witness_command(
    sensitivity: Annotated[float | None, typer.Option(help="Δ claimed.")] = None,
    epsilon: Annotated[float | None, typer.Option(help="ε claimed.")] = None,
    mechanism_name: Annotated[str, typer.Option("--mechanism", help="'laplace' or 'gaussian'.")] = "laplace",
    delta: Annotated[float | None, typer.Option(help="δ claimed (Gaussian).")] = None,
    rho: Annotated[float | None, typer.Option(help="ρ claimed (Gaussian, instead of ε and δ).")] = None,
    tamper: Annotated[str | None, typer.Option(help="Red-team move to apply: 'invert' (scale ε/Δ).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    sensitivity_search: Annotated[
        str | None, typer.Option(help="MODULE:FUNCTION (a DataFrame → number/vector/dict) whose Δ to search for.")
    ] = None,
    columns: Annotated[str | None, typer.Option(help='With --sensitivity-search: JSON {"col": "Float64" or [values]}.')] = None,
    claimed: Annotated[float | None, typer.Option(help="With --sensitivity-search: the Δ claimed.")] = None,
    neighbours: Annotated[str, typer.Option(help="With --sensitivity-search: 'add-remove' or 'replace-one'.")] = "add-remove",
    privacy_unit: Annotated[str | None, typer.Option(help="With --sensitivity-search: the column identifying a person.")] = None,
    max_contributions: Annotated[int, typer.Option(help="With --sensitivity-search: rows kept per unit.")] = 1,
    norm: Annotated[str, typer.Option(help="With --sensitivity-search: 'l1' (Laplace) or 'l2' (Gaussian).")] = "l1",
    trials: Annotated[int, typer.Option(help="With --sensitivity-search: neighbouring pairs to try.")] = 200,
    seed: Annotated[int | None, typer.Option(help="With --sensitivity-search: a reproducible search.")] = None,
) -> None:
    """Recompute the privacy loss (Laplace: worst log ratio; Gaussian: δ(ε) or ρ) and the variance; exit 1 if violated.

    With --sensitivity-search, check a claimed Δ instead: search neighbouring tables for a pair
    that moves FUNCTION's output by more than --claimed (exit 1 if one is found).
    """
    if sensitivity_search is not None:
        _search_sensitivity(
            sensitivity_search, columns, claimed, neighbours, privacy_unit, max_contributions, norm, trials, seed, as_json
        )
    with user_errors():
        if sensitivity is None:
            raise ParameterError("sensitivity", "the Δ claimed (or --sensitivity-search to check one)", None)
        if tamper is not None and (tamper not in TAMPERS or mechanism_name != "laplace"):
            raise ParameterError("tamper", f"one of {sorted(TAMPERS)} (Laplace only)", tamper)
        if tamper:
            if epsilon is None:
                raise ParameterError("epsilon", "given (a number in [0.001, 1000])", None)
            mechanism: Laplace | Gaussian = TAMPERS[tamper](sensitivity=sensitivity, epsilon=epsilon)
        else:
            mechanism = _mechanism_for(mechanism_name, sensitivity, epsilon, delta, rho)
    report = witness(mechanism)
    if as_json:
        _print_json({**report.to_dict(), "tamper": tamper, "mechanism": mechanism_name})
    else:
        colour = "green" if report.ok else "red"
        console.print(f"[{colour}]{report.verdict}[/]")
        if isinstance(report, GaussianWitnessReport):
            console.print(
                f"δ bound (rigorous, rounded up) {report.delta:.9g}; exact sum over the sampled PMF "
                f"{'n/a' if report.observed_delta is None else f'{report.observed_delta:.9g}'}; ρ = {report.rho:.9g}; "
                f"tables' TV from N_ℤ(0, s²) {report.tv_distance:.2g}; grid γ = {report.granularity:.3g}"
            )
        else:
            console.print(
                f"worst log ratio (supremum over outputs and shifts ≤ Δ) {report.worst_log_ratio:.9g}; "
                f"largest at spot-checked outputs {report.observed_log_ratio:.9g}; grid γ = {report.granularity:.3g}"
            )
    raise typer.Exit(0 if report.ok else 1)


def _search_sensitivity(
    target: str,
    columns: str | None,
    claimed: float | None,
    neighbours: str,
    privacy_unit: str | None,
    max_contributions: int,
    norm: str,
    trials: int,
    seed: int | None,
    as_json: bool,
) -> NoReturn:
    """``witness --sensitivity-search``: exit 0 if the claim held on every pair, 1 if a pair broke it."""
    from dpwitness.cli.inputs import load_function, parse_columns
    from dpwitness.witness.sensitivity import sensitivity_search

    with user_errors():
        if claimed is None:
            raise ParameterError("claimed", "the Δ claimed (a finite number ≥ 0)", None)
        fn = load_function(target)
        try:
            result = sensitivity_search(
                fn,
                columns=parse_columns(columns),
                claimed=claimed,
                neighbours=neighbours,
                privacy_unit=privacy_unit,
                max_contributions=max_contributions,
                norm=norm,
                trials=trials,
                seed=seed,
            )
        except (ParameterError, MissingPart):
            raise
        except Exception as error:  # the function under test failed on a generated table: its bug, reported in one line
            fail(f"{target} raised {type(error).__name__} on a searched table: {error}", ExitCode.BAD_INPUT)
    if as_json:
        _print_json({**result.to_dict(), "function": target})
    else:
        console.print(Text(str(result), style="green" if result.ok else "red"))
    raise typer.Exit(ExitCode.VIOLATED if result.violated else ExitCode.OK)


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
    console.print(f"  {Laplace(sensitivity=0, epsilon=1).guarantee}")
    console.print(
        "ε bounds a log-likelihood ratio (outputs at most e^ε times more likely under one neighbour); "
        "it is not a percentage, and DP is not anonymisation: it limits what any output reveals about one record."
    )


def register(app: typer.Typer) -> None:
    app.command()(demo)
    app.command()(release)
    app.command("witness")(witness_command)
    app.command()(explain)
