#!/usr/bin/env bash
# The offline demo: a speech translation corpus voiced on this machine, then the MuST-C stages on it.
#
# Usage: recipes/synth/run.sh [--stage N] [--stop-stage M] [--force] [--name value ...]
#   --corpus DIR       where `sate synth` writes the MuST-C layout corpus (default: corpus/synth)
#   --train-size N     train sentences to voice (default: 3000); all train text is MT data
#   --seed S           corpus seed (default: 0)
#
# Stages:
#   0  build the corpus with `sate synth`
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus=corpus/synth
train_size=3000
seed=0
. recipes/lib/stages.sh
parse_options "$@"

if run_stage 0 "build the synthetic corpus in $corpus"; then
  params="train_size=$train_size seed=$seed"
  if ! is_done "$corpus/.done/synth" "$params"; then
    sate synth --out "$corpus" --train-size "$train_size" --seed "$seed"
    mark_done "$corpus/.done/synth" "$params"
  fi
  python - "$corpus/en-de/synth.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"corpus {s['root']}: MT text {s['mt_train_pairs']} pairs")
for split, v in s["splits"].items():
    print(f"  {split:<11} {v['segments']:>6} segments {v['talks']:>4} talks {v['hours']:>7.3f} h")
PY
fi
