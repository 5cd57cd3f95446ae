# Shared by every recipe: option parsing and stage bookkeeping. Source it, do not run it.
#
# A recipe declares its variables with defaults, then calls `parse_options "$@"`: each `--some-name value`
# sets the variable `some_name` (it must already exist, so typos fail loudly), and `--force` re-runs
# finished stages. `run_stage N "what it does"` says whether stage N is selected by --stage/--stop-stage;
# `is_done MARKER PARAMS` / `mark_done MARKER PARAMS` skip a stage whose outputs are complete and were
# made with the same parameters.

stage=${stage:-0}
stop_stage=${stop_stage:-100}
force=${force:-false}

recipe_name=$(basename "$(dirname "$0")")
die() { printf '[%s] error: %s\n' "$recipe_name" "$*" >&2; exit 1; }
say() { printf '[%s] %s\n' "$recipe_name" "$*" >&2; }

parse_options() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --force) force=true; shift ;;
      --help|-h) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
      --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
      --*)
        local name=${1#--}; name=${name//-/_}
        [ $# -ge 2 ] || die "option $1 needs a value"
        declare -p "$name" >/dev/null 2>&1 || die "unknown option $1"
        printf -v "$name" '%s' "$2"; shift 2 ;;
      *) die "unexpected argument '$1' (options are --name value)" ;;
    esac
  done
}

# run_stage N DESCRIPTION: true when N is within [stage, stop_stage]; prints the stage header.
run_stage() {
  [ "$1" -ge "$stage" ] && [ "$1" -le "$stop_stage" ] || return 1
  say "stage $1: $2"
}

# is_done MARKER PARAMS: MARKER was written by mark_done with the same PARAMS (and --force is off).
is_done() {
  [ "$force" != true ] && [ -e "$1" ] && [ "$(cat "$1")" = "${2:-}" ] || return 1
  say "  done already ($1); --force to redo"
}

# mark_done MARKER PARAMS: written last by a stage, so a killed stage is never taken as finished.
mark_done() { mkdir -p "$(dirname "$1")" && printf '%s' "${2:-}" > "$1.tmp" && mv "$1.tmp" "$1"; }

# logged LOG COMMAND...: run COMMAND with its output (stdout and stderr) on the terminal as it comes, and
# appended to LOG with each line time-stamped; of a progress bar redrawn with \r, LOG keeps the last state.
# The command's exit status is kept.
logged() {
  local log=$1; shift
  mkdir -p "$(dirname "$log")"
  say "  $* (log: $log)"
  printf '%(%F %T)T ==== %s\n' -1 "$*" >> "$log"
  PYTHONUNBUFFERED=1 "$@" 2>&1 | tee >(while IFS= read -r line; do printf '%(%T)T %s\n' -1 "${line##*$'\r'}"; done >> "$log")
  return "${PIPESTATUS[0]}"
}

# stamp FILE...: a short fingerprint of the files' contents ("-" for a missing one), so that a stage whose
# inputs were remade (another corpus, new features) runs again instead of being taken as done.
stamp() {
  local f
  for f in "$@"; do [ -e "$f" ] && cat "$f" || printf -- '-'; done | sha1sum | cut -c1-12
}

# need PATH WHAT: a clear error when an earlier stage's output is missing.
need() { [ -e "$1" ] || die "missing $1 ($2). Run the earlier stages first."; }
