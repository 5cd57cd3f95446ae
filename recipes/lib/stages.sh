# Shared by every recipe: option parsing and stage bookkeeping. Source it, do not run it.
#
# A recipe declares its variables with defaults, then calls `parse_options "$@"`: each `--some-name value`
# sets the variable `some_name` (one the recipe set before sourcing this file, so typos fail loudly), and `--force`
# re-runs finished stages; `from_caller` then makes its relative path options absolute from where it was started. `run_stage N "what it does"` says whether stage N is selected by --stage/--stop-stage;
# `is_done MARKER PARAMS` / `mark_done MARKER PARAMS` skip a stage whose outputs are complete and were
# made with the same parameters.

# Where a run.sh was started: it `cd`s to the repository root (conf/ and the default data/ and exp/ are there) just
# before it sources this file, and cd keeps the directory it left in OLDPWD.
caller_dir=${OLDPWD:-$PWD}
# The recipe's file, a symbolic link to it resolved: $0 is the path it was started by, from caller_dir, and `cd
# recipes/mustc && ./run.sh` (or `--help`) read ./run.sh from the repository root: "sed: can't read ./run.sh", exit 2.
recipe_file=$(cd "$caller_dir" && readlink -f -- "$0")
# The variables the recipe sets (a line `name=...`) before it sources this file.
recipe_declared=" $(sed -n '1,/lib\/stages\.sh/s/^\([a-z][a-z0-9_]*\)=.*/\1/p' "$recipe_file" | tr '\n' ' ')"
# What this file and pipeline.sh read that a recipe may leave out, as their defaults, never as the environment has
# them: `export stop_stage=2` in the shell stopped the MuST-C recipe after stage 2, exit 0, and an exported
# `asr_extra=DIR` had the synthetic recipe, which has no such option, prepare DIR as an ASR corpus.
for name in stage stop_stage force mt_hub ssl_hub asr_extra mt_extra whisper mt_pairs vocab_pairs corpus_text corpus_texts test_texts test_prep_splits; do
  [[ $recipe_declared == *" $name "* ]] || unset -v "$name"
done
stage=${stage:-0}
stop_stage=${stop_stage:-100}
force=${force:-false}

