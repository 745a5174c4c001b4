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
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERSIONS = Path(os.environ.get("DPW_VERSIONS_DIR", REPO / ".venv-versions"))
PAGE = REPO / "docs" / "findings.md"
SCRIPTS = REPO / "docs" / "findings"
RESULTS = REPO / "bench" / "results" / "findings.json"
sys.path[:0] = [str(HERE), str(HERE.parent)]

from findings_catalogue import BY_NAME, CATALOGUE, Entry, version_key  # noqa: E402  (beside this script)

from machine import cpu_model  # noqa: E402

LIBRARY_ORDER = ("diffprivlib", "opendp", "python-dp", "pipeline-dp", "smartnoise-sql")


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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        run = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=20 * entry.max_seconds + 300)
        stdout, stderr, code = run.stdout, run.stderr, run.returncode
    except subprocess.TimeoutExpired as error:
        stdout, stderr, code = "", f"timed out after {error.timeout:.0f} s of wall time", -1
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        report: dict[str, Any] = json.loads(stdout)
    except json.JSONDecodeError:
        report = {"verdict": "no report", "error": f"exit {code}: {stderr.strip()[-400:]}"}
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


def agrees(expected: str | None, verdict: str | None) -> bool:
    """A verdict meets what the catalogue expects ("not violated": ok or inconclusive)."""
    if expected == "not violated":
        return verdict in ("ok", "inconclusive")
    return verdict == expected


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
    marker = "site-packages/"
    return site.split(marker, 1)[1] if marker in site else site


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
        "- **Commands** (after `bash bench/anchors/versions_setup.sh`; the results are kept between runs, each check ran once):",
        *[
            f"  - `{run['command']}`: {run['date']}, 1-minute load {run['load_before']:.2f} before, {run['load_after']:.2f} after"
            for run in meta["runs"]
        ],
        f"- **Machine:** {meta['cpu']}, {meta['cores']} cores, shared with other work; Python {meta['python']}; dpwitness's "
        f"source (`src/`) at commit `{meta['commit']}`",
        f"- **CPU time:** {total_cpu:.0f} s for {len(rows)} checks (user + system of the checks' processes; "
        f"{total_wall / 60:.0f} min of wall time)",
        "",
    ]
    lines += _releases_section(status)
    lines += _published_section(rows)
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
    lines += [WRITE_UP, ""]
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
        if entry.fixed is not None:
            text += f". Fixed releases ({entry.fixed}): " + (
                f"**found in {', '.join(alarms)}** (a false alarm or an incomplete fix)"
                if alarms
                else f"not found in any ({', '.join(fixed) or 'none built'})"
            )
        else:
            control = by_entry.get(entry.control, [])
            verdicts = ", ".join(f"{r['version']} {r['verdict']}" for r in control)
            text += f". No release fixed it; its control `{entry.control}`: {verdicts or 'not run'}"
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


WRITE_UP = """## New: diffprivlib `LinearRegression(fit_intercept=False)` never clips to its bounds

*Written as a report to diffprivlib's maintainers.*

**Summary.** With `fit_intercept=False`, `diffprivlib.models.LinearRegression.fit` never clips `X` to
`bounds_X` nor `y` to `bounds_y`, yet noises the objective's coefficients with sensitivities computed from
those bounds. One record outside the bounds moves the coefficient of the y² term (and of the x·y and x² terms)
by as much as it likes, so the fitted model is not ε-differentially private. The bounds are documented as "Bounds
of the data"; the class's own `fit_intercept=True` path clips to them, so a user has every reason to read them as
enforced.

**Versions.** Every release from 0.3.0 to 0.6.6 (the latest on PyPI), and the default branch as mirrored here
(commit 5d9c9d8, "Updating version to 0.6.6"): the clipping sits inside `if fit_intercept:` in
`_preprocess_data` in each of them (read in the tagged sources; 0.6.6: `diffprivlib/models/linear_regression.py`,
lines 83–88). The table above checks 0.6.0 to 0.6.6 (`diffprivlib_linear_regression_unclipped`); 0.5.x do not
install on Python 3.11 (see the releases).

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
data, and noises `(y ** 2).sum()` with `LaplaceFolded(sensitivity=max(|lower_y|, |upper_y|) ** 2)`.

**Reproduction.** `bounds_X = bounds_y = (−100, 100)`, so that #105 (the X² term's sensitivity read from the
lower bound only) plays no part. `dpwitness check` finds a pair of tables one record apart whose y² sum differs
by far more than the declared 10⁴; its reproduction script (in the table's row, needing diffprivlib, numpy and
polars only) removes the noise, fits both tables and prints BUG. By hand: fit `LinearRegression(bounds_X=(-100,
100), bounds_y=(-100, 100), fit_intercept=False, epsilon=1.0)` on `X = [[1.0]], y = [1e6]` and on `X = [[1.0]],
y = [100.0]`: the y² coefficient before noise is 10¹² against 10⁴, with Laplace noise of scale 10⁴·(1 + 1 + 1)/ε
on each side, so the two fits' objectives are told apart with certainty.

**Suggested fix.** Check and clip before the branch, as the intercept branch does:

```python
    bounds_X = check_bounds(bounds_X, X.shape[1])
    bounds_y = check_bounds(bounds_y, y.shape[1] if y.ndim > 1 else 1)
    X = clip_to_bounds(X, bounds_X)
    y = clip_to_bounds(y, bounds_y)
    if fit_intercept:
        ...
```

(and #105's one-character fix, PR #110, for the X² term). A regression test: with `fit_intercept=False`, the
noiseless coefficients (`_obj_coefs`, or `epsilon=float("inf")`) of a fit on a record beyond the bounds equal those
of the same record clipped.
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="releases, e.g. opendp-0.14.2")
    parser.add_argument("--entries", nargs="*", default=[], help="catalogue entries")
    parser.add_argument("--again", action="store_true", help="rerun checks already in the results")
    parser.add_argument("--render", action="store_true", help="no checks: rewrite the page from the saved results")
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
    # only the rows of releases still built and entries still in the catalogue
    current = {key(entry, version) for entry, version, _ in plan(status)}
    PAGE.write_text(render({k: v for k, v in results.items() if k in current}, saved["meta"], status), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
