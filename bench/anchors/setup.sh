#!/usr/bin/env bash
# Build the "anchors" virtual environment: the DP libraries dpwitness benchmarks compare against.
#
#   bash bench/anchors/setup.sh            # create or check $DPW_ANCHORS_VENV
#   "$DPW_ANCHORS_VENV"/bin/python ...     # default: <repo>/.venv-anchors/bin/python
#
# Installs, pinned:
#   opendp[polars]==0.16.*  with polars==1.36.1 (the exact version OpenDP 0.16's Polars plugin needs)
#   diffprivlib==0.6.6      with scikit-learn==1.8.* (diffprivlib 0.6.6 does not import with 1.9)
#   python-dp==1.1.5        (Google's C++ differential-privacy library through pybind11)
# and, in a venv of its own ($DPW_PIPELINEDP_VENV, default <repo>/.venv-pipelinedp):
#   pipeline-dp==0.3.1      (with its python-dp), plus dpwitness
# and in another ($DPW_SMARTNOISE_VENV, default <repo>/.venv-smartnoise):
#   smartnoise-sql==1.0.10  (with its OpenDP 0.14), plus dpwitness
# and in another ($DPW_SYNTH_VENV, default <repo>/.venv-synth):
#   smartnoise-synth==1.0.8 (MWEM, MST, AIM; mbi 1.1.0 on JAX; without opacus/torch), plus dpwitness
#
# Idempotent: a library that already imports in the venv is left alone. A library that cannot be
# installed is reported (and recorded in $DPW_ANCHORS_VENV/anchors-status.json); the benchmarks
# then skip it with a message. The exit status is 0 when the venv exists and at least one anchor
# imports, so a partial set never blocks the other benchmarks.
#
# Then installs dpwitness itself (editable, with the audit extra at the lock's pins: scipy,
# hypothesis) so that `dpwitness check` runs the user's function in the interpreter where the
# library lives:  "$DPW_ANCHORS_VENV"/bin/dpwitness check bench/anchors/check_cases.py:NAME …
#
# The venv is for benchmarks and for tests/targets/test_targets_anchors.py (skipped, with a message,
# when it is absent); CI never builds it. It is gitignored (.venv*/ in .gitignore).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${DPW_ANCHORS_VENV:-$repo/.venv-anchors}"
python_bin="${DPW_ANCHORS_PYTHON:-python3}"
py="$venv/bin/python"

log() { printf '[anchors] %s\n' "$*" >&2; }

if [ ! -x "$py" ]; then
    log "creating $venv with $($python_bin --version 2>&1)"
    "$python_bin" -m venv "$venv" || { log "FAILED: python3 -m venv $venv"; exit 2; }
    "$py" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || log "note: could not upgrade pip (continuing)"
else
    log "reusing $venv"
fi

# name | import check (a statement) | pip requirements
anchors=(
    "opendp|import opendp.prelude as dp, polars as pl; assert dp.__version__.startswith('0.16'), dp.__version__; assert pl.__version__ == '1.36.1', pl.__version__|opendp[polars]==0.16.* polars==1.36.1"
    "diffprivlib|import diffprivlib, sklearn; assert diffprivlib.__version__ == '0.6.6', diffprivlib.__version__; assert sklearn.__version__.startswith('1.8'), sklearn.__version__|diffprivlib==0.6.6 scikit-learn==1.8.* pandas==2.3.3"  # pandas: docs/coming-from.md's pandas source
    "python-dp|import pydp; from pydp.algorithms.numerical_mechanisms import LaplaceMechanism; assert pydp.__version__ == '1.1.5', pydp.__version__|python-dp==1.1.5"
)

status_json="{"
ok_count=0
for entry in "${anchors[@]}"; do
    IFS='|' read -r name check reqs <<<"$entry"
    if "$py" -c "$check" >/dev/null 2>&1; then
        log "$name: present, imports"
    else
        log "$name: installing $reqs"
        # shellcheck disable=SC2086  # word splitting of the requirement list is intended
        if ! "$py" -m pip install --quiet $reqs >"$venv/pip-$name.log" 2>&1; then
            log "$name: pip install FAILED (see $venv/pip-$name.log)"
            tail -n 5 "$venv/pip-$name.log" >&2
        fi
    fi
    if err="$("$py" -c "$check" 2>&1)"; then
        log "$name: OK"
        status_json+="\"$name\": \"ok\", "
        ok_count=$((ok_count + 1))
    else
        reason="$(printf '%s' "$err" | tail -n 1 | tr -d '"\\')"
        log "$name: UNAVAILABLE, benchmarks will skip it: $reason"
        status_json+="\"$name\": \"unavailable: $reason\", "
    fi
done
status_json="${status_json%, }}"
printf '%s\n' "$status_json" >"$venv/anchors-status.json"

# dpwitness itself, editable, with the audit extra's tools pinned as in the lock (polars stays at
# OpenDP's 1.36.1: the lock's polars is not forced on the anchors).
pins=()
for dist in scipy hypothesis typer rich; do
    pin="$(grep -i "^$dist==" "$repo/requirements/lock.txt" | head -n 1)"
    [ -n "$pin" ] && pins+=("$pin")
