#!/usr/bin/env bash
# Build one venv per release of the anchor libraries, for the findings table (bench/anchors/findings.py).
#
#   bash bench/anchors/versions_setup.sh                       # every release below
#   DPW_VERSIONS_ONLY="opendp-0.14.2 diffprivlib-0.6.6" bash bench/anchors/versions_setup.sh
#   DPW_VENVS_FROM=/path/to/main/checkout bash …   # in a git worktree: reuse the main checkout's .venv-anchors etc.
#   DPW_VERSIONS_DPWITNESS=/path/to/main/checkout bash …  # install dpwitness (editable) from there, not this checkout
#
# Each venv is <repo>/.venv-versions/<lib>-<version> (gitignored: .venv*/), holding the library at
# that release and dpwitness itself (editable, with its audit extra and polars at the lock's pins,
# -c requirements/lock.txt), so that <venv>/bin/dpwitness check runs the user's function where the
# library lives. findings.py runs only venvs that import dpwitness from its own checkout: building
# from a worktree for the main checkout's table, set DPW_VERSIONS_DPWITNESS to the main checkout.
# Wheels only (--only-binary :all:): a release with no wheel for this Python is recorded as not
# installable, never built from source.
#
# The releases: diffprivlib 0.5.x and 0.6.x; OpenDP 0.12–0.16 (latest patch each); python-dp 1.1.x;
# PipelineDP and SmartNoise SQL at the versions of .venv-pipelinedp and .venv-smartnoise; SmartNoise
# Synth 1.0.4-1.0.8 (the releases on the index for Python 3.11; there is no 1.0.7). A release already
# installed in .venv-anchors, .venv-pipelinedp, .venv-smartnoise or .venv-synth (with dpwitness) is reused:
# its folder here is a symlink to that venv (the venv holds other libraries too; the check installs
# the adapters of the libraries the function imports only).
#
# diffprivlib's older releases need an older scikit-learn (0.6.0-0.6.5 call BaseEstimator._validate_data,
# gone from scikit-learn 1.7), and dpwitness needs NumPy 2 (its audit calls numpy.bitwise_count, NumPy
# >= 2.0, though pyproject.toml allows 1.26): each diffprivlib 0.6 venv tries the lock's NumPy with
# scikit-learn 1.6.1, then 1.8, then 1.6.1 with diffprivlib's sdist, and keeps the first stack on which a
# LinearRegression fit runs.
#
# Idempotent (a venv whose smoke test passes is left alone); one release failing never stops the run.
# Every release's outcome is in <repo>/.venv-versions/status.json:
#   {"diffprivlib-0.6.5": {"library": ..., "version": ..., "status": "ok"|"failed", "detail": ...}, ...}
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${DPW_VERSIONS_DIR:-$repo/.venv-versions}"
python_bin="${DPW_VERSIONS_PYTHON:-python3}"
lock="$repo/requirements/lock.txt"
main_repo="${DPW_VENVS_FROM:-$repo}"  # where .venv-anchors etc. live (a worktree may point at the main checkout)
dpw_source="${DPW_VERSIONS_DPWITNESS:-$repo}"  # the checkout each new venv installs dpwitness from (editable)
mkdir -p "$out"
records="$out/.status-lines"
: >"$records"

log() { printf '[versions] %s\n' "$*" >&2; }
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(printf '%s' "$4" | tr '\t\n' '  ')" >>"$records"; }

pin_of() { grep -i "^$1==" "$lock" | head -n 1; }
tool_pins=()
for dist in hypothesis typer rich; do
    pin="$(pin_of "$dist")"
    [ -n "$pin" ] && tool_pins+=("$pin")
done