recipe_name=$(basename "$(dirname "$recipe_file")")
# Each sate command a stage runs ends once this recipe has ended (sate.cli.stopped_with_recipe): a `kill` of the
# recipe (SIGTERM, or SIGHUP to it alone) ended its shell alone, since bash runs a trap only once its foreground
# command has ended, and a stage's `sate train` ran on behind it for hours, holding its experiment's lock.
export SATE_STOP_WITH=$$
# one_line TEXT: TEXT with its line breaks, carriage returns and escapes written as \n, \r and \e, as sate's own error
# lines are: a value holding a newline (`--ngpu $'2\n3'`) split the error line in two
one_line() { local text=$1; text=${text//$'\n'/\\n}; text=${text//$'\r'/\\r}; printf '%s' "${text//$'\e'/\\e}"; }
die() { printf '[%s] error: %s\n' "$recipe_name" "$(one_line "$*")" >&2; exit 1; }
say() { printf '[%s] %s\n' "$recipe_name" "$*" >&2; }

# The options: --stage, --stop-stage and the variables the recipe sets before it sources this file. Any variable used
# to be one: --path replaced the PATH, --recipe-name the name in every message.
recipe_options=" stage stop_stage$recipe_declared"
given_options=" "  # those the command line gave, for from_caller

# recipe_help: the recipe's header, its comment lines from the second to the first line that is none. It printed every
# comment up to the first empty line, which came after the notes that follow the header: each recipe's --help (and
# ./run.sh --help) went on with "`sh run.sh` (dash) stopped on ...", the repository root's, OMP_NUM_THREADS'.
recipe_help() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$recipe_file"; }

parse_options() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --force) force=true; shift ;;
      --help|-h) recipe_help; exit 0 ;;
      --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
      --*)
        local name=${1#--}; name=${name//-/_}
        [ $# -ge 2 ] || die "option $1 needs a value"
        [[ $recipe_options == *" $name "* ]] || die "unknown option $1 (--help lists them)"
        printf -v "$name" '%s' "$2"; given_options+="$name "; shift 2 ;;
      *) die "unexpected argument '$1' (options are --name value)" ;;
    esac
  done
  # `--stage abc` made every stage's test an error, taken as "not selected": nothing ran, exit 0
  local n
  decimal stage stop_stage
  for n in stage stop_stage; do
    [[ ${!n} =~ ^-?[0-9]{1,6}$ ]] || die "--${n//_/-} must be a stage number, got '${!n}'"
  done
  [ "$stage" -le "$stop_stage" ] || die "--stage $stage is after --stop-stage $stop_stage: no stage would run"
  # --exp-tag "" (or . and ..) named the folder above the tags' (the MuST-C recipe's exp/mustc/en-de/ itself, which holds
  # the other tags' experiments), or, in the synthetic recipe, the default tag; so did ./, x/.. and /
  if [[ $given_options == *" exp_tag "* ]] && ! folder_of_its_own "${exp_tag:-}"; then
    die "--exp-tag '${exp_tag:-}' names no folder of its own under exp/: give a name (or leave the option out for the default)"
  fi
}
# decimal NAME...: each variable NAME that holds a whole number, without its leading zeros, before it is checked and used:
# bash's arithmetic reads a leading 0 as octal (`--ngpu 08`, `--stop-stage 09`: "value too great for base"; `--ngpu
# 010` was 8), a check of `^[1-9]` refused `--nj 08` as no "whole number >= 1", and a marker recording `--train-size
# 08` took `--train-size 8` for other parameters. As text, so that no length overflows; anything else is left to the
# option's own check.
decimal() {
  local n sign
  for n in "$@"; do
    [[ ${!n:-} =~ ^(-?)0*([0-9]+)$ ]] || continue
    sign=${BASH_REMATCH[1]}; [ "${BASH_REMATCH[2]}" != 0 ] || sign=
    printf -v "$n" '%s%s' "$sign" "${BASH_REMATCH[2]}"
  done
}
# folder_of_its_own TAG: TAG, a path below the folder it is given in, names a folder there: one name at least, no `..`
# (`x/..` is the folder itself, `a/../..` one outside it, and through a link `a/..` may be anywhere); `.` and empty
# names (`./a`, `a/`, `/a`) are none.
folder_of_its_own() {
  local rest=$1/ part named=false
  while [ -n "$rest" ]; do
    part=${rest%%/*} rest=${rest#*/}
    case "$part" in
      '' | .) ;;
      ..) return 1 ;;
      *) named=true ;;
    esac
  done
  $named
}

