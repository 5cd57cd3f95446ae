#!/usr/bin/env bash
# SATE on Augmented LibriSpeech En->Fr (the SATE paper's second benchmark, 18.3 BLEU), stage by stage, with
# the paper-size configs of conf/mustc/ (the authors published none for this corpus; recipes/libri_trans/README.md).
#
# Usage: recipes/libri_trans/run.sh --root DIR [--stage N] [--stop-stage M] [--force] [--name value ...]
#   --root DIR            the corpus as it unpacks: DIR/{train,dev,test}/{audiofiles/*.wav, alignments.meta,
#                         <split>.en, <split>.fr, <split>_gtranslate.fr}
#   --gtranslate B        train also on the Google Translate references of train, one more row per segment, as
#                         ESPnet, NeurST and MSP-ST do (default: true)
#   --data DIR            prepared data (default: data/libri_trans)
#   --exp DIR             experiments (default: exp/libri_trans/<exp_tag>)
#   --exp-tag TAG         (default: sate)
#   --conf-dir DIR        training configs (default: conf/mustc)
#   --src-vocab-size N    source SentencePiece size (default: 8000)
#   --tgt-vocab-size N    target SentencePiece size (default: 8000)
#   --joint-vocab-size N  one SentencePiece model of N pieces for both sides instead
#   --speed-perturb B     add 0.9/1.1 speed-perturbed train copies for ASR and SATE (default: false)
#   --average-n N         checkpoints averaged (default: 10)
#   --ngpu N              GPUs per machine (default: 1; 0 trains on the CPU)
#   --nj N                parallel jobs for features (default: number of cores)
#   --train-args "..."    extra `sate train` arguments for every model
#   --test-sets "..."     splits evaluated (default: test dev)
#   --asr-extra "DIR..."  more ASR corpora for ASR pre-training and the source vocabulary (LibriSpeech subsets or
#                         Kaldi data directories)
#   --mt-extra "EN FR..." more parallel text (plain or gzip file pairs) for MT pre-training and the vocabularies
#   --compare true        also stage 10: the SATE paper's comparison rows
#   --parallel-pretrain B stages 3 and 4 side by side, one CPU thread each (default: false; for CPU runs)
#   --ctc-layer K         also stage 11: E2E ST with CTC on acoustic layer K against CTC on top (Fig. 1b)
#
# Stages: 0 prep  1 features  2 vocab  3 ASR  4 MT  5 SATE  6 average  7 decode test/dev  8 score
#         9 translate one test recording with `sate translate` (SRT)
#         10 (--compare true) E2E ST baselines, SATE without KD, SATE with shrink, locality plot
#         11 (--ctc-layer K) E2E ST with CTC on layer K and on top, localness per layer

# `sh run.sh` (dash) stopped on "set: Illegal option -o pipefail"; say what to run instead.
[ -n "${BASH_VERSION:-}" ] || { echo "$0: a bash script: run it as bash $0, not with sh" >&2; exit 1; }
set -euo pipefail
# The repository root, also where $0 is a symbolic link to this file (`ln -s .../recipes/mustc/run.sh ~/work/run.sh`):
# two folders above the link, the shared stages were not found ("No such file or directory"), or another checkout's.
cd "$(dirname "$(readlink -f "$0")")/../.."
root=
gtranslate=true
data=data/libri_trans
exp=
exp_tag=sate
conf_dir=conf/mustc
src_vocab_size=8000
tgt_vocab_size=8000
joint_vocab_size=
speed_perturb=false
average_n=10
ngpu=1
# the CPUs this process may use, not OMP_NUM_THREADS (which nproc prints where it is set): an exported
# OMP_NUM_THREADS=32 was refused as "--nj 32", an option never given, and OMP_NUM_THREADS=1 made features on one CPU
nj=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
train_args=
test_sets="test dev"
asr_extra=
mt_extra=
compare=false
parallel_pretrain=false
ctc_layer=
. recipes/lib/stages.sh
parse_options "$@"
from_caller root data exp conf_dir --lists asr_extra mt_extra
[ -n "$root" ] || die "--root is required (the directory holding train/, dev/ and test/)"
case "$gtranslate" in true) gt=(--gtranslate) ;; false) gt=(--no-gtranslate) ;; *) die "--gtranslate must be true or false, got '$gtranslate'" ;; esac
exp=${exp:-exp/libri_trans/$exp_tag}

corpus=$root
prep_args=(--libri-trans "$root" "${gt[@]}")
demo_dir=$root/test/audiofiles
# MT pre-training reads the train manifest (both references with --gtranslate true); with --mt-extra, the train
# text files and the extra pairs.
corpus_text=("$root/train/train.en" "$root/train/train.fr")
[ "$gtranslate" = true ] && corpus_text+=("$root/train/train.en" "$root/train/train_gtranslate.fr")
# what sate prep reads of the corpus: its text, each set's (stage 0 runs again where it changed); of the sets
# training reads, and apart of the test set (prepared again alone where only it changed)
corpus_texts=()
for part in train other dev; do corpus_texts+=("$root/$part"/alignments.meta "$root/$part"/*.en "$root/$part"/*.fr); done
test_texts=("$root"/test/alignments.meta "$root"/test/*.en "$root"/test/*.fr)
test_prep_splits=(test)

. recipes/lib/pipeline.sh
