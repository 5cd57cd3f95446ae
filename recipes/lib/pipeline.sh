# The stages shared by every recipe (recipes/mustc, recipes/libri_trans, recipes/synth). Source it after
# stages.sh and parse_options; it reads these variables (the recipe sets them; most are --name value options):
#   prep_args   array: the `sate prep` arguments naming the corpus, e.g. (--mustc-root R --tgt-lang de)
#   corpus      the corpus directory (its .done/synth stamp, when sate synth made it, is part of stage 0's)
#   demo_dir    a directory of test recordings (*.wav): stage 9 translates the first with `sate translate` (in a
#               MuST-C layout, the first talk its ../txt/SPLIT.yaml names)
#   test_sets   splits evaluated in stages 7-8 (space-separated)
#   data        data dir written by the stages (manifests, features, vocabularies)
#   src_vocab_size, tgt_vocab_size   SentencePiece sizes
#   joint_vocab_size  one SentencePiece model of this size for both sides instead (empty: two models); the
#               authors' code and the *_reference.yaml configs (tie_embeddings, adaptor.embedding decoder) use one
#   speed_perturb  true to add 0.9/1.1 speed-perturbed copies of train, on which ASR and SATE then train
#   nj          parallel jobs for feature extraction
#   asr_extra   more ASR corpora (space-separated directories: LibriSpeech subsets, or Kaldi data directories
#               with a wav.scp), prepared into $data as train_extra1, train_extra2, ...: ASR pre-training and the
#               source vocabulary use them with train
#   mt_pairs    array of text files EN TGT [EN TGT ...] (plain or gzip, any size) that MT pre-training reads
#               instead of the train manifest (empty: the manifest)
#   vocab_pairs array likewise: text the vocabularies see beyond the train manifest
#   mt_extra    more parallel text, "EN TGT [EN TGT ...]" (the --mt-extra option): MT then reads the corpus's own
#               train text (corpus_text, an array EN TGT) and these pairs, and the vocabularies a sample of them
#   mt_hub      a downloaded Marian model directory (empty: train MT ourselves); ssl_hub a downloaded wav2vec2,
#               HuBERT or WavLM directory (empty: a Conformer on fbank). Both are read by sate, not by the shell,
#               except two values of their config.json (hub_value).
#   whisper     a Whisper directory, Hugging Face's or CTranslate2's (empty: none): the acoustic encoder of ASR and
#               SATE, with $conf_dir/asr_whisper.yaml and st_whisper.yaml
mt_hub=${mt_hub:-} ssl_hub=${ssl_hub:-} asr_extra=${asr_extra:-} whisper=${whisper:-}
# Values the shell tests itself, checked before any stage: `--ngpu two` was a shell error taken as 0 (training on
# the CPU) and `--speed-perturb yes` was false, each without stopping. And the counts a later stage hands to sate:
# `--average-n x` was refused by `sate average` only after the ASR model had trained.
# Every count in decimal (stages.sh's decimal): `--ngpu 08` printed "value too great for base" and the GPU check
# before stage 0 was skipped (stage 3 refused it after prep, features and vocabularies), `--ngpu 010` was 8, and
# `--nj 08` was "not a whole number >= 1".
decimal ngpu nj average_n src_vocab_size tgt_vocab_size joint_vocab_size ctc_layer
[[ ${ngpu:-0} =~ ^[0-9]{1,4}$ ]] || die "--ngpu must be a number of GPUs (0: the CPU), got '$ngpu'"
ngpu=${ngpu:-0}
# Of any length, each count's own range below: `--nj 1234567890` (or `--average-n`, a vocabulary size of ten digits)
# was "not a whole number >= 1", which it is. Past nine digits a count is out of range without bash's arithmetic, which
# overflows.
for name in nj average_n src_vocab_size tgt_vocab_size joint_vocab_size; do  # empty: not given (joint)
  [[ ${!name:-1} =~ ^[1-9][0-9]*$ ]] || die "--${name//_/-} must be a whole number >= 1, got '${!name}'"
done
# sate features' limit on --jobs (sate.numbers.max_jobs: four per CPU, at least 16): `--nj 1000` was refused by stage 1,
# after stage 0 (and synth's stage -1, voicing the corpus)
most_jobs=$(( $(getconf _NPROCESSORS_ONLN) * 4 )); (( most_jobs >= 16 )) || most_jobs=16
(( ${#nj} <= 9 && ${nj:-1} <= most_jobs )) || die "--nj $nj: at most $most_jobs parallel jobs on this machine (four per CPU, at least 16)"
for name in src_vocab_size tgt_vocab_size joint_vocab_size; do  # sate vocab's range (MAX_VOCAB), before stage 1
  value=${!name:-2}
  (( ${#value} <= 9 && value >= 2 && value <= 1000000 )) || die "--${name//_/-} must be from 2 to 1,000,000, got '${!name}'"
done
# sate average takes a count larger than the checkpoints kept (it averages those, with a note), but not one Python
# cannot read (past 4,300 digits): that one was refused by stage 3's sate average, after the ASR model had trained.
(( ${#average_n} <= 9 )) || die "--average-n must be from 1 to 999999999 (a count past the checkpoints kept averages them all), got '$average_n'"
[[ ${ctc_layer:-0} =~ ^[0-9]{1,4}$ ]] || die "--ctc-layer must be a whole number, got '$ctc_layer'"
for name in speed_perturb compare parallel_pretrain; do
  case "${!name:-false}" in true|false) ;; *) die "--${name//_/-} must be true or false, got '${!name}'" ;; esac
done
# --train-args go to each `sate train` after the options the recipe gives it, and of an option given twice the last
# wins: `--train-args "--exp DIR"` trained every model into DIR while the recipe marked EXP/NAME trained and averaged
# and packed the checkpoints EXP/NAME held from before, exit 0; `--config`, `--init-from`, `--steps-from` and `--set
# data.dir=` replaced likewise what the recipe records each model was made from. sate train takes an option's prefix
# (`--ex`), as argparse does; a prefix of two of its options is its own error.
train_option() {  # WORD: the sate train option WORD names (before any '='), where it names one alone
  local given=${1%%=*} name found=()
  [[ $given == --?* ]] || return 0
  for name in --help --config --exp --set --init-from --steps-from --accelerator --devices --num-nodes; do
    [[ $name != "$given"* ]] || found+=("$name")
  done
  [ ${#found[@]} -ne 1 ] || printf '%s' "${found[0]}"
}
prev=
for word in $train_args; do
  option=$(train_option "$word")
  [ "$word" != -h ] || option=--help
  case "$option" in
    --config) die "--train-args: $word: the recipe gives each model its config from --conf-dir (--conf-dir DIR, with the files it names)" ;;
    --exp) die "--train-args: $word: the recipe trains each model in its folder of --exp (give the recipe --exp DIR)" ;;
    --init-from | --steps-from) die "--train-args: $word: the recipe gives $option to the models begun from others (SATE, the comparison rows) itself" ;;
    # sate train printed its help and ended 0: the recipe marked the model trained, and `sate average` found no checkpoints
    --help) die "--train-args: $word: sate train would print its help and train nothing (run \`sate train --help\` for it)" ;;
  esac
  # the mapping form too: `--set data={"dir":"/elsewhere"}` sets data.dir (no other key of data: holds "dir")
  case "$([[ $prev == *=* ]] || train_option "$prev")=$word" in
    --set=data.dir=* | *=--set=data.dir=* | *=--se=data.dir=* | \
    --set=data=*[{,\"\']dir[\"\':]* | *=--set=data=*[{,\"\']dir[\"\':]* | *=--se=data=*[{,\"\']dir[\"\':]*)
      die "--train-args: ${word#--*=}: the recipe gives every model its data directory, --data (give the recipe --data DIR)" ;;
  esac
  prev=$word
done
# What sate train's own parser would refuse in --train-args, before any stage: a config key without its --set
# (`--train-args "trainer.max_steps=2"`), an option it does not have (`--max-steps 2`), one without its value, or a
# value of --accelerator, --devices or --num-nodes it refuses stopped stage 3's sate train ("unrecognized arguments"),
# after stages 0 to 2 (hours of MuST-C prep, features and vocabularies). The --set items are read by sate config below.
valued=  # the option whose value the next word is
for word in $train_args; do
  if [ -z "$valued" ]; then
    option=$(train_option "$word")
    if [ -z "$option" ]; then
      case "$word" in
        -h) continue ;;  # refused above
        -*) die "--train-args: $word: no option of sate train, or the beginning of more than one (of its options, --train-args may give --set KEY=VALUE, --accelerator, --devices and --num-nodes)" ;;
        # `--set trainer.max_steps = 2` (YAML's spaces) was advised "a config key is set by --set =", and `--set
        # 'm.x=[1, 2]'` retried with other quotes met the same error: the words are split on spaces, quotes kept
        =*) die "--train-args: $word: not an option of sate train; --set takes KEY=VALUE as one word, without spaces around '=' (--train-args is split on spaces, and quotes in it are not read)" ;;
        *=*) die "--train-args: $word: not an option of sate train; a config key is set by --set $word" ;;
        *) die "--train-args: $word: not an option of sate train (of its options, --train-args may give --set KEY=VALUE, --accelerator, --devices and --num-nodes); --train-args is split on spaces, and quotes in it are not read: write a --set value without spaces (--set model.x=[1,2]), or set it in a config of --conf-dir" ;;
      esac
    fi
    [[ $word == *=* ]] || { valued=$option; continue; }
    value=${word#*=}
  else
    # argparse takes a word beginning with '-' for an option (a negative number aside), not for the value
    [[ $word != -* || $word =~ ^-([0-9]+|[0-9]*\.[0-9]+)$ ]] || die "--train-args: $valued needs a value (got the option $word after it)"
    option=$valued value=$word valued=
  fi
  case "$option" in
    --accelerator) case "$value" in auto | cpu | gpu) ;; *) die "--train-args: --accelerator $value: sate train takes auto, cpu or gpu (the recipe gives it from --ngpu)" ;; esac ;;
    --devices | --num-nodes) [[ $value =~ ^[+-]?[0-9]+$ ]] || die "--train-args: $option $value: sate train takes a whole number (digits 0-9)" ;;
  esac
