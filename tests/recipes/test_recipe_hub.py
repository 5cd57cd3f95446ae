"""The MuST-C recipe's hub path (--mt-hub, --ssl-hub) on the fixture corpus, with tiny hub models and configs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # trains two models through the recipe
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]


def tiny_hub_configs(conf_dir: Path) -> None:
    """conf/mustc_hub's two configs with budgets and batches for the fixture corpus."""
    conf_dir.mkdir()
    for name in ("asr_ssl", "st_ssl"):
        config = yaml.safe_load((ROOT / "conf" / "mustc_hub" / f"{name}.yaml").read_text())
        config["data"]["num_workers"] = 0
        config["batch"] = {"per_device": 2_000_000, "global": 2_000_000}
        config["optim"] = {"lr": 3e-3, "warmup_steps": 2}
        config["trainer"].update(max_epochs=2, keep_last=1, keep_best=1, valid_bleu_utts=2, patience=0,
                                 valid_max_len_ratio=0.5)
        (conf_dir / f"{name}.yaml").write_text(yaml.safe_dump(config))


def test_the_hub_path_skips_mt_pretraining_and_ends_with_a_scored_sate_model(
        tmp_path: Path, synth_corpus: Path, marian_dir: Path, speech_hub_dir: Callable[[str, str], Path]) -> None:
    tiny_hub_configs(tmp_path / "conf")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    argv = ["bash", str(ROOT / "recipes/mustc/run.sh"), "--mustc-root", str(synth_corpus), "--data",
            str(tmp_path / "data"), "--exp", str(tmp_path / "exp"), "--conf-dir", str(tmp_path / "conf"),
            "--mt-hub", str(marian_dir), "--ssl-hub", str(speech_hub_dir("hf_wav2vec2", "group")),
            "--average-n", "1", "--nj", "1", "--ngpu", "0", "--stop-stage", "8"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    log = done.stderr
    assert "stage 1: features: none" in log and "MT pre-training: none" in log and "no cascade" in log
    exp = tmp_path / "exp"
    assert not (tmp_path / "data" / "fbank").exists() and not (exp / "mt").exists()
    assert (tmp_path / "data" / "marian" / "ctc_tokens.txt").is_file()
    snapshot = yaml.safe_load((exp / "st" / "config.yaml").read_text())
    assert snapshot["model"]["textual"]["path"] == str(marian_dir)
    assert snapshot["model"]["acoustic"]["type"] == "hf_wav2vec2" and snapshot["init"]["acoustic"]["path"]
    assert set(snapshot["init"]) == {"acoustic", "ctc"}  # nothing from an MT model of ours
    assert len((exp / "st" / "decode_tst-COMMON" / "hyp.txt").read_text().splitlines()) == 5
    assert "| st | tst-COMMON |" in (exp / "results.md").read_text()


def test_the_whisper_path_trains_asr_and_sate_on_cached_states(
        tmp_path: Path, synth_corpus: Path, whisper_hub_dir: Path, tiny_configs: Callable[[Path], Path],
        run_recipe: Callable[..., subprocess.CompletedProcess]) -> None:
    """--whisper DIR: ASR and SATE on the Whisper directory's encoder (the repository's *_whisper.yaml with tiny
    sizes and budgets), the frozen part cached once for both; MT ours, so the cascade is scored too."""
    conf = tiny_configs(tmp_path / "conf")
    for name in ("asr_whisper", "st_whisper"):
        config = yaml.safe_load((ROOT / "conf" / "mustc" / f"{name}.yaml").read_text())
        tiny = yaml.safe_load((conf / f"{name.split('_')[0]}.yaml").read_text())
        config["model"] = {**tiny["model"], "acoustic": {"type": "whisper", "freeze": "all"}}
        config["data"] |= {"num_workers": 0, "frozen_cache": True}
        config["batch"] = {"per_device": 2_000_000, "global": 2_000_000}
        config["optim"], config["trainer"] = tiny["optim"], tiny["trainer"]
        (conf / f"{name}.yaml").write_text(yaml.safe_dump(config))
    exp = tmp_path / "exp"
    done = run_recipe("mustc", "--mustc-root", synth_corpus, "--data", tmp_path / "data", "--exp", exp,
                      "--conf-dir", conf, "--whisper", whisper_hub_dir, "--src-vocab-size", 48, "--tgt-vocab-size", 60,
                      "--average-n", 1, "--nj", 1, "--ngpu", 0,
                      "--stop-stage", 8, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    for stage in ("asr", "st"):
        snapshot = yaml.safe_load((exp / stage / "config.yaml").read_text())
        assert snapshot["model"]["acoustic"]["path"] == str(whisper_hub_dir)
        assert snapshot["data"]["frozen_cache"] is True
    assert len(list((tmp_path / "data" / "frozen").iterdir())) == 1  # one cache, ASR's and SATE's
    assert (exp / "asr" / "train.log").read_text().count("frozen Whisper states:") == 2  # train and dev
    assert "frozen Whisper states:" not in (exp / "st" / "train.log").read_text()
    results = (exp / "results.md").read_text()
    assert "| st | tst-COMMON |" in results and "| cascade | tst-COMMON |" in results
    bad = run_recipe("mustc", "--mustc-root", synth_corpus, "--whisper", whisper_hub_dir, "--compare", "true",
                     "--stage", 10)
    assert bad.returncode != 0 and "run them without --whisper" in bad.stderr


@pytest.mark.parametrize("given", ["file", "missing", "other"])
def test_a_whisper_directory_that_cannot_be_read_stops_before_stage_0(
        tmp_path: Path, synth_corpus: Path, whisper_hub_dir: Path, given: str,
        run_recipe: Callable[..., subprocess.CompletedProcess]) -> None:
    """--whisper naming a file, nothing or another model's folder ran prep, features and vocabularies (hours on
    MuST-C) before stage 3 refused it; it is refused first, with sate's own line naming what is wrong."""
    whisper = {"file": whisper_hub_dir / "config.json", "missing": tmp_path / "whisper-smal",
               "other": synth_corpus}[given]
    done = run_recipe("mustc", "--mustc-root", synth_corpus, "--data", tmp_path / "data", "--exp", tmp_path / "exp",
                      "--whisper", whisper, "--nj", 1, "--ngpu", 0)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "stage 0" not in done.stderr and not (tmp_path / "data").exists()
    assert f"[mustc] error: the Whisper encoder's directory {whisper}, read with " in done.stderr
    assert {"file": "is a file", "missing": "is not a directory", "other": "not a Whisper model directory"}[given] \
        in done.stderr


def test_a_sound_whisper_directory_passes_the_check_from_a_later_stage(
        tmp_path: Path, whisper_hub_dir: Path, run_recipe: Callable[..., subprocess.CompletedProcess]) -> None:
    """From --stage 3 or 4 with SATE untrained, the check read the directory through st_whisper.yaml, whose
    distillation needs the ASR teacher stage 5 gives: every such run was refused, naming a sound directory (26th
    hostile pass, review). It reads it through asr_whisper.yaml; here the run goes on to stage 4's own need."""
    done = run_recipe("mustc", "--mustc-root", tmp_path / "mustc", "--data", tmp_path / "data", "--exp",
                      tmp_path / "exp", "--whisper", whisper_hub_dir, "--ngpu", 0, "--stage", 4, "--stop-stage", 5)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Whisper encoder's directory" not in done.stderr and "vocabularies from stage 2" in done.stderr, \
        done.stderr[-2000:]
