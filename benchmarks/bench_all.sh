#!/usr/bin/env bash
# Convert the development data (../shared/data) and bench both bundled judges on every set.
# Usage: benchmarks/bench_all.sh [OUT_DIR]   (default: runs/bench-dev); run on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/bench-dev}
python fitting/convert.py all
for set in llmjudge wice trulens-msmarco trulens-golden ragbench; do
  echo "== $set"
  localjudge bench "benchmarks/data/$set.jsonl" -m smollm2-135m -m gemma3-270m -o "$out/$set" -q "${@:2}"
done
