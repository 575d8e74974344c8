#!/usr/bin/env bash
# Convert the development data (../shared/data) and bench the default judge on every set: the
# judge users get when they pass no -m. Other judges beside it: JUDGES="qwen2.5-coder-1.5b
# smollm2-135m gemma3-270m" (aliases, GGUF paths or store names; the first is the bench's
# reference). Extra arguments after OUT_DIR go to `localjudge bench` (e.g. -t 2 --cache FILE).
# Usage: benchmarks/bench_all.sh [OUT_DIR] [BENCH ARGS...]   (default: runs/bench-dev)
# Run on an idle machine (not timed with the default judge on 2 cores: expect an hour or more).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/bench-dev}
judges=()
for judge in ${JUDGES:-}; do judges+=(-m "$judge"); done  # none: bench's default judge
python fitting/convert.py all
for set in llmjudge wice trulens-msmarco trulens-golden ragbench; do
  echo "== $set"
  localjudge bench "benchmarks/data/$set.jsonl" ${judges[@]+"${judges[@]}"} -o "$out/$set" -q "${@:2}"
done
