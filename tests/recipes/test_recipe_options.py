"""A recipe's command line: stage numbers, unknown options and relative paths, refused or resolved before any work."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sate.train.lock import pid_alive
from tests.recipes.conftest import ROOT


@pytest.mark.parametrize(("args", "says"), [
    (["--stage", "abc"], "--stage must be a stage number, got 'abc'"),
    (["--stop-stage", "2x"], "--stop-stage must be a stage number, got '2x'"),
    (["--stage", "99999999999999999999"], "--stage must be a stage number"),
    (["--stage", "3", "--stop-stage", "1"], "--stage 3 is after --stop-stage 1: no stage would run"),
    (["--stage", "50"], "--stage 50 --stop-stage 100 selects none of the stages this run has (0 to 9; more with "
                        "their options: --help)"),
    (["--stage", "10"], "--stage 10 --stop-stage 100 selects none of the stages this run has"),  # no --compare true
    (["--PATH", "/nonexistent"], "unknown option --PATH (--help lists them)"),
    (["--recipe-name", "x"], "unknown option --recipe-name"),
    (["--prep-args", "x"], "unknown option --prep-args"),
    (["--ngpu", "two"], "--ngpu must be a number of GPUs (0: the CPU), got 'two'"),
    # sate prep's advice, "give it as --tgt-lang=-de", could not be passed on through the recipe
    (["--tgt-lang", "-de"], "--tgt-lang must be a language code (the en-<code> directory of MuST-C, e.g. de), got "
                            "'-de'"),
    (["--speed-perturb", "yes"], "--speed-perturb must be true or false, got 'yes'"),
    (["--compare", "1"], "--compare must be true or false, got '1'"),
    (["--average-n", "last"], "--average-n must be a whole number >= 1, got 'last'"),
    (["--average-n", "0"], "--average-n must be a whole number >= 1, got '0'"),
    (["--tgt-vocab-size", "8k"], "--tgt-vocab-size must be a whole number >= 1, got '8k'"),
    (["--src-vocab-size", "2000000"], "--src-vocab-size must be from 2 to 1,000,000, got '2000000'"),  # once stage 2
    (["--joint-vocab-size", "1"], "--joint-vocab-size must be from 2 to 1,000,000, got '1'"),
    # ten digits were "not a whole number >= 1" (thirty-second hostile pass)
    (["--src-vocab-size", "1234567890"], "--src-vocab-size must be from 2 to 1,000,000, got '1234567890'"),
    (["--nj", "1234567890"], "--nj 1234567890: at most "),
    # past 4,300 digits, refused by stage 3's sate average after the ASR model had trained (review32r)
    (["--average-n", "9" * 5000], "--average-n must be from 1 to 999999999 (a count past the checkpoints kept averages "
     "them all), got '999"),
    (["--average-n", "1234567890"], "--average-n must be from 1 to 999999999 (a count past the checkpoints kept "
     "averages them all), got '1234567890'"),
    (["--ctc-layer", "top"], "--ctc-layer must be a whole number, got 'top'"),
    # stage 1, which writes train_sp, is skipped for a speech hub model: stage 3 stopped on "run `sate prep`"
    # stage 7 decoded dev twice (or skipped '../x') before stage 8's sate report refused the list
    (["--test-sets", "dev tst-COMMON dev"], "--test-sets names dev twice"),
    (["--test-sets", "dev ../x"], "--test-sets: '../x' is not a split name"),
    (["--test-sets", "devé"], "--test-sets: 'devé' is not a split name"),
    # stages 10 and 11 refused these only when they came, after every stage before them
    (["--ctc-layer", "99"], "--ctc-layer 99: conf/mustc/st_e2e.yaml with --set 'model.ctc.layer=99': model.ctc.layer "
     "99 is above the top acoustic layer"),
    (["--ctc-layer", "0"], "--ctc-layer 0: conf/mustc/st_e2e.yaml with --set 'model.ctc.layer=0': model.ctc.layer "
     "must be null (the top layer) or at least 1, got 0"),
    (["--mt-hub", "m", "--compare", "true"], "--compare compares models we pre-train; it does not run with --mt-hub"),
    (["--mt-hub", "m", "--ctc-layer", "2"], "--ctc-layer does not run with --mt-hub"),
    (["--mt-hub", "m", "--joint-vocab-size", "8000"], "--joint-vocab-size does not run with --mt-hub"),  # was ignored
    (["--mt-hub", "m", "--ssl-hub", "h", "--speed-perturb", "true"], "--speed-perturb true with --ssl-hub: its "
     "copies (train_sp) are made by stage 1's sate features, which a speech hub model's run skips"),
])
def test_stage_numbers_and_options_are_checked(tmp_path: Path, run_recipe, args: list[str],  # noqa: ANN001
                                               says: str) -> None:
    """`--stage abc` made each stage's test a shell error taken as "not selected", `--stage 50` or a stop before the
    start selected none: each exited 0 having done nothing. Any shell variable was an option (`--PATH` replaced the
    PATH)."""
    done = run_recipe("mustc", "--mustc-root", tmp_path / "mustc", "--data", tmp_path / "data", "--exp",
                      tmp_path / "exp", *args, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("[mustc] error: ") == 1 and f"[mustc] error: {says}" in done.stderr, done.stderr
    assert "integer expression" not in done.stderr and "stage 0:" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_scoring_before_decoding_names_the_stage(tmp_path: Path, run_recipe) -> None:  # noqa: ANN001
    """Stage 8 alone on a new experiment was `sate report: error: --exp EXP: no such directory`."""
    exp = tmp_path / "exp"
    done = run_recipe("mustc", "--mustc-root", tmp_path / "mustc", "--data", tmp_path / "data", "--exp", exp,
                      "--stage", "8", "--stop-stage", "8", timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (f"[mustc] error: missing {exp}/*/decode_*/results.json (the test "
                                                    "sets decoded by stage 7). Run the earlier stages first.")


@pytest.mark.slow
def test_scoring_systems_without_training_logs_makes_the_table_alone(tmp_path: Path, run_recipe) -> None:  # noqa: ANN001
    """Stage 8 over systems decoded from packs trained elsewhere (no `logs/` in the experiment) failed: `sate report
    --curves` refused "no training logs" (thirteenth pass's leftover). The table is made; curves where logs are."""
    from tests.scoring.test_report import REFS, SYSTEMS, write_system  # the report tests' decode folders

    exp = tmp_path / "exp"
    for name, hyps in SYSTEMS.items():
        write_system(exp, name, hyps, REFS)
    done = run_recipe("mustc", "--mustc-root", tmp_path / "mustc", "--data", tmp_path / "data", "--exp", exp,
                      "--stage", "8", "--stop-stage", "8", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "| st |" in (exp / "results.md").read_text() and not (exp / "curves.png").exists()


def test_a_training_stage_run_again_says_it_resumes_the_run_there(tmp_path: Path) -> None:
    """`--force` on a training stage resumed the run in its folder (sate train never starts over checkpoints), and a
    vocabulary changed since was refused as "train into a new --exp", which a recipe user cannot give: the stage now
    says that it resumes and that the folder is to be moved away to train anew (thirteenth pass's leftover). A
    `sate` that records its commands stands in for the real."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate").write_text('#!/bin/bash\necho "$1" >> "$SATE_ARGS"\n')
    (tmp_path / "bin" / "sate").chmod(0o755)
    data, exp = tmp_path / "data", tmp_path / "exp"
    (data / ".done").mkdir(parents=True)
    (data / ".done" / "vocab").write_text("v\n")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(tmp_path / "args")}
    argv = ["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "mustc", "--data", data,
            "--exp", exp, "--stage", "4", "--stop-stage", "4"]
    says = f"{exp}/mt holds a run, which sate train resumes: move {exp}/mt away to train it anew"
    first = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and says not in first.stderr, first.stderr
    (exp / "mt" / "checkpoints").mkdir()
    again = subprocess.run(list(map(str, [*argv, "--force"])), env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and says in again.stderr, again.stderr
    assert (tmp_path / "args").read_text().split().count("train") == 2


@pytest.mark.slow
def test_a_path_goes_to_set_as_a_yaml_string_whatever_its_characters(tmp_path: Path) -> None:
    """`--set data.dir="$data"` broke on a '"' in the path ("the value is not valid YAML"), and a '\\' began an
    escape: the training stages failed, or read another directory."""
    path = "/tmp/it's a \"$HOME\" dir \\t é/-data $x"
    config = tmp_path / "asr.yaml"
    config.write_text("task: asr\n")
    script = f'source <(sed -n "/^yaml_str()/p" "{ROOT}/recipes/lib/pipeline.sh"); ' \
             'sate config --config "$1" --set "data.dir=$(yaml_str "$2")" --get data.dir'
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", script, "bash", str(config), path], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == path + "\n"


@pytest.mark.slow
@pytest.mark.parametrize(("weight", "passed"), [("0", False), ("-0.0", False), ("0.5", True)])
def test_sate_gets_the_mt_text_only_where_its_config_weighs_it(tmp_path: Path, weight: str, passed: bool) -> None:
    """A weight of -0.0 (which `sate config --get` prints as written) passed the MT text to a SATE run that does not
    train on text, and its training refused it (eleventh hostile pass)."""
    config = tmp_path / "st.yaml"
    config.write_text(f"task: st\nmodel: {{loss: {{mt_text_weight: {weight}}}}}\n")
    script = f'source <(sed -n "/^text_for()/,/^}}/p" "{ROOT}/recipes/lib/pipeline.sh"); init_from=(); st_hub=(); ' \
             'mt_text=(--mt-text en de); text_for "$1"; echo "${#st_text[@]}"'
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", script, "bash", str(config)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("3\n" if passed else "0\n")


@pytest.mark.slow
def test_relative_and_hostile_paths_are_taken_from_where_the_recipe_started(
        tmp_path: Path, synth_corpus: Path, tiny_configs, sate_path) -> None:  # noqa: ANN001
    """A run.sh works from the repository root: a relative --corpus was looked for there, and --data -d was read by
    `sate prep` as an option. From another directory, with quotes, '$', a leading '-' and non-ASCII in the paths,
    stages 0-3 write where the command line said (stage 3 is given the data directory by --set)."""
    work = tmp_path / "it's a \"$HOME\" dir é"
    work.mkdir()
    shutil.copytree(synth_corpus, work / "my corpus")
    tiny_configs(work / "conf")
    env = sate_path(dict(os.environ))
    argv = ["bash", str(ROOT / "recipes" / "synth" / "run.sh"), "--acoustic", "conformer", "--corpus", "my corpus",
            "--data", "-data $x", "--exp", "exp", "--conf-dir", "conf", "--src-vocab-size", "48",
            "--tgt-vocab-size", "60", "--average-n", "1", "--nj", "1", "--stage", "0", "--stop-stage", "3"]
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = work / "-data $x"
    assert (data / "train.jsonl").is_file() and (data / "vocab.json").is_file() and (data / "fbank").is_dir()
    assert f"manifests in {data}" in done.stderr
    assert (work / "exp" / "asr" / "model.pt").is_file()
    assert not (ROOT / "-data $x").exists() and not (ROOT / "my corpus").exists()
    assert not (ROOT / "conf" / "asr.yaml").exists()


@pytest.mark.parametrize("script", ["mustc/run.sh", "libri_trans/run.sh", "synth/run.sh", "synth/local/streaming.sh"])
def test_a_recipe_run_with_sh_says_to_run_it_with_bash(tmp_path: Path, script: str) -> None:
    """`sh recipes/mustc/run.sh` (dash) stopped on "set: Illegal option -o pipefail"."""
    if shutil.which("dash") is None:
        pytest.skip("no dash here")
    path = ROOT / "recipes" / script
    done = subprocess.run(["dash", str(path), "--stage", "50"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert done.stderr == f"{path}: a bash script: run it as bash {path}, not with sh\n"
    assert list(tmp_path.iterdir()) == []


def side_by_side_stub(tmp_path: Path, stub: str) -> None:
    """`stub` as the `sate` on PATH (tmp_path/bin), and what stages 3 and 4 need done before them."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate").write_text(stub)
    (tmp_path / "bin" / "sate").chmod(0o755)
    for name in ("data/.done/features", "data/.done/vocab", "conf/asr.yaml", "conf/mt.yaml",
                 "conf/st.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()


def side_by_side_argv(tmp_path: Path, stop: str) -> list:
    """The MuST-C recipe from stage 3 to `stop`, pre-training ASR and MT side by side, in tmp_path."""
    return ["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "mustc", "--data",
            tmp_path / "data", "--exp", tmp_path / "exp", "--conf-dir", tmp_path / "conf", "--ngpu", "0",
            "--parallel-pretrain", "true", "--stage", "3", "--stop-stage", stop]


STUB = """#!/bin/bash
# `sate` for the recipe: the $FAIL side's training fails once the other's has begun; the other runs on until killed
# (its pid kept); FAIL=none: both succeed at once
if [ "$1" = train ]; then
  case "$FAIL $*" in
    none*) exit 0 ;;
    *"/$FAIL "*) while [ ! -s "$STUB_PID" ]; do sleep 0.1; done; echo "$FAIL failed" >&2; exit 1 ;;
    *) echo $$ > "$STUB_PID.tmp"; mv "$STUB_PID.tmp" "$STUB_PID"; exec sleep 60 ;;
  esac
fi
"""


@pytest.mark.parametrize("fail", ["asr", "mt"])
def test_a_failed_side_by_side_stage_stops_the_other(tmp_path: Path, fail: str) -> None:
    """With --parallel-pretrain true, ASR pre-training failing stopped the recipe, but MT pre-training's `sate train`
    ran on behind it (only its subshell was killed), for hours, holding its experiment's lock (tenth hostile
    pass); MT failing was seen only once ASR had ended, hours later. Whichever fails first now stops the other."""
    side_by_side_stub(tmp_path, STUB)
    pid_file = tmp_path / "other.pid"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "STUB_PID": str(pid_file), "FAIL": fail}
    argv = side_by_side_argv(tmp_path, "4")
    ok_argv = [str(tmp_path / "exp-ok") if a == tmp_path / "exp" else str(a) for a in argv]
    done = subprocess.run(ok_argv, env={**env, "FAIL": "none"}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr  # both ended well: each is waited for, none is called failed
    done = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (f"[mustc] error: {fail.upper()} pre-training failed (see "
                                                    f"{tmp_path}/exp/{fail}/train.log)")
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 20  # a signal is delivered when the process next runs: late on a loaded machine
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        os.kill(pid, 9)  # not left behind by the test either
        raise AssertionError("the other pre-training's sate train still runs after the recipe stopped")


SLEEPER = """#!/bin/bash
# `sate` for the recipe: each training keeps its pid in $STUB_DIR/<exp name>.pid and runs on until killed
if [ "$1" = train ]; then
  name=$(basename "${5%/}")
  echo $$ > "$STUB_DIR/$name.tmp"; mv "$STUB_DIR/$name.tmp" "$STUB_DIR/$name.pid"; exec sleep 60
fi
"""


def _as_a_terminal_job() -> None:
    for sig in (signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, -2)])
