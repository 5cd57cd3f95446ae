#!/usr/bin/env bash
# SATE on MuST-C (v1 or v2, any target language), stage by stage, with the paper-size configs of conf/mustc/.
#
# Usage: recipes/mustc/run.sh --mustc-root DIR [--stage N] [--stop-stage M] [--force] [--name value ...]
#   --mustc-root DIR      MuST-C root holding en-<tgt>/data/{train,dev,tst-COMMON,tst-HE}/{txt,wav}
#   --tgt-lang L          target language (default: de)
#   --data DIR            prepared data (default: data/mustc/en-<tgt>)
#   --exp DIR             experiments (default: exp/mustc/en-<tgt>/<exp_tag>)
#   --exp-tag TAG         (default: sate)
#   --conf-dir DIR        training configs (default: conf/mustc; with --mt-hub: conf/mustc_hub)
#   --src-vocab-size N    source SentencePiece size (default: 10000)
#   --tgt-vocab-size N    target SentencePiece size (default: 10000)
#   --joint-vocab-size N  one SentencePiece model of N pieces for both sides instead (the *_reference.yaml configs)
#   --speed-perturb B     add 0.9/1.1 speed-perturbed train copies (default: false)
#   --average-n N         checkpoints averaged (default: 10)
#   --ngpu N              GPUs per machine (default: 1; 0 trains on the CPU)
#   --nj N                parallel jobs for features (default: number of cores)
#   --train-args "..."    extra `sate train` arguments for every model
#   --asr-extra "DIR..."  more ASR corpora for ASR pre-training and the source vocabulary: LibriSpeech subsets
#                         (e.g. LibriSpeech/train-clean-100) or Kaldi data directories (wav.scp, text, ...)
#   --mt-extra "EN TGT..." more parallel text (plain or gzip file pairs, any size, e.g. WMT16) for MT pre-training
#                         (with MuST-C's own train text) and the vocabularies
#   --compare true        also stage 10: the SATE paper's comparison rows
#   --parallel-pretrain B stages 3 and 4 side by side, one CPU thread each (default: false; for CPU runs)
#   --ctc-layer K         also stage 11: E2E ST with CTC on acoustic layer K against CTC on top, and the
#                         localness per layer of both (the paper's Fig. 1b)
#   --mt-hub DIR          a downloaded Marian (OPUS-MT) model as the MT side: its vocabulary (stage 2), no MT
#                         pre-training (stage 4), its encoder and decoder in SATE (stage 5); data and exp get their
#                         own defaults (en-<tgt>-marian, exp tag sate_hub). Download first: recipes/mustc/README.md
#   --ssl-hub DIR         with --mt-hub: a downloaded wav2vec2, HuBERT or WavLM model as the acoustic encoder, on
#                         waveforms (stage 1 computes no fbank)
#   --whisper DIR         a downloaded Whisper (Hugging Face or faster-whisper directory) as the acoustic encoder
#                         of ASR and SATE (asr_whisper.yaml, st_whisper.yaml); exp tag sate_whisper. docs/whisper.md
#
# Stages: 0 prep  1 features  2 vocab  3 ASR  4 MT  5 SATE  6 average  7 decode tst-COMMON/tst-HE  8 score
#         9 translate one tst-COMMON talk with `sate translate` (SRT)
#         10 (--compare true) E2E ST baselines, SATE without KD, SATE with shrink, locality plot
#         11 (--ctc-layer K) E2E ST with CTC on layer K and on top, localness per layer

# `sh run.sh` (dash) stopped on "set: Illegal option -o pipefail"; say what to run instead.
[ -n "${BASH_VERSION:-}" ] || { echo "$0: a bash script: run it as bash $0, not with sh" >&2; exit 1; }
set -euo pipefail
# The repository root, also where $0 is a symbolic link to this file (`ln -s .../recipes/mustc/run.sh ~/work/run.sh`):
# two folders above the link, the shared stages were not found ("No such file or directory"), or another checkout's.
cd "$(dirname "$(readlink -f "$0")")/../.."
mustc_root=
tgt_lang=de
data=
exp=
exp_tag=sate
conf_dir=
src_vocab_size=10000
tgt_vocab_size=10000
joint_vocab_size=
speed_perturb=false
average_n=10
ngpu=1
# the CPUs this process may use, not OMP_NUM_THREADS (which nproc prints where it is set): an exported
# OMP_NUM_THREADS=32 was refused as "--nj 32", an option never given, and OMP_NUM_THREADS=1 made features on one CPU
nj=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
train_args=
compare=false
parallel_pretrain=false
ctc_layer=
test_sets="tst-COMMON tst-HE"
asr_extra=
mt_extra=
mt_hub=
ssl_hub=
whisper=
. recipes/lib/stages.sh
parse_options "$@"
from_caller mustc_root data exp conf_dir mt_hub ssl_hub whisper --lists asr_extra mt_extra
[ -z "$whisper" ] || [ "$exp_tag" != sate ] || exp_tag=sate_whisper
# sate prep's rule for a language code, with a letter first: `--tgt-lang -de` reached sate prep, whose advice
# ("give it as --tgt-lang=-de") the recipe cannot pass on
[[ $tgt_lang =~ ^[A-Za-z][A-Za-z_-]*$ ]] || die "--tgt-lang must be a language code (the en-<code> directory of MuST-C, e.g. de), got '$tgt_lang'"
[ -n "$mustc_root" ] || die "--mustc-root is required (the directory holding en-$tgt_lang/)"
[ -z "$ssl_hub" ] || [ -n "$mt_hub" ] || die "--ssl-hub needs --mt-hub (CTC runs over the Marian source pieces)"
if [ -n "$mt_hub" ]; then
  conf_dir=${conf_dir:-conf/mustc_hub}
  data=${data:-data/mustc/en-$tgt_lang-marian}
  [ "$exp_tag" = sate ] && exp_tag=sate_hub
fi
conf_dir=${conf_dir:-conf/mustc}
data=${data:-data/mustc/en-$tgt_lang}
exp=${exp:-exp/mustc/en-$tgt_lang/$exp_tag}

corpus=$mustc_root
prep_args=(--mustc-root "$mustc_root" --tgt-lang "$tgt_lang")
demo_dir=$mustc_root/en-$tgt_lang/data/tst-COMMON/wav
# MT pre-training reads the train manifest; with --mt-extra, MuST-C's train text and the extra pairs.
train_txt=$mustc_root/en-$tgt_lang/data/train/txt
corpus_text=("$train_txt/train.en" "$train_txt/train.$tgt_lang")
# what sate prep reads of the corpus: its text, each split's txt/ (stage 0 runs again where it changed); of the
# splits training reads, and apart of the test splits (prepared again alone where only they changed)
corpus_texts=("$mustc_root/en-$tgt_lang"/data/train*/txt/* "$mustc_root/en-$tgt_lang"/data/dev/txt/*)
test_prep_splits=(tst-COMMON)  # sate prep's test splits: tst-HE and tst-heldout (sate synth's) when present
for split in tst-HE tst-heldout; do [ ! -d "$mustc_root/en-$tgt_lang/data/$split" ] || test_prep_splits+=("$split"); done
test_texts=()
for split in "${test_prep_splits[@]}"; do test_texts+=("$mustc_root/en-$tgt_lang/data/$split/txt"/*); done

. recipes/lib/pipeline.sh
