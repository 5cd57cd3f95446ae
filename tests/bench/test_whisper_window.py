"""The whisper-window part refuses a pack without a Whisper acoustic side (its run on a tiny Whisper pack is in
tests/train/test_whisper_sate.py, which trains one)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sate.bench.whisper_window import run
from sate.data.vocab import Vocabulary
from sate.decode.pack import pack
from sate.errors import SateError
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config


def test_a_conformer_pack_is_refused(tmp_path: Path, prepared_data: Path) -> None:
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    torch.manual_seed(0)
    save_model_file(tmp_path / "asr.pt", build_model("asr", tiny_config("asr", 16, kernel=3), len(src), len(tgt)),
                    src.tokens, tgt.tokens)
    pack(tmp_path / "asr.pt", prepared_data, tmp_path / "pack", {})
    with pytest.raises(SateError, match="not a model with a Whisper acoustic encoder"):
        run(tmp_path / "pack", prepared_data, "tst-COMMON")


def _whisper_pack(tmp_path: Path, prepared_data: Path, whisper_hub_dir: Path) -> Path:
    """An untrained ASR pack on the tiny Whisper (its encoder frozen), in tmp_path / "pack"."""
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    conf = {"d_model": 16, "acoustic": {"type": "whisper", "path": str(whisper_hub_dir), "freeze": "all"}}
    torch.manual_seed(0)
    save_model_file(tmp_path / "asr.pt", build_model("asr", conf, len(src), len(tgt)), src.tokens, tgt.tokens)
    pack(tmp_path / "asr.pt", prepared_data, tmp_path / "pack", {})
    return tmp_path / "pack"


def test_a_row_under_a_tenth_of_a_second_is_read_as_evaluate_reads_it(tmp_path: Path, prepared_data: Path,
                                                                       whisper_hub_dir: Path) -> None:
    """A row under 201 samples was refused by Whisper's front-end naming no row, and one under 0.1 s encoded shorter
    than `sate evaluate` encodes it; both are padded to 0.1 s now, as evaluate pads them: its WER (29th hostile
    pass)."""
    import json

    from sate.data.manifest import read_manifest, write_manifest
    from sate.decode.evaluate import evaluate

    _whisper_pack(tmp_path, prepared_data, whisper_hub_dir)
    data = tmp_path / "data"
    data.mkdir()
    rows = read_manifest(prepared_data / "tst-COMMON.jsonl")[:3]
    rows[0] |= {"duration": 0.005, "n_frames": 1}  # 80 samples
    rows[1] |= {"duration": 0.05, "n_frames": 5}
    write_manifest(data / "tst-COMMON.jsonl", rows)
    natural = run(tmp_path / "pack", data, "tst-COMMON")["rows"][0]
    evaluate(tmp_path / "pack", data, "tst-COMMON", tmp_path / "eval")
    assert natural["wer"] == round(json.loads((tmp_path / "eval" / "results.json").read_text())["wer"], 2)


@pytest.mark.slow
def test_the_window_is_one_bound_in_samples_for_evaluate_the_api_the_bench_and_training(
        tmp_path: Path, prepared_data: Path, whisper_hub_dir: Path, whisper_asr_dir: Path) -> None:
    """A row of 480,080 samples (30.005 s: 3,000 log-mel frames) was taken by training and the API but refused by
    `sate evaluate` as "lasts 30.00 s, longer than the 30 s", and the bench refused it naming no row (29th hostile
    pass, review). One bound now, 480,159 samples, said with the digits that show the excess."""
    import numpy as np
    import soundfile as sf

    from sate.data.audio import num_frames
    from sate.data.manifest import read_manifest, write_manifest
    from sate.decode.api import SpeechTranslator
    from sate.decode.evaluate import evaluate
    from sate.train.data import check_whisper_window

    packed = _whisper_pack(tmp_path, prepared_data, whisper_hub_dir)
    data = tmp_path / "data"
    data.mkdir()
    sf.write(data / "long.wav", np.random.default_rng(0).normal(0, 0.01, 480_160).astype(np.float32), 16000)
    first = read_manifest(prepared_data / "tst-COMMON.jsonl")[0]
    for split, samples in (("fits", 480_080), ("over", 480_160)):
        row = {**first, "id": f"{split}_0", "audio": str(data / "long.wav"), "offset": 0.0,
               "duration": samples / 16000, "n_frames": num_frames(samples)}
        write_manifest(data / f"{split}.jsonl", [row])
    beyond = (r"lasts 30\.0100 s \(480,160 samples\), more than the 480,159 samples \(3,000 log-mel frames, 30 s\)"
              r" ")
    # sate evaluate, of a pack and of Whisper's own decoder
    for model in (packed, whisper_asr_dir):
        evaluate(model, data, "fits", tmp_path / f"eval-{model.name}")
        with pytest.raises(SateError, match=rf"over.jsonl: row over_0 {beyond}this model's acoustic encoder "
                                            r"\(Whisper\) takes: evaluate "):
            evaluate(model, data, "over", tmp_path / "refused")
    # the whisper-window bench
    assert run(packed, data, "fits")["rows"][1]["positions"] == 1500
    with pytest.raises(SateError, match=rf"over.jsonl: row over_0 {beyond}Whisper's window holds: bench a split"):
        run(packed, data, "over")
    # the API
    st = SpeechTranslator.load(packed, device="cpu")
    assert len(st.decode_features([np.zeros(n, np.float32) for n in (480_080, 480_159)])) == 2
    with pytest.raises(SateError, match=r"^feats\[0\]: 30\.0100 s \(480,160 samples\), more than the 480,159 "):
        st.decode_features([np.zeros(480_160, np.float32)])
    # training (its dataset's rows named)
    dataset = type("Split", (), {"lengths": [480_080, 480_160], "rows": [{"id": "fits_0"}, {"id": "over_0"}]})()
    with pytest.raises(SateError, match=r"^split dev: 1 utterance\(s\) longer than Whisper's 30-s window \(the "
                                        r"longest row over_0, 30\.0100 s \(480,160 samples\), more than"):
        check_whisper_window(dataset, "dev")
    dataset.lengths = [480_080, 480_159]
    check_whisper_window(dataset, "dev")