def test_a_kill_stops_side_by_side_stages(tmp_path: Path, sig: signal.Signals, status: int) -> None:
    """`kill` of a recipe running stages 3 and 4 side by side ended the recipe alone: both stages ran on behind it
    (training, then averaging and packing), for hours, each holding its experiment's lock (thirteenth hostile
    pass). Ctrl-C (SIGINT to the whole job) did nothing at all: the stages' commands, run in the background, have it
    ignored, and the recipe's bash waited on (twenty-eighth hostile pass). The recipe then ends by SIGINT itself, as
    in sequential mode: its `exit 130` had a user's loop over runs go on to the next (its review)."""
    side_by_side_stub(tmp_path, SLEEPER)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "STUB_DIR": str(tmp_path)}
    argv = side_by_side_argv(tmp_path, "5")
    # its own process group, as a terminal's job, with SIGHUP and SIGINT as a terminal leaves them: a test run under
    # `nohup` passes SIGHUP on ignored, one started in the background of a shell without job control (`.ci/run &`)
    # SIGINT, and a shell cannot trap a signal ignored when it started (the recipe ran on into stage 5)
    recipe = subprocess.Popen(list(map(str, argv)), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True, preexec_fn=_as_a_terminal_job)
    pid_files = [tmp_path / "asr.pid", tmp_path / "mt.pid"]
    try:
        deadline = time.monotonic() + 60
        while not all(p.is_file() for p in pid_files) and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = [int(p.read_text()) for p in pid_files]
        if sig == signal.SIGINT:
            os.killpg(recipe.pid, sig)  # Ctrl-C: the terminal sends it to every process of the job
        else:
            recipe.send_signal(sig)  # `kill PID` of the recipe alone
        _, err = recipe.communicate(timeout=30)
        assert recipe.returncode == status, err
        assert "stage 5" not in err and "stopped: stages 3 and 4 ended unfinished" in err, err
        deadline = time.monotonic() + 20  # a signal is delivered when the process next runs: late on a loaded machine
        while any(map(pid_alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(pid_alive, pids)), "a pre-training's sate train still runs after the recipe stopped"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(recipe.pid, signal.SIGKILL)  # whatever is left of the job, not left behind by the test either


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_side_by_side_stage_killed_by_itself_is_a_failure_that_stops_the_other(tmp_path: Path,
                                                                                 sig: signal.Signals) -> None:
    """The ASR stage's own shell (one of three `mustc/run.sh` lines in `pgrep -f`) killed: with SIGKILL the recipe
    waited for MT to end, hours, before saying ASR failed, and with SIGTERM a version that wrote each stage's status
    in its EXIT trap took ASR as done, exit 0, with no model made (26th hostile pass, review). Either is now ASR's
    failure, and MT is stopped at once."""
    side_by_side_stub(tmp_path, SLEEPER)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "STUB_DIR": str(tmp_path)}
    argv = side_by_side_argv(tmp_path, "4")
    log = tmp_path / "stderr"
    with log.open("w") as stderr:  # a file: ASR's stub, orphaned by SIGKILL, holds a pipe open
        recipe = subprocess.Popen(list(map(str, argv)), env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                                  start_new_session=True)
    pid_files = [tmp_path / "asr.pid", tmp_path / "mt.pid"]
    try:
        deadline = time.monotonic() + 60
        while not all(p.is_file() for p in pid_files) and time.monotonic() < deadline:
            time.sleep(0.1)
        asr, mt = (int(p.read_text()) for p in pid_files)
        chain = [asr]
        while chain[-1] != recipe.pid:
            chain.append(parent_of(chain[-1]))
        os.kill(chain[-2], sig)  # the recipe's child that runs stage 3
        if sig == signal.SIGTERM:
            os.kill(asr, signal.SIGTERM)  # bash acts on it once its foreground command has ended
        recipe.wait(timeout=30)  # MT's stub sleeps for 60 s
        err = log.read_text()
        assert recipe.returncode == 1, err
        assert err.strip().splitlines()[-1] == (f"[mustc] error: ASR pre-training failed (see {tmp_path}/exp/asr/"
                                                "train.log)")
        deadline = time.monotonic() + 20
        while pid_alive(mt) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(mt), "MT's sate train still runs after the recipe stopped"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(recipe.pid, signal.SIGKILL)  # and ASR's stub, orphaned by SIGKILL of its shell


WATCHED = """#!/bin/bash
# `sate` for the recipe: each training says which process it ends with, as $STUB_DIR/<exp name>.with
if [ "$1" = train ]; then
  echo "${SATE_STOP_WITH:-none}" > "$STUB_DIR/$(basename "${5%/}").with"
fi
"""


