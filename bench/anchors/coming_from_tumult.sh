#!/usr/bin/env bash
# The venv that runs Tumult Analytics' side of docs/coming-from.md (Tumult needs pyspark 3.5,
# the project's Spark engine pyspark 4, so it gets a venv of its own), then runs it:
#
#   bash bench/anchors/coming_from_tumult.sh        # builds .venv-tumult once (~3 min), prints the table
#
# Needs a Java 17 runtime (as the Spark engine does). Spark binds to 127.0.0.1 (bench/anchors/coming_from.py).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$repo/.venv-tumult"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import tmlt.analytics" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "tmlt.analytics==0.21.0" "pyspark==3.5.*"
fi
"$venv/bin/python" "$repo/bench/anchors/coming_from.py" "$@"