# Smoke tests (a statement run in the venv): the release imports, its version is the one asked for,
# the calls the catalogue makes work, and (diffprivlib, whose older stacks could bring NumPy 1) NumPy is 2.
smoke_diffprivlib='import sys, numpy, diffprivlib, dpwitness.targets.check, polars; from diffprivlib.models import LinearRegression; assert diffprivlib.__version__ == sys.argv[1], diffprivlib.__version__; assert hasattr(numpy, "bitwise_count"), "dpwitness needs NumPy 2: numpy " + numpy.__version__; LinearRegression(bounds_X=(0, 1), bounds_y=(0, 1), epsilon=1.0).fit([[0.5], [0.2]], [0.1, 0.3])'
smoke_opendp='import sys, opendp.prelude as dp, dpwitness.targets.check, polars; assert dp.__version__ == sys.argv[1], dp.__version__'
smoke_pydp='import sys, pydp, dpwitness.targets.check, polars; from pydp.algorithms.laplacian import BoundedSum; assert pydp.__version__ == sys.argv[1], pydp.__version__'
smoke_pipelinedp='import sys, importlib.metadata as md, pipeline_dp, dpwitness.targets.check, polars; assert md.version("pipeline-dp") == sys.argv[1]'
smoke_snsql='import sys, importlib.metadata as md, snsql, dpwitness.targets.check, polars; assert md.version("smartnoise-sql") == sys.argv[1]'
# SmartNoise Synth: an MWEM fit (the synthesizer every release runs; MST and AIM need an mbi that only 1.0.8's
# declared mbi 1.1.0 provides, see below) on declared categories.
smoke_synth='import sys, importlib.metadata as md, pandas as pd, snsynth, dpwitness.targets.check, polars; from snsynth import Synthesizer; from snsynth.transform import TableTransformer; from snsynth.transform.label import LabelTransformer; assert md.version("smartnoise-synth") == sys.argv[1]; t = TableTransformer([LabelTransformer(nullable=False)]); t.fit(pd.DataFrame({"a": ["x", "y"]})); Synthesizer.create("mwem", epsilon=1.0).fit(polars.DataFrame({"a": ["x", "y", "x"]}).to_pandas(), transformer=t)'

