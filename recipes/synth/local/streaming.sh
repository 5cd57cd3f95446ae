#!/usr/bin/env bash
# The quality-latency table of docs/inference.md ("Measured on the demo"): the ST pack decoded offline (greedy,
# and with the pack's beam, the search the policies complete their hypotheses with), then streamed under each
# policy, then whole talks streamed and offline (StreamLAAL), and all of it drawn by `sate latency-plot`. Run it
# from the demo's directory (after recipes/synth/run.sh); each run goes to OUT/NAME (results.json, hyp.txt,
# delays.jsonl; NAME is e.g. alignatt=4-0.5s) with the load average before and after it in OUT/NAME/load.txt (the
# computation-aware figures depend on it; the others do not). A run whose results.json exists is skipped (--force:
# redone), so a second call with another --chunk and --policies adds its runs; the table and the plot are of every
# run in OUT. OUT is one pack's, on one split and one device: a call with another pack (or the pack made again), data
# directory or split is refused (OUT/.pack records them), and so is one with another --device (each run's
# results.json records it), where each run was "done already" and the first pack's (or device's) table was shown.
#
# Usage: recipes/synth/local/streaming.sh [--name value ...]
#   --pack DIR          the ST pack (default: exp/synth/whisper/st/pack, the demo's default; the Conformer
#                       demo's (--acoustic conformer): exp/synth/demo/st/pack)
#   --data DIR          its prepared data (default: data/synth)
#   --split S           (default: tst-COMMON)
#   --out DIR           (default: eval/streaming)
#   --chunk SECONDS     audio read before each decision (default: 0.5)
#   --policies "..."    streamed runs (default: wait-k=1..3, local-agreement=2..4, alignatt=4,8)
#   --talks-policy P    the policy of the whole-talk run (default: local-agreement=2; empty: no talks)
#   --device D          (default: cpu, as in the table)

# `sh run.sh` (dash) stopped on "set: Illegal option -o pipefail"; say what to run instead.
[ -n "${BASH_VERSION:-}" ] || { echo "$0: a bash script: run it as bash $0, not with sh" >&2; exit 1; }
set -euo pipefail
pack=exp/synth/whisper/st/pack
data=data/synth
split=tst-COMMON
out=eval/streaming
chunk=0.5
policies="wait-k=1 wait-k=2 wait-k=3 local-agreement=2 local-agreement=3 local-agreement=4 alignatt=4 alignatt=8"
talks_policy=local-agreement=2
device=cpu
# stages.sh takes the folder a recipe was started in from OLDPWD (a run.sh goes to the repository root first); this one
# stays where it was started
OLDPWD=$PWD
. "$(dirname "$(readlink -f "$0")")/../../lib/stages.sh"  # also through a symbolic link to this file
recipe_name=streaming  # not the folder's name (stages.sh's default): option errors said "[local] error"
parse_options "$@"
# a path beginning with '-' went to sate as an option: `--out -runs` was "sate evaluate: error: argument --out:
# expected one argument"
for name in pack data out; do [[ ${!name} != -* ]] || printf -v "$name" './%s' "${!name}"; done
# One name for one chunk size: --chunk 0.50 after --chunk 0.5 decoded every run again into folders of their own,
# and the table and plot showed each run twice. `sate evaluate` checks the range.
[[ $chunk =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]] || die "--chunk must be a number of seconds, got '$chunk'"
chunk=$(LC_ALL=C printf '%.15g' "$chunk")
# One name for one policy too: --policies wait-k=01 (or alignatt, its default value left out) after wait-k=1 (or
# alignatt=4) decoded the run again into a folder of its own, and the table and plot showed it twice. The defaults are
# sate.decode.options.STREAM_POLICIES' (a test compares them); a word sate does not know is left for it to refuse.
declare -A policy_default=([wait-k]=3 [local-agreement]=2 [alignatt]=4)
policy_word() {
  local name=${1%%=*} value=${1#*=}
  [[ -n $name && -n ${policy_default[$name]+set} ]] || { printf '%s' "$1"; return; }
  [[ $1 == *=* ]] || value=${policy_default[$name]}
  [[ ! $value =~ ^[0-9]{1,18}$ ]] || value=$((10#$value))
  printf '%s=%s' "$name" "$value"
}
[ -z "$talks_policy" ] || talks_policy=$(policy_word "$talks_policy")

# An ST pack, checked before any run: an MT pack's offline runs (its translations of the transcripts) went into OUT,
# whose .pack then named it, before its first streamed run was refused; the next call with the ST pack was refused
# that OUT. (An ASR pack and a Whisper directory are refused by the first run, `--beam 1`.)
task=
[ ! -f "$pack/sate.yaml" ] || task=$(sed -n 's/^task: *\([a-z]*\) *$/\1/p' "$pack/sate.yaml" 2>/dev/null | head -n 1) || true
[ -z "$task" ] || [ "$task" = st ] || die "--pack $pack is an ${task^^} pack ($pack/sate.yaml: task: $task), and the runs stream speech translation: give an ST pack"

# What OUT's runs were made of: the pack's files, the split and its manifest (wherever they are named from).
made_of="pack $(stamp "$pack/sate.yaml" "$pack/model.pt"), split $split $(stamp "$data/$split.jsonl")"
if [ -e "$out/.pack" ] && [ "$(cat "$out/.pack")" != "$made_of" ]; then
  die "--out $out holds the runs of another pack, data directory or split (or of the pack before it was made again; $out/.pack): give another --out, or move it away"
fi
# and of one device, as each run's results.json records it (an OUT made before this check too): `--device cuda` over
# an OUT of CPU runs found each run "done already", and the table gave the CPU's computation-aware latencies for the
# GPU's. One spelling for one device, as torch reads them: cpu:0 is the CPU, cuda is cuda:0.
device_key() { case $1 in cpu | cpu:*) printf cpu ;; *:*) printf '%s' "$1" ;; *) printf '%s:0' "$1" ;; esac; }
for run in "$out"/*/results.json; do
  [ -f "$run" ] || continue
  ran_on=$(sed -n 's/^ *"device": *"\([^"]*\)".*/\1/p' "$run" 2>/dev/null | head -n 1) || true
  [ -z "$ran_on" ] || [ "$(device_key "$ran_on")" = "$(device_key "$device")" ] ||
    die "--out $out holds runs made on another device ($run: $ran_on, this call's --device $device), whose computation-aware latencies are not this device's: give --device $ran_on to add runs to it, or another --out"