# from_caller NAME... [--lists NAME...]: each of these path options that the command line gave, when relative, made
# absolute from the directory the recipe was started in; after --lists, options holding space-separated paths. A
# relative --data was taken from the repository root (`cd data` then `../sate/recipes/mustc/run.sh --mustc-root
# corpus` looked for sate/corpus), and a path beginning with '-' was read by sate as an option.
from_caller() {
  local name lists=false out word
  for name in "$@"; do
    [ "$name" != --lists ] || { lists=true; continue; }
    [[ $given_options == *" $name "* ]] || { known_path "${!name:-}"; continue; }
    # `--exp "$EXP"` with EXP unset was the default (the repository's exp/..., another run's experiments, "done
    # already"), and libri_trans's `--data ""` the root: "missing /.done/features"; an empty hub or list is none
    case "$name" in
      corpus | data | exp | conf_dir) [ -n "${!name}" ] || die "--${name//_/-} is empty: give a directory, or leave the option out for its default" ;;
    esac
    if [ "$lists" = true ]; then
      out=
      for word in ${!name}; do out+="${out:+ }$(absolute "$word")"; respelled "$word"; done
      printf -v "$name" '%s' "$out"
    else
      respelled "${!name}"
      printf -v "$name" '%s' "$(absolute "${!name}")"
    fi
    # a file given for a directory (`--data DATA/train.jsonl`): stage 3 said "missing FILE/.done/features ... Run the
    # earlier stages first", whose stage 0 then refused the file, and `--exp FILE` was mkdir's "Not a directory"
    case "$name" in
      corpus | data | exp | conf_dir) [ ! -e "${!name}" ] || [ -d "${!name}" ] ||
        die "--${name//_/-} ${!name}: a file, not a directory: give the directory (or leave the option out for its default)" ;;
    esac
  done
}
# absolute PATH: PATH from caller_dir when relative, in one spelling (tidy): the stages record these paths in their
# markers (stage 0 the corpus's, every training the data directory's), and `--mustc-root /data/MUSTC/` (a shell's
# completion adds the slash) after `--mustc-root /data/MUSTC` prepared the corpus again, and with it every stage after
# it ran again: features, vocabularies, and each training resumed (an early-stopped one trained another epoch).
absolute() { case "$1" in '') ;; /*) tidy "$1" ;; *) tidy "$caller_dir/$1" ;; esac; }
# respelled PATH: absolute's spelling of PATH and the one the recipes recorded before they tidied it, for is_done (and
# respelled_any when they differ): a marker of such a spelling (written before) is taken as done, not made again with
# everything after it. Every path option is kept, the same spelling or not, for as_before's longest match.
spelled_tidy=() spelled_before=() respelled_any=false
respelled() {
  local before tidied
  case "$1" in /*) before=$1 ;; '') return 0 ;; *) before=${caller_dir%/}/$1 ;; esac
  tidied=$(absolute "$1")
  [ "$tidied" != / ] || return 0  # it would match every path's slashes
  spelled_tidy+=("$tidied") spelled_before+=("$before")
  [ "$before" = "$tidied" ] || respelled_any=true
}
# known_path PATH: a path option the command line did not give (its default), kept as it is for as_before: a given
# path's tidy spelling may be the beginning of it.
known_path() { [[ $1 != /?* ]] || spelled_tidy+=("$1") spelled_before+=("$1"); }
# tidy PATH: an absolute PATH without its empty and `.` parts (a trailing or a doubled slash, `/./`); `..` stays, as a
# symbolic link before it may lead anywhere.
tidy() {
  local rest=${1#/} part out=
  while [ -n "$rest" ]; do
    part=${rest%%/*}
    [[ $rest == */* ]] && rest=${rest#*/} || rest=
    case "$part" in '' | .) ;; *) out+=/$part ;; esac
  done
  printf '%s' "${out:-/}"
}

# run_stage N DESCRIPTION: true when N is within [stage, stop_stage]; prints the stage header.
stages_offered=() stage_ran=false
run_stage() {
  stages_offered+=("$1")
  [ "$1" -ge "$stage" ] && [ "$1" -le "$stop_stage" ] || return 1
  stage_ran=true
  say "stage $1: $2"
}

