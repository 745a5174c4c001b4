"""The findings table (issue 28 item 6): ``dpwitness check`` over every release venv and catalogue entry.

For every release venv that bench/anchors/versions_setup.sh built (``.venv-versions/status.json``)
and every entry of findings_catalogue.py that applies to it, runs the venv's own CLI as a user
would (``<venv>/bin/dpwitness check bench/anchors/findings_catalogue.py:NAME --columns … --epsilon
… --max-seconds … --json --scripts docs/findings/<lib>-<version>/<NAME>``), one check at a time,
and writes docs/findings.md: library, version, function, site, verdict, Δ against the witnessed
shift or ε against ε_lb, CPU seconds, the reproduction scripts, and what became of each published bug.

    bash bench/anchors/versions_setup.sh
    python3 bench/anchors/findings.py                       # every (release, entry); resumes
    python3 bench/anchors/findings.py --only opendp-0.14.2  # some releases (or --entries NAME ...)
    python3 bench/anchors/findings.py --render              # rewrite the page from the saved results

The raw reports are kept in bench/results/findings.json (gitignored), so an interrupted run resumes
and ``--again`` reruns.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERSIONS = Path(os.environ.get("DPW_VERSIONS_DIR", REPO / ".venv-versions"))
PAGE = REPO / "docs" / "findings.md"
SCRIPTS = REPO / "docs" / "findings"
RESULTS = REPO / "bench" / "results" / "findings.json"
sys.path[:0] = [str(HERE), str(HERE.parent)]

from bench_check import run_check  # noqa: E402  (beside this script)
from bench_check import verdict_agrees as agrees  # noqa: E402
from findings_catalogue import BY_NAME, CATALOGUE, Entry, version_key  # noqa: E402

from machine import cpu_model  # noqa: E402

LIBRARY_ORDER = ("diffprivlib", "opendp", "python-dp", "pipeline-dp", "smartnoise-sql", "smartnoise-synth")


def releases(status: dict[str, Any]) -> list[tuple[str, str, Path]]:
    """The release venvs ready to run: (library, version, venv), ordered by library then version."""
    ready = [(entry["library"], entry["version"], VERSIONS / name) for name, entry in status.items() if entry["status"] == "ok"]
    return sorted(ready, key=lambda r: (LIBRARY_ORDER.index(r[0]) if r[0] in LIBRARY_ORDER else 99, version_key(r[1])))


def plan(status: dict[str, Any]) -> list[tuple[Entry, str, Path]]:
    """Every (entry, version, venv) that applies: the entry's library is the venv's and the version is in range."""
    return [
        (entry, version, venv)
        for library, version, venv in releases(status)
        for entry in CATALOGUE
        if entry.library == library and entry.expected_for(version) is not None
    ]


def key(entry: Entry, version: str) -> str:
    return f"{entry.library}-{version}:{entry.name}"


def run_one(entry: Entry, version: str, venv: Path) -> dict[str, Any]:
    """One check through the venv's CLI: verdict, exit code, CPU (user + system of the check's process) and wall seconds."""
    scripts = SCRIPTS / f"{entry.library}-{version}" / entry.name
    shutil.rmtree(scripts, ignore_errors=True)
    command = [str(venv / "bin" / "dpwitness"), "check", f"bench/anchors/findings_catalogue.py:{entry.name}"]
    command += ["--columns", entry.columns, "--epsilon", repr(entry.epsilon), "--max-seconds", f"{entry.max_seconds:g}"]
    command += [*entry.flags, "--json", "--scripts", str(scripts.relative_to(REPO))]
    report, code, cpu, wall = run_check(command, timeout=20 * entry.max_seconds + 300)
    if scripts.is_dir() and not any(scripts.iterdir()):
        scripts.rmdir()
    return {
        "entry": entry.name,
        "library": entry.library,
        "version": version,
        "venv": str(venv.relative_to(REPO)) if venv.is_relative_to(REPO) else str(venv),
        "command": " ".join(command[1:]),
        "expected": entry.expected_for(version),
        "verdict": report.get("verdict"),
        "exit": code,
        "cpu": cpu,
        "wall": wall,
        "report": report,
    }


def measure(report: dict[str, Any]) -> tuple[str, str]:
    """(site, what was measured): the first finding's library line and its Δ against the shift or ε
    against ε_lb; without a finding, the audit's ε_lb against the claimed ε."""
    findings = report.get("findings") or []
    for finding in findings:
        site = str(finding.get("site") or "")
        if finding["kind"] == "audit":
            return site, f"ε {finding['claimed']:.3g} < ε_lb {float(finding['witnessed']):.3g}"
        if finding["kind"] == "sensitivity":
            return site, f"Δ {_number(finding['claimed'])} < shift {_number(finding['witnessed'])}"
        return site, f"{finding['kind']}: {str(finding.get('detail') or '')[:80]}"
    audit = report.get("audit")
    calls = report.get("calls") or []
    site = str(calls[0].get("site") or "") if calls else ""
    if audit and audit.get("replayed") and audit["verdict"] == "violated":  # the noise calls', not the release's
        return site, (
            f"ε {report.get('epsilon', 0):.3g}; the noise calls' outputs (replayed) ε_lb {audit['epsilon_lower_bound']:.3g} "
            f"on a {audit.get('family', '')} event: evidence about the release, not a finding"
        )
    if audit:
        return site, f"ε {report.get('epsilon', 0):.3g}, audit ε_lb {audit['epsilon_lower_bound']:.3g} ({audit['verdict']})"
    return site, str(report.get("error") or "-")[:120]