done
[ -z "$valued" ] || die "--train-args: $valued needs a value (the last word of --train-args is the option)"
# The --set items of --train-args, split as the training commands split them (for sate config: text_for, and the
# check before stage 0 below).
train_sets=() prev=
for word in $train_args; do
  [ "$prev" != --set ] || train_sets+=(--set "$word")
  case "$word" in --set=*) train_sets+=("$word") ;; esac
  prev=$word
done
# The splits as words, never as patterns: an unquoted $test_sets made `--test-sets "*"` the current directory's
# file names. Every line's: `read -a` alone reads one line, so `--test-sets "$(cat splits.txt)"`, a split a line, decoded
# and tabled the first split alone, exit 0.
read -r -d '' -a test_splits <<< "${test_sets:-}" || true  # -d '': to the end (status 1 there)
test_sets=${test_splits[*]}  # one line, for the stages' headers
# `--test-sets ""` reached stage 8 as `sate report --splits --out ...`: "argument --splits: expected at least one"
[ ${#test_splits[@]} -gt 0 ] || [ "$stop_stage" -lt 7 ] || die "--test-sets names no split (stages 7, 8 and 10 decode and report them)"
# A split named twice was decoded twice by stage 7, and a name that is none ('../x') skipped by it, before stage 8's
# sate report refused either; sate's rule for a split name (sate.data.manifest.SPLIT_NAME), in the C locale's ranges.
split_name() { local LC_ALL=C; [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; }
# splits_in DATA: the splits DATA has manifests of (SPLIT.jsonl), for a message; "none" where it has none.
splits_in() {
  local f names=()
  for f in "$1"/*.jsonl; do [ -e "$f" ] && names+=("$(basename "$f" .jsonl)"); done
  [ ${#names[@]} -gt 0 ] && printf '%s' "${names[*]}" || printf none
}
# given_test_sets_exist: stages 7 and 10 skip a default test set the corpus lacks (MuST-C's tst-HE), but not one
# the user named: a misspelt `--test-sets tst-COMON` was "skipped" with exit 0, and nothing was decoded for it.
given_test_sets_exist() {
  [[ $given_options == *" test_sets "* ]] || return 0
  local split
  for split in "${test_splits[@]}"; do
    [ -e "$data/$split.jsonl" ] || die "--test-sets: no split $split in $data (its splits: $(splits_in "$data"))"
  done
}
for split in "${test_splits[@]}"; do
  split_name "$split" || die "--test-sets: '$split' is not a split name (letters, digits, '.', '_' and '-', not first a dot)"
done
twice=$(printf '%s\n' "${test_splits[@]}" | sort | uniq -d | head -n 1)
[ -z "$twice" ] || die "--test-sets names $twice twice"
[ -z "$whisper" ] || [ -z "$ssl_hub" ] || die "--whisper and --ssl-hub both name the acoustic encoder: give one"
[ -z "$whisper" ] || [ -z "$mt_hub" ] || die "--whisper with --mt-hub is not supported yet: use our MT model"
# train_sp is written by stage 1's `sate features --speed-perturb`, which a speech hub model's run skips (it reads
# waveforms): stage 3 stopped, after prep and vocab, on "train_sp.jsonl is missing (run `sate prep`)".
if [ -n "$ssl_hub" ] && [ "${speed_perturb:-false}" = true ]; then
  die "--speed-perturb true with --ssl-hub: its copies (train_sp) are made by stage 1's sate features, which a speech hub model's run skips; run without --speed-perturb"
fi
if [ -n "$whisper" ] && { [ "${compare:-false}" = true ] || [ -n "${ctc_layer:-}" ]; }; then
  die "--compare and --ctc-layer train Conformer rows from the ASR model; run them without --whisper"
fi
# Stages 10 and 11 come last: --compare or --ctc-layer with --mt-hub, or a CTC layer that st_e2e.yaml's acoustic
# encoder does not have (99, 0), were refused only when their stage came, after every stage before it.
[ -z "$mt_hub" ] || [ "${compare:-false}" = false ] || die "--compare compares models we pre-train; it does not run with --mt-hub"
[ -z "$mt_hub" ] || [ -z "${ctc_layer:-}" ] || die "--ctc-layer does not run with --mt-hub"
[ -z "$mt_hub" ] || [ -z "${joint_vocab_size:-}" ] || die "--joint-vocab-size does not run with --mt-hub (the Marian model's SentencePiece models are the vocabulary)"
for name in src_vocab_size tgt_vocab_size; do
  [ -z "$mt_hub" ] || unread "$name" "the Marian model's SentencePiece models (--mt-hub) are the vocabulary"
  if [ -n "${joint_vocab_size:-}" ] && [[ $given_options == *" $name "* ]]; then
    say "note: --${name//_/-} does nothing with --joint-vocab-size (one model of $joint_vocab_size pieces for both sides)"
  fi
done
[[ $given_options != *" exp "* ]] || unread exp_tag "it names the folder under exp/ that --exp replaces: give one of them"
# ./run.sh reads the demo's options this far before its setup (SATE_OPTIONS_ONLY), which the checks above do not need:
# a mistyped one (`./run.sh --trian-size 50`, `--nj abc`, `--text dingg`) was refused only after it, minutes and
# gigabytes on a fresh machine. The checks below run sate.
[ -z "${SATE_OPTIONS_ONLY:-}" ] || exit 0
if [ -n "${ctc_layer:-}" ]; then
  problem=$(sate config --config "$conf_dir/st_e2e.yaml" --set "model.ctc.layer=$ctc_layer" 2>&1 >/dev/null) ||
    die "--ctc-layer $ctc_layer: ${problem#sate config: error: }"
fi
# Whisper's encoder takes 30 s at most: speed perturbation (0.9) lengthens a 27-s segment to 30 s.
if [ -n "$whisper" ] && [ "${speed_perturb:-false}" = true ]; then prep_args+=(--max-duration 27); fi
# listed_paths NAME TEST WHAT [spaces]: each path of the list option --NAME passes `test TEST` (-d, -f), or the run stops
# naming it. The list is split on spaces: `--asr-extra "/data/my corpus"` was prepared as /data/my and corpus, and stage
# 0 refused "/data/my is not a directory" only after `sate prep` of the corpus; `--mt-extra "my text/a.en my
# text/a.de"` was read as the pairs (my, text/a.en) and (my, text/a.de), refused by stage 2's sate vocab. A word that
# is no such path but that joins the next words (one space each, as the list was split) into one that is there is
# named whole. With `spaces`, that alone: a path that is not there is looked for where a stage will read it. Stage 0
# reads --asr-extra only when it is not done already (after which the features hold it): re-running a command whose
# stage 0 was done stopped before any stage once the raw corpus was removed. Stage 2 reads the --mt-extra text each
# time it runs and stamps its contents, so it is never done without it; the trainings (stages 4, 5, 10) read it
# only when they train: looked for where one of them has not trained yet (untrained, below).
listed_paths() {
  local words k j joined
  read -r -a words <<< "${!1:-}"
  for k in "${!words[@]}"; do
    test "$2" "${words[k]}" && continue
    joined=${words[k]}
    for ((j = k + 1; j < ${#words[@]}; j++)); do
      joined+=" ${words[j]#"${caller_dir%/}/"}"  # as the command line gave it (from_caller made it absolute)
      if [ -e "$joined" ]; then
        die "--${1//_/-}: '$joined' holds a space, and the option's paths are separated by spaces: give it by a path without one (a symbolic link)"
      fi
    done
    [ "${4:-}" = spaces ] || die "--${1//_/-}: ${words[k]} is not $3"
  done
}
selected() { [ "$1" -ge "$stage" ] && [ "$1" -le "$stop_stage" ]; }
asr_extra_is="a directory (a LibriSpeech subset or a Kaldi data directory)" mt_extra_is="a file"
if selected 0; then listed_paths asr_extra -d "$asr_extra_is" spaces; fi
# untrained NAME...: one of the experiments EXP/NAME has no training record yet, so its selected stage trains it and
# reads the MT text (MT always, SATE and its comparison rows where they take text batches: a weight `sate config`
# would read, not asked before any stage). `--stage 3 --stop-stage 6` with a misspelt --mt-extra trained ASR for hours
# before stage 4 named it, and `--mt-hub` with SATE taking MT text ran stages 0 to 3 first (the review of the 25th pass).
# --force trains them again over their records.
untrained() {
  local name
  [ "$force" != true ] || return 0
  for name in "$@"; do [ -e "$exp/$name/.done-train" ] || return 0; done
  return 1
}
if { selected 2 && [ -z "$mt_hub" ]; } || { selected 4 && [ -z "$mt_hub" ] && untrained mt; } ||
   { selected 5 && untrained st; } || { [ "${compare:-false}" = true ] && selected 10 && untrained sate_nokd sate_shrink; }; then
  listed_paths mt_extra -f "$mt_extra_is"
elif selected 2 || selected 4 || selected 5 || selected 10; then listed_paths mt_extra -f "$mt_extra_is" spaces; fi
[ -n "${mt_pairs+x}" ] || mt_pairs=()
[ -n "${vocab_pairs+x}" ] || vocab_pairs=()
read -r -a extra_text <<< "${mt_extra:-}"
[ $((${#extra_text[@]} % 2)) -eq 0 ] || die "--mt-extra takes file pairs: EN TGT [EN TGT ...], got ${#extra_text[@]} files"
if [ ${#extra_text[@]} -gt 0 ]; then
  mt_pairs=("${corpus_text[@]}" "${extra_text[@]}")
  vocab_pairs+=("${extra_text[@]}")
fi

# hub_value DIR KEY: a scalar of DIR/config.json (the Marian model's d_model, a speech model's model_type), its first
# occurrence, whether the file is indented or all on one line; a key it does not hold is named. A config.json written
# on one line gave nothing: `--set model.d_model=` stopped the stage on "model.d_model must be an integer, got None",
# and an empty model_type was "model_type '' is not wav2vec2, hubert or wavlm". DIR is the user's (--mt-hub, --ssl-hub),
# no stage's output: one without a config.json was told to "Run the earlier stages first".
hub_value() {
  [ -f "$1/config.json" ] || die "$1: no config.json there (is it the downloaded model's directory? --mt-hub and --ssl-hub name one)"
  local value
  value=$(tr ',{}' '\n\n\n' < "$1/config.json" |
    sed -n "s/^[[:space:]]*\"$2\"[[:space:]]*:[[:space:]]*\"\{0,1\}\([A-Za-z0-9_]*\)\"\{0,1\}[[:space:]]*$/\1/p" | head -n 1)
  [ -n "$value" ] || die "$1/config.json: no \"$2\" (a number or a name) in it; is it the downloaded model's config?"
  printf '%s' "$value"
}

# yaml_str TEXT: TEXT as a YAML string, for --set: single-quoted, where only ' is special (written ''). A path in
# double quotes broke on a '"' in it ("the value is not valid YAML"), and a '\' began an escape.
yaml_str() { local q="'"; printf "'%s'" "${1//$q/$q$q}"; }

# yaml_list ITEM...: the items as a YAML flow list of strings, for --set.
yaml_list() {
  local out= item
  for item in "$@"; do out+="${out:+, }$(yaml_str "$item")"; done
  printf '[%s]' "$out"
}

# The extra ASR corpora: split names, and the `sate prep` option that reads each directory.
extra_splits=() extra_dirs=()
for dir in $asr_extra; do
  extra_dirs+=("$dir") extra_splits+=("train_extra${#extra_dirs[@]}")
done
# The training split of ASR and SATE: the speed-perturbed copy when asked for.
train_split=train
[ "${speed_perturb:-false}" = true ] && train_split=train_sp

# With --mt-hub the acoustic side trains at the Marian model's width with CTC over its source pieces, and
# SATE takes the Marian model's encoder and decoder; with --ssl-hub the acoustic encoder is the speech model.
asr_conf=$conf_dir/asr.yaml st_conf=$conf_dir/st.yaml asr_hub=() st_hub=()
if [ -n "$mt_hub" ]; then
  asr_hub=(--set "model.d_model=$(hub_value "$mt_hub" d_model)")
  st_hub=(--set "model.textual.path=$(yaml_str "$mt_hub")")
  if [ -n "$ssl_hub" ]; then
    ssl_type=$(hub_value "$ssl_hub" model_type)
    case "$ssl_type" in wav2vec2|hubert|wavlm) ;; *) die "--ssl-hub $ssl_hub: model_type '$ssl_type' is not wav2vec2, hubert or wavlm";; esac
    ssl=(--set "model.acoustic.type=hf_$ssl_type" --set "model.acoustic.path=$(yaml_str "$ssl_hub")")
    asr_conf=$conf_dir/asr_ssl.yaml st_conf=$conf_dir/st_ssl.yaml
    asr_hub+=("${ssl[@]}") st_hub+=("${ssl[@]}")
  fi
fi

if [ -n "$whisper" ]; then
  asr_conf=$conf_dir/asr_whisper.yaml st_conf=$conf_dir/st_whisper.yaml
  asr_hub+=(--set "model.acoustic.path=$(yaml_str "$whisper")") st_hub+=(--set "model.acoustic.path=$(yaml_str "$whisper")")
fi

# no_config CONFIG WHAT: stop for a config --conf-dir lacks, naming the configs it has. `need` said "missing CONFIG (the
# asr config). Run the earlier stages first.", advice no stage can follow.
no_config() {
  local has with
  has=$(cd "$conf_dir" 2>/dev/null && for name in *.yaml; do [ -e "$name" ] && printf ' %s' "$name"; done) || true
  case "$1" in *_whisper.yaml) with=" with the Whisper encoder" ;; *_ssl.yaml) with=" with --ssl-hub" ;; *) with= ;; esac
  die "--conf-dir $conf_dir has no $(basename "$1"), $2$with (it has:${has:- no config})"
}
# The configs of the selected training stages after the first stage run, before any stage: a --conf-dir without one
# (the synth README's conf/synth_reference with the default Whisper encoder: no asr_whisper.yaml) ran stages 0 to 2,
# then stopped at stage 3. The first stage run looks for its own as it starts (stages 3 and 4 side by side: before
# either starts).
later() { [ "$1" -gt "$stage" ] && [ "$1" -le "$stop_stage" ]; }
configs=()
if later 3; then configs+=("3 $asr_conf"); fi
if [ -z "$mt_hub" ] && later 4; then configs+=("4 $conf_dir/mt.yaml"); fi
if later 5; then configs+=("5 $st_conf"); fi
if [ "${compare:-false}" = true ] && later 10; then configs+=("10 $conf_dir/st_e2e.yaml" "10 $conf_dir/st.yaml"); fi
for config in "${configs[@]}"; do
  [ -f "${config#* }" ] || no_config "${config#* }" "the config of stage ${config%% *}"
done
# The Whisper directory read as the training stages will read it, before any stage, where one of them will train
# (no record yet): `--whisper DIR` naming a file, a missing or another model's folder ran stages 0 to 2 (hours of prep
# and features on MuST-C) before stage 3 refused it. A stage already trained needs no directory (its pack holds it).
# Read through the ASR config whichever stage trains: the SATE config's distillation needs the teacher stage 5
# gives it, and was refused here for a sound directory (review).
if [ -n "$whisper" ] && [ -f "$asr_conf" ] && { { later 3 && untrained asr; } || { later 5 && untrained st; }; }; then
  sate config --config "$asr_conf" "${asr_hub[@]}" --get model.acoustic.hub >/dev/null ||
    die "the Whisper encoder's directory $whisper, read with $asr_conf, is refused (the error above): the training stages would stop on it"
fi

# earlier N MARKER WHAT START [END]: stage N, before --stage, made WHAT with other parameters than this command line
# gives (its MARKER does not start with START and end with END): said, since the stages run now read WHAT as it is.
# `--stage 3 --tgt-vocab-size 2000` trained nothing new, every model "done already" on the old vocabularies, exit 0.
earlier() {
  [ "$1" -lt "$stage" ] && [ -e "$2" ] || return 0
  local made
  made=$(cat "$2")
  [[ $made == "$4"*"${5:-}" || $made == "$(as_before "$4")"*"$(as_before "${5:-}")" ]] && return 0
  say "note: $3 were made with other parameters than this command line gives, and stage $1, which makes them, is not run: the stages run now read them as they are (--stage $1 makes them again)"
}

# --ngpu N on a machine where torch sees fewer GPUs stopped stage 3, after hours of MuST-C prep, features and
# vocabularies. A run that prepares data and then trains a model not trained yet is checked before stage 0, with the
# Python beside the `sate` it runs (none there, as for a wrapper: stage 3 still says it). Models trained already skip
# their stage whatever --ngpu says, so a run that only decodes them on a machine without GPUs is not refused.
gpus_for_training() {
  (( ${ngpu:-0} > 0 && stage <= 2 && stop_stage >= 3 )) || return 0
  local name python gpus untrained=false names=(asr st)
  [ -n "$mt_hub" ] || names+=(mt)  # a Marian MT model is not trained here
  for name in "${names[@]}"; do
    [ -e "$exp/$name/.done-train" ] || untrained=true
  done
  [ "$untrained" = true ] || return 0
  python=$(dirname "$(command -v sate)")/python
  [ -x "$python" ] || return 0
  gpus=$("$python" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null) || return 0
  [[ $gpus =~ ^[0-9]+$ ]] && (( gpus < ngpu )) || return 0
  die "--ngpu $ngpu: torch sees $gpus GPU(s) on this machine, and stages 3 to 5 train on $ngpu: give --ngpu 0 (the CPU), or --stop-stage 2 to prepare the data here and train elsewhere"
}
gpus_for_training
# The --set items of --train-args read with the ASR config, before stage 0, by a run that prepares data and then trains:
# a key misspelt (`--set trainer.max_step=2`) or a value that is not YAML was refused by stage 3's sate train, after
# hours of MuST-C prep, features and vocabularies. Keys of one task's config alone are left to its stage.
if [ ${#train_sets[@]} -gt 0 ] && [ "$stage" -le 2 ] && [ "$stop_stage" -ge 3 ] && [ -f "$asr_conf" ]; then
  sate config --config "$asr_conf" "${asr_hub[@]}" "${train_sets[@]}" --get task >/dev/null ||
    die "--train-args: $asr_conf refuses its --set items (the error above); the training stages would stop on them"
fi

# A recipe's own stage before stage 0 (synth's -1, which voices the corpus: minutes to hours) runs here, once every
# option above is checked: sourced after it, these checks refused `--ngpu two` only once the corpus was voiced.
if declare -F before_stage_0 >/dev/null; then before_stage_0; fi

prep_params="${prep_args[*]} corpus=$(stamp "$corpus/.done/synth") asr_extra=$asr_extra"
earlier 0 "$data/.done/prep" "the manifests in $data" "$prep_params"
# corpus_texts: the text files of the corpus that sate prep reads (the recipe's array; none: the synthetic corpus, whose
# sate synth marker is stamped above). A corpus corrected or unpacked again in place (MuST-C's txt/, LibriSpeech's
# alignments.meta and translations) left stage 0 "done already", and every stage after it, on the manifests of the old
# text, exit 0. Read when stage 0 runs; a marker written before they were stamped is taken as it is.
# Those of the splits that training reads (train*, dev) alone: the later stages key on this marker, and a test split's
# reference corrected re-extracted every feature and trained every model again (days on MuST-C). A test split's text
# (test_texts, of the splits test_prep_splits) is stamped in .done/prep-tests, which no later stage reads: where it
# alone changed, those splits are prepared again, and stage 7 (which always decodes) and 8 then use them.
[ -n "${corpus_texts+x}" ] || corpus_texts=()
[ -n "${test_texts+x}" ] || test_texts=()
[ -n "${test_prep_splits+x}" ] || test_prep_splits=()
# A test split's text corrected since stage 0 prepared it, by a run that decodes or tables the test sets without stage
# 0: `--stage 7 --stop-stage 8` scored against the references of before, exit 0, without a word. Said only where every
# test text file is there: a corpus not on this machine (prepared on another, docs/recipes.md) or removed since stage 0
# is no change, and its note's `--stage 0` would have prepared (or refused) the whole corpus.
all_there() { local f; for f in "$@"; do [ -f "$f" ] || return 1; done; }
if [ "$stage" -gt 0 ] && { selected 7 || selected 8; } && [ ${#test_texts[@]} -gt 0 ] && [ -e "$data/.done/prep-tests" ] &&
   all_there "${test_texts[@]}" &&
   [ "$(cat "$data/.done/prep-tests")" != "splits=${test_prep_splits[*]} texts=$(stamp "${test_texts[@]}")" ]; then
  # what stage 0 then does: those splits alone where the rest of its marker is the same (is_done's test below)
  prep_now=$prep_params
  [ ${#corpus_texts[@]} -eq 0 ] || prep_now+=" texts=$(stamp "${corpus_texts[@]}")"
  if same_marker "$data/.done/prep" "$prep_now" || same_marker "$data/.done/prep" "$prep_params"; then
    again="--stage 0 --stop-stage 0 prepares those splits again, and nothing else"
  else
    again="--stage 0 prepares the whole corpus again, as its training text or stage 0's options differ too, and every stage after it runs again"
  fi
  say "note: the test splits' text in $corpus (${test_prep_splits[*]}) is not what stage 0 prepared in $data, and stage 0 is not run: stages 7 and 8 read the manifests as they are, with the references of then ($again)"
fi
if run_stage 0 "prep: ${prep_args[*]} -> manifests in $data${asr_extra:+ (and ASR corpora: $asr_extra)}"; then
  params=$prep_params
  [ ${#corpus_texts[@]} -eq 0 ] || params+=" texts=$(stamp "${corpus_texts[@]}")"
  tests=
  [ ${#test_texts[@]} -eq 0 ] || tests="splits=${test_prep_splits[*]} texts=$(stamp "${test_texts[@]}")"
  if is_done "$data/.done/prep" "$params" || is_done "$data/.done/prep" "$prep_params"; then
    if [ -n "$tests" ] && [ ${#test_prep_splits[@]} -gt 0 ] && ! is_done "$data/.done/prep-tests" "$tests"; then
      say "  the test splits' text: ${test_prep_splits[*]} prepared again (features, vocabularies and models stay)"
      sate prep "${prep_args[@]}" --splits "${test_prep_splits[@]}" --out "$data"
      mark_done "$data/.done/prep-tests" "$tests"
    fi
  else
    listed_paths asr_extra -d "$asr_extra_is"  # before the corpus's prep
    sate prep "${prep_args[@]}" --out "$data"
    for k in "${!extra_dirs[@]}"; do
      dir=${extra_dirs[$k]}
      [ -d "$dir" ] || die "--asr-extra: $dir is not a directory"
      kind=--librispeech; [ -e "$dir/wav.scp" ] && kind=--kaldi-dir
      say "  $dir -> ${extra_splits[$k]}"
      sate prep "$kind" "$dir" --splits "${extra_splits[$k]}" --out "$data"
    done
    [ -z "$tests" ] || mark_done "$data/.done/prep-tests" "$tests"
    mark_done "$data/.done/prep" "$params"
  fi
fi

[ -n "$ssl_hub" ] || earlier 1 "$data/.done/features" "the features in $data" "speed_perturb=$speed_perturb prep=$(stamp "$data/.done/prep")"
if [ -n "$ssl_hub" ] && run_stage 1 "features: none, $ssl_hub reads 16 kHz waveforms from the talk wavs"; then
  need "$data/.done/prep" "manifests from stage 0"
elif run_stage 1 "features: 80-dim fbank and global CMVN in $data/fbank"; then
  need "$data/.done/prep" "manifests from stage 0"
  params="speed_perturb=$speed_perturb prep=$(stamp "$data/.done/prep")"
  if ! is_done "$data/.done/features" "$params"; then
    sp=(); [ "$speed_perturb" = true ] && sp=(--speed-perturb)
    sate features --data "$data" --jobs "$nj" "${sp[@]}"
    mark_done "$data/.done/features" "$params"
  fi
fi

if [ -n "$mt_hub" ]; then
  vocab_desc="the Marian model's, with CTC over its source pieces"; vocab_sizes=(--marian "$mt_hub")
  vocab_params="marian=$mt_hub"
elif [ -n "${joint_vocab_size:-}" ]; then
  vocab_desc="one joint model of $joint_vocab_size"; vocab_sizes=(--joint "$joint_vocab_size")
  vocab_params="joint=$joint_vocab_size"
else
  vocab_desc="source $src_vocab_size, target $tgt_vocab_size"
  vocab_sizes=(--src-size "$src_vocab_size" --tgt-size "$tgt_vocab_size")
  vocab_params="src=$src_vocab_size tgt=$tgt_vocab_size"
fi
# the text's contents are looked at when stage 2 runs (they may be gigabytes, which a later stage alone need not read);
# a marker of before the twenty-third hostile pass, which names no contents, is of these parameters too
earlier 2 "$data/.done/vocab" "the vocabularies in $data" "$vocab_params text=${vocab_pairs[*]}" " prep=$(stamp "$data/.done/prep")"
if run_stage 2 "vocab: SentencePiece $vocab_desc"; then
  need "$data/.done/prep" "manifests from stage 0"
  # the text's contents too: an --mt-extra file replaced or grown in place left the vocabularies, and so MT, "done already".
  # Without MT text the marker is as before that rule (the trainings' records name it: they stay done).
  params="$vocab_params text=${vocab_pairs[*]}${vocab_pairs[*]:+ $(stamp "${vocab_pairs[@]}")} prep=$(stamp "$data/.done/prep")"
  if ! is_done "$data/.done/vocab" "$params"; then
    extra=()
    if [ -z "$mt_hub" ]; then
      for ((k = 0; k < ${#vocab_pairs[@]}; k += 2)); do extra+=(--mt-text "${vocab_pairs[k]}" "${vocab_pairs[k + 1]}"); done
      [ ${#extra_splits[@]} -gt 0 ] && extra+=(--src-splits "${extra_splits[@]}")
    fi
    sate vocab --data "$data" "${vocab_sizes[@]}" "${extra[@]}"
    mark_done "$data/.done/vocab" "$params"
  fi
fi

# ------------------------------------------------------------------ training
# Reads: conf_dir (asr.yaml, mt.yaml, st.yaml), exp (experiment root), ngpu (0 = CPU), average_n,
# train_args (extra `sate train` arguments, e.g. "--set trainer.max_minutes=5").
device_args=(--accelerator cpu)
[ "${ngpu:-0}" -gt 0 ] && device_args=(--accelerator gpu --devices "$ngpu")

# init_models ARGS...: the model files that `--init-from SIDE=PATH` names among ARGS, into the array init_models, and
# the record of the run that `--steps-from EXP` names (EXP/.done-train), into steps_from.
init_models() {
  local prev= arg
  init_models=() steps_from=
  for arg in "$@"; do
    [ "$prev" != --init-from ] || init_models+=("${arg#*=}")
    [ "$prev" != --steps-from ] || steps_from=$arg/.done-train
    prev=$arg
  done
}

# train_model NAME CONFIG [sate train args...]: train (or resume) into $exp/NAME, the output also in
# $exp/NAME/train.log; skipped when done with the same config, data, arguments and --init-from models. An
# experiment begun from other --init-from models (exp/asr trained or averaged again since) is refused: it was
# "done already", and SATE stayed the one made from the old ASR model beside a cascade of the new one; a resume
# would only continue it (sate train takes init: for a fresh start alone).
train_model() {
  local name=$1 config=$2; shift 2
  [ -f "$config" ] || no_config "$config" "the $name config"
  # a model trained or averaged again under the same path is another starting point (and another teacher)
  local inits=
  init_models "$@"
  [ ${#init_models[@]} -eq 0 ] || inits=$(stamp "${init_models[@]}")
  local params="config=$(stamp "$config") data=$data $(stamp "$data/.done/features" "$data/.done/vocab") args=$*"
  params+=" $train_args${inits:+ init=$inits}"
  # a comparison row trains for as many updates as SATE: SATE trained on since (--train-args) is another count
  [ -z "$steps_from" ] || params+=" steps=$(stamp "$steps_from")"
  if is_done "$exp/$name/.done-train" "$params"; then return 0; fi
  if [ -n "$inits" ] && [ -d "$exp/$name/checkpoints" ] && [ -e "$exp/$name/.init-from" ] && \
     [ "$(cat "$exp/$name/.init-from")" != "$inits" ]; then
    die "$exp/$name was begun from other models than ${init_models[*]} hold now (trained or averaged again since): move $exp/$name away to train it from them"
  fi
  [ -z "$inits" ] || mark_done "$exp/$name/.init-from" "$inits"
  # --force or changed inputs: sate train resumes the run there (a changed vocabulary is then refused), never
  # starts it anew over its checkpoints; said, so the user knows to move it away to train from scratch
  [ ! -d "$exp/$name/checkpoints" ] || say "  $exp/$name holds a run, which sate train resumes: move $exp/$name away to train it anew"
  local cmd=(sate train --config "$config" --exp "$exp/$name" --set "data.dir=$(yaml_str "$data")" "${device_args[@]}" "$@")
  # shellcheck disable=SC2206  # --train-args is a string of options, split on purpose
  cmd+=($train_args)
  logged "$exp/$name/train.log" "${cmd[@]}"
  mark_done "$exp/$name/.done-train" "$params"
}

# average_and_pack NAME: the last $average_n checkpoints -> $exp/NAME/model.pt -> $exp/NAME/pack.
average_and_pack() {
  local name=$1 params
  params="n=$average_n trained=$(cat "$exp/$name/.done-train")"
  packing=$name  # side by side, a failure from here on is no training's (pretrain_job)
  # model.pt removed since (to save disk once SATE was trained): averaged again, the same bytes, from the checkpoints;
  # it was "done already", and stage 5 and stage 10, which read it, sent the user back to this stage in vain
  if [ "$force" != true ] && [ ! -e "$exp/$name/model.pt" ] && [ -e "$exp/$name/pack" ] && \
     [ "$(cat "$exp/$name/.done-pack" 2>/dev/null)" = "$params" ]; then
    say "  $exp/$name/model.pt is gone: averaged again from $exp/$name's checkpoints (its pack is done already)"
    sate average --exp "$exp/$name" --last "$average_n" --out "$exp/$name/model.pt"
    packing=
    return 0
  fi
  if is_done "$exp/$name/.done-pack" "$params"; then packing=; return 0; fi
  sate average --exp "$exp/$name" --last "$average_n" --out "$exp/$name/model.pt"
  sate pack --model "$exp/$name/model.pt" --data "$data" --out "$exp/$name/pack"
  mark_done "$exp/$name/.done-pack" "$params"
  packing=
}

# Stages 3 and 4 are independent. With parallel_pretrain true they train side by side, each process on one
# thread: a training process gains little from a second CPU core (measured on the demo's ASR: 11.8k frames/s
# on one thread, 14k on two), so two of them nearly double the throughput. Each one's output goes to its
# train.log as always; on the terminal the two interleave.
# Where ASR and SATE train when it is not the configs' train: train_sp, and for ASR the extra ASR corpora too.
asr_train=() st_train=()
[ "$train_split" != train ] && st_train=(--set "data.train=$train_split")
[ "$train_split" != train ] || [ ${#extra_splits[@]} -gt 0 ] && \
  asr_train=(--set "data.train=$(yaml_list "$train_split" "${extra_splits[@]}")")

# What stages 3 and 4 read from the stages before them; side by side, looked for before either starts: each stage's
# subshell said what it missed, and the recipe then "ASR pre-training failed (see EXP/asr/train.log)", a log never made.
asr_needs() {
  [ -n "$ssl_hub" ] || need "$data/.done/features" "features from stage 1"
  need "$data/.done/vocab" "vocabularies from stage 2"
  [ -f "$asr_conf" ] || no_config "$asr_conf" "the config of stage 3"
}
pretrain_asr() {
  asr_needs
  train_model asr "$asr_conf" "${asr_train[@]}" "${asr_hub[@]}"
  average_and_pack asr
}

# The MT text (mt_pairs: file pairs), for MT pre-training and for SATE's text batches (model.loss.mt_text_weight);
# without it both read the train manifest's transcripts and translations.
mt_text=() pairs=
for ((k = 0; k < ${#mt_pairs[@]}; k += 2)); do
  pairs+="${pairs:+, }$(yaml_list "${mt_pairs[k]}" "${mt_pairs[k + 1]}")"
done
[ -n "$pairs" ] && mt_text=(--set "data.mt_text=[$pairs]")

pretrain_mt() {
  need "$data/.done/vocab" "vocabularies from stage 2"
  train_model mt "$conf_dir/mt.yaml" "${mt_text[@]}"
  average_and_pack mt
}

run_asr=false run_mt=false
run_stage 3 "ASR pre-training (acoustic encoder + CTC) in $exp/asr" && run_asr=true
if [ -n "$mt_hub" ]; then
  run_stage 4 "MT pre-training: none, the MT side is the Marian model in $mt_hub" || true
elif run_stage 4 "MT pre-training (textual encoder + decoder) in $exp/mt"; then
  run_mt=true
fi
# stop_job PID: end a stage running in the background and the commands it runs. A `kill` of its subshell alone
# left the subshell's `sate train` running on after the recipe had stopped, training for hours and holding its
# experiment's lock.
stop_job() {
  pkill -TERM -P "$1" 2>/dev/null || true
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
if [ "${parallel_pretrain:-false}" = true ] && $run_asr && $run_mt; then
  asr_needs  # stage 4 needs no more than the vocabularies, which stage 3 needs too
  say "  stages 3 and 4 run side by side, one CPU thread each"
  # `kill` of the recipe (SIGTERM, or SIGHUP to it alone) ended the recipe and nothing else: both stages ran on behind
  # it, training, averaging and packing for hours, each holding its experiment's lock. It now stops them first.
  # Ctrl-C too (SIGINT to every process of the job): the stages run in the background, where bash has SIGINT ignored
  # (a shell without job control), in each sate train too, and the recipe's bash, waiting, went on: Ctrl-C did
  # nothing, and the trainings ran on. The traps are set before the stages start: a kill just after they started
  # ended the recipe alone (the subshells do not inherit them). Ctrl-C ends the recipe by SIGINT itself, as in
  # sequential mode: an `exit 130` is "the child handled it" to a calling bash, whose loop over runs (seeds) went on
  # and started the next run's trainings.
  asr_job='' mt_job=''
  stop_pretraining() {  # STATUS [SIGNAL: end by it]
    trap - TERM HUP INT
    [ -z "$asr_job" ] || stop_job "$asr_job"
    [ -z "$mt_job" ] || stop_job "$mt_job"
    say "  stopped: stages 3 and 4 ended unfinished"
    [ -z "${2:-}" ] || kill "-$2" "$$"
    exit "$1"
  }
  trap 'stop_pretraining 143' TERM
  trap 'stop_pretraining 129' HUP
  trap 'stop_pretraining 130 INT' INT
  # pretrain_job NAME: one stage on one thread, in a subshell; a failed `sate average` or `sate pack` after its
  # training exits 3 (pack_failed), so that the recipe does not send the user to a train.log that says the
  # training ended well (24th hostile pass)
  pack_failed=3
  pretrain_job() {
    packing=
    trap 'rc=$?; [ "$rc" = 0 ] || [ -z "$packing" ] || exit "$pack_failed"' EXIT
    export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
    "pretrain_$1"
  }
  pretrain_failed() {  # NAME RC
    [ "$2" != "$pack_failed" ] || die "${1^^} pre-training trained, then averaging or packing it into $exp/$1 failed (the error above)"
    die "${1^^} pre-training failed (see $exp/$1/train.log)"
  }
  (pretrain_job asr) & asr_job=$!
  (pretrain_job mt) & mt_job=$!
  # Whichever ends first is waited for (`wait -n`, bash 4.3), so a failure stops the other at once, not once the
  # other has ended (hours later). `wait -n` says that one ended, not reliably which: with both ended before it,
  # bash 5.2 answers 127 having reaped both, and `kill -0` named ASR for MT's failure (a flaky test, 26th hostile
  # pass). Each stage's own status is `wait PID`'s, which bash keeps for a job it has reaped.
  declare -A pretrain_pid=([asr]=$asr_job [mt]=$mt_job) other=([asr]=mt [mt]=asr)
  running=(asr mt)
  while [ ${#running[@]} -gt 0 ]; do
    any=0
    wait -n || any=$?
    still=()
    for name in "${running[@]}"; do
      # 127: no job left to wait for, so all have ended; a job still answering `kill -0` runs (or awaits reaping)
      if [ "$any" != 127 ] && kill -0 "${pretrain_pid[$name]}" 2>/dev/null; then still+=("$name"); continue; fi
      rc=0
      wait "${pretrain_pid[$name]}" || rc=$?
      [ "$rc" = 0 ] || { stop_job "${pretrain_pid[${other[$name]}]}"; pretrain_failed "$name" "$rc"; }
    done
    running=("${still[@]}")
  done
  trap - TERM HUP INT
else
  if $run_asr; then pretrain_asr; fi
  if $run_mt; then pretrain_mt; fi
fi

# SATE: acoustic encoder and CTC from ASR; source embedding, textual encoder and decoder from MT; the same
# two models as frozen teachers where the config sets distillation weights (model.loss.kd).
init_from=(--init-from "asr=$exp/asr/model.pt" --init-from "mt=$exp/mt/model.pt")
[ -n "$mt_hub" ] && init_from=(--init-from "asr=$exp/asr/model.pt")

# SATE takes the MT text too where its config trains on text batches beside the speech (model.loss.mt_text_weight):
# text_for CONFIG sets st_text to the arguments that pass it.
# The weight is read with the --set items of --train-args (train_sets, above): a weight that
# --train-args gave (`--set model.loss.mt_text_weight=0.5` over a config without MT text batches) had SATE draw its
# text batches from the train manifest, not from the MT text, without a word; and one it set to 0 was refused by
# sate train for the MT text the recipe passed, which the user never gave.
text_for() {
  st_text=()
  local weight
  weight=$(sate config --config "$1" "${init_from[@]}" "${st_hub[@]}" "${train_sets[@]}" --get model.loss.mt_text_weight) || exit 1
  case "$weight" in 0.0 | -0.0) ;; *) st_text=("${mt_text[@]}") ;; esac  # -0.0 is no weight either
}

if run_stage 5 "SATE training from the ASR and ${mt_hub:+Marian }MT models in $exp/st"; then
  need "$exp/asr/model.pt" "the ASR model of stage 3"
  [ -n "$mt_hub" ] || need "$exp/mt/model.pt" "the MT model of stage 4"
  [ -f "$st_conf" ] || no_config "$st_conf" "the config of stage 5"  # before sate config reads it
  text_for "$st_conf"
  train_model st "$st_conf" "${st_train[@]}" "${init_from[@]}" "${st_hub[@]}" "${st_text[@]}"
fi

# current_pack NAME STAGE: EXP/NAME/pack is the average that STAGE made of the run EXP/NAME holds now. `--stage 5
# --stop-stage 5` with more updates (--train-args), then `--stage 7`, evaluated the pack made before, exit 0, its
# scores tabled as the new model's. One of another --average-n than this command line's is said. A pack made by hand
# (no records) is taken as it is.
current_pack() {
  [ -e "$exp/$1/.done-pack" ] && [ -e "$exp/$1/.done-train" ] || return 0
  local packed
  packed=$(cat "$exp/$1/.done-pack")
  [ "${packed#* trained=}" = "$(cat "$exp/$1/.done-train")" ] ||
    die "$exp/$1/pack was made before the run $exp/$1 holds was trained again: run from --stage $2 to pack it again"
  [ "${packed%% trained=*}" = "n=$average_n" ] ||
    say "note: $exp/$1/pack averages ${packed%% trained=*} checkpoints, not --average-n $average_n (--stage $2 packs it again)"
}

# made_from_old SYSTEM: why the model EXP/SYSTEM holds is not made from what it is made from as they are now, or nothing:
# SATE and the rows begun from exp/asr and exp/mt (EXP/SYSTEM/.init-from) since those were trained or averaged again,
# a comparison row trained for SATE's update count (--steps-from) since SATE was trained again. Stage 5 and stage 10
# see it only when they run: `--stage 3 --stop-stage 4` (more updates), then `--stage 7`, tabled SATE made from the old
# ASR and MT models beside a cascade of the new ones, exit 0, and `--stage 5 --stop-stage 8` the rows of SATE's old count.
made_from_old() {
  local inits=() record
  case "$1" in
    st | sate_nokd | sate_shrink) inits=("${init_from[@]}") ;;
    e2e_asr) inits=(--init-from "asr=$exp/asr/model.pt") ;;
  esac
  [ ${#inits[@]} -eq 0 ] || init_models "${inits[@]}"
  # a model that is gone (removed to save disk once SATE was trained) is no newer one: nothing to compare with
  if [ ${#inits[@]} -gt 0 ] && [ -e "$exp/$1/.init-from" ] && [ -z "$(gone "${init_models[@]}")" ]; then
    if [ "$(cat "$exp/$1/.init-from")" != "$(stamp "${init_models[@]}")" ]; then
      printf 'trained from other models than %s hold now (trained or averaged again since)' "${init_models[*]}"
      return
    fi
  fi
  record=$(cat "$exp/$1/.done-train" 2>/dev/null) || return 0
  [[ $record =~ \ steps=([0-9a-f]{12})$ ]] || return 0
  [ "${BASH_REMATCH[1]}" = "$(stamp "$exp/st/.done-train")" ] ||
    printf 'trained for as many updates as %s had before it was trained again' "$exp/st"
}
# gone FILE...: those of the FILEs that are not there.
gone() { local f; for f in "$@"; do [ -e "$f" ] || printf '%s ' "$f"; done; }
# current_sate: stop where SATE (EXP/st) was trained from other ASR and MT models than those now in their experiments,
# before a stage decodes it beside the cascade of those or trains the comparison rows from them. Where one of them is
# gone, that is said and SATE taken as it is: with exp/asr/model.pt and exp/mt/model.pt removed once SATE was trained
# and packed, stage 7 said they were "trained or averaged again since" and sent the user to stage 5, which needs them.
current_sate() {
  local old missing
  old=$(made_from_old st)
  [ -z "$old" ] || die "$exp/st was $old: move $exp/st away and run from --stage 5 to train SATE from them"
  init_models "${init_from[@]}"
  missing=$(gone "${init_models[@]}")
  [ -z "$missing" ] || [ ! -e "$exp/st/.init-from" ] ||
    say "note: ${missing% } not there: whether $exp/st was trained from the models at those paths is not checked"
}

# decoded_by SYSTEM: what a decoding of SYSTEM is made from now (its packs' records and the data), which stages 7 and 10
# record beside each and stage 8 compares: a decoding made before the model was trained and packed again
# (`--stage 5 --stop-stage 6`, then `--stage 8`) was tabled as the new model's, exit 0.
decoded_by() {
  if [ "$1" = cascade ]; then
    printf 'asr=%s mt=%s data=%s' "$(cat "$exp/asr/.done-pack" 2>/dev/null)" "$(cat "$exp/mt/.done-pack" 2>/dev/null)" "$data"
  else
    printf 'pack=%s data=%s' "$(cat "$exp/$1/.done-pack" 2>/dev/null)" "$data"
  fi
}

if run_stage 6 "checkpoint averaging and packing of $exp/st"; then
  need "$exp/st/.done-train" "the SATE training of stage 5"
  average_and_pack st
fi

# ------------------------------------------------------------------ evaluation
if run_stage 7 "decode ${test_sets} with SATE and with the cascade (ASR then MT)"; then
  need "$exp/st/pack" "the packed SATE model of stage 6"
  current_pack st 6
  current_sate
  [ ! -e "$exp/mt/pack" ] || { current_pack asr 3; current_pack mt 4; }  # the cascade's
  given_test_sets_exist
  for split in "${test_splits[@]}"; do
    [ -e "$data/$split.jsonl" ] || { say "  no $split in $data, skipped"; continue; }
    logged "$exp/st/decode_$split/decode.log" \
      sate evaluate --model "$exp/st/pack" --data "$data" --split "$split" --out "$exp/st/decode_$split"
    mark_done "$exp/st/decode_$split/.done" "$(decoded_by st)"
    if [ ! -e "$exp/mt/pack" ]; then say "  no MT pack ($exp/mt/pack): no cascade"; continue; fi
    logged "$exp/cascade/decode_$split/decode.log" \
      sate evaluate --model "$exp/asr/pack" --mt-model "$exp/mt/pack" --data "$data" --split "$split" \
      --out "$exp/cascade/decode_$split"
    mark_done "$exp/cascade/decode_$split/.done" "$(decoded_by cascade)"
  done
fi

# current_decodings PATTERN: stop where a decoding of a --test-sets split by a system that PATTERN matches (in EXP), whose
# making stage 7 or 10 recorded, is not of that system's model as it is now, naming the stage to run again; a decoding
# the recipe did not make (no record) is tabled as it is.
current_decodings() {
  local split marker system record now why old again
  for split in "${test_splits[@]}"; do
    for marker in "$exp"/$1/"decode_$split/.done"; do
      [ -e "$marker" ] || continue
      system=$(basename "$(dirname "$(dirname "$marker")")")
      record=$(cat "$marker") now=$(decoded_by "$system") why=
      # the data directory compared as a place: `--data DIR` given once and left to its default once name it two ways
      [ "${record% data=*}" != "${now% data=*}" ] || [ "${record##* data=}" = "${now##* data=}" ] \
        || [ "${record##* data=}" -ef "${now##* data=}" ] || why="from the data directory ${record##* data=}, not $data"
      [ "${record% data=*}" = "${now% data=*}" ] || why="before $system's model was packed again"
      if [ -z "$why" ] && old=$(made_from_old "$system") && [ -n "$old" ]; then
        case "$old" in
          *updates*) again="run --compare true --stage 10 to train it on and decode it again" ;;
          *) again="move $exp/$system away and run $( [ "$system" = st ] && printf 'from --stage 5' ||
                                                       printf -- '--compare true --stage 10') to train it from them" ;;
        esac
        die "$(dirname "$marker") is of a model $old: $again"
      fi
      [ -n "$why" ] || continue
      case "$system" in st | cascade) again="--stage 7" ;; *) again="--compare true --stage 10" ;; esac
      die "$(dirname "$marker") was decoded $why: run from $again to decode it again"
    done
  done
}

if run_stage 8 "score: results table in $exp/results.md"; then
  decoded=("$exp"/*/decode_*/results.json)  # unmatched: the pattern itself, named as missing
  need "${decoded[0]}" "the test sets decoded by stage 7"
  # each split of --test-sets that some system decoded: `sate report` leaves out a split none did, so `--stage 8
  # --test-sets "tst-COMMON dev"` without dev decoded wrote a table of tst-COMMON alone, exit 0. A default test set
  # the corpus lacks (MuST-C's tst-HE), which stage 7 skips, is left out here too.
  for split in "${test_splits[@]}"; do
    decoded=("$exp"/*/"decode_$split"/results.json)
    [ ! -e "${decoded[0]}" ] || continue
    [ -e "$data/$split.jsonl" ] || [[ $given_options == *" test_sets "* ]] || continue
    die "no system in $exp has decoded $split: run from --stage 7 to decode it, or leave it out of --test-sets"
  done
  current_decodings "*"
  # curves where some system has training logs: packs trained elsewhere had the report refuse "no training logs"
  logs=("$exp"/*/logs/version_*/metrics.csv)
  curves=()
  [ ! -e "${logs[0]}" ] || curves=(--curves "$exp/curves.png")
  sate report --exp "$exp" --splits "${test_splits[@]}" --out "$exp/results.md" "${curves[@]}"
fi

# json_string TEXT: the body of a JSON string (between its quotes) decoded: \" \\ \/ \b \f \n \r \t and \uXXXX.
json_string() {
  local text=$1 out= c
  [[ $text == *\\* ]] || { printf '%s' "$text"; return; }
  while [ -n "$text" ]; do
    c=${text:0:1} text=${text:1}
    if [ "$c" != '\' ]; then out+=$c; continue; fi
    c=${text:0:1} text=${text:1}
    case "$c" in
      u) out+=$(printf "\\u${text:0:4}") text=${text:4} ;;
      b) out+=$'\b' ;; f) out+=$'\f' ;; n) out+=$'\n' ;; r) out+=$'\r' ;; t) out+=$'\t' ;;
      *) out+=$c ;;
    esac
  done
  printf '%s' "$out"
}