# At the end of a run that offered stages but ran none (`--stage 50`, or stage 10 without --compare true): say so,
# and fail, instead of exiting 0 having done nothing.
none_ran() {
  [ ${#stages_offered[@]} -gt 0 ] && [ "$stage_ran" = false ] || return 0
  printf '[%s] error: --stage %s --stop-stage %s selects none of the stages this run has (%s to %s; more with their options: --help)\n' \
    "$recipe_name" "$stage" "$stop_stage" "${stages_offered[0]}" "${stages_offered[-1]}" >&2
  exit 1
}
trap '[ $? -ne 0 ] || none_ran' EXIT

# is_done MARKER PARAMS: MARKER was written by mark_done with the same PARAMS (and --force is off).
# A marker written before the paths were tidied (from_caller) with a path spelled otherwise is taken as done too, never
# rewritten: later stages stamp the markers' contents.
is_done() {
  [ "$force" != true ] && same_marker "$@" || return 1
  say "  done already ($1); --force to redo"
}
# same_marker MARKER PARAMS: is_done's test alone, without a word and whatever --force.
same_marker() {
  [ -e "$1" ] || return 1
  local made
  made=$(cat "$1")
  [ "$made" = "${2:-}" ] || { [ "$respelled_any" = true ] && [ "$made" = "$(as_before "${2:-}")" ]; }
}
# as_before TEXT: TEXT with each path that from_caller tidied spelled as before (respelled). Each place is respelled
# once, as the longest path option that matches there: replaced as plain text one after another, `--data /x/en-de/`
# respelled `--exp /x/en-de-exp/`'s paths too (/x/en-de/-exp/asr), and `--data /x/d/` those of `--exp /x/d/exp`
# (/x/d//exp), so the identical command re-ran SATE's training after the recipes of before had finished it.
as_before() {
  local text=$1 k
  if [ "$respelled_any" = true ]; then
    for k in $(for k in "${!spelled_tidy[@]}"; do echo "${#spelled_tidy[k]} $k"; done | sort -rn | cut -d' ' -f2); do
      text=${text//"${spelled_tidy[k]}"/$'\1'$k$'\2'}  # a mark no path holds, until every path is replaced
    done
    for k in "${!spelled_tidy[@]}"; do text=${text//$'\1'$k$'\2'/"${spelled_before[k]}"}; done
  fi
  printf '%s' "$text"
}

# mark_done MARKER PARAMS: written last by a stage, so a killed stage is never taken as finished; a failed write (a
# full disk) leaves no MARKER.tmp behind.
mark_done() {
  mkdir -p "$(dirname "$1")" && { printf '%s' "${2:-}" > "$1.tmp" && mv "$1.tmp" "$1" || { rm -f "$1.tmp"; false; }; }
}

# logged LOG COMMAND...: run COMMAND with its output (stdout and stderr) on the terminal as it comes, and
# appended to LOG with each line time-stamped; of a progress bar redrawn with \r, LOG keeps the last state.
# The command's exit status is kept.
logged() {
  local log=$1; shift
  mkdir -p "$(dirname "$log")"
  say "  $* (log: $log)"
  printf '%(%F %T)T ==== %s\n' -1 "$*" >> "$log"
  PYTHONUNBUFFERED=1 "$@" 2>&1 | tee >(log_lines >> "$log")
  return "${PIPESTATUS[0]}"
}
# log_lines: standard input's lines, each time-stamped, the last state of a line redrawn with \r. TMOUT (which
# hardened systems export: 900 s, often readonly) is `read`'s default timeout: a progress bar redrawn for that long
# without a line break (an epoch of sate train) timed the read out, which ended the loop, tee then died of SIGPIPE,
# and with it the training, the recipe ending 141 without a word. A timeout is a pause: `read` keeps what it read.
log_lines() {
  local line rest=''
  while :; do
    if IFS= read -r line; then
      line=$rest$line rest=''
    elif [ $? -gt 128 ]; then
      rest=$rest$line rest=${rest##*$'\r'}
      continue
    else
      line=$rest$line
      [ -z "$line" ] || printf '%(%T)T %s\n' -1 "${line##*$'\r'}"
      return 0
    fi
    printf '%(%T)T %s\n' -1 "${line##*$'\r'}"
  done
}

# stamp FILE...: a short fingerprint of the files' contents ("-" for a missing one), so that a stage whose
# inputs were remade (another corpus, new features) runs again instead of being taken as done.
stamp() {
  local f
  for f in "$@"; do [ -e "$f" ] && cat "$f" || printf -- '-'; done | sha1sum | cut -c1-12
}

# unread NAME WHY: stop when the command line gave --NAME, which this run does not read (WHY): such an option was
# ignored without a word (`--text ding --text-size 500`, `--exp-tag` with `--exp`).
unread() { [[ $given_options != *" $1 "* ]] || die "--${1//_/-} ${!1}: $2"; }

# need PATH WHAT: a clear error when an earlier stage's output is missing.
need() { [ -e "$1" ] || die "missing $1 ($2). Run the earlier stages first."; }