def _number(value: Any) -> str:
    if isinstance(value, (int, float)):
        return f"{value:.10g}"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _short_site(site: str) -> str:
    """A library line without its site-packages prefix; a line of this repository relative to it."""
    marker = "site-packages/"
    if marker in site:
        return site.split(marker, 1)[1]
    return site.removeprefix(str(REPO) + "/")


def render(results: dict[str, dict[str, Any]], meta: dict[str, Any], status: dict[str, Any]) -> str:
    """docs/findings.md from the results (one row per check) and the run's header."""
    rows = sorted(
        results.values(),
        key=lambda r: (
            LIBRARY_ORDER.index(r["library"]) if r["library"] in LIBRARY_ORDER else 99,
            [e.name for e in CATALOGUE].index(r["entry"]) if r["entry"] in BY_NAME else 99,
            version_key(r["version"]),
        ),
    )
    total_cpu = sum(r["cpu"] for r in rows)
    total_wall = sum(r["wall"] for r in rows)
    lines = [
        "# The findings table: `dpwitness check` over every release",
        "",
        "Every release of the anchor libraries installable here, each in a venv of its own with dpwitness, and a",
        "catalogue of release functions written as each library's docs show them (`bench/anchors/findings_catalogue.py`),",
        "each checked as a maintainer would check it in CI: the venv's own `dpwitness check … --json`, one check at a",
        "time, with a budget of CPU seconds per check. Known bugs are marked with their public reference; the controls",
        "are correct usages of the same calls, where no finding is expected.",
        "",
        "- **Commands** (after `bash bench/anchors/versions_setup.sh`; the results are kept between runs, and a row shows",
        "  its check's latest run):",
        *[
            f"  - `{run['command']}`: ended {run['date']}, 1-minute load {run['load_before']:.2f} before, "
            f"{run['load_after']:.2f} after"
            for run in meta["runs"]
        ],
        f"- **Machine:** {meta['cpu']}, {meta['cores']} cores, shared with other work; Python {meta['python']}; dpwitness's "
        f"source (`src/`) at commit `{meta['commit']}`",
        f"- **CPU time:** {total_cpu:.0f} s for {len(rows)} checks (user + system of the checks' processes; "
        f"{total_wall / 60:.0f} min of wall time)" + "".join(f"; {note}" for note in meta.get("notes", [])),
        "",
    ]
    lines += _releases_section(status)
    lines += _published_section(rows)
    lines += [TOOL_FAULTS, ""]
    lines += [
        "## The table",
        "",
        "*Expected*: the catalogue's verdict for that release (*not violated*: ok or inconclusive). *Site*: the",
        "library line of the first finding (else of the first noise call). *Measured*: the declared Δ against the",
        "witnessed shift, or the claimed ε against the audit's certified ε_lb. *Scripts*: the reproduction scripts the",
        "check wrote (`--scripts`), relocatable: run one with the release's Python (`python3 SCRIPT` exits 1 and",
        "prints BUG on a finding).",
        "",
        "| library | version | function | kind | expected | verdict | site | measured | CPU s | scripts |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        entry = BY_NAME.get(row["entry"])
        kind = entry.kind if entry else "?"
        if entry and entry.reference:
            kind = f"[{kind}]({entry.reference})"
        site, measured = measure(row["report"])
        scripts = [Path(p) for p in (row["report"].get("scripts") or [])]
        links = ", ".join(f"[{p.name}]({p.relative_to('docs').as_posix()})" for p in scripts if p.parts[:1] == ("docs",))
        mark = "" if agrees(row["expected"], row["verdict"]) else " ✗"
        lines.append(
            f"| {row['library']} | {row['version']} | `{row['entry']}` | {kind} | {row['expected']} | "
            f"**{row['verdict']}**{mark} | {_cell(_short_site(site))} | {_cell(measured)} | {row['cpu']:.1f} | {links or '-'} |"
        )
    lines += ["", "✗: the verdict differs from the expected one (see the summary above).", ""]
    lines += _catalogue_section()
    lines += [WRITE_UP, "", WRITE_UP_MWEM, ""]
    return "\n".join(lines)


def _releases_section(status: dict[str, Any]) -> list[str]:
    lines = ["## The releases", "", "| release | venv |", "|---|---|"]
    for name, entry in sorted(status.items(), key=lambda item: (item[1]["library"], version_key(item[1]["version"]))):
        detail = _cell(entry["detail"].replace(str(REPO) + "/", "").replace("/work/main/", ""))
        lines.append(f"| {name} | {entry['status']}: {detail[:220]} |")
    return [*lines, ""]


def _published_section(rows: list[dict[str, Any]]) -> list[str]:
    """Per known bug: the releases where the check found it, and where it did not; false alarms on the controls."""
    lines = ["## Summary", ""]
    by_entry: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_entry.setdefault(row["entry"], []).append(row)
    bugs = [e for e in CATALOGUE if e.kind != "control" and e.name in by_entry]
    everywhere = [
        e.name
        for e in bugs
        if all(r["verdict"] == "violated" for r in by_entry[e.name] if e.buggy is None or r["version"] in e.buggy)
    ]
    in_fixed = [
        f"`{e.name}` {r['version']}"
        for e in bugs
        for r in by_entry[e.name]
        if e.fixed is not None and r["version"] in e.fixed and r["verdict"] == "violated"
    ]
    lines += [
        f"**{len(everywhere)} of {len(bugs)} bug entries found in every release built that has the bug** "
        f"({len([e for e in bugs if e.kind == 'published'])} of them for published bugs, the others unpublished or new); "
        + (
            f"missed somewhere: {', '.join(f'`{e.name}`' for e in bugs if e.name not in everywhere)}; "
            if len(everywhere) < len(bugs)
            else ""
        )
        + (f"**found in a fixed release: {', '.join(in_fixed)}**." if in_fixed else "none found in a release that fixed it."),
        "",
    ]
    for entry in CATALOGUE:
        found = by_entry.get(entry.name)
        if not found or entry.kind == "control":
            continue
        buggy = [r["version"] for r in found if entry.buggy is None or r["version"] in entry.buggy]
        fixed = [r["version"] for r in found if entry.fixed is not None and r["version"] in entry.fixed]
        hit = [r["version"] for r in found if r["version"] in buggy and r["verdict"] == "violated"]
        missed = [f"{r['version']} ({r['verdict']})" for r in found if r["version"] in buggy and r["verdict"] != "violated"]
        alarms = [r["version"] for r in found if r["version"] in fixed and r["verdict"] == "violated"]
        ref = f" ([reference]({entry.reference}))" if entry.reference else ""
        text = f"- **{entry.library} `{entry.name}`**, {entry.kind}{ref}: {entry.what}. "
        text += f"Found in {len(hit)} of {len(buggy)} releases that have it" + (f" ({', '.join(hit)})" if hit else "")
        text += f"; **not found** in {', '.join(missed)}" if missed else ""
        text += f" ({entry.miss.rstrip('.')})" if missed and entry.miss else ""
        if entry.fixed is not None:
            text += f". Fixed releases ({entry.fixed}): " + (
                f"**found in {', '.join(alarms)}** (a false alarm or an incomplete fix)"
                if alarms
                else f"not found in any ({', '.join(fixed) or 'none built'})"
            )
        elif entry.control:
            control = by_entry.get(entry.control, [])
            verdicts = ", ".join(f"{r['version']} {r['verdict']}" for r in control)
            text += f". No release fixed it; its control `{entry.control}`: {verdicts or 'not run'}"
        else:
            text += ". No release fixed it; no control in the catalogue"
        lines.append(text + ".")
    controls = [r for r in rows if r["entry"] in BY_NAME and BY_NAME[r["entry"]].kind == "control"]
    alarms = [f"{r['library']} {r['version']} `{r['entry']}`" for r in controls if r["verdict"] == "violated"]
    others = [
        f"{r['library']} {r['version']} `{r['entry']}`: {r['verdict']} (expected {r['expected']})"
        for r in controls
        if r["verdict"] != "violated" and not agrees(r["expected"], r["verdict"])
    ]
    lines.append(f"- **False alarms on the controls:** {', '.join(alarms) if alarms else 'none'}.")
    lines.append(f"- **Controls not at their expected verdict (no finding):** {'; '.join(others) if others else 'none'}.")
    agreeing = sum(agrees(r["expected"], r["verdict"]) for r in rows)
    lines += ["", f"{agreeing} of {len(rows)} checks got their expected verdict.", ""]
    return lines


def _catalogue_section() -> list[str]:
    lines = ["## The catalogue", "", "| function | library | columns | ε | kind | what it is | note |", "|---" * 7 + "|"]
    for entry in CATALOGUE:
        lines.append(
            f"| `{entry.name}` | {entry.library} | `{_cell(entry.columns)}` | {entry.epsilon:.4g} | {entry.kind} | "
            f"{_cell(entry.what)} | {_cell(entry.note)} |"
        )
    return [*lines, ""]


TOOL_FAULTS = """## Tool faults met while building the table

Two faults of dpwitness itself showed up on the older releases; neither is a library's bug, and the table
above was measured with both worked around or fixed as described.

- **NumPy 1.** dpwitness declares `numpy>=1.26`, but its audit calls `numpy.bitwise_count`
  (`witness/events/model.py`, `lowest_bit`), which NumPy has from 2.0. In the first venvs of diffprivlib
  0.6.0–0.6.5 (NumPy 1.26 with scikit-learn 1.3.2) every check that reached the audit stopped with "internal
  error (AttributeError)". Those releases now run with the lock's NumPy 2.4.6 and scikit-learn 1.6.1
  (`versions_setup.sh`, whose smoke test asks for NumPy 2).
- **A library imported inside the function, unseen.** dpwitness installs the adapters of the libraries
  imported when the check starts, and looks for libraries the function imported on its first run only when
  that run found no noise call (`targets/check/run.py`: `if probe is None and runner.discover()`). With
  diffprivlib 0.6.0 and scikit-learn 1.6.1, the function's first run imports `scipy.stats`, whose import
  draws from a NumPy `Generator` (`scipy/stats/_new_distributions.py:120` and `:272`); the generic
  `numpy.random` adapter records those draws as noise calls, so diffprivlib's adapter was never installed:
  `diffprivlib_histogram_weights` came out inconclusive (audit ε_lb 0, only the two scipy draws recorded)
  instead of violated. The catalogue imports each library at the top of its module (as the libraries' docs
  do), so its adapter is installed from the start. dpwitness's commit 624ddfc ("draws made while a module is
  imported are not noise calls", made on main while this table was being built, and cherry-picked onto the
  branch that built it) fixes the cause: with it, a function that imports diffprivlib inside it
  (`check_cases.py:diffprivlib_sum` on 0.6.0) gets diffprivlib's adapter. Every row of the table ran with
  that commit's source (the checks run before it were run again).

Six more faults of dpwitness, found while building this table, are fixed and the table was run again after
them (4 Dec):

- **Venvs running another checkout's code.** Nine of the sixteen release venvs (diffprivlib 0.6.0–0.6.5,
  OpenDP 0.12.1, 0.13.0 and 0.15.1, python-dp 1.1.4) had dpwitness installed from the worktree of the branch
  that first built the table, the others from this checkout, so the previous table mixed two versions of the
  check. Every venv now imports dpwitness from this checkout, and `findings.py` refuses to run a venv that
  imports it from anywhere else (a one-line error naming the venvs and the command that fixes them).
- **Pairs the discrete metric cannot rank.** `opendp_rr_bitvec` (options 0 and 7) was missed on 0.12–0.14:
  every changed answer is at discrete distance 1, and the audit took the search's first pair, which changed
  bit 0, randomized correctly. The check now also tries one record with each listed value, keeps each distinct
  change it sees, screens each on 4,000 runs per table and audits the likeliest on runs of its own
  ([the check](targets.md)).
- **Bytes in reproduction scripts.** The audit scripts of a bytes release chose no standalone event (no
  coordinate of bytes was read), printed the first outputs and exited 0 with "not reproduced here". A script
  now reads bytes as their bits, so the #2708 scripts measure "bit 7 set" and exit 1 with BUG.
- **The Synth adapter on older releases.** smartnoise-synth 1.0.5 and 1.0.6 import an mbi API that was
  never published on the index, so their MST and AIM do not import; the adapter imported both when it
  installed, so every check of those releases, MWEM's included, ended as an adapter error. It now hooks MST
  and AIM only where they import. (1.0.4 does not install with NumPy 2: its MWEM calls `numpy.product`.)
- **OpenDP's `nan` flag.** The Synth and SmartNoise SQL adapters replay the noise with OpenDP's Laplace on
  `atom_domain(T=float, nan=False)`; OpenDP 0.12 and 0.13 have no such flag, so on Synth 1.0.5 and 1.0.6 (with
  OpenDP 0.12.1) the audit did not run ("TypeError … unexpected keyword argument 'nan'"). One helper,
  `targets.opendp.non_nan_atoms`, now builds the non-NaN float atom on every release.
- **No script for a change of the noise calls.** A `noise-calls` or `shape` finding (MWEM's 21 calls on 10 rows
  against 41 on 11) came with no reproduction script. Such a finding now gets one: it runs the function with
  the noise removed on both tables, compares the calls' transcripts (sites, mechanisms, declared Δ; the values'
  lengths for a shape finding) and exits 1 with BUG when they differ.

The scripts checked by hand exit 1 with BUG when moved to another folder: diffprivlib 0.6.0's
`diffprivlib_laplace` audit script, 0.6.3's `diffprivlib_histogram_weights` audit script, 0.6.5's
`diffprivlib_linear_regression_unclipped` script, python-dp 1.1.4's `pydp_bounded_sum` script, OpenDP
0.14.2's `opendp_rr_bitvec` audit script, and the `noise-calls` scripts of both MWEM entries on Synth 1.0.5
and 1.0.8.
"""


WRITE_UP = """## New: diffprivlib `LinearRegression(fit_intercept=False)` never clips to its bounds

*Written as a report to diffprivlib's maintainers.*

**Summary.** With `fit_intercept=False`, `diffprivlib.models.LinearRegression.fit` never clips `X` to
`bounds_X` nor `y` to `bounds_y`, yet noises the coefficients of its objective with sensitivities computed from
those bounds. One record outside the bounds moves the y², x·y and x² coefficients as far as it likes, and with
them the fitted `coef_` (through x·y and x²) and the noisy coefficients the model keeps in `_obj_coefs` (all
three): the model is not ε-differentially private. The bounds are documented as "Bounds of the data", and the
same class clips to them when `fit_intercept=True`, so a user has every reason to read them as enforced. We
found no report of it in the tracker (#104 and #105 are about other parts of the same file).

**Versions.** Every release from 0.3.0 to 0.6.6 (the latest on PyPI), and the default branch as mirrored here
(commit 5d9c9d8, "Updating version to 0.6.6"): in each, the clipping sits inside `if fit_intercept:` in
`_preprocess_data` (read in the tagged sources; 0.6.6: `diffprivlib/models/linear_regression.py`, lines
83–88). The table above checks every release that installs here (`diffprivlib_linear_regression_unclipped`).

**Where.** In 0.6.6, `_preprocess_data` (line 69):

```python
    if fit_intercept:
        bounds_X = check_bounds(bounds_X, X.shape[1])
        bounds_y = check_bounds(bounds_y, y.shape[1] if y.ndim > 1 else 1)

        X = clip_to_bounds(X, bounds_X)
        y = clip_to_bounds(y, bounds_y)
        ...
    else:
        X_offset = np.zeros(X.shape[1], dtype=X.dtype)   # no clipping on this branch
```

then `_construct_regression_obj` computes `(y ** 2).sum(axis=0)`, `X.T @ y` and `X.T @ X` from the unclipped
data and noises them with `LaplaceFolded`/`Laplace` of sensitivity `max(|lower_y|, |upper_y|) ** 2`, the
corners' range of x·y, and (#105) `lower_x ** 2`.

**Reproduction.** The catalogue's `diffprivlib_linear_regression_unclipped` uses `bounds_X = bounds_y =
(−100, 100)`, so that #105 (the x² sensitivity read from the lower bound only, right when the bounds are
symmetric) plays no part. The check finds it on every release in about 5 s of CPU: to a table of one record
(x = 0, y = 0) it adds a record with y = 1.8·10³⁰⁸ (the largest double), and the y² sum before noise goes from 0
to ∞ against the declared Δ = 10⁴ (`LaplaceFolded` at `linear_regression.py:129` in 0.6.6, `:122` in 0.6.0–0.6.5).
Its reproduction script (diffprivlib, numpy and polars only: it removes the noise, fits both tables and prints
BUG) is in the table's rows. By hand: fit
`LinearRegression(bounds_X=(-100, 100), bounds_y=(-100, 100), fit_intercept=False, epsilon=1.0)` on
`X = [[1.0]], y = [1e6]` and on `X = [[1.0]], y = [100.0]`. Before noise, x·y is 10⁶ against 100 where the
declared sensitivity is 2·10⁴ (Laplace noise of scale 6·10⁴ at ε/3), and y² is 10¹² against 10⁴ where it is
10⁴. The sign of `coef_` tells the two apart: the x² coefficient is folded to be positive, so `coef_` is
negative only when the noise on x·y outweighs it, which on the first table needs noise beyond 10⁶
(probability ½·e^(−10⁶/6·10⁴) ≈ 3·10⁻⁸) and on the second happens about half the time (1,000 fits each with
0.6.6: no negative `coef_` on the first, smallest 3.4; 502 negative on the second).

**Suggested fix.** Check and clip before the branch, as the intercept branch does:

```python
    bounds_X = check_bounds(bounds_X, X.shape[1])
    bounds_y = check_bounds(bounds_y, y.shape[1] if y.ndim > 1 else 1)
    X = clip_to_bounds(X, bounds_X)
    y = clip_to_bounds(y, bounds_y)
    if fit_intercept:
        ...
```

(with #105's one-character fix, PR #110, for the x² term). A regression test: with `fit_intercept=False`, the
coefficients before noise (`_construct_regression_obj`'s inputs) of a fit on a record beyond the bounds equal
those of the same record clipped.
"""

WRITE_UP_MWEM = """## New: SmartNoise Synth's MWEM sizes its run from the exact row count

*Written as a report to SmartNoise's maintainers.*

**Summary.** When `iterations` is not given (the default, and how the quick start fits MWEM),
`MWEMSynthesizer.fit` sets, per histogram, `scale = np.sum(h.data)`, the exact number of rows, and from it
`iterations = int(np.ceil(np.log10(scale))) * 10`, the number of queries `q_count = 2 * iterations`, each
measurement's ε (`epsilon / 2 / n_histograms / iterations`) and, above 10,000 rows, the marginal width. It also
starts the synthetic histogram at the exact total (`_initialize_a`: `n / np.prod(dimensions)` per cell). The
row count is private under add-remove neighbours, which snsynth budgets for, so a table of 10 rows and its
neighbour of 11 run different mechanisms (10 iterations against 20, 21 noise calls against 41): the
synthesizer's output distribution depends on the count without noise, and the ε it reports does not cover that.
PR #481 ("default iterations and query count adapt based on dimensionality of source data") brought the
default; we found no report of the leak.

**Versions.** The same code in 1.0.5, 1.0.6 and 1.0.8 (`snsynth/mwem.py`, lines 363–366 in 1.0.8), the
releases that run here (the table's `synth_mwem_declared` rows). The check finds it in 6–61 s of CPU as a
`noise-calls` finding: on tables of 10 and 11 identical rows (the size search bisects the count where the calls
change) the number of Laplace and exponential-mechanism calls differs, which under add-remove is a finding in
itself; its reproduction script runs both tables with the noise removed and prints the two transcripts.

**Suggested fix.** Choose the defaults from public quantities only (the declared domain's dimensions, as
`split_factor` already is), or from a noisy count paid for out of the budget; and start the synthetic histogram
from that noisy count (or a uniform distribution normalised later), never from `np.sum(histogram)`.
"""


def run_meta(command: str, load_before: float) -> dict[str, Any]:
    """One invocation's command line, date and load (the page lists every invocation whose checks it shows)."""
    return {
        "command": command,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }


def machine_meta(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The machine, Python and the commit of dpwitness's source, with the runs so far."""
    commit = subprocess.run(
        ["git", "log", "-1", "--format=%h", "--", "src"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    return {"runs": runs, "cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(), "commit": commit}


def _runs_this_checkout(venv: Path) -> bool:
    """Whether the venv imports dpwitness from this checkout's ``src`` (the code the page names)."""
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import dpwitness; print(dpwitness.__file__)"], capture_output=True, text=True
    )
    return found.returncode == 0 and Path(found.stdout.strip()).resolve().is_relative_to(REPO / "src")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="releases, e.g. opendp-0.14.2")
    parser.add_argument("--entries", nargs="*", default=[], help="catalogue entries")
    parser.add_argument("--again", action="store_true", help="rerun checks already in the results")
    parser.add_argument("--render", action="store_true", help="no checks: rewrite the page from the saved results")
    parser.add_argument("--note", action="append", default=[], help="a sentence for the page's CPU line (kept)")
    args = parser.parse_args(argv)
    status_file = VERSIONS / "status.json"
    if not status_file.exists():
        print(f"no {status_file}: run bash bench/anchors/versions_setup.sh first", file=sys.stderr)
        return 2
    status = json.loads(status_file.read_text())
    saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"results": {}, "meta": {}}
    results: dict[str, dict[str, Any]] = saved["results"]
    load_before = os.getloadavg()[0]
    if not args.render:
        todo = [
            (entry, version, venv)
            for entry, version, venv in plan(status)
            if (not args.only or f"{entry.library}-{version}" in args.only) and (not args.entries or entry.name in args.entries)
        ]
        elsewhere = [str(venv) for venv in dict.fromkeys(venv for _, _, venv in todo) if not _runs_this_checkout(venv)]
        if elsewhere:  # a venv built from another checkout would check with other code than the page's commit
            print(
                f"these venvs import dpwitness from another checkout: {', '.join(elsewhere)}; "
                f"reinstall it there with <venv>/bin/python -m pip install --no-deps -e {REPO}",
                file=sys.stderr,
            )
            return 2
        ran = 0
        for number, (entry, version, venv) in enumerate(todo, start=1):
            if key(entry, version) in results and not args.again:
                continue
            ran += 1
            result = run_one(entry, version, venv)
            results[key(entry, version)] = result
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps({"results": results, "meta": saved["meta"]}, indent=1))
            _, measured = measure(result["report"])
            print(
                f"[{number}/{len(todo)}] {entry.library} {version} {entry.name}: {result['verdict']} "
                f"(expected {result['expected']}) {result['cpu']:.1f} s CPU, {result['wall']:.1f} s wall; {measured}",
                flush=True,
            )
        if ran:
            runs = [*saved["meta"].get("runs", []), run_meta(" ".join(["python3 bench/anchors/findings.py", *argv]), load_before)]
            saved["meta"] = machine_meta(runs)
            RESULTS.write_text(json.dumps({"results": results, "meta": saved["meta"]}, indent=1))
    if not saved["meta"]:
        saved["meta"] = machine_meta([])
    if args.note:
        saved["meta"]["notes"] = [*saved["meta"].get("notes", []), *args.note]
        RESULTS.write_text(json.dumps({"results": results, "meta": saved["meta"]}, indent=1))
    # only the rows of releases still built and entries still in the catalogue
    current = {key(entry, version) for entry, version, _ in plan(status)}
    PAGE.write_text(render({k: v for k, v in results.items() if k in current}, saved["meta"], status), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