def test_each_command_of_a_recipe_ends_with_it(tmp_path: Path) -> None:
    """`kill` of a recipe during a stage run by the recipe's shell itself (SATE training, evaluation, or ASR
    pre-training with --parallel-pretrain false) ended the recipe alone: bash runs a trap only once its foreground
    command has ended, and `sate train` ran on behind it for hours, holding its experiment's lock (fourteenth
    hostile pass). The recipe gives every command its pid (SATE_STOP_WITH), by which a command ends with it
    (tests/test_cli.py); a stage in a subshell gives the recipe's own."""
    side_by_side_stub(tmp_path, WATCHED)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "STUB_DIR": str(tmp_path)}
    env.pop("SATE_STOP_WITH", None)
    for parallel in ("false", "true"):
        argv = [str(a) for a in side_by_side_argv(tmp_path, "4")]
        argv[argv.index("--parallel-pretrain") + 1] = parallel
        recipe = subprocess.Popen([*argv, "--force"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        _, err = recipe.communicate(timeout=60)
        assert recipe.returncode == 0, err
        assert [(tmp_path / f"{name}.with").read_text() for name in ("asr", "mt")] == [f"{recipe.pid}\n"] * 2


def test_a_stage_marker_that_cannot_be_written_leaves_no_temporary_file(tmp_path: Path) -> None:
    """`mark_done` on a full disk (a file size limit here) left `MARKER.tmp` beside where the marker goes (fourteenth
    hostile pass); it fails as before, and the half-written file is removed."""
    script = (f'source {ROOT / "recipes" / "lib" / "stages.sh"}; trap "" XFSZ; ulimit -f 0; '
              f'mark_done {tmp_path / "marks" / "stage4"} "--beam 5"; echo "status $?"')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout == "status 1\n" and "File too large" in done.stderr, done
    assert list((tmp_path / "marks").iterdir()) == []
    done = subprocess.run(["bash", "-c", script.replace("ulimit -f 0", "ulimit -f 8")], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout == "status 0\n" and (tmp_path / "marks" / "stage4").read_text() == "--beam 5"


@pytest.mark.slow
def test_streaming_names_itself_and_leaves_no_folder_for_a_failed_run(tmp_path: Path, prepared_data: Path,
                                                                      sate_path) -> None:  # noqa: ANN001
    """recipes/synth/local/streaming.sh made each run's folder before `sate evaluate` ran: a run refused (an ASR pack,
    a policy misspelt) left an empty one, where `sate evaluate` itself makes its --out only once the models are
    loaded; and its option errors were signed "[local]", its folder's name (tenth hostile pass)."""
    script = ROOT / "recipes" / "synth" / "local" / "streaming.sh"
    env = sate_path(dict(os.environ))
    done = subprocess.run(["bash", str(script), "--foo", "1"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and done.stderr == "[streaming] error: unknown option --foo (--help lists them)\n"
    out = tmp_path / "eval"
    done = subprocess.run(["bash", str(script), "--pack", str(tmp_path / "no-pack"), "--data", str(prepared_data),
                           "--split", "dev", "--out", str(out)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "sate evaluate: error: " in done.stderr, done.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_libri_trans_has_no_target_language_to_choose(tmp_path: Path, run_recipe) -> None:  # noqa: ANN001
    """Augmented LibriSpeech is English-French only, yet `--tgt-lang de` was taken (a variable the recipe set and
    never read) and the run trained French without a word (tenth hostile pass)."""
    done = run_recipe("libri_trans", "--root", tmp_path / "corpus", "--data", tmp_path / "data", "--exp",
                      tmp_path / "exp", "--tgt-lang", "de", timeout=120)
    assert done.returncode == 1
    assert done.stderr == "[libri_trans] error: unknown option --tgt-lang (--help lists them)\n"
    assert list(tmp_path.iterdir()) == []


def test_the_synthetic_corpus_has_no_target_language_to_choose(tmp_path: Path, run_recipe) -> None:  # noqa: ANN001
    """sate synth voices English-German alone, yet `--tgt-lang fr` was taken: stage -1 voiced the corpus (minutes)
    and stage 0 then refused en-fr (twelfth hostile pass)."""
    done = run_recipe("synth", "--corpus", tmp_path / "corpus", "--data", tmp_path / "data", "--exp",
                      tmp_path / "exp", "--tgt-lang", "fr", timeout=120)
    assert done.returncode == 1
    assert done.stderr == "[synth] error: unknown option --tgt-lang (--help lists them)\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "says"), [
    (["--ngpu", "two"], "--ngpu must be a number of GPUs (0: the CPU), got 'two'"),
    (["--nj", "0"], "--nj must be a whole number >= 1, got '0'"),
    # a line break in a value split the error line in two (fourteenth hostile pass)
    (["--ngpu", "2\n3\x1b[31m"], "--ngpu must be a number of GPUs (0: the CPU), got '2\\n3\\e[31m'"),
    # sate features' limit (four per CPU, at least 16) was met at stage 1, after the corpus was voiced and prepared
    (["--nj", "100000"], f"--nj 100000: at most {max(16, 4 * (os.cpu_count() or 1))} parallel jobs on this machine "
                         "(four per CPU, at least 16)"),
    (["--test-sets", "dev dev"], "--test-sets names dev twice"),
    # sate synth voiced a corpus without train, and stage 0's sate prep refused it (thirty-second hostile pass)
    (["--train-size", "000"], "--train-size 0: every stage after the corpus trains on its train split: give 1 or more"),
])
def test_the_synthetic_recipe_checks_its_options_before_it_voices_the_corpus(
        tmp_path: Path, run_recipe, args: list[str], says: str) -> None:  # noqa: ANN001
    """Thirteenth hostile pass: recipes/synth ran stage -1 (sate synth voicing the corpus: minutes at its sizes)
    before it sourced the shared checks, so each of these was refused only once the corpus was voiced."""
    done = run_recipe("synth", "--corpus", tmp_path / "corpus", "--data", tmp_path / "data", "--exp",
                      tmp_path / "exp", "--acoustic", "conformer", "--train-size", "4", "--text-size", "20",
                      "--dev-size", "2", "--test-size", "2", *args, timeout=300)
    assert done.returncode == 1
    assert done.stderr == f"[synth] error: {says}\n"
    assert list(tmp_path.iterdir()) == []

@pytest.mark.parametrize(("train_args", "says"), [
    ("--exp /elsewhere", "--exp: the recipe trains each model in its folder of --exp (give the recipe --exp DIR)"),
    ("--set trainer.max_steps=2 --ex=/elsewhere",  # sate train takes a prefix of an option, as argparse does
     "--ex=/elsewhere: the recipe trains each model in its folder of --exp (give the recipe --exp DIR)"),
    ("--config other.yaml", "--config: the recipe gives each model its config from --conf-dir (--conf-dir DIR, with "
                            "the files it names)"),
    ("--init-from asr=a.pt", "--init-from: the recipe gives --init-from to the models begun from others (SATE, the "
                             "comparison rows) itself"),
    ("--st /elsewhere", "--st: the recipe gives --steps-from to the models begun from others (SATE, the comparison "
                        "rows) itself"),
    ("--set data.dir=/elsewhere", "data.dir=/elsewhere: the recipe gives every model its data directory, --data "
                                  "(give the recipe --data DIR)"),
    ("--set=data.dir=/elsewhere", "data.dir=/elsewhere: the recipe gives every model its data directory, --data "
                                  "(give the recipe --data DIR)"),
    # sate train ended 0 having printed its help: the model was marked trained (its review)
    ("--devices 1 --he", "--he: sate train would print its help and train nothing (run `sate train --help` for it)"),
    ("-h", "-h: sate train would print its help and train nothing (run `sate train --help` for it)"),
    # the mapping form of the same key (its review)
    ('--set data={"dir":"/elsewhere"}', 'data={"dir":"/elsewhere"}: the recipe gives every model its data directory, '
                                        "--data (give the recipe --data DIR)"),
    ("--se=data={num_workers:2,'dir':/e}", "data={num_workers:2,'dir':/e}: the recipe gives every model its data "
                                           "directory, --data (give the recipe --data DIR)"),
])
def test_train_args_may_not_replace_what_the_recipe_gives_sate_train(tmp_path: Path, train_args: str,
                                                                     says: str) -> None:
    """--train-args go after the recipe's own options, and the last of an option wins: `--train-args "--exp DIR"`
    trained every model into DIR while the recipe marked EXP/NAME trained, then averaged and packed the checkpoints
    EXP/NAME held from before, exit 0 (twenty-eighth hostile pass)."""
    done = subprocess.run(["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "m", "--data",
                           tmp_path / "data", "--exp", tmp_path / "exp", "--train-args", train_args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == f"[mustc] error: --train-args: {says}\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("train_args", "says"), [
    ("trainer.max_steps=2", "trainer.max_steps=2: not an option of sate train; a config key is set by --set "
                            "trainer.max_steps=2"),
    ("--max-steps 2", "--max-steps: no option of sate train, or the beginning of more than one (of its options, "
                      "--train-args may give --set KEY=VALUE, --accelerator, --devices and --num-nodes)"),
    ("--s x=1", "--s: no option of sate train, or the beginning of more than one"),  # --set or --steps-from
    ("--set trainer.max_steps=2 --set", "--set needs a value (the last word of --train-args is the option)"),
    ("--set --devices 2", "--set needs a value (got the option --devices after it)"),
    ("--accelerator tpu", "--accelerator tpu: sate train takes auto, cpu or gpu (the recipe gives it from --ngpu)"),
    ("--num-nodes=two", "--num-nodes two: sate train takes a whole number (digits 0-9)"),
    # YAML's spaces were advised "a config key is set by --set =", and a value with a space retried with other quotes
    # met the same error (review32r)
    ("--set trainer.max_steps = 2", "=: not an option of sate train; --set takes KEY=VALUE as one word, without spaces "
                                    "around '=' (--train-args is split on spaces, and quotes in it are not read)"),
    ("--set trainer.max_steps =2", "=2: not an option of sate train; --set takes KEY=VALUE as one word"),
    ("--set 'model.x=[1, 2]'", "2]': not an option of sate train (of its options, --train-args may give --set "
                               "KEY=VALUE, --accelerator, --devices and --num-nodes); --train-args is split on spaces, "
                               "and quotes in it are not read: write a --set value without spaces (--set "
                               "model.x=[1,2]), or set it in a config of --conf-dir"),
    ("--devices -1.5", "--devices -1.5: sate train takes a whole number (digits 0-9)"),  # was "needs a value"
])
def test_train_args_sate_train_would_refuse_are_refused_before_stage_0(tmp_path: Path, train_args: str,
                                                                       says: str) -> None:
    """`--train-args "trainer.max_steps=2"` (its --set forgotten) was refused by stage 3's sate train ("unrecognized
    arguments"), after stages 0 to 2: hours of MuST-C prep, features and vocabularies (thirty-second hostile pass)."""
    done = subprocess.run(["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "m", "--data",
                           tmp_path / "data", "--exp", tmp_path / "exp", "--train-args", train_args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith(f"[mustc] error: --train-args: {says}"), done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("train_args", ["--set trainer.max_steps=2 --set data.train=train_sp", "--devices 2",
                                        "--devices=1 --acc cpu --num 1 --set trainer.x=-1",
                                        "--set=trainer.max_epochs=1 --set optim.lr=1e-3",
                                        '--set data={"train":"train_dirty"}'])
def test_train_args_of_other_options_are_taken(tmp_path: Path, train_args: str) -> None:
    done = subprocess.run(["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "m", "--data",
                           tmp_path / "data", "--exp", tmp_path / "exp", "--train-args", train_args, "--stage", "50"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "selects none of the stages" in done.stderr, done.stderr


@pytest.mark.parametrize("script", ["mustc/run.sh", "libri_trans/run.sh", "synth/run.sh", "synth/local/streaming.sh"])
def test_a_recipe_s_help_is_its_header_alone(script: str) -> None:
    """--help printed every comment up to the first empty line, which came after the notes that follow the header:
    each recipe's help went on with "`sh run.sh` (dash) stopped on ...", the repository root's and more (twenty-eighth
    hostile pass)."""
    done = subprocess.run(["bash", ROOT / "recipes" / script, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert "dash" not in done.stdout and "--help" not in done.stdout and "repository root" not in done.stdout
    assert done.stdout.splitlines()[-1].lstrip().startswith(("11 ", "--device D"))  # its last line: stages, options


@pytest.mark.parametrize("recipe", ["mustc", "libri_trans", "synth"])
def test_the_default_nj_is_the_cpus_not_omp_num_threads(tmp_path: Path, recipe: str) -> None:
    """--nj's default was nproc's answer, which is OMP_NUM_THREADS where that is set: an exported OMP_NUM_THREADS=100
    (on a machine of fewer CPUs) was refused as "--nj 100: at most 16 parallel jobs", an option never given, and
    OMP_NUM_THREADS=1 made the features on one CPU (twenty-eighth hostile pass)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate").write_text('#!/bin/bash\n[ "$1" != features ] || printf "%s\\n" "$@" > "$SATE_ARGS"\n')
    (tmp_path / "bin" / "sate").chmod(0o755)
    (tmp_path / "data" / ".done").mkdir(parents=True)
    (tmp_path / "data" / ".done" / "prep").touch()
    corpus = {"mustc": ["--mustc-root", tmp_path], "libri_trans": ["--root", tmp_path],
              "synth": ["--acoustic", "conformer", "--corpus", tmp_path]}[recipe]
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(tmp_path / "args"),
           "OMP_NUM_THREADS": "100", "OMP_THREAD_LIMIT": "1"}
    done = subprocess.run(["bash", ROOT / "recipes" / recipe / "run.sh", *corpus, "--data", tmp_path / "data",
                           "--exp", tmp_path / "exp", "--stage", "1", "--stop-stage", "1"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[args.index("--jobs") + 1] == str(len(os.sched_getaffinity(0)))


def test_a_corpus_sate_synth_did_not_finish_is_not_prepared(tmp_path: Path) -> None:
    """sate synth writes the corpus in place, the MT text first: Ctrl-C while it made the corpus of another seed left
    the new MT text beside the old voiced splits under the old corpus's marker, and `--stage 0` with the old
    parameters prepared them, and stages 2 and 4 read the other MT text, without a word (twenty-eighth hostile
    pass)."""
    (tmp_path / "bin").mkdir()
    # stopped once it has begun: its mark written (touched) first, as sate synth does
    (tmp_path / "bin" / "sate").write_text('#!/bin/bash\n[ "$1" != synth ] || { sleep 0.05; mkdir -p "$3/en-de"; '
                                           'touch "$3/en-de/.sate-synth"; exit 130; }\n')
    (tmp_path / "bin" / "sate").chmod(0o755)
    (tmp_path / "corpus" / ".done").mkdir(parents=True)
    old = "text=phrasebook train_size=8000 seed=0 --text-size 40000 --dev-size 300 --test-size 300"
    (tmp_path / "corpus" / ".done" / "synth").write_text(old)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    argv = ["bash", ROOT / "recipes" / "synth" / "run.sh", "--acoustic", "conformer", "--corpus", tmp_path / "corpus",
            "--data", tmp_path / "data", "--exp", tmp_path / "exp"]
    done = subprocess.run([*argv, "--seed", "1", "--stop-stage", "-1"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 130
    done = subprocess.run([*argv, "--stage", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (f"[synth] error: the corpus in {tmp_path}/corpus may be half-written: stage -1 ended before "
                           "sate synth had finished it (stopped, or failed); run from --stage -1, which makes it "
                           "whole\n")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("linked", [False, True])
def test_a_sate_synth_refusal_leaves_the_corpus_s_marker_as_it_was(tmp_path: Path, linked: bool) -> None:
    """The marker said "unfinished" before sate synth had read its arguments: a stage -1 it refused at once
    (`--text-size` below `--train-size`), writing nothing, made a finished corpus "half-written", and every later
    stage of it was refused (twenty-eighth hostile pass, review). A refusal once sate synth has begun writing, also
    where the corpus's en-de/ is a link to another disk, still leaves "unfinished"."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate").write_text('#!/bin/bash\n[ "$1" != synth ] || { sleep 0.05; [ -z "$WRITE" ] || touch '
                                           '"$3/en-de/.sate-synth"; echo "sate synth: error: no" >&2; exit 2; }\n')
    (tmp_path / "bin" / "sate").chmod(0o755)
    corpus = tmp_path / "corpus"
    (corpus / ".done").mkdir(parents=True)
    if linked:
        (tmp_path / "disk" / "en-de").mkdir(parents=True)
        (corpus / "en-de").symlink_to(tmp_path / "disk" / "en-de")
    else:
        (corpus / "en-de").mkdir()
    (corpus / "en-de" / ".sate-synth").touch()
    old = "text=phrasebook train_size=8000 seed=0 --text-size 40000 --dev-size 300 --test-size 300"
    (corpus / ".done" / "synth").write_text(old)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    argv = ["bash", ROOT / "recipes" / "synth" / "run.sh", "--acoustic", "conformer", "--corpus", corpus, "--seed", "1",
            "--stop-stage", "-1"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "sate synth: error: no" in done.stderr, done.stderr
    assert (corpus / ".done" / "synth").read_text() == old
    assert sorted(p.name for p in (corpus / ".done").iterdir()) == ["synth"]
    done = subprocess.run(argv, env={**env, "WRITE": "1"}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert (corpus / ".done" / "synth").read_text().startswith("unfinished text=phrasebook train_size=8000 seed=1 ")
    (corpus / ".done" / "synth").unlink()  # a new corpus: no marker before, none after
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and not (corpus / ".done" / "synth").exists()


def test_a_recipe_s_training_without_its_gpus_names_ngpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MuST-C recipe's default --ngpu 1 on a machine without a GPU stopped stage 3 on "use --accelerator cpu (or
    auto)", an option the recipe refuses as unknown (twenty-eighth hostile pass); `sate train` alone keeps its
    advice."""
    from sate.errors import SateError
    from sate.train.trainer import check_devices

    monkeypatch.delenv("SATE_STOP_WITH", raising=False)
    with pytest.raises(SateError, match=r"use --accelerator cpu \(or auto\)$"):
        check_devices("gpu", 1, 0)
    monkeypatch.setenv("SATE_STOP_WITH", str(os.getpid()))
    with pytest.raises(SateError, match=r"torch sees no GPU on this machine; give the recipe --ngpu 0 \(the CPU\)$"):
        check_devices("gpu", 1, 0)
    with pytest.raises(SateError, match=r"--devices 4: from 1 to 2 on this machine \(its GPUs\); give the recipe "
                                        r"--ngpu 2 or fewer$"):
        check_devices("gpu", 4, 2)
    assert check_devices("gpu", 2, 2) == 2 and check_devices("cpu", 1, 0) == 1


@pytest.mark.parametrize(("recipe", "option"), [("synth", "--exp"), ("synth", "--corpus"), ("mustc", "--data"),
                                                ("libri_trans", "--data"), ("libri_trans", "--conf-dir")])
def test_an_empty_directory_option_is_refused(tmp_path: Path, recipe: str, option: str) -> None:
    """`--exp "$EXP"` with EXP unset ran on the default experiments (the repository's exp/..., another run's, "done
    already"), and libri_trans's `--data ""` was the root: "missing /.done/features" (twenty-eighth hostile pass). An
    empty hub directory or list is none, as its default."""
    corpus = {"mustc": ["--mustc-root", tmp_path], "libri_trans": ["--root", tmp_path],
              "synth": ["--acoustic", "conformer"]}[recipe]
    done = subprocess.run(["bash", ROOT / "recipes" / recipe / "run.sh", *corpus, option, "", "--stage", "3"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (f"[{recipe}] error: {option} is empty: give a directory, or leave the option out for its "
                           "default\n")
    done = subprocess.run(["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path, "--whisper", "",
                           "--mt-hub", "", "--asr-extra", "", "--mt-extra", "", "--stage", "50"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert "selects none of the stages" in done.stderr, done.stderr


@pytest.mark.parametrize(("recipe", "tag"), [("mustc", ""), ("mustc", ".."), ("libri_trans", "."), ("synth", ""),
                                           ("mustc", "./"), ("synth", "x/.."), ("libri_trans", "/"),
                                           ("mustc", "a/../..")])
def test_an_exp_tag_that_is_no_folder_of_its_own_is_refused(tmp_path: Path, recipe: str, tag: str) -> None:
    """`--exp-tag ""` (or `..`) put the MuST-C recipe's experiments in exp/mustc/en-de/ itself, beside the folders of
    the other tags, and gave the synthetic recipe the default tag's (twenty-eighth hostile pass); so did `./`, `x/..`
    and `/` after the first fix, and `a/../..` named a folder outside (its review)."""
    corpus = {"mustc": ["--mustc-root", tmp_path], "libri_trans": ["--root", tmp_path],
              "synth": ["--acoustic", "conformer"]}[recipe]
    done = subprocess.run(["bash", ROOT / "recipes" / recipe / "run.sh", *corpus, "--exp-tag", tag, "--stage", "3"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (f"[{recipe}] error: --exp-tag '{tag}' names no folder of its own under exp/: give a name "
                           "(or leave the option out for the default)\n")


@pytest.mark.parametrize("tag", ["a/b", "./v2", "sate v2/", "-x", "..a"])
def test_an_exp_tag_below_its_folder_is_taken(tmp_path: Path, tag: str) -> None:
    done = subprocess.run(["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path, "--exp-tag", tag,
                           "--stage", "50"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "selects none of the stages" in done.stderr, done.stderr


@pytest.mark.slow  # waits out read timeouts: 9 s a case
@pytest.mark.parametrize("readonly", [False, True])
def test_an_exported_tmout_does_not_stop_a_stage_that_draws_a_progress_bar(tmp_path: Path, readonly: bool) -> None:
    """TMOUT (hardened systems export 900 s) is bash's default timeout of `read`, and a stage's log is written by a
    `read` loop: a progress bar redrawn without a line break for that long (an epoch of sate train) timed it out, tee
    died of SIGPIPE and the training with it, the recipe ending 141 without a word (twenty-eighth hostile pass). The
    first fix unset TMOUT, and a readonly one (the CIS form, set by a startup file) stopped every recipe on bash's
    "TMOUT: cannot unset: readonly variable" (its review)."""
    side_by_side_stub(tmp_path, '#!/bin/bash\necho begun\nfor i in 1 2 3; do printf "epoch %s\\r" $i; sleep 1; done\n'
                                'echo "epoch done"; echo ended\n')
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "TMOUT": "1"}
    if readonly:
        (tmp_path / "profile").write_text("readonly TMOUT=1; export TMOUT\n")
        env["BASH_ENV"] = str(tmp_path / "profile")  # read by the recipe's bash as it starts, as ~/.bash_profile by -l
    argv = side_by_side_argv(tmp_path, "3")
    argv[argv.index("--parallel-pretrain") + 1] = "false"
    done = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "exp" / "asr" / "train.log").read_text()
    assert log.endswith(" ended\n") and " begun\n" in log and " epoch done\n" in log, log


def test_test_sets_are_words_not_patterns(tmp_path: Path) -> None:
    """`--test-sets "*"` reached `sate report --splits` as the file names of the directory the recipe ran in: the
    unquoted $test_sets was globbed (left by the tenth hostile pass)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate").write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$SATE_ARGS"\n')
    (tmp_path / "bin" / "sate").chmod(0o755)
    results = tmp_path / "exp" / "st" / "decode_tst-COMMON" / "results.json"
    results.parent.mkdir(parents=True)
    results.write_text("{}\n")
    (tmp_path / "a-file-here").touch()
    args = tmp_path / "args.txt"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(args)}
    argv = ["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "mustc", "--data",
            tmp_path / "data", "--exp", tmp_path / "exp", "--test-sets", "* tst-HE", "--stage", "8",
            "--stop-stage", "8"]
    done = subprocess.run(list(map(str, argv)), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    # the word itself, refused before any stage as no split name (twelfth hostile pass), not the files it matches
    assert done.returncode == 1 and done.stderr == "[mustc] error: --test-sets: '*' is not a split name (letters, " \
        "digits, '.', '_' and '-', not first a dot)\n", done.stderr
    assert not args.exists()


# A `sate` that stands in for the real under recipes/synth/local/streaming.sh: `evaluate` makes its --out (the last
# word) with a results.json and appends its arguments to $SATE_ARGS; any other command does nothing.
RECORDING_SATE = ('#!/bin/bash\n[ "$1" != evaluate ] || { out=${*: -1}; mkdir -p "$out"; a=("$@"); device=; '
                  'for i in "${!a[@]}"; do [ "${a[i]}" != --device ] || device=${a[i+1]}; done; '
                  'printf \'{\\n "device": "%s"\\n}\\n\' "$device" > "$out/results.json"; '
                  'echo "$*" >> "$SATE_ARGS"; }\n')  # results.json's device as `sate evaluate` writes it


def recording_sate(tmp_path: Path, script: str = RECORDING_SATE) -> None:
    """``tmp_path/bin/sate``: `script` (the recording one by default), for PATH."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate").write_text(script)
    (tmp_path / "bin" / "sate").chmod(0o755)


def fake_libri_trans(root: Path) -> dict[str, Path]:
    """``root`` laid out as Augmented LibriSpeech's train, dev and test folders, each file holding its own name: what
    the recipe's stage 0 checks and stamps, for a `sate` that records (no audio); the split folders by name."""
    dirs = {name: root / name for name in ("train", "dev", "test")}
    for name, folder in dirs.items():
        folder.mkdir(parents=True)
        for file in ("alignments.meta", f"{name}.en", f"{name}.fr"):
            (folder / file).write_text(f"{file}\n")
    return dirs


def libri_trans_under_recording(tmp_path: Path, script: str) -> tuple[Path, dict[str, str]]:
    """(a `fake_libri_trans` at ``tmp_path/libri trans``, the environment whose PATH finds ``script`` as `sate`,
    recording into ``tmp_path/args``)."""
    recording_sate(tmp_path, script)
    root = tmp_path / "libri trans"
    fake_libri_trans(root)
    return root, {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(tmp_path / "args")}


def run_streaming(tmp_path: Path, *options: str, **env: str) -> subprocess.CompletedProcess:
    """recipes/synth/local/streaming.sh run in ``tmp_path`` with ``options`` under its ``bin/sate`` (`recording_sate`:
    the arguments of each evaluation appended to ``tmp_path/args.txt``), ``env`` added to the environment."""
    environ = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
               "SATE_ARGS": str(tmp_path / "args.txt"), **env}
    argv = ["bash", ROOT / "recipes" / "synth" / "local" / "streaming.sh", *options]
    return subprocess.run(list(map(str, argv)), env=environ, cwd=tmp_path, capture_output=True, text=True, timeout=60)


def test_streaming_policies_are_words_not_patterns(tmp_path: Path) -> None:
    """streaming.sh's unquoted --policies were globbed where it ran: `--policies "* wait-k=1"` evaluated each file name
    there as a policy (twelfth hostile pass). A `sate` that records its evaluations stands in for the real."""
    recording_sate(tmp_path)
    (tmp_path / "pack").mkdir()
    (tmp_path / "a-file-here").touch()
    args = tmp_path / "args.txt"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(args)}
    argv = ["bash", ROOT / "recipes" / "synth" / "local" / "streaming.sh", "--pack", "pack", "--data", "data",
            "--out", "out", "--policies", "* wait-k=1", "--talks-policy", ""]
    done = subprocess.run(list(map(str, argv)), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    policies = [line.split(" --stream ")[1].split()[0] for line in args.read_text().splitlines() if "--stream" in line]
    assert policies == ["*", "wait-k=1"], policies


def test_streaming_refuses_an_out_of_another_pack_or_split(tmp_path: Path) -> None:
    """recipes/synth/local/streaming.sh skipped every run whose results.json existed: a second call with another
    --pack (or --split, or the pack made again) into the same --out found each run "done already" and showed the
    first pack's table, exit 0 (eleventh hostile pass). A `sate` that writes a results.json stands in for the real."""
    recording_sate(tmp_path)
    for name, size in (("pack_a", 1), ("pack_b", 2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.pt").write_bytes(b"x" * size)
        (tmp_path / name / "sate.yaml").write_text("format: sate-pack\n")
    (tmp_path / "data").mkdir()
    for split in ("dev", "test"):
        (tmp_path / "data" / f"{split}.jsonl").write_text(f'{{"id": "{split}"}}\n')
    args = tmp_path / "args.txt"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(args)}

    def streaming(pack: str, split: str = "dev") -> subprocess.CompletedProcess:
        argv = ["bash", ROOT / "recipes" / "synth" / "local" / "streaming.sh", "--pack", pack, "--data", "data",
                "--split", split, "--out", "out", "--policies", "wait-k=1", "--talks-policy", ""]
        return subprocess.run(list(map(str, argv)), env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=60)

    done = streaming("pack_a")
    assert done.returncode == 0 and len(args.read_text().splitlines()) == 3, done.stderr
    again = streaming(str(tmp_path / "pack_a"))  # the same pack named another way: each run done already
    assert again.returncode == 0 and again.stderr.count("done already") == 3, again.stderr
    for pack, split in (("pack_b", "dev"), ("pack_a", "test")):
        refused = streaming(pack, split)
        assert refused.returncode == 1 and refused.stderr.startswith(
            "[streaming] error: --out out holds the runs of another pack, data directory or split"), refused.stderr
    assert len(args.read_text().splitlines()) == 3


@pytest.mark.slow
def test_streaming_refuses_an_out_of_another_device(tmp_path: Path) -> None:
    """Twenty-seventh hostile pass: streaming.sh --device cuda into an OUT of CPU runs (the docs add runs to one OUT)
    found each run "done already" and showed the CPU's computation-aware latencies as the GPU's, exit 0; and back.
    Its review: the device was then recorded in OUT/.pack, so an OUT of GPU runs made before (no device there) was
    taken for the CPU's, and refused to the same device spelled otherwise (cuda:0 for cuda, cpu:0 for cpu). Each run's
    results.json, which `sate evaluate` has always written with its device, is what is read now."""
    recording_sate(tmp_path)
    (tmp_path / "pack").mkdir()
    options = ("--pack", "pack", "--data", "data", "--policies", "wait-k=1", "--talks-policy", "")
    assert run_streaming(tmp_path, *options, "--out", "cpu").returncode == 0
    assert run_streaming(tmp_path, *options, "--out", "gpu", "--device", "cuda").returncode == 0
    # an OUT of GPU runs as the script wrote it before: its .pack names no device
    pack_record = tmp_path / "gpu" / ".pack"
    pack_record.write_text(pack_record.read_text().replace(", device cuda", ""))
    assert len((tmp_path / "args.txt").read_text().splitlines()) == 6
    for out, device, ran_on in (("cpu", ["--device", "cuda"], "cpu"), ("gpu", [], "cuda"),
                                ("gpu", ["--device", "cuda:1"], "cuda")):
        refused = run_streaming(tmp_path, *options, "--out", out, *device)
        assert refused.returncode == 1 and re.match(  # the run named is the first of OUT in the locale's order
            rf"\[streaming\] error: --out {out} holds runs made on another device \({out}/[^/]+/results.json: "
            rf"{ran_on}, this call's --device {device[1] if device else 'cpu'}\), whose computation-aware latencies "
            rf"are not this device's: give --device {ran_on} to add runs to it, or another --out$", refused.stderr,
            re.MULTILINE), refused.stderr
    assert len((tmp_path / "args.txt").read_text().splitlines()) == 6
    for out, device in (("cpu", "cpu"), ("cpu", "cpu:0"), ("gpu", "cuda"), ("gpu", "cuda:0")):
        again = run_streaming(tmp_path, *options, "--out", out, "--device", device)
        assert again.returncode == 0 and again.stderr.count("done already") == 3, again.stderr
    assert len((tmp_path / "args.txt").read_text().splitlines()) == 6


def test_streaming_names_one_chunk_size_one_way(tmp_path: Path) -> None:
    """Thirteenth hostile pass: `--chunk 0.50` after `--chunk 0.5` decoded every run again into a folder of its own
    (wait-k=1-0.50s beside wait-k=1-0.5s), and the table and plot showed each run twice. A `sate` that writes a
    results.json stands in for the real."""
    recording_sate(tmp_path)
    (tmp_path / "pack").mkdir()
    args = tmp_path / "args.txt"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(args)}

    def streaming(chunk: str) -> subprocess.CompletedProcess:
        argv = ["bash", ROOT / "recipes" / "synth" / "local" / "streaming.sh", "--pack", "pack", "--data", "data",
                "--out", "out", "--policies", "wait-k=1", "--talks-policy", "", "--chunk", chunk]
        return subprocess.run(list(map(str, argv)), env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=60)

    for chunk in ("0.5", "0.50", ".5", "5e-1"):
        assert streaming(chunk).returncode == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["offline", "offline-greedy",
                                                                                 "wait-k=1-0.5s"]
    assert len(args.read_text().splitlines()) == 3  # each run decoded once
    refused = streaming("0,5")
    assert refused.returncode == 1 and refused.stderr == "[streaming] error: --chunk must be a number of seconds, " \
        "got '0,5'\n", refused.stderr


def test_streaming_names_one_policy_one_way(tmp_path: Path) -> None:
    """Twenty-seventh hostile pass: `--policies "wait-k=01 alignatt"` after `--policies "wait-k=1 alignatt=4"` (its
    default value) decoded each run again into a folder of its own, and the table showed both rows, alike; likewise
    the whole-talk run. The recipe's defaults are sate's."""
    from sate.decode.options import STREAM_POLICIES

    recipe = ROOT / "recipes" / "synth" / "local" / "streaming.sh"
    assert f"declare -A policy_default=({' '.join(f'[{k}]={v}' for k, v in STREAM_POLICIES.items())})" \
        in recipe.read_text()
    recording_sate(tmp_path)
    (tmp_path / "pack").mkdir()
    for policies, talks in (("wait-k=1 alignatt=4 local-agreement=0", "local-agreement=2"),
                            ("wait-k=01 alignatt local-agreement=00 waitk=3", "local-agreement")):
        assert run_streaming(tmp_path, "--pack", "pack", "--data", "data", "--out", "out", "--policies", policies,
                             "--talks-policy", talks, "--chunk", "1").returncode == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == [
        "alignatt=4-1s", "local-agreement=0-1s", "offline", "offline-greedy", "talks-local-agreement=2-1s",
        "talks-offline", "wait-k=1-1s", "waitk=3-1s"]  # a word sate does not know goes to it as given, to refuse
    assert len((tmp_path / "args.txt").read_text().splitlines()) == 8  # each run decoded once


def test_streaming_reuses_a_run_of_an_earlier_spelling(tmp_path: Path) -> None:
    """Review of the twenty-seventh hostile pass: an OUT made before each policy had one name holds its runs as they
    were spelled then (alignatt-1s for alignatt=4-1s, wait-k=01-1s, talks-local-agreement-1s); the same call again
    decoded each run once more under the new name, and the table showed both rows, alike. Such a run is reused."""
    recording_sate(tmp_path)
    (tmp_path / "pack").mkdir()
    options = ("--pack", "pack", "--data", "data", "--out", "out", "--chunk", "1")
    assert run_streaming(tmp_path, *options, "--policies", "alignatt=4 wait-k=1",
                         "--talks-policy", "local-agreement=2").returncode == 0
    for now, then in (("alignatt=4-1s", "alignatt-1s"), ("wait-k=1-1s", "wait-k=01-1s"),
                      ("talks-local-agreement=2-1s", "talks-local-agreement-1s")):
        (tmp_path / "out" / now).rename(tmp_path / "out" / then)  # as the script named them before
    again = run_streaming(tmp_path, *options, "--policies", "alignatt wait-k=1", "--talks-policy", "local-agreement")
    assert again.returncode == 0 and again.stderr.count("done already") == 6, again.stderr
    assert "done already (out/alignatt-1s)" in again.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == [
        "alignatt-1s", "offline", "offline-greedy", "talks-local-agreement-1s", "talks-offline", "wait-k=01-1s"]
    assert len((tmp_path / "args.txt").read_text().splitlines()) == 6  # none decoded again
    forced = run_streaming(tmp_path, *options, "--policies", "alignatt", "--talks-policy", "", "--force")
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "args.txt").read_text().splitlines()[-1].endswith("--out out/alignatt-1s")  # redone in place


def test_streaming_keeps_its_table_when_the_plot_fails(tmp_path: Path) -> None:
    """Twenty-seventh hostile pass: streaming.sh piped `sate latency-plot` through `tee OUT/table.md`, which emptied
    the table before the plot ran: a plot that failed (`--policies "" --talks-policy ""` into an OUT of no streamed
    run, a results.json damaged) left table.md empty, the last table lost."""
    recording_sate(tmp_path, '#!/bin/bash\ncase $1 in\n  evaluate) out=${*: -1}; mkdir -p "$out"; '
                            'echo "{}" > "$out/results.json" ;;\n  latency-plot) [ -z "$FAIL" ] || '
                            '{ echo "sate latency-plot: error: no" >&2; exit 2; }; echo "| row |" ;;\n'
                            'esac\n')
    (tmp_path / "pack").mkdir()
    options = ("--pack", "pack", "--data", "data", "--out", "out", "--policies", "wait-k=1", "--talks-policy", "")
    done = run_streaming(tmp_path, *options, FAIL="")
    assert done.returncode == 0 and done.stdout == "| row |\n", done.stderr
    assert (tmp_path / "out" / "table.md").read_text() == "| row |\n"
    failed = run_streaming(tmp_path, *options, FAIL="1")
    assert failed.returncode == 2 and failed.stderr.endswith("sate latency-plot: error: no\n"), failed.stderr
    assert (tmp_path / "out" / "table.md").read_text() == "| row |\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.is_dir()) == [".pack", "table.md"]


def test_streaming_gives_sate_a_path_that_begins_with_a_dash(tmp_path: Path) -> None:
    """Twenty-seventh hostile pass: streaming.sh passed `--out -runs` on as it was, and `sate evaluate` read it as an
    option: "argument --out: expected one argument" (so --pack and --data). The `sate` standing in refuses a value
    that begins with '-', as argparse does."""
    recording_sate(tmp_path, '#!/bin/bash\n[ "$1" != evaluate ] || { for w; do [[ $prev != --out && $prev != '
                            '--split ]] || [[ $w != -* ]] || exit 2; prev=$w; done; out=${*: -1}; mkdir -p "$out"; '
                            'echo "{}" > "$out/results.json"; echo "$*" >> "$SATE_ARGS"; }\n')
    (tmp_path / "-pack").mkdir()
    done = run_streaming(tmp_path, "--pack", "-pack", "--data", "-data", "--out", "-runs", "--policies", "wait-k=1",
                         "--talks-policy", "", "--split", "-x")  # review: a split is a name (./-x is none): --split=
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "args.txt").read_text().splitlines()[0] == "evaluate --model ./-pack --data ./-data " \
        "--split=-x --device cpu --beam 1 --out ./-runs/offline-greedy"
    assert (tmp_path / "-runs" / "wait-k=1-0.5s" / "results.json").is_file()


def test_streaming_refuses_a_pack_of_another_task_before_any_run(tmp_path: Path) -> None:
    """Twenty-seventh hostile pass: streaming.sh --pack an MT pack ran its two offline runs (translations of the
    transcripts) into OUT, whose .pack then named it, before the first streamed run was refused; the call again with
    the ST pack was then refused that OUT."""
    recording_sate(tmp_path)
    for task in ("mt", "asr", "st"):
        (tmp_path / task).mkdir()
        (tmp_path / task / "sate.yaml").write_text(f"format: sate-pack\nversion: 1\ntask: {task}\n")
        done = run_streaming(tmp_path, "--pack", task, "--data", "data", "--out", f"out-{task}", "--policies",
                             "wait-k=1", "--talks-policy", "")
        if task == "st":
            assert done.returncode == 0 and (tmp_path / "out-st" / "wait-k=1-0.5s").is_dir(), done.stderr
            continue
        assert done.returncode == 1 and done.stderr == (
            f"[streaming] error: --pack {task} is an {task.upper()} pack ({task}/sate.yaml: task: {task}), and the "
            "runs stream speech translation: give an ST pack\n"), done.stderr
        assert not (tmp_path / f"out-{task}").exists() and not (tmp_path / "args.txt").exists()


@pytest.mark.parametrize("layout", ["indented", "one line"])
def test_hub_values_are_read_from_a_config_json_on_one_line(tmp_path: Path, layout: str) -> None:
    """hub_value read d_model and model_type only from an indented config.json: one written on one line gave
    nothing, and stage 3 stopped on "model.d_model must be an integer, got None" (an SSL model: "model_type '' is
    not wav2vec2, hubert or wavlm"); a key the file lacks is named (eleventh hostile pass). A `sate` that records
    its arguments stands in for the real."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate").write_text('#!/bin/bash\n[ "$1" != train ] || printf "%s\\n" "$@" >> "$SATE_ARGS"\n')
    (tmp_path / "bin" / "sate").chmod(0o755)
    configs = {"marian": {"d_model": 512, "model_type": "marian", "id2label": {"0": "LABEL_0"}},
               "hubert": {"hidden_size": 768, "model_type": "hubert", "conv_dim": [512, 512]}}
    for name, config in configs.items():
        (tmp_path / name).mkdir()
        text = json.dumps(config, indent=2) if layout == "indented" else json.dumps(config, separators=(",", ":"))
        (tmp_path / name / "config.json").write_text(text + "\n")
    for marker in ("features", "vocab"):
        (tmp_path / "data" / ".done").mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / ".done" / marker).write_text("")
    args = tmp_path / "args.txt"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(args)}
    argv = ["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "mustc", "--data",
            tmp_path / "data", "--exp", tmp_path / "exp", "--mt-hub", tmp_path / "marian", "--ssl-hub",
            tmp_path / "hubert", "--stage", "3", "--stop-stage", "3"]
    done = subprocess.run(list(map(str, argv)), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said = args.read_text().splitlines()
    assert "model.d_model=512" in said and "model.acoustic.type=hf_hubert" in said, said
    (tmp_path / "marian" / "config.json").write_text('{"model_type": "marian"}\n')
    shutil.rmtree(tmp_path / "exp")
    done = subprocess.run(list(map(str, argv)), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and (f'[mustc] error: {tmp_path / "marian" / "config.json"}: no "d_model" (a number '
                                     "or a name) in it") in done.stderr, done.stderr
    (tmp_path / "marian" / "config.json").unlink()  # a directory of the user's: no stage makes it (fourteenth pass)
    done = subprocess.run(list(map(str, argv)), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == (
        f"[mustc] error: {tmp_path / 'marian'}: no config.json there (is it the downloaded model's directory? "
        "--mt-hub and --ssl-hub name one)"), done.stderr


@pytest.mark.slow
def test_comparison_rows_follow_the_models_they_are_made_from(tmp_path: Path) -> None:
    """Stage 10's rows train for as many updates as SATE (--steps-from exp/st) and from exp/asr and exp/mt: SATE
    trained on since, or the ASR model averaged again, left every row "done already" with its old count or its old
    starting point (eleventh hostile pass). A `sate` that records its training runs stands in for the real."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate").write_text(
        '#!/bin/bash\n[ "$1" = train ] || exit 0\nprev=\nfor a in "$@"; do [ "$prev" != --exp ] || '
        '{ mkdir -p "$a/checkpoints"; echo "$a" >> "$SATE_ARGS"; }; prev=$a; done\n')
    (tmp_path / "bin" / "sate").chmod(0o755)
    exp = tmp_path / "exp"
    for system in ("asr", "mt", "st"):
        (exp / system / "pack").mkdir(parents=True)
        (exp / system / "model.pt").write_text(f"the {system} model\n")
    (exp / "st" / ".done-train").write_text("config=1 steps=100")
    args = tmp_path / "args.txt"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(args)}
    argv = list(map(str, ["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "mustc", "--data",
                          tmp_path / "data", "--exp", exp, "--compare", "true", "--stage", "10", "--stop-stage", "10"]))

    def trained() -> list[str]:
        done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        runs = args.read_text().splitlines() if args.exists() else []
        args.unlink(missing_ok=True)
        return sorted(Path(run).name for run in runs)

    rows = ["e2e_asr", "e2e_scratch", "sate_nokd", "sate_shrink"]
    assert trained() == rows
    assert trained() == []  # done already
    (exp / "st" / ".done-train").write_text("config=1 steps=100 --set trainer.max_epochs=99")  # SATE trained on
    assert trained() == rows  # each resumed to SATE's new count
    (exp / "asr" / "model.pt").write_text("the asr model, averaged again\n")
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and f"{exp / 'e2e_asr'} was begun from other models than {exp / 'asr' / 'model.pt'} " \
        "hold now" in done.stderr, done.stderr


def test_an_empty_test_sets_is_refused_before_any_stage(tmp_path: Path, run_recipe) -> None:  # noqa: ANN001
    """`--test-sets ""` reached stage 8 as `sate report --splits --out ...`, refused by argparse for --splits, an
    option the user never gave (eleventh hostile pass); a run that stops before stage 7 does not read it."""
    done = run_recipe("mustc", "--mustc-root", tmp_path / "mustc", "--data", tmp_path / "data", "--exp",
                      tmp_path / "exp", "--test-sets", " ", "--stage", "8", timeout=120)
    assert done.returncode == 1
    assert done.stderr == "[mustc] error: --test-sets names no split (stages 7, 8 and 10 decode and report them)\n"
    assert list(tmp_path.iterdir()) == []
    done = run_recipe("mustc", "--mustc-root", tmp_path / "mustc", "--exp", tmp_path / "exp", "--test-sets", "",
                      "--stage", "6", "--stop-stage", "6", timeout=120)
    assert "--test-sets" not in done.stderr and "stage 6:" in done.stderr, done.stderr


PACK_STUB = """#!/bin/bash
# `sate` for the recipe: every training ends well; the $FAIL side's `sate average` fails, the other's succeeds
case "$1 $*" in
  average*"/$FAIL "*) echo "error: $FAIL: no checkpoint to average" >&2; exit 2 ;;
  average*) for a; do [ "$prev" = --out ] && touch "$a"; prev=$a; done; exit 0 ;;
  pack*) for a; do [ "$prev" = --out ] && mkdir -p "$a"; prev=$a; done; exit 0 ;;
  *) exit 0 ;;
esac
"""


@pytest.mark.parametrize("fail", ["asr", "mt"])
def test_a_failed_side_by_side_average_is_not_sent_to_train_log(tmp_path: Path, fail: str) -> None:
    """With --parallel-pretrain true, a `sate average` (or `sate pack`) that failed after its training had ended well
    made the recipe say "ASR pre-training failed (see EXP/asr/train.log)": a log that says the training ended well,
    while the error was on the terminal above (24th hostile pass). It now says averaging or packing failed."""
    side_by_side_stub(tmp_path, PACK_STUB)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "FAIL": fail}
    argv = [str(a) for a in side_by_side_argv(tmp_path, "4")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert f"error: {fail}: no checkpoint to average" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"[mustc] error: {fail.upper()} pre-training trained, then averaging or packing it into {tmp_path}/exp/{fail} "
        "failed (the error above)")
    assert "pre-training failed" not in done.stderr


SIMULTANEOUS_STUB = """#!/bin/bash
# `sate` for the recipe: MT's `sate average` fails; ASR's `sate pack` ends the moment MT's average has failed (a
# spinning wait), so that both stages end together
case "$1 $*" in
  average*"/mt "*) touch "$MARK"; exit 2 ;;
  average*) for a; do [ "$prev" = --out ] && touch "$a"; prev=$a; done; exit 0 ;;
  pack*) while [ ! -e "$MARK" ]; do :; done
         for a; do [ "$prev" = --out ] && mkdir -p "$a"; prev=$a; done; exit 0 ;;
  *) exit 0 ;;
esac
"""


@pytest.mark.slow  # four recipe runs
def test_side_by_side_stages_ending_together_name_the_one_that_failed(tmp_path: Path) -> None:
    """Which stage had ended was told by `kill -0` after `wait -n`: when both had ended before the recipe reached
    `wait -n`, bash 5.2 answered 127 having reaped both, and a failed MT was reported as ASR's failure (a flaky test
    in the 25th pass). Each stage's status is now `wait PID`'s. The race itself cannot be forced from here (the old
    code passes this test most runs); four runs where the two end within a millisecond check the statuses read."""
    side_by_side_stub(tmp_path, SIMULTANEOUS_STUB)
    for run in range(4):
        exp = tmp_path / f"exp{run}"
        argv = [str(exp) if a == tmp_path / "exp" else str(a) for a in side_by_side_argv(tmp_path, "4")]
        env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "MARK": str(tmp_path / f"m{run}")}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines()[-1] == (
            f"[mustc] error: MT pre-training trained, then averaging or packing it into {exp}/mt failed (the error "
            "above)")


@pytest.mark.slow
@pytest.mark.parametrize("trained", [False, True])
def test_a_run_that_prepares_and_trains_checks_its_gpus_before_stage_0(tmp_path: Path, trained: bool) -> None:
    """The MuST-C recipe's default --ngpu 1 on a machine without a GPU stopped only stage 3, after hours of prep,
    features and vocabularies (twenty-eighth hostile pass, left then). A run whose models are trained already
    skips their stages whatever --ngpu says, so it is not refused (decoding them on the CPU is fine). The Python
    beside `sate` is made to see no GPU, so the test says the same on a GPU machine."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sate").symlink_to(Path(sys.executable).parent / "sate")
    (bin_dir / "python").write_text("#!/bin/sh\necho 0\n")
    (bin_dir / "python").chmod(0o755)
    exp = tmp_path / "exp"
    if trained:
        for name in ("asr", "mt", "st"):
            (exp / name).mkdir(parents=True)
            (exp / name / ".done-train").write_text("done\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(ROOT / "recipes" / "mustc" / "run.sh"), "--mustc-root", str(tmp_path / "mustc"),
                           "--data", str(tmp_path / "data"), "--exp", str(exp)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0
    refusal = ("[mustc] error: --ngpu 1: torch sees 0 GPU(s) on this machine, and stages 3 to 5 train on 1: give "
               "--ngpu 0 (the CPU), or --stop-stage 2 to prepare the data here and train elsewhere")
    if trained:
        assert refusal not in done.stderr and "stage 0:" in done.stdout + done.stderr
    else:
        assert done.stderr.strip().splitlines()[-1] == refusal
        assert not (tmp_path / "data").exists()


def test_test_sets_of_several_lines_are_every_line_s_splits(tmp_path: Path) -> None:
    """`--test-sets "$(cat splits.txt)"`, a split a line: `read -a` read the first line alone, so stages 7 and 8
    decoded and tabled its split alone, exit 0 (thirtieth hostile pass)."""
    recording_sate(tmp_path, '#!/bin/bash\necho "$*" >> "$SATE_ARGS"\n')
    for split in ("tst-COMMON", "tst-HE"):
        results = tmp_path / "exp" / "st" / f"decode_{split}" / "results.json"
        results.parent.mkdir(parents=True)
        results.write_text("{}\n")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(tmp_path / "args")}
    argv = ["bash", ROOT / "recipes" / "mustc" / "run.sh", "--mustc-root", tmp_path / "mustc", "--data",
            tmp_path / "data", "--exp", tmp_path / "exp", "--test-sets", "tst-COMMON\ntst-HE\n", "--stage", "8",
            "--stop-stage", "8"]
    done = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "args").read_text().splitlines()[-1]
    assert report == f"report --exp {tmp_path / 'exp'} --splits tst-COMMON tst-HE --out {tmp_path / 'exp'}/results.md"


def test_streaming_policies_of_several_lines_are_every_line_s(tmp_path: Path) -> None:
    """`--policies "$(cat policies.txt)"`, a policy a line: the first line's alone were run (thirtieth hostile
    pass)."""
    recording_sate(tmp_path)
    (tmp_path / "pack").mkdir()
    done = run_streaming(tmp_path, "--pack", "pack", "--data", "data", "--out", "out", "--policies",
                         "wait-k=1\nwait-k=2\n", "--talks-policy", "")
    assert done.returncode == 0, done.stderr
    runs = [line.split(" --stream ")[1].split()[0] for line in (tmp_path / "args.txt").read_text().splitlines()
            if "--stream" in line]
    assert runs == ["wait-k=1", "wait-k=2"], runs


@pytest.mark.parametrize(("args", "gpus"), [(["--ngpu", "08"], 8), (["--ngpu", "1", "--stop-stage", "09"], 1)])
def test_numbers_with_a_leading_zero_are_decimal(tmp_path: Path, args: list[str], gpus: int) -> None:
    """Bash's arithmetic reads a leading 0 as octal: `--ngpu 08` (or `--stop-stage 09`) printed "08: value too great
    for base" from pipeline.sh and skipped the GPU check before stage 0, so stage 3 refused the GPUs only after prep,
    features and vocabularies (thirtieth hostile pass). The Python beside `sate` sees no GPU, as in the test above."""
    recording_sate(tmp_path, "#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "python").write_text("#!/bin/sh\necho 0\n")
    (tmp_path / "bin" / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(ROOT / "recipes" / "mustc" / "run.sh"), "--mustc-root", str(tmp_path / "mustc"),
                           "--data", str(tmp_path / "data"), "--exp", str(tmp_path / "exp"), *args],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1
    assert done.stderr == (f"[mustc] error: --ngpu {gpus}: torch sees 0 GPU(s) on this machine, and stages 3 to 5 "
                           f"train on {gpus}: give --ngpu 0 (the CPU), or --stop-stage 2 to prepare the data here and "
                           "train elsewhere\n")


@pytest.mark.parametrize(("args", "given"), [(["--nj", "08", "--average-n", "02"], "--jobs 8"),
                                             (["--src-vocab-size", "0100", "--tgt-vocab-size", "090"],
                                              "--src-size 100 --tgt-size 90")])
def test_every_count_with_a_leading_zero_is_decimal(tmp_path: Path, args: list[str], given: str) -> None:
    """`--nj 08` (likewise `--average-n 02` and the vocabulary sizes) was refused as "must be a whole number >= 1",
    which it is, where `--ngpu 08` was read as 8 (thirtieth hostile pass, review): every count goes through one helper,
    and sate is given the number in decimal."""
    recording_sate(tmp_path, '#!/bin/bash\necho "$*" >> "$SATE_ARGS"\n')
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(tmp_path / "args")}
    done = subprocess.run(["bash", str(ROOT / "recipes" / "mustc" / "run.sh"), "--mustc-root", str(tmp_path / "mustc"),
                           "--data", str(tmp_path / "data"), "--exp", str(tmp_path / "exp"), "--ngpu", "0", *args,
                           "--stop-stage", "2"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert given in (tmp_path / "args").read_text()


@pytest.mark.slow  # five recipe runs
def test_a_corpus_whose_text_changed_is_prepared_again(tmp_path: Path) -> None:
    """Augmented LibriSpeech (or MuST-C) corrected or unpacked again in place: stage 0 was "done already", and every
    stage after it, on the manifests of the old text, exit 0 (thirtieth hostile pass). A data directory prepared
    before the text was stamped (its marker without it) stays done. A `sate` that records its commands stands in."""
    root, env = libri_trans_under_recording(tmp_path, '#!/bin/bash\necho "$1" >> "$SATE_ARGS"\n')
    data = tmp_path / "data"
    argv = ["bash", ROOT / "recipes" / "libri_trans" / "run.sh", "--root", root, "--data", data, "--stop-stage", "0"]

    def preps() -> int:
        done = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return (tmp_path / "args").read_text().count("prep\n")

    assert preps() == 1
    assert preps() == 1  # done already
    (root / "dev" / "dev.fr").write_text("corrected\n")
    assert preps() == 2
    assert preps() == 2
    marker = data / ".done" / "prep"
    marker.write_text(marker.read_text().rsplit(" texts=", 1)[0])  # as before the text was stamped
    (root / "dev" / "dev.fr").write_text("corrected again\n")
    assert preps() == 2


@pytest.mark.slow  # eight recipe runs
@pytest.mark.parametrize("recipe", ["libri_trans", "mustc"])
def test_a_test_split_s_text_changed_prepares_that_split_alone(tmp_path: Path, recipe: str) -> None:
    """A test split's reference corrected in place changed stage 0's marker, on which features, vocabularies and
    every training are keyed: all ran again (days on MuST-C) where decoding and scoring alone read it (thirtieth
    hostile pass, review). The test splits alone are prepared again now; a training split's text still re-runs all."""
    recording_sate(tmp_path, '#!/bin/bash\necho "$*" >> "$SATE_ARGS"\n')
    if recipe == "libri_trans":
        root = tmp_path / "libri trans"
        dirs = fake_libri_trans(root)
        corpus, test = ["--root", root], ("test", dirs["test"] / "test.fr")
    else:
        root = tmp_path / "mustc"
        dirs = {name: root / "en-de" / "data" / name / "txt" for name in ("train", "dev", "tst-COMMON", "tst-HE")}
        for name, folder in dirs.items():
            folder.mkdir(parents=True)
            for file in (f"{name}.yaml", f"{name}.en", f"{name}.de"):
                (folder / file).write_text(f"{file}\n")
        corpus, test = ["--mustc-root", root], ("tst-COMMON tst-HE", dirs["tst-HE"] / "tst-HE.de")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SATE_ARGS": str(tmp_path / "args")}
    data = tmp_path / "data"
    argv = ["bash", ROOT / "recipes" / recipe / "run.sh", *corpus, "--data", data, "--exp", tmp_path / "exp",
            "--stop-stage", "2"]
    seen = 0

    def commands() -> list[str]:
        nonlocal seen
        done = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        lines = (tmp_path / "args").read_text().splitlines() if (tmp_path / "args").exists() else []
        new, seen = lines[seen:], len(lines)
        return [line.split()[0] + (" --splits " + line.split(" --splits ")[1].split(" --out")[0]
                                   if " --splits " in line else "") for line in new]

    assert commands() == ["prep", "features", "vocab"]
    assert commands() == []
    test[1].write_text("corrected\n")
    assert commands() == [f"prep --splits {test[0]}"]
    assert commands() == []
    (dirs["dev"] / next(dirs["dev"].glob("*.en")).name).write_text("corrected\n")
    assert commands() == ["prep", "features", "vocab"]
    assert commands() == []


@pytest.mark.slow  # sate config, twice
@pytest.mark.parametrize("item", ["trainer.max_step=2", "trainer.max_steps=2"])
def test_train_args_set_items_are_read_before_stage_0(tmp_path: Path, item: str) -> None:
    """`--train-args "--set trainer.max_step=2"` (a key misspelt) was refused by stage 3's sate train, after the
    prep, features and vocabularies of stages 0 to 2 (thirtieth hostile pass); a key sate knows goes on to stage 0."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sate").symlink_to(Path(sys.executable).parent / "sate")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(ROOT / "recipes" / "mustc" / "run.sh"), "--mustc-root", str(tmp_path / "mustc"),
                           "--data", str(tmp_path / "data"), "--exp", str(tmp_path / "exp"), "--ngpu", "0",
                           "--train-args", f"--set {item}"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0
    if item == "trainer.max_steps=2":
        assert "--train-args" not in done.stderr and "stage 0:" in done.stderr, done.stderr
    else:
        assert "unknown config key 'trainer.max_step'" in done.stderr
        assert done.stderr.strip().splitlines()[-1] == (
            "[mustc] error: --train-args: conf/mustc/asr.yaml refuses its --set items (the error above); the training "
            "stages would stop on them")
        assert "stage 0:" not in done.stderr and not (tmp_path / "data").exists()


@pytest.mark.parametrize("there", [False, True])
def test_a_sate_synth_refusal_of_a_new_corpus_leaves_no_folder(tmp_path: Path, there: bool) -> None:
    """`--train-size 50 --text-size 10`, refused by sate synth before it wrote anything, left the new corpus's folder
    holding an empty .done/ (thirtieth hostile pass). A corpus folder that was there before stays."""
    recording_sate(tmp_path, '#!/bin/bash\n[ "$1" != synth ] || { echo "sate synth: error: no" >&2; exit 2; }\n')
    corpus = tmp_path / "corpus"
    if there:
        corpus.mkdir()
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    argv = ["bash", ROOT / "recipes" / "synth" / "run.sh", "--acoustic", "conformer", "--corpus", corpus,
            "--stop-stage", "-1"]
    done = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "sate synth: error: no" in done.stderr, done.stderr
    assert corpus.exists() == there and not (corpus / ".done").exists()


@pytest.mark.parametrize(("recipe", "option"), [("synth", "--exp"), ("synth", "--corpus"), ("mustc", "--data"),
                                                ("libri_trans", "--conf-dir")])
def test_a_file_given_for_a_directory_option_is_refused(tmp_path: Path, recipe: str, option: str) -> None:
    """`--data DATA/train.jsonl` (a file for the directory): stage 3 said "missing FILE/.done/features ... Run the
    earlier stages first", whose stage 0 then refused the file, and `--exp FILE` stopped on mkdir's "Not a directory"
    (thirtieth hostile pass). Relative, from where the recipe was started; a link to a directory is one. The synthetic
    recipe gets a corpus of its own: its default, the checkout's corpus/synth, half-written by a demo, failed it."""
    corpus = {"mustc": ["--mustc-root", tmp_path], "libri_trans": ["--root", tmp_path],
              "synth": ["--acoustic", "conformer", *([] if option == "--corpus" else ["--corpus", tmp_path / "c"])]
              }[recipe]
    (tmp_path / "train.jsonl").write_text("{}\n")
    done = subprocess.run(["bash", ROOT / "recipes" / recipe / "run.sh", *corpus, option, "train.jsonl", "--stage",
                           "3"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (f"[{recipe}] error: {option} {tmp_path}/train.jsonl: a file, not a directory: give the "
                           "directory (or leave the option out for its default)\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    done = subprocess.run(["bash", ROOT / "recipes" / recipe / "run.sh", *corpus, option, "link", "--stage", "50"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "selects none of the stages" in done.stderr, done.stderr


@pytest.mark.slow  # six recipe runs
def test_a_path_spelled_otherwise_is_the_same_path(tmp_path: Path) -> None:
    """`--root /data/libri_trans/` (a shell's completion adds the slash) after `--root /data/libri_trans` prepared the
    corpus again, and with it every stage after it ran again: features, vocabularies, each training resumed (one stopped
    early trained another epoch) (thirty-second hostile pass). A path option is recorded in one spelling now; a
    marker written before in another spelling of it is done for that spelling too."""
    root, env = libri_trans_under_recording(tmp_path, '#!/bin/bash\necho "$1" >> "$SATE_ARGS"\n')
    seen = 0

    def commands(*paths: str, stages: tuple[str, str] = ("0", "4")) -> list[str]:
        nonlocal seen
        done = subprocess.run(["bash", str(ROOT / "recipes" / "libri_trans" / "run.sh"), "--root", paths[0], "--data",
                               paths[1], "--exp", paths[2], "--stage", stages[0], "--stop-stage", stages[1]],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        lines = (tmp_path / "args").read_text().splitlines() if (tmp_path / "args").exists() else []
        new, seen = lines[seen:], len(lines)
        return new

    ran = ["prep", "features", "vocab", "train", "average", "pack", "train", "average", "pack"]
    assert commands(str(root), str(tmp_path / "data"), str(tmp_path / "exp")) == ran
    assert commands(f"{root}/", "./data//", f"{tmp_path}/./exp/") == []

    def as_before(*markers: Path) -> None:  # what the recipe recorded for `--root ROOT/ --data data/`
        for marker in markers:
            marker.write_text(marker.read_text().replace(str(root), f"{root}/")
                              .replace(f"{tmp_path}/data", f"{tmp_path}/data/"))

    shutil.rmtree(tmp_path / "data")
    shutil.rmtree(tmp_path / "exp")
    assert commands(str(root), "data", "exp", stages=("0", "0")) == ["prep"]
    as_before(tmp_path / "data" / ".done" / "prep", tmp_path / "data" / ".done" / "prep-tests")
    assert commands(f"{root}/", "data/", "exp", stages=("1", "4")) == ran[1:]
    as_before(*(tmp_path / "exp").glob("*/.done-*"))
    assert commands(f"{root}/", "data/", "exp") == []  # as they were spelled then
    assert commands(str(root), "data", "exp") == ran  # as under the recipes of before


@pytest.mark.slow  # five recipe runs
def test_a_test_split_s_text_changed_is_said_by_a_run_that_scores_without_stage_0(tmp_path: Path) -> None:
    """A reference corrected in the corpus, then `--stage 7 --stop-stage 8`: decoded and scored against the manifests'
    references of before, exit 0, without a word (thirty-second hostile pass). A `sate` that records stands in."""
    root, env = libri_trans_under_recording(tmp_path, '#!/bin/bash\necho "$1" >> "$SATE_ARGS"\n')

    def run(first: str, last: str) -> str:
        return subprocess.run(["bash", str(ROOT / "recipes" / "libri_trans" / "run.sh"), "--root", str(root), "--data",
                               str(tmp_path / "data"), "--exp", str(tmp_path / "exp"), "--stage", first,
                               "--stop-stage", last], env=env, capture_output=True, text=True, timeout=60).stderr

    note = (f"[libri_trans] note: the test splits' text in {root} (test) is not what stage 0 prepared in "
            f"{tmp_path / 'data'}, and stage 0 is not run: stages 7 and 8 read the manifests as they are, with the "
            "references of then (--stage 0 --stop-stage 0 prepares those splits again, and nothing else)\n")
    assert "note" not in run("0", "0")
    assert "note" not in run("8", "8")
    (root / "test" / "test.fr").write_text("corrected\n")
    assert note in run("7", "8")
    assert "note" not in run("0", "0")  # which prepares the test split again
    assert "note" not in run("8", "8")


@pytest.mark.slow  # six recipe runs
def test_a_corpus_not_there_is_no_test_text_changed(tmp_path: Path) -> None:
    """The note of a test text changed since stage 0 spoke wherever the corpus was not there (training on another
    machine from `--stage 3`, as docs/recipes.md describes; the corpus removed after stage 0), and its advice
    `--stage 0` prepared (or refused) the whole corpus (thirty-second hostile pass, review32r). Said now only where
    the test text is there and differs, with what `--stage 0` then does."""
    root, env = libri_trans_under_recording(tmp_path, '#!/bin/bash\necho "$1" >> "$SATE_ARGS"\n')

    def run(first: str, last: str = "11") -> str:
        return subprocess.run(["bash", str(ROOT / "recipes" / "libri_trans" / "run.sh"), "--root", str(root), "--data",
                               str(tmp_path / "data"), "--exp", str(tmp_path / "exp"), "--stage", first,
                               "--stop-stage", last], env=env, capture_output=True, text=True, timeout=60).stderr

    assert "note" not in run("0", "0")
    root.rename(tmp_path / "away")  # trained elsewhere, or removed after stage 0
    assert "note" not in run("3")  # to the last stage
    assert "note" not in run("7", "8")
    (tmp_path / "away").rename(root)
    (root / "test" / "test.fr").write_text("corrected\n")
    (root / "train" / "train.fr").write_text("corrected too\n")
    assert ("(--stage 0 prepares the whole corpus again, as its training text or stage 0's options differ too, and "
            "every stage after it runs again)\n") in run("8", "8")


MAKING_SATE = """#!/bin/bash
echo "$1" >> "$SATE_ARGS"
prev=
for word in "$@"; do  # what the later stages need of each command
  case "$1=$prev" in
    average=--out) mkdir -p "$(dirname "$word")" && : > "$word" ;;
    pack=--out) mkdir -p "$word" ;;
    train=--exp) mkdir -p "$word/checkpoints" ;;
  esac
  prev=$word
done
"""


@pytest.mark.slow  # six recipe runs
@pytest.mark.parametrize(("data", "exp"), [("en-de/", "en-de-exp/"), ("d/", "d/exp")])
def test_a_marker_of_the_recipes_before_is_done_where_one_path_begins_another(tmp_path: Path, data: str,
                                                                             exp: str) -> None:
    """`--data /x/en-de/ --exp /x/en-de-exp/` (or `--data /x/d/ --exp /x/d/exp`), given again after the paths were
    tidied: the markers the recipes of before wrote were respelled as plain text, which respelled the other path too
    (/x/en-de/-exp/asr/model.pt), and SATE's training ran again (resumed), its average and its pack, although the
    recipes of before took the identical command as done (thirty-second hostile pass, review32r). The recipes of before
    are these with main's `absolute` (no tidying)."""
    old = tmp_path / "old"
    shutil.copytree(ROOT / "recipes", old / "recipes")
    (old / "conf").symlink_to(ROOT / "conf")
    with (old / "recipes" / "lib" / "stages.sh").open("a") as stages:
        stages.write("""\nabsolute() { case "$1" in /*|'') printf '%s' "$1" ;; """
                     """*) printf '%s/%s' "${caller_dir%/}" "$1" ;; esac; }\nrespelled() { :; }\n""")
    root, env = libri_trans_under_recording(tmp_path, MAKING_SATE)

    def commands(recipes: Path, *options: str) -> list[str]:
        (tmp_path / "args").write_text("")
        done = subprocess.run(["bash", str(recipes / "recipes" / "libri_trans" / "run.sh"), "--root", str(root),
                               "--data", f"{tmp_path}/{data}", "--exp", f"{tmp_path}/{exp}", "--stop-stage", "6",
                               *options], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return (tmp_path / "args").read_text().split()

    assert commands(old)[:4] == ["prep", "features", "vocab", "train"]  # every stage, by the recipes of before
    assert commands(old) == ["config"]  # the --train-args check; every stage done already
    assert commands(ROOT) == ["config"]  # the same command, after the upgrade
    assert commands(ROOT, "--stage", "5") == ["config"]


def test_the_recipes_know_every_option_of_sate_train() -> None:
    """The recipes refuse a `--train-args` option that sate train has not (4a7f167) from a list of their own: an option
    added to `sate train` and not to that list would be refused in every recipe (review32r). The list, and the values
    of --accelerator it lets through, are sate train's parser's."""
    from sate.cli import build_parser

    parser = build_parser("train").command_parser
    pipeline = (ROOT / "recipes" / "lib" / "pipeline.sh").read_text()
    listed = re.search(r"train_option\(\) \{.*?\n  for name in ([^;]*); do", pipeline, re.S)
    assert listed, "recipes/lib/pipeline.sh: train_option's list of sate train's options not found"
    options = {name for action in parser._actions for name in action.option_strings if name.startswith("--")}
    assert set(listed[1].split()) == options
    accelerators = re.search(r"--accelerator\) case \"\$value\" in ([^)]*)\)", pipeline)
    assert accelerators, "recipes/lib/pipeline.sh: the check of --accelerator's value not found"
    choices = next(action.choices for action in parser._actions if "--accelerator" in action.option_strings)
    assert {word.strip() for word in accelerators[1].split("|")} == set(choices)
