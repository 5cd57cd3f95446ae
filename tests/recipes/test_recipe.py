"""A micro run of the synth recipe through every stage, stage selection and skipping of finished work."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from sate.models.tiny import tiny_config

MicroRun = tuple[Path, subprocess.CompletedProcess]
pytestmark = pytest.mark.slow  # builds and trains models, or runs whole recipes



@pytest.fixture(scope="session")
def recipe(run_recipe):  # noqa: ANN001, ANN201
    """recipe(tmp, *args): the synth recipe's Conformer path on the corpus, data, exp and configs under `tmp` (the
    Whisper path, the default, is tests/recipes/test_recipe_hub.py's)."""

    def run(tmp: Path, *args: str) -> subprocess.CompletedProcess:
        return run_recipe("synth", "--acoustic", "conformer", "--corpus", tmp / "corpus", "--data", tmp / "data",
                          "--exp", tmp / "exp", "--conf-dir", tmp / "conf", "--src-vocab-size", "48",
                          "--tgt-vocab-size", "60", "--average-n", "1", "--nj", "1", *args)

    return run


@pytest.fixture(scope="module")
def micro_run(tmp_path_factory: pytest.TempPathFactory, synth_corpus: Path, recipe, tiny_configs  # noqa: ANN001
              ) -> tuple[Path, subprocess.CompletedProcess]:
    """Stages 0-9 on the ~20-sentence fixture corpus (stage -1, the corpus build, has its own tests).

    Every path has a space in it: a recipe quotes each one."""
    tmp = tmp_path_factory.mktemp("recipe") / "a dir with spaces"
    tmp.mkdir()
    shutil.copytree(synth_corpus, tmp / "corpus")
    tiny_configs(tmp / "conf")
    done = recipe(tmp, "--stage", "0")
    assert done.returncode == 0, done.stderr[-4000:]
    return tmp, done


def test_micro_run_goes_through_every_stage(micro_run: MicroRun) -> None:
    tmp, done = micro_run
    for n in range(10):
        assert f"stage {n}:" in done.stderr, f"stage {n} did not run"
    exp = tmp / "exp"
    for system in ("asr", "mt", "st"):
        assert (exp / system / "model.pt").is_file() and (exp / system / "pack" / "model.pt").is_file()
    results = (exp / "results.md").read_text()
    assert "| st | tst-COMMON |" in results and "| cascade | tst-COMMON |" in results
    st_row = next(line for line in results.splitlines() if line.startswith("| st |"))
    assert st_row.strip("| ").split("|")[-1].strip() != "-"  # a training time is reported
    assert float(st_row.strip("| ").split("|")[-1]) >= 0
    assert (exp / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len((exp / "st" / "decode_tst-COMMON" / "hyp.txt").read_text().splitlines()) == 5
    assert "-->" in (exp / "demo_talk.srt").read_text()  # SRT timestamps


def test_training_and_decoding_stages_keep_time_stamped_logs(
        micro_run: MicroRun) -> None:
    tmp, _ = micro_run
    exp = tmp / "exp"
    for log in (exp / "asr" / "train.log", exp / "st" / "train.log", exp / "st" / "decode_tst-COMMON" / "decode.log",
                exp / "cascade" / "decode_tst-COMMON" / "decode.log"):
        text = log.read_bytes().decode()
        assert "\r" not in text  # of a redrawn progress bar, the log keeps the last state
        lines = text.rstrip("\n").split("\n")
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ==== sate (train|evaluate) .*", lines[0]), log
        assert len(lines) > 2 and all(re.match(r"\d\d:\d\d:\d\d ", line) for line in lines[1:]), log
    assert "parameters:" in (exp / "st" / "train.log").read_text()
    assert "BLEU" in (exp / "st" / "decode_tst-COMMON" / "decode.log").read_text()


def test_rerun_skips_finished_stages(micro_run: MicroRun, recipe) -> None:
    tmp, _ = micro_run
    before = (tmp / "exp" / "st" / "model.pt").stat().st_mtime_ns
    again = recipe(tmp, "--stage", "0", "--stop-stage", "5")
    assert again.returncode == 0, again.stderr[-3000:]
    # prep, features, vocab; asr and mt training and packing; st training
    assert again.stderr.count("done already") == 8
    assert (tmp / "exp" / "st" / "model.pt").stat().st_mtime_ns == before


def test_sate_begun_from_other_asr_and_mt_models_is_not_done_already(micro_run: MicroRun, recipe) -> None:
    """exp/asr trained or averaged again (another --average-n, a retrained ASR model at the same path) after SATE
    was trained from it: stage 5 said "done already", and the results table set SATE made from the old ASR model
    beside a cascade of the new one; a resume would only have continued it (eleventh hostile pass)."""
    import torch

    tmp, _ = micro_run
    asr = tmp / "exp" / "asr" / "model.pt"
    kept = asr.read_bytes()
    model = torch.load(asr, weights_only=True)
    first = next(iter(model["model"]))
    model["model"][first] = model["model"][first] + 0.01
    torch.save(model, asr)
    try:
        done = recipe(tmp, "--stage", "5", "--stop-stage", "5")
    finally:
        asr.write_bytes(kept)
    assert done.returncode != 0 and "done already" not in done.stderr
    why = (f"{tmp / 'exp' / 'st'} was begun from other models than {asr} {tmp / 'exp' / 'mt' / 'model.pt'} hold now "
           f"(trained or averaged again since): move {tmp / 'exp' / 'st'} away")
    assert why in done.stderr, done.stderr[-2000:]
    again = recipe(tmp, "--stage", "5", "--stop-stage", "5")  # the models it began from: done
    assert again.returncode == 0 and "done already" in again.stderr, again.stderr[-2000:]


def test_stage_options_run_exactly_the_named_stages(micro_run: MicroRun, recipe) -> None:
    tmp, _ = micro_run
    (tmp / "exp" / "results.md").unlink()
    done = recipe(tmp, "--stage", "8", "--stop-stage", "8")
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stderr.splitlines() if "] stage " in line] == [
        "[synth] stage 8: score: results table in " + str(tmp / "exp" / "results.md")]
    assert (tmp / "exp" / "results.md").is_file()


