#!/usr/bin/env bash
# Build the Tumult venv: Tumult Analytics 0.21 with its own pyspark 3.5, for bench/anchors/tumult_bench.py.
#
#   bash bench/anchors/tumult_setup.sh     # create or check $DPW_TUMULT_VENV (default <repo>/.venv-tumult)
#
# Tumult Analytics 0.21 pins pyspark < 3.6 (and numpy < 2, pandas < 2), which the main
# environment's pyspark 4 and numpy 2 cannot share, so it lives in a venv of its own; dpwitness
# is not installed there (tumult_bench.py imports only Tumult and pyspark). Its Spark workers
# must run that venv's Python: tumult_bench.py sets PYSPARK_PYTHON to it.
# Idempotent: when tmlt.analytics already imports in the venv, nothing is installed.
# Gitignored (.venv*/); CI never builds it.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${DPW_TUMULT_VENV:-$repo/.venv-tumult}"
python_bin="${DPW_TUMULT_PYTHON:-python3}"
py="$venv/bin/python"

log() { printf '[tumult] %s\n' "$*" >&2; }

if [ ! -x "$py" ]; then
    log "creating $venv with $($python_bin --version 2>&1)"
    "$python_bin" -m venv "$venv" || { log "FAILED: $python_bin -m venv $venv"; exit 2; }
fi
if "$py" -c 'import tmlt.analytics' >/dev/null 2>&1; then
    log "tmlt.analytics already imports in $venv"
else
    log "installing tmlt.analytics==0.21.* (brings pyspark 3.5)"
    "$py" -m pip install --quiet 'tmlt.analytics==0.21.*' || { log "FAILED: pip install tmlt.analytics==0.21.*"; exit 1; }
fi
# psutil (the lock's pin) lets tumult_bench.py count the JVM's CPU time as bench_spark.py does
"$py" -c 'import psutil' >/dev/null 2>&1 || "$py" -m pip install --quiet "$(grep -i '^psutil==' "$repo/requirements/lock.txt")" || log "note: psutil not installed (CPU of this process only)"
"$py" -c 'import importlib.metadata as m; print("tmlt.analytics", m.version("tmlt.analytics"), "pyspark", m.version("pyspark"))'
