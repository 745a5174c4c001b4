"""Throughput and calibration of dpwitness's discrete Gaussian, against NumPy and OpenDP (issue 12).

    python3 bench/bench_gaussian.py                 # 10^6 samples per call, best of 5, OpenDP if set up
    python3 bench/bench_gaussian.py --quick         # 10^5 samples, 2 repeats, no OpenDP

On one pinned core, in the same run:

- dpwitness: ``Gaussian(sensitivity=1, epsilon=1, delta=1e-6).release(0.0, size=N)`` with the secure
  source (os.urandom), the same seeded, and the raw integer sampler;
- NumPy's insecure ``Generator.normal`` at the same σ;
- OpenDP 0.16 ``make_gaussian`` (float and exact integer) through ``bench/anchors/gaussian_anchors.py``
  in the anchors venv (``bash bench/anchors/setup.sh``; skipped with a message if absent);

then the calibration targets: σ for (ε = 1, δ = 10^-6, Δ = 1) against the analytic Gaussian value
(Balle–Wang), the witness's δ(1) for the distribution really sampled, and the error of a
1,000-key histogram where one person touches up to 10 keys: Gaussian at (1, 10^-6) (L2 Δ = √10)
against Laplace at ε = 1 (L1 Δ = 10), twice: with the mechanisms directly, and end to end through a
``Session`` on a generated table (``privacy_unit="pid"``, ``max_groups=10``: the session derives
L2 Δ = √10 and L1 Δ = 10 itself, bounds each person's rows, aggregates with Polars and adds the noise).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dpwitness  # noqa: E402
from bench_noise import _rate, _row, anchors_python, machine, pin_to_one_core, time_call  # noqa: E402
from dpwitness.noise import SECURE_BITS, SeededBits  # noqa: E402
from dpwitness.privacy.accounting import analytic_gaussian_sigma  # noqa: E402

SEED = 20_181_012
TARGET_RATE = 5e6
ANCHORS_SCRIPT = HERE / "anchors" / "gaussian_anchors.py"


def unit_gaussian() -> dpwitness.Gaussian:
    return dpwitness.Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6)


def measure_throughput(size: int, repeats: int) -> list[dict[str, Any]]:
    mech = unit_gaussian()
    grid = mech.noise
    assert grid is not None
    rng = np.random.default_rng(SEED)
    sigma = mech.sigma
    calls = [
        ("dpwitness Gaussian release, secure (default)", True, lambda: mech.release(0.0, size=size), "os.urandom"),
        (
            "dpwitness Gaussian release, seeded",
            False,
            lambda: mech.release(0.0, size=size, seed=SEED),
            "PCG64, not for production",
        ),
        (
            "dpwitness raw discrete Gaussian, secure",
            True,
            lambda: grid.sample(size, SECURE_BITS),
            "GridGaussian.sample, integers",
        ),
        ("dpwitness raw discrete Gaussian, seeded", False, lambda: grid.sample(size, SeededBits(SEED)), "integers"),
        ("NumPy Generator.normal (insecure)", False, lambda: rng.normal(0.0, sigma, size=size), "float ziggurat, PCG64"),
        ("os.urandom, 16 bytes per sample", True, lambda: os.urandom(16 * size), "bit supply only (2 words per attempt)"),
    ]
    return [_row(name, secure, size, time_call(call, repeats), note) for name, secure, call, note in calls]


def measure_opendp(size: int, repeats: int, scale: float) -> tuple[list[dict[str, Any]], str | None]:
    python = anchors_python()
    if not python.exists():
        return [], f"OpenDP skipped: {python} not found; run `bash bench/anchors/setup.sh`"
    env = dict(os.environ, OMP_NUM_THREADS="1", POLARS_MAX_THREADS="1", RAYON_NUM_THREADS="1")
    try:
        out = subprocess.run(
            [str(python), str(ANCHORS_SCRIPT), "--size", str(size), "--repeats", str(repeats), "--scale", repr(scale)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            timeout=3600,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        return [], f"OpenDP skipped: gaussian_anchors.py failed: {exc} {getattr(exc, 'stderr', '')}"
    return json.loads(out.stdout)["rows"], None


def calibration() -> dict[str, Any]:
    mech = unit_gaussian()
    report = dpwitness.witness(mech)
    analytic = analytic_gaussian_sigma(1.0, 1.0, 1e-6)
    return {
        "analytic_sigma": analytic,
        "classic_sigma": math.sqrt(2 * math.log(1.25 / 1e-6)),
        "sigma": mech.sigma,
        "relative_difference": mech.sigma / analytic - 1,
        "delta_bound_at_1": report.delta,
        "delta_exact_sum_at_1": report.observed_delta,
        "rho": report.rho,
        "tv_distance": report.tv_distance,
        "witness_ok": report.ok,
        "verdict": report.verdict,
    }


def histogram_error(keys: int = 1000, touched: int = 10, releases: int = 200) -> dict[str, Any]:
    """Per-key RMSE of a keys-bin histogram where one person adds 1 to up to ``touched`` bins (add/remove)."""
    counts = np.zeros(keys)
    gaussian = dpwitness.Gaussian(
        sensitivity=math.sqrt(touched), epsilon=1.0, delta=1e-6, dimension=keys, changed_coordinates=touched
    )
    laplace = dpwitness.Laplace(sensitivity=float(touched), epsilon=1.0, dimension=keys, changed_coordinates=touched)
    g = np.asarray(gaussian.release(counts, size=releases, seed=1).value)
    lap = np.asarray(laplace.release(counts, size=releases, seed=2).value)
    return {
        "keys": keys,
        "touched": touched,
        "gaussian_sigma": gaussian.sigma,
        "gaussian_rmse_measured": float(np.sqrt(np.mean(g**2))),
        "gaussian_delta_at_1": gaussian.privacy_profile(1.0),
        "laplace_rmse_theory": laplace.std,
        "laplace_rmse_measured": float(np.sqrt(np.mean(lap**2))),
        "ratio_measured": float(np.sqrt(np.mean(g**2)) / np.sqrt(np.mean(lap**2))),
    }


def histogram_session(keys: int = 1000, touched: int = 10, people: int = 20_000, releases: int = 40) -> dict[str, Any]:
    """The same comparison end to end: a ``Session`` over a table where each of ``people`` persons
    holds one row in each of ``touched`` distinct keys (so bounding drops nothing and the exact
    histogram is known), ``releases`` releases per mechanism; per-key RMSE against the exact counts."""
    import polars as pl

    from dpwitness.session import Session

    rng = np.random.default_rng(SEED)
    offsets = rng.integers(0, keys, size=people)
    key_of = (offsets[:, None] + np.arange(touched)[None, :]) % keys  # `touched` distinct keys per person
    frame = pl.DataFrame({"pid": np.repeat(np.arange(people), touched), "g": key_of.ravel()})
    exact = np.bincount(key_of.ravel(), minlength=keys).astype(float)
    declared = list(range(keys))
    out: dict[str, Any] = {"keys": keys, "touched": touched, "people": people, "releases": releases}
    for mechanism in ("gaussian", "laplace"):
        session = Session(frame, epsilon=10.0 * releases, delta_budget=1e-3, privacy_unit="pid", max_groups=touched, seed=SEED)
        query = session.query("histogram", "g", epsilon=1.0, keys=declared, delta=1e-6 if mechanism == "gaussian" else None)
        part = query.parts[0]
        errors = []
        for _ in range(releases):
            release = session.run(query, mechanism=mechanism)
            assert isinstance(release.value, dict)
            errors.append(np.array([release.value[k] for k in declared]) - exact)
        out[mechanism] = {
            "l1_sensitivity": part.sensitivity,
            "l2_sensitivity": part.l2_sensitivity,
            "scale": release.scale,
            "rmse_measured": float(np.sqrt(np.mean(np.square(errors)))),
            "rmse_theory": release.scale if mechanism == "gaussian" else math.sqrt(2) * release.scale,
        }
    out["ratio_measured"] = out["gaussian"]["rmse_measured"] / out["laplace"]["rmse_measured"]
    auto = Session(frame, epsilon=10.0, delta_budget=1e-5, privacy_unit="pid", max_groups=touched, seed=SEED)
    chosen = auto.run(auto.query("histogram", "g", epsilon=1.0, keys=declared, delta=1e-6), mechanism="auto")
    out["auto_choice"] = next(n for n in chosen.notes if n.startswith("mechanism:"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="discrete Gaussian throughput and calibration (issue 12)")
    parser.add_argument("--size", type=int, default=10**6)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--anchor-size", type=int, default=10**5)
    parser.add_argument("--no-anchors", action="store_true")
    parser.add_argument("--quick", action="store_true", help="10^5 samples, 2 repeats, no OpenDP")
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--session-releases", type=int, default=40, help="releases per mechanism end to end")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.repeats, args.no_anchors, args.session_releases = 10**5, 2, True, 5
    core = pin_to_one_core(args.cpu)
    figures: dict[str, Any] = {"machine": machine(core)}
    rows = measure_throughput(args.size, args.repeats)
    note = "OpenDP skipped (--no-anchors)"
    if not args.no_anchors:
        anchors, skipped = measure_opendp(args.anchor_size, max(1, args.repeats // 2), unit_gaussian().sigma)
        rows += anchors
        note = skipped or ""
    figures.update(throughput=rows, anchors_note=note, calibration=calibration(), histogram=histogram_error())
    figures["histogram_session"] = histogram_session(releases=args.session_releases)
    print(f"machine: {figures['machine']['cpu']}, core {core}, load {figures['machine']['load_average']}")
    print(f"{'sampler':58} {'best':>10} {'median':>10} {'CPU':>10}")
    for row in rows:
        if "skipped" in row:
            print(f"{row['name']:58} skipped: {row['skipped']}")
            continue
        print(f"{row['name']:58} {_rate(row['best_rate']):>10} {_rate(row['median_rate']):>10} {_rate(row['cpu_rate']):>10}")
    if note:
        print(note)
    secure = next(r for r in rows if r["name"] == "dpwitness Gaussian release, secure (default)")
    met = "met" if secure["best_rate"] >= TARGET_RATE else "MISSED"
    print(f"target ≥ 5·10^6 secure samples/s: {met} ({_rate(secure['best_rate'])} best, {_rate(secure['cpu_rate'])} CPU)")
    cal = figures["calibration"]
    print(
        f"σ(ε=1, δ=1e-6, Δ=1) = {cal['sigma']:.6f}; analytic {cal['analytic_sigma']:.6f} "
        f"(relative {cal['relative_difference']:.1e}; classic {cal['classic_sigma']:.4f}); "
        f"witness δ(1) ≤ {cal['delta_bound_at_1']:.6g} (exact sum {cal['delta_exact_sum_at_1']:.6g}), ok = {cal['witness_ok']}"
    )
    hist = figures["histogram"]
    print(
        f"1,000-key histogram, ≤ 10 keys per person: Gaussian(1, 1e-6) RMSE {hist['gaussian_rmse_measured']:.3f} "
        f"(σ {hist['gaussian_sigma']:.3f}) vs Laplace(1) RMSE {hist['laplace_rmse_measured']:.3f} "
        f"(√2·b = {hist['laplace_rmse_theory']:.3f}): ratio {hist['ratio_measured']:.3f}"
    )
    end = figures["histogram_session"]
    gauss, lap = end["gaussian"], end["laplace"]
    print(
        f"end to end (Session, {end['people']:,} people × {end['touched']} keys, {end['releases']} releases each): "
        f"Gaussian L2 Δ = {gauss['l2_sensitivity']:.4f}, σ {gauss['scale']:.3f}, RMSE {gauss['rmse_measured']:.3f} vs "
        f"Laplace L1 Δ = {lap['l1_sensitivity']:g}, b {lap['scale']:.3f}, RMSE {lap['rmse_measured']:.3f}: "
        f"ratio {end['ratio_measured']:.3f}; {end['auto_choice']}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