done

# evaluate NAME ARGS...: `sate evaluate` of the pack into OUT/NAME, unless done; the load average beside it.
evaluate() {
  local name=$1; shift
  local dir=$out/$name
  if [ "$force" != true ] && [ -e "$dir/results.json" ]; then say "$name: done already ($dir)"; return; fi
  say "$name"  # `sate evaluate` makes $dir: one that fails (a bad policy, an ASR pack) leaves no empty folder
  local before; before=$(cut -d' ' -f1-3 /proc/loadavg)
  # --split=: a split is a name, not a path, so `./-x` is no split of sate's; `--split -x` was "expected one argument"
  sate evaluate --model "$pack" --data "$data" --split="$split" --device "$device" "$@" --out "$dir"
  [ -e "$out/.pack" ] || mark_done "$out/.pack" "$made_of"
  printf 'load average (1, 5, 15 min) before: %s  after: %s\n' "$before" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    > "$dir/load.txt"
}

# An OUT made before a policy was named one way holds its run as it was spelled then (alignatt-0.5s for
# alignatt=4-0.5s, wait-k=01-0.5s): that run is reused under its own name, where it was decoded again and the table
# showed it twice.
declare -A spelled=()
for run in "$out"/*/results.json; do
  [ -f "$run" ] || continue
  folder=${run%/results.json}; folder=${folder##*/}
  [[ $folder == *-"${chunk}s" ]] || continue
  word=${folder%-"${chunk}s"}
  if [[ $word == talks-* ]]; then name=talks-$(policy_word "${word#talks-}"); else name=$(policy_word "$word"); fi
  [ "$name" = "$word" ] || spelled[$name-${chunk}s]=$folder
done
# run_name NAME: OUT's folder for the run NAME, the one of an earlier spelling where only it has been run
run_name() {
  if [ ! -e "$out/$1/results.json" ] && [ -n "${spelled[$1]+set}" ]; then printf '%s' "${spelled[$1]}"
  else printf '%s' "$1"; fi
}

evaluate offline-greedy --beam 1
evaluate offline
# words, never file patterns: the unquoted list was globbed ("*": file names); every line's (-d ''), where `read -a` read
# the first line alone: `--policies "$(cat policies.txt)"`, a policy a line, ran the first
read -r -d '' -a policy_list <<< "$policies" || true
for policy in "${policy_list[@]}"; do
  policy=$(policy_word "$policy")
  evaluate "$(run_name "$policy-${chunk}s")" --stream "$policy" --chunk "$chunk"
done
if [ -n "$talks_policy" ]; then
  evaluate "$(run_name "talks-$talks_policy-${chunk}s")" --stream "$talks_policy" --chunk "$chunk" --talks
  evaluate talks-offline --talks
fi
# the table kept until the new one is drawn: through tee, a plot that failed (no streamed run in OUT, a results.json
# damaged) left table.md empty
table=$(sate latency-plot "$out"/*/results.json --out "$out/tradeoff.png")
printf '%s\n' "$table" | tee "$out/table.md"
