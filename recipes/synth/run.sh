#!/usr/bin/env bash
# The offline demo: a speech translation corpus voiced on this machine, then the MuST-C stages on it
# with the CPU-sized configs of conf/synth/.
#
# Usage: recipes/synth/run.sh [--stage N] [--stop-stage M] [--force] [--name value ...]
#   --corpus DIR          where `sate synth` writes the corpus (default: corpus/synth)
#   --train-size N        train sentences to voice (default: 3000); all train text is MT data
#   --seed S              corpus seed (default: 0)
#   --data DIR            prepared data (default: data/synth)
#   --src-vocab-size N    source SentencePiece size (default: 256)
#   --tgt-vocab-size N    target SentencePiece size (default: 1000)
#   --nj N                parallel jobs (default: number of cores)
#
# Stages:
#   -1  build the corpus with `sate synth`
#    0  prep      1  features      2  vocab (all train text: the voiced part and the MT text)
set -euo pipefail
cd "$(dirname "$0")/../.."
stage=-1
corpus=corpus/synth
train_size=3000
seed=0
data=data/synth
tgt_lang=de
src_vocab_size=256
tgt_vocab_size=1000
speed_perturb=false
nj=$(nproc)
. recipes/lib/stages.sh
parse_options "$@"
mustc_root=$corpus
mt_text="$corpus/en-$tgt_lang/mt/train.en $corpus/en-$tgt_lang/mt/train.$tgt_lang"

if run_stage -1 "build the synthetic corpus in $corpus"; then
  params="train_size=$train_size seed=$seed"
  if ! is_done "$corpus/.done/synth" "$params"; then
    sate synth --out "$corpus" --train-size "$train_size" --seed "$seed"
    mark_done "$corpus/.done/synth" "$params"
  fi
fi

. recipes/lib/pipeline.sh