# first_audio MANIFEST: the audio of the first row of a manifest sate prep wrote (`{"id": "...", "audio": "...", ...}`,
# one JSON object a line), or nothing. Stage 9 read the first talk from the split's yaml with a regex of its own, which
# disagreed with sate prep on lines prep reads (JSON-style quoted keys, a BOM then a blank line, a quoted speaker name
# holding `wav: "..."`) and took the left-over talk of another corpus; what prep wrote cannot disagree with it.
first_audio() {
  local line q='"([^"\\]|\\.)*"'
  line=$(head -n 1 "$1" 2>/dev/null) || return 0
  [[ $line =~ ^\{\"id\":\ $q,\ \"audio\":\ \"(([^\"\\]|\\.)*)\" ]] || return 0
  json_string "${BASH_REMATCH[2]}"
}

if run_stage 9 "translate one test recording with sate translate"; then
  need "$exp/st/pack" "the packed SATE model of stage 6"
  current_pack st 6
  talks=("$demo_dir"/*.wav)
  demo_audio=${talks[0]}
  # A MuST-C layout names the split's talks in txt/SPLIT.yaml: the first talk of the split as sate prep read it (the
  # first row of DATA/SPLIT.jsonl), not the first wav of the folder, which was a talk of the corpus voiced there before
  # (sate synth over a corpus of other sizes leaves its talks: stage 9 translated ted_19.wav of the old corpus, not
  # ted_5.wav of this one). A talk that is not there (removed since stage 0 read it; no stage makes it) or not in the
  # folder is said, and the first wav of the folder translated.
  split=$(basename "$(dirname "$demo_dir")")
  if [ -f "$(dirname "$demo_dir")/txt/$split.yaml" ]; then
    first=$(first_audio "$data/$split.jsonl")
    if [ -n "$first" ] && [ -f "$first" ] && [ "$(dirname "$first")" -ef "$demo_dir" ]; then
      demo_audio=$first
    elif [ -n "$first" ] && [ -f "$demo_audio" ]; then
      say "note: $first, the first talk of $data/$split.jsonl, is not in $demo_dir: ${demo_audio##*/} is translated instead"
    fi
  fi
  need "$demo_audio" "a test recording in $demo_dir"
  sate translate --model "$exp/st/pack" --format srt --out "$exp/demo_talk.srt" "$demo_audio"
  say "  $demo_audio -> $exp/demo_talk.srt"
  head -n 12 "$exp/demo_talk.srt"
fi

# ------------------------------------------------------------------ the paper's comparison (--compare true)
# Rows on the same data: E2E ST from scratch and with the ASR encoder (acoustic encoder -> decoder, the
# ESPnet/fairseq baseline), the cascade and SATE with distillation (both from the stages above), SATE
# without distillation, and SATE with the shrink adaptor. Then the locality analysis of ASR, MT and SATE.
if [ "${compare:-false}" = true ] && run_stage 10 "comparison rows of the SATE paper in $exp"; then
  need "$exp/st/pack" "the SATE model of stages 5-6"
  current_pack st 6  # the rows are tabled against it, and the locality analysis reads its model.pt
  # The rows begun from the ASR and MT models and the locality analysis read them: with them removed (once SATE was
  # packed) a row died on "begun from other models than ... hold now (trained or averaged again since)", which was false.
  init_models "${init_from[@]}"
  missing=$(gone "${init_models[@]}")
  [ -z "$missing" ] || die "${missing% } not there: stage 10 trains rows from them and analyzes them; run from --stage 3 (--stop-stage 4), which averages them again from their checkpoints"
  current_sate
  for config in "$conf_dir/st_e2e.yaml" "$conf_dir/st.yaml"; do  # both before the first row trains
    [ -f "$config" ] || no_config "$config" "the config of stage 10"
  done
  given_test_sets_exist  # before hours of training the rows
  # SATE's and the cascade's decodings, which stage 7 made, are tabled with the rows: `--stage 5 --stop-stage 6` (SATE
  # trained and packed again), then `--compare true --stage 10`, tabled the old pack's scores as SATE's, exit 0
  current_decodings st
  current_decodings cascade
  # Every row trains for exactly as many updates as the SATE model of stage 5 (not for a time budget, which
  # would depend on the machine's load), so the rows are compared at equal training.
  same=(--steps-from "$exp/st" "${st_train[@]}")
  train_model e2e_scratch "$conf_dir/st_e2e.yaml" "${same[@]}"
  train_model e2e_asr "$conf_dir/st_e2e.yaml" "${same[@]}" --init-from "asr=$exp/asr/model.pt"
  text_for "$conf_dir/st.yaml"  # the SATE rows take what stage 5's SATE took
  train_model sate_nokd "$conf_dir/st.yaml" "${same[@]}" "${init_from[@]}" "${st_text[@]}" \
    --set model.loss.kd.asr_weight=0 --set model.loss.kd.mt_weight=0
  train_model sate_shrink "$conf_dir/st.yaml" "${same[@]}" "${init_from[@]}" "${st_text[@]}" \
    --set model.adaptor.type=shrink
  for system in e2e_scratch e2e_asr sate_nokd sate_shrink; do
    average_and_pack "$system"
    for split in "${test_splits[@]}"; do
      [ -e "$data/$split.jsonl" ] || continue
      # done with this very pack: a row packed again since (another --average-n) kept its old results
      params=$(decoded_by "$system")
      is_done "$exp/$system/decode_$split/.done" "$params" && continue
      logged "$exp/$system/decode_$split/decode.log" \
        sate evaluate --model "$exp/$system/pack" --data "$data" --split "$split" --out "$exp/$system/decode_$split"
      mark_done "$exp/$system/decode_$split/.done" "$params"
    done
  done
  # The paper's Fig. 1(a): ASR (local), MT (global), and an E2E ST encoder trained with CTC (from scratch, so
  # its localness is its own, not inherited from the ASR model); SATE's two encoders beside them.
  sate analyze locality --model "$exp/asr/model.pt" "$exp/mt/model.pt" "$exp/e2e_scratch/model.pt" \
    "$exp/st/model.pt" --data "$data" --split dev --max-utts 200 --out "$exp/locality"
  sate report --exp "$exp" --splits "${test_splits[@]}" --out "$exp/results.md"
fi

# ------------------------------------------------------------------ where CTC sits (--ctc-layer K)
# The paper's Fig. 1(b): the E2E ST model trained with CTC on acoustic layer K (the layers above continue
# from there) against the same model with CTC on top (e2e_scratch, shared with stage 10), both for as many
# updates as SATE; then the localness per layer of both acoustic encoders. Layers below the CTC layer are
# expected to be local, those above it more global.
if [ -n "${ctc_layer:-}" ] && run_stage 11 "E2E ST with CTC on acoustic layer $ctc_layer and on top in $exp"; then
  need "$exp/st/.done-train" "the SATE training of stage 5 (its update count is the budget)"
  same=(--steps-from "$exp/st" "${st_train[@]}")
  train_model e2e_scratch "$conf_dir/st_e2e.yaml" "${same[@]}"
  train_model "e2e_ctc$ctc_layer" "$conf_dir/st_e2e.yaml" "${same[@]}" --set "model.ctc.layer=$ctc_layer"
  average_and_pack e2e_scratch
  average_and_pack "e2e_ctc$ctc_layer"
  sate analyze locality --model "$exp/e2e_scratch/model.pt" "$exp/e2e_ctc$ctc_layer/model.pt" --data "$data" \
    --split dev --max-utts 200 --out "$exp/locality_ctc$ctc_layer"
fi
