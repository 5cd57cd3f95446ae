"""A tiny SATE with both hub parts (a wav2vec2 acoustic side, a Marian textual side) trains, packs and decodes."""

from __future__ import annotations

import csv
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from sate.cli import main
from sate.train.average import average
from sate.train.trainer import load_training_config, train

pytest.importorskip("transformers")


def hub_config(tmp_path: Path, task: str, data: Path, model: dict, steps: int, init: dict | None = None) -> dict:
    path = tmp_path / f"{task}.yaml"
    path.write_text(yaml.safe_dump({
        "task": task, "data": {"dir": str(data), "num_workers": 0, "features": "waveform", "cmvn": "none"},
        "batch": {"per_device": 2_000_000, "global": 2_000_000},  # samples: the whole train split
        "specaug": {"enabled": False}, "model": model, "init": init or {},
        "optim": {"lr": 3e-3, "warmup_steps": 1},
        "trainer": {"max_epochs": steps, "log_every_n_steps": 1, "keep_last": 1, "keep_best": 1,
                    "valid_bleu_utts": 2, "valid_max_len_ratio": 0.5}}))
    return load_training_config(path, [])


@pytest.mark.slow
def test_sate_with_a_wav2vec2_and_a_marian_model_trains_and_decodes(
        tmp_path: Path, prepared_data: Path, marian_dir: Path, speech_hub_dir: Callable[[str, str], Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for path in prepared_data.glob("*.jsonl"):
        shutil.copy(path, data / path.name)
    assert main(["vocab", "--data", str(data), "--marian", str(marian_dir)]) == 0
    ssl = speech_hub_dir("hf_wav2vec2", "group")
    acoustic = {"type": "hf_wav2vec2", "path": str(ssl), "freeze_feature_extractor": True}
    # The recipe's path: CTC over Marian's source pieces first, then SATE from it and from the Marian model.
    asr_exp = tmp_path / "asr"
    train(hub_config(tmp_path, "asr", data, {"d_model": 16, "acoustic": acoustic}, 2), asr_exp)
    average(asr_exp / "checkpoints", asr_exp / "model.pt", last=1)
    st_model = {"acoustic": acoustic, "textual": {"type": "hf_marian", "path": str(marian_dir)},
                "decoder": {"type": "hf_marian"}, "loss": {"ctc_weight": 0.3}}
    init = {"acoustic": {"path": str(asr_exp / "model.pt")}, "ctc": {"path": str(asr_exp / "model.pt")}}
    st_exp = tmp_path / "st"
    train(hub_config(tmp_path, "st", data, st_model, 3, init), st_exp)
    out = capsys.readouterr().out
    assert "textual" in out and "decoder" in out and "src_embed" in out  # the hub table
    assert "ok" in out and "FAILED" not in out
    rows = [r for path in (st_exp / "logs").glob("version_*/metrics.csv") for r in csv.DictReader(path.open())]
    losses = [float(r["train/loss"]) for r in rows if r.get("train/loss")]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    assert any(r.get("valid/bleu") for r in rows) and any(r.get("valid/wer") for r in rows)
    average(st_exp / "checkpoints", st_exp / "model.pt", last=1)
    assert main(["pack", "--model", str(st_exp / "model.pt"), "--data", str(data), "--out",
                 str(tmp_path / "pack")]) == 0
    info = yaml.safe_load((tmp_path / "pack" / "sate.yaml").read_text())
    assert info["vocab"] == "marian" and info["features"]["type"] == "waveform"
    # The pack decodes without either hub directory.
    moved = tmp_path / "moved"
    shutil.move(marian_dir, moved / "marian")
    shutil.move(ssl, moved / "ssl")
    try:
        from sate.decode.api import SpeechTranslator

        st = SpeechTranslator.load(tmp_path / "pack", device="cpu")
        wav = json.loads((data / "tst-COMMON.jsonl").read_text().splitlines()[0])["audio"]
        result = st.translate([wav], batch_size=2)[0]
        assert result.segments and isinstance(result.translation, str)
        assert main(["evaluate", "--model", str(tmp_path / "pack"), "--data", str(data), "--split", "tst-COMMON",
                     "--out", str(tmp_path / "eval")]) == 0
        scores = json.loads((tmp_path / "eval" / "results.json").read_text())
        assert "bleu" in json.dumps(scores).lower()
        hyps = (tmp_path / "eval" / "hyp.txt").read_text(encoding="utf-8").splitlines()
        assert len(hyps) == 5
    finally:
        shutil.move(moved / "marian", marian_dir)
        shutil.move(moved / "ssl", ssl)


@pytest.mark.slow
def test_a_resume_whose_hub_directory_holds_another_model_is_refused(
        tmp_path: Path, prepared_data: Path, speech_hub_dir: Callable[[str, str], Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    """The config names a hub model by its directory: one that holds another model since the run began (here a
    layer-norm wav2vec2 where a group-norm one was) builds other parameters, and Lightning's load_state_dict was a
    RuntimeError traceback listing every key, after the data was prepared."""
    hub = tmp_path / "hub"
    shutil.copytree(speech_hub_dir("hf_wav2vec2", "group"), hub)
    model = {"d_model": 16, "acoustic": {"type": "hf_wav2vec2", "path": str(hub), "freeze_feature_extractor": True}}
    hub_config(tmp_path, "asr", prepared_data, model, 1)
    argv = ["train", "--config", str(tmp_path / "asr.yaml"), "--exp", str(tmp_path / "exp")]
    assert main(argv) == 0
    shutil.rmtree(hub)
    shutil.copytree(speech_hub_dir("hf_wav2vec2", "layer"), hub)
    capsys.readouterr()
    assert main([*argv, "--set", "trainer.max_epochs=2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"sate train: error: {tmp_path / 'exp' / 'checkpoints' / 'last.ckpt'}: its weights do not "
                          "fit the model the config builds now (19 of the model's weights are not in it (first "
                          "acoustic.encoder.model.feature_extractor.conv_layers.0.conv.bias)"), err
    assert err.endswith("does a hub directory the config names (acoustic.path, textual.path) hold another model than "
                        "the run began with?"), err