@pytest.mark.parametrize("stage", [["--stage", "7", "--stop-stage", "7"], ["--stage", "10", "--compare", "true"]])
def test_a_test_set_named_that_the_data_lacks_is_refused_before_decoding(micro_run: MicroRun, recipe,
                                                                         stage: list[str]) -> None:
    """Twentieth hostile pass: a misspelt `--test-sets tst-COMON` was "skipped" by stages 7 and 10 (after training
    the comparison rows), exit 0. A default test set the corpus lacks (this corpus has no tst-heldout) is still
    skipped: the micro run's."""
    tmp, _ = micro_run
    decoded = (tmp / "exp" / "st" / "decode_tst-COMMON" / "results.json").stat().st_mtime_ns
    systems = sorted(p.name for p in (tmp / "exp").iterdir())
    done = recipe(tmp, *stage, "--test-sets", "tst-COMMON tst-COMON")
    assert done.returncode == 1, done.stderr[-3000:]
    assert done.stderr.splitlines()[-1] == (f"[synth] error: --test-sets: no split tst-COMON in {tmp / 'data'} (its "
                                            "splits: dev train tst-COMMON)")
    assert (tmp / "exp" / "st" / "decode_tst-COMMON" / "results.json").stat().st_mtime_ns == decoded
    assert sorted(p.name for p in (tmp / "exp").iterdir()) == systems  # no row trained


def test_a_missing_earlier_output_is_named(tmp_path: Path, recipe) -> None:
    done = recipe(tmp_path, "--stage", "5", "--stop-stage", "5")
    assert done.returncode != 0
    assert f"missing {tmp_path / 'exp' / 'asr' / 'model.pt'} (the ASR model of stage 3)" in done.stderr


@pytest.mark.parametrize("option", [["--compare", "true"], ["--ctc-layer", "2"]])
def test_the_conformer_rows_are_refused_on_the_default_whisper_path(tmp_path: Path, run_recipe,  # noqa: ANN001
                                                                     option: list[str]) -> None:
    """Whisper is the default acoustic side; the paper's rows train Conformers, so they ask for that path by name
    (before any weights are fetched)."""
    done = run_recipe("synth", "--exp", tmp_path / "exp", "--stage", "10", *option)
    assert done.returncode != 0
    assert "--compare and --ctc-layer train the paper's Conformer rows: add --acoustic conformer" in done.stderr
    assert not (tmp_path / "exp").exists()