# install_stack VENV LOG MODE REQUIREMENT...: the library stack (wheels only), then dpwitness. MODE
# "lock" adds -c lock.txt (numpy, scipy, polars at the lock's pins), "free" gives the requirements as
# they are; "+src" lets the library itself (the first requirement, pure Python) come from its sdist
# when the release has no wheel (diffprivlib 0.5.x), every dependency still a wheel, and "+src:NAME" lets
# the dependency NAME (pure Python, no wheel) come from its sdist; "+nodeps" installs
# the library (the first requirement) without its declared dependencies, the other requirements being
# the ones it needs (smartnoise-synth declares opacus and torch, gigabytes, for GAN synthesizers the
# catalogue does not use).
install_stack() {
    local venv="$1" logf="$2" mode="$3"
    shift 3
    local vpy="$venv/bin/python" constraint=() source=() first=()
    [ "${mode%%+*}" = lock ] && constraint=(-c "$lock")
    if [[ "$mode" == *+src:* ]]; then
        source=(--no-binary "$(printf '%s' "${mode#*+src:}" | cut -d+ -f1)")
    elif [[ "$mode" == *+src* ]]; then
        source=(--no-binary "${1%%=*}")
    fi
    if [[ "$mode" == *+nodeps* ]]; then
        first=("$1")
        shift
    fi
    { [ "${#first[@]}" -eq 0 ] || "$vpy" -m pip install --quiet --only-binary :all: --no-deps "${first[@]}"; } >>"$logf" 2>&1 &&
        # shellcheck disable=SC2068
        "$vpy" -m pip install --quiet --only-binary :all: "${source[@]}" "${constraint[@]}" $@ >>"$logf" 2>&1 &&
        "$vpy" -m pip install --quiet "${constraint[@]}" -e "$dpw_source[audit]" polars "${tool_pins[@]}" >>"$logf" 2>&1
}

# build LIB VERSION SMOKE STACK...: one venv; each STACK ("MODE|req req ...", MODE as for install_stack)
# is tried in turn in a fresh venv until the smoke test passes.
build() {
    local lib="$1" version="$2" smoke="$3"
    shift 3
    local name="$lib-$version" venv="$out/$lib-$version"
    if [ -n "${DPW_VERSIONS_ONLY:-}" ] && [[ " $DPW_VERSIONS_ONLY " != *" $name "* ]]; then
        return
    fi
    if [ -x "$venv/bin/python" ] && err="$("$venv/bin/python" -c "$smoke" "$version" 2>&1)"; then
        log "$name: present, smoke test passes"
        record "$name" "$lib" "$version" "ok: $(cat "$venv/.dpw-stack" 2>/dev/null || echo present)"
        return
    fi
    local logf="$out/pip-$name.log" stack mode reqs
    : >"$logf"
    for stack in "$@"; do
        mode="${stack%%|*}"
        reqs="${stack#*|}"
        log "$name: installing $reqs (${mode})"
        rm -rf "$venv"
        "$python_bin" -m venv "$venv" >>"$logf" 2>&1 || { record "$name" "$lib" "$version" "failed: python3 -m venv"; return; }
        # shellcheck disable=SC2086
        if install_stack "$venv" "$logf" "$mode" $reqs; then
            if err="$("$venv/bin/python" -c "$smoke" "$version" 2>&1)"; then
                printf '%s (%s)' "$reqs" "$mode" >"$venv/.dpw-stack"
                log "$name: OK"
                record "$name" "$lib" "$version" "ok: $reqs ($mode)"
                return
            fi
            log "$name: installed, smoke test FAILED: $(printf '%s' "$err" | tail -n 1)"
            printf 'smoke test: %s\n' "$err" >>"$logf"
        else
            log "$name: pip FAILED: $(grep -E 'ERROR' "$logf" | tail -n 1)"
        fi
    done
    rm -rf "$venv"
    local reason
    reason="$(grep -E '^ERROR|Error' "$logf" | tail -n 1)"
    [ -n "$reason" ] || reason="$(tail -n 1 "$logf")"
    record "$name" "$lib" "$version" "failed: $reason"
}

# reuse LIB VERSION SMOKE VENV: a symlink to an existing venv that has the release (and dpwitness);
# returns 1 when it reused one, so that `reuse … && build …` builds only what no venv has.
reuse() {
    local lib="$1" version="$2" smoke="$3" source="$4"
    local name="$lib-$version" venv="$out/$lib-$version"
    if [ -n "${DPW_VERSIONS_ONLY:-}" ] && [[ " $DPW_VERSIONS_ONLY " != *" $name "* ]]; then
        return
    fi
    if [ -x "$source/bin/python" ] && "$source/bin/python" -c "$smoke" "$version" >/dev/null 2>&1; then
        [ -L "$venv" ] || { rm -rf "$venv"; ln -s "$source" "$venv"; }
        log "$name: reusing $source"
        record "$name" "$lib" "$version" "ok: reused $source"
        return 1
    fi
    return 0
}

sk16="scikit-learn==1.6.1"
sk18="scikit-learn==1.8.*"
old11="numpy==1.26.4 scipy==1.11.4 scikit-learn==1.1.3 pandas==2.1.4"
# diffprivlib 0.5.x (sdist only) imports sklearn's _logistic_loss_and_grad, gone from scikit-learn 1.1, and
# 1.1.3 is the oldest scikit-learn with a wheel for Python 3.11: only that stack is tried (it fails, and
# status.json says why).
for version in 0.5.0 0.5.1 0.5.2; do
    build diffprivlib "$version" "$smoke_diffprivlib" "free+src|diffprivlib==$version $old11"
done
for version in 0.6.0 0.6.1 0.6.2 0.6.3 0.6.4 0.6.5 0.6.6; do
    reuse diffprivlib "$version" "$smoke_diffprivlib" "$main_repo/.venv-anchors" &&
        build diffprivlib "$version" "$smoke_diffprivlib" "lock|diffprivlib==$version $sk16" \
            "lock|diffprivlib==$version $sk18" "lock+src|diffprivlib==$version $sk16"
done
for version in 0.12.1 0.13.0 0.14.2 0.15.1 0.16.0; do
    reuse opendp "$version" "$smoke_opendp" "$main_repo/.venv-anchors" &&
        reuse opendp "$version" "$smoke_opendp" "$main_repo/.venv-smartnoise" &&
        build opendp "$version" "$smoke_opendp" "lock|opendp==$version"
done
for version in 1.1.4 1.1.5; do
    reuse python-dp "$version" "$smoke_pydp" "$main_repo/.venv-anchors" &&
        build python-dp "$version" "$smoke_pydp" "lock|python-dp==$version" "free|python-dp==$version numpy==1.26.4"
done
reuse pipeline-dp 0.3.1 "$smoke_pipelinedp" "$main_repo/.venv-pipelinedp" &&
    build pipeline-dp 0.3.1 "$smoke_pipelinedp" "lock|pipeline-dp==0.3.1"
reuse smartnoise-sql 1.0.10 "$smoke_snsql" "$main_repo/.venv-smartnoise" &&
    build smartnoise-sql 1.0.10 "$smoke_snsql" "lock|smartnoise-sql==1.0.10"
# SmartNoise Synth, installed as bench/anchors/setup.sh installs 1.0.8 in .venv-synth: without its declared
# opacus/torch (the GAN synthesizers do not import), with its other dependencies at .venv-synth's pins.
# smartnoise-sql 1.0.10 needs antlr4-python3-runtime 4.9.3, which has no wheel: it comes from its sdist
# (pure Python), as in .venv-smartnoise. 1.0.8 declares mbi 1.1.0 (on JAX), which its MST and AIM use, and
# smartnoise-sql >= 1.0.10 (OpenDP 0.14). 1.0.4-1.0.6 import mbi's older API (FactoredInference, from
# private-pgm at a git commit, never published: the mbi releases on the index have the new API), so their
# MST and AIM do not import and only MWEM runs; their noise (snsynth.utils) builds OpenDP's Laplace on
# atom_domain(T=float), which OpenDP 0.14 refuses ("AbsoluteDistance requires non-nan elements"), so they
# get smartnoise-sql 1.0.7 (the newest before 1.0.10; opendp < 0.13) with OpenDP 0.12.1, then 0.11.1.
# 1.0.4 calls numpy.product (gone from NumPy 2) in MWEM's histogram; dpwitness needs NumPy 2.
synth_deps="Faker==40.63.0 disjoint-set==0.9.0 pac-synth==0.0.8 networkx==3.6.1 pyarrow==26.0.1"  # pyarrow: polars to_pandas, as the docs fit
synth_mbi="mbi==1.1.0 jax==0.10.2 jaxlib==0.10.2 chex==0.1.92 optax==0.2.8"
synth_mode="lock+nodeps+src:antlr4-python3-runtime"
for version in 1.0.4 1.0.5 1.0.6; do
    build smartnoise-synth "$version" "$smoke_synth" \
        "$synth_mode|smartnoise-synth==$version smartnoise-sql==1.0.7 opendp==0.12.1 $synth_deps" \
        "$synth_mode|smartnoise-synth==$version smartnoise-sql==1.0.7 opendp==0.11.1 $synth_deps"
done
reuse smartnoise-synth 1.0.8 "$smoke_synth" "$main_repo/.venv-synth" &&
    build smartnoise-synth 1.0.8 "$smoke_synth" "$synth_mode|smartnoise-synth==1.0.8 smartnoise-sql==1.0.10 $synth_deps $synth_mbi"

# status.json: this run's outcomes merged over the previous run's (a DPW_VERSIONS_ONLY run keeps the rest).
"$python_bin" - "$records" "$out/status.json" <<'EOF'
import json, sys
from pathlib import Path
records, target = Path(sys.argv[1]), Path(sys.argv[2])
status = json.loads(target.read_text()) if target.exists() else {}
for line in records.read_text().splitlines():
    name, lib, version, detail = line.split("\t", 3)
    state, _, rest = detail.partition(": ")
    status[name] = {"library": lib, "version": version, "status": state, "detail": rest}
target.write_text(json.dumps(dict(sorted(status.items())), indent=1) + "\n")
ok = sum(entry["status"] == "ok" for entry in status.values())
print(f"[versions] {ok} of {len(status)} releases ready; see {target}", file=sys.stderr)
EOF
rm -f "$records"
exit 0