done
if "$py" -c "import dpwitness, hypothesis, scipy" >/dev/null 2>&1 && [ -x "$venv/bin/dpwitness" ]; then
    log "dpwitness: present (editable), imports"
else
    log "dpwitness: installing -e $repo with ${pins[*]}"
    if ! "$py" -m pip install --quiet -e "$repo" "${pins[@]}" >"$venv/pip-dpwitness.log" 2>&1; then
        log "dpwitness: pip install FAILED (see $venv/pip-dpwitness.log)"
        tail -n 5 "$venv/pip-dpwitness.log" >&2
    fi
fi
"$py" -c "import dpwitness.targets.check" >/dev/null 2>&1 && log "dpwitness: OK ($venv/bin/dpwitness check …)"

# PipelineDP 0.3.1 in a venv of its own (it brings its own python-dp; kept apart so that it can
# never move the anchors' pins), with dpwitness installed the same way.
polars_pins=()
for dist in polars polars-runtime-32 pyarrow; do
    pin="$(grep -i "^$dist==" "$repo/requirements/lock.txt" | head -n 1)"
    [ -n "$pin" ] && polars_pins+=("$pin")
done
# own_venv NAME VENV REQUIREMENTS MODULE [NO_DEPS]: NAME's library (REQUIREMENTS, a space-separated
# list, imported as MODULE) and dpwitness in a venv of its own, with the lock's pins; NO_DEPS (a
# space-separated list) is installed first with --no-deps (a package whose declared dependencies
# cannot or should not all be installed). Left alone when MODULE and dpwitness already import there.
own_venv() {
    local name="$1" venv="$2" requirements="$3" module="$4" no_deps="${5:-}"
    local vpy="$venv/bin/python"
    [ -x "$vpy" ] || "$python_bin" -m venv "$venv" || { log "FAILED: python3 -m venv $venv"; return; }
    if "$vpy" -c "import $module, dpwitness.targets, hypothesis, scipy, polars" >/dev/null 2>&1; then
        log "$name: present in $venv, imports"
    else
        log "$name: installing ${no_deps:+$no_deps (no deps) }$requirements and dpwitness into $venv"
        # shellcheck disable=SC2086  # word splitting of the requirement lists is intended
        { [ -z "$no_deps" ] || "$vpy" -m pip install --quiet --no-deps $no_deps; } >"$venv/pip-$name.log" 2>&1 &&
            "$vpy" -m pip install --quiet $requirements -e "$repo" "${pins[@]}" "${polars_pins[@]}" \
                >>"$venv/pip-$name.log" 2>&1 || log "$name: pip install FAILED (see $venv/pip-$name.log)"
    fi
    "$vpy" -c "import $module, dpwitness.targets" >/dev/null 2>&1 && log "$name: OK ($venv/bin/dpwitness check …)"
}

own_venv pipeline-dp "${DPW_PIPELINEDP_VENV:-$repo/.venv-pipelinedp}" pipeline-dp==0.3.1 pipeline_dp

# SmartNoise SQL 1.0.10 in a venv of its own (it brings OpenDP 0.14, which would move the anchors'
# OpenDP 0.16), with dpwitness installed the same way.
own_venv smartnoise-sql "${DPW_SMARTNOISE_VENV:-$repo/.venv-smartnoise}" smartnoise-sql==1.0.10 snsql

# SmartNoise Synth 1.0.8 (MWEM, MST, AIM; its OpenDP, mbi on JAX, smartnoise-sql 1.0.10) in a venv
# of its own: mbi brings JAX, which the SQL venv does not need. Installed without its declared
# opacus 0.14 (that needs torch, a download of gigabytes with its CUDA wheels): the GAN
# synthesizers (dpctgan, patectgan, pategan, dpgan) do not import there, and the adapter says so.
own_venv smartnoise-synth "${DPW_SYNTH_VENV:-$repo/.venv-synth}" \
    "smartnoise-sql==1.0.10 Faker==40.63.0 disjoint-set==0.9.0 mbi==1.1.0 pac-synth==0.0.8 jax==0.10.2 jaxlib==0.10.2 chex==0.1.92 optax==0.2.8 networkx==3.6.1" \
    snsynth smartnoise-synth==1.0.8

# The pins must hold together: pip check catches a later install that broke one.
"$py" -m pip check >&2 || log "warning: pip check reports conflicts (see above)"

"$py" - <<'EOF' >&2
import importlib.metadata as md
for dist in ("opendp", "polars", "diffprivlib", "scikit-learn", "python-dp", "numpy", "dpwitness", "hypothesis", "scipy"):
    try:
        print(f"[anchors]   {dist:<13} {md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"[anchors]   {dist:<13} (not installed)")
EOF
log "python: $py"
if [ "$ok_count" -eq 0 ]; then
    log "no anchor library could be installed"
    exit 1
fi
exit 0