def test_compare_trains_every_row_for_as_many_updates_as_sate(
        micro_run: MicroRun, recipe) -> None:
    import torch

    tmp, _ = micro_run
    done = recipe(tmp, "--stage", "10", "--compare", "true")
    assert done.returncode == 0, done.stderr[-4000:]
    exp = tmp / "exp"
    sate_steps = torch.load(exp / "st" / "checkpoints" / "last.ckpt", weights_only=True)["global_step"]
    results = (exp / "results.md").read_text()
    for system in ("e2e_scratch", "e2e_asr", "sate_nokd", "sate_shrink"):
        last = torch.load(exp / system / "checkpoints" / "last.ckpt", weights_only=True)
        assert last["global_step"] == sate_steps, system
        assert f"| {system} | tst-COMMON |" in results
    assert torch.load(exp / "e2e_scratch" / "model.pt", weights_only=True)["config"]["textual"]["layers"] == 0
    assert torch.load(exp / "sate_shrink" / "model.pt", weights_only=True)["config"]["adaptor"]["type"] == "shrink"
    assert (exp / "locality" / "locality.png").is_file() and (exp / "locality" / "locality.csv").is_file()
    # packed again (another --average-n): each row is decoded again; it kept its old results (eleventh hostile pass)
    decoded = {system: (exp / system / "decode_tst-COMMON" / "results.json").stat().st_mtime_ns
               for system in ("e2e_scratch", "e2e_asr", "sate_nokd", "sate_shrink")}
    again = recipe(tmp, "--stage", "10", "--compare", "true", "--average-n", "2")
    assert again.returncode == 0, again.stderr[-4000:]
    assert all((exp / system / "decode_tst-COMMON" / "results.json").stat().st_mtime_ns != mtime
               for system, mtime in decoded.items()), again.stderr[-4000:]
    # SATE's rows read the MT text that stage 5's SATE read (its config weighs text batches); E2E has no textual side
    texts = {system: yaml.safe_load((exp / system / "config.yaml").read_text())["data"]["mt_text"]
             for system in ("st", "sate_nokd", "sate_shrink", "e2e_asr")}
    assert texts["st"] and texts["st"][0][0].endswith("train.en"), texts
    assert texts["sate_nokd"] == texts["sate_shrink"] == texts["st"] and not texts["e2e_asr"], texts


def test_ctc_layer_stage_trains_both_depths_for_as_many_updates_as_sate(
        micro_run: MicroRun, recipe) -> None:
    """Stage 11 (--ctc-layer 1) on a 2-layer E2E config, in its own exp dir holding a copy of the SATE run."""
    import torch

    tmp, _ = micro_run
    conf, exp = tmp / "conf_ctc", tmp / "exp_ctc"
    shutil.copytree(tmp / "conf", conf)
    e2e = yaml.safe_load((conf / "st_e2e.yaml").read_text())
    e2e["model"] = tiny_config("st", layers=2, decoder_layers=1, baseline=True)
    (conf / "st_e2e.yaml").write_text(yaml.safe_dump(e2e))
    shutil.copytree(tmp / "exp" / "st", exp / "st")
    done = recipe(tmp, "--stage", "11", "--ctc-layer", "1", "--conf-dir", str(conf), "--exp", str(exp))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "stage 11:" in done.stderr and "stage 10:" not in done.stderr  # --compare stays off
    sate_steps = torch.load(exp / "st" / "checkpoints" / "last.ckpt", weights_only=True)["global_step"]
    for system, layer in (("e2e_scratch", None), ("e2e_ctc1", 1)):
        assert torch.load(exp / system / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == sate_steps
        assert torch.load(exp / system / "model.pt", weights_only=True)["config"]["ctc"]["layer"] == layer
    with (exp / "locality_ctc1" / "locality.csv").open() as f:
        rows = [(r["model"], r["encoder"], r["layer"]) for r in csv.DictReader(f)]
    assert rows == [(m, "acoustic", str(k)) for m in ("e2e_scratch", "e2e_ctc1") for k in (1, 2)]
    assert (exp / "locality_ctc1" / "locality.png").is_file()


def test_a_remade_corpus_makes_the_data_stages_run_again(micro_run: MicroRun, recipe) -> None:
    tmp, _ = micro_run
    again = recipe(tmp, "--stage", "0", "--stop-stage", "2")
    assert again.returncode == 0 and again.stderr.count("done already") == 3, again.stderr[-3000:]
    marker = tmp / "corpus" / ".done" / "synth"
    marker.parent.mkdir(exist_ok=True)
    marker.write_text("text=phrasebook train_size=13")  # what `sate synth` leaves after another build
    remade = recipe(tmp, "--stage", "0", "--stop-stage", "2")
    assert remade.returncode == 0, remade.stderr[-3000:]
    assert "done already" not in remade.stderr  # prep, and the features and vocabularies made from it, run again


def test_joint_vocab_size_writes_one_model_for_both_sides(micro_run: MicroRun, recipe) -> None:
    """--joint-vocab-size (the reference configs' one dictionary) in a data dir of its own, next to the micro run."""
    tmp, _ = micro_run
    data = tmp / "data_joint"
    shutil.copytree(tmp / "data", data)
    done = recipe(tmp, "--stage", "2", "--stop-stage", "2", "--data", str(data), "--joint-vocab-size", "70")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "vocab: SentencePiece one joint model of 70" in done.stderr
    assert (data / "spm_src.model").read_bytes() == (data / "spm_tgt.model").read_bytes()
    assert (data / "tokens_src.txt").read_text() == (data / "tokens_tgt.txt").read_text()
    assert (data / "spm_src.model").read_bytes() != (tmp / "data" / "spm_src.model").read_bytes()
    again = recipe(tmp, "--stage", "2", "--stop-stage", "2", "--data", str(data), "--joint-vocab-size", "70")
    assert again.returncode == 0 and "done already" in again.stderr, again.stderr[-3000:]
