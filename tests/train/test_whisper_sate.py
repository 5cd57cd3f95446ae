"""A tiny SATE on a Whisper acoustic side: ASR with part of Whisper frozen, SATE from it, a pack that decodes
without the Whisper directory and keeps segments within Whisper's window."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.bench.cli import main as bench_main
from sate.cli import main
from sate.errors import SateError
from sate.models.hub.whisper_files import whisper_weights
from sate.models.model_file import model_from_file
from sate.train.average import average
from sate.train.trainer import load_training_config, train

WAVEFORMS = {"data": {"features": "waveform", "cmvn": "none"},
             "batch": {"per_device": 2_000_000, "global": 2_000_000},  # samples: the whole train split
             "trainer": {"max_epochs": 2}}


@pytest.mark.slow
def test_sate_on_whisper_trains_packs_and_decodes(tmp_path: Path, prepared_data: Path, whisper_hub_dir: Path,
                                                 make_config: Callable[..., Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    data = prepared_data
    acoustic = {"type": "whisper", "path": str(whisper_hub_dir), "freeze": 1}
    asr_exp = tmp_path / "asr"
    config = make_config(tmp_path, "asr", data, model={"acoustic": acoustic}, **WAVEFORMS)
    train(load_training_config(config, []), asr_exp)
    assert "Whisper's encoder only" in capsys.readouterr().out  # the hub table's note
    average(asr_exp / "checkpoints", asr_exp / "model.pt", last=1)
    asr, _ = model_from_file(asr_exp / "model.pt")
    pretrained, _ = whisper_weights(whisper_hub_dir)
    trained = asr.acoustic.encoder.model.state_dict()
    assert all(torch.equal(trained[k], pretrained[k]) for k in pretrained if k.startswith(("conv", "layers.0.")))
    assert not torch.equal(trained["layers.1.fc1.weight"], pretrained["layers.1.fc1.weight"])  # it trained

    init = {"acoustic": {"path": str(asr_exp / "model.pt")}, "ctc": {"path": str(asr_exp / "model.pt")}}
    st_exp = tmp_path / "st"
    config = make_config(tmp_path, "st", data, model={"acoustic": acoustic, "adaptor": {"type": "league"}},
                         init=init, **WAVEFORMS)
    train(load_training_config(config, []), st_exp)
    out = capsys.readouterr().out
    assert "Whisper's encoder only" not in out  # the acoustic side came from the ASR model, not the directory
    average(st_exp / "checkpoints", st_exp / "model.pt", last=1)
    pack = tmp_path / "pack"
    assert main(["pack", "--model", str(st_exp / "model.pt"), "--data", str(data), "--out", str(pack)]) == 0

    moved = tmp_path / "moved"
    shutil.move(whisper_hub_dir, moved)
    try:
        from sate.decode.api import SpeechTranslator
        from sate.decode.vad import VadOptions

        st = SpeechTranslator.load(pack, device="cpu")
        assert st.feature_kind == "waveform" and st.max_segment_seconds() == 30.0
        import numpy as np

        # a waveform beyond the window was refused by the encoder naming no input, 30.01 s as "3001 frames"; its
        # length in samples was called frames (29th hostile pass)
        short, longest, beyond = (np.zeros(n, np.float32) for n in (1600, 30 * 16000 + 159, 30 * 16000 + 160))
        assert len(st.decode_features([short, longest])) == 2  # 3,000 frames: the window's last
        with pytest.raises(SateError, match=r"^feats\[1\]: 30.0100 s \(480,160 samples\), more than the 480,159 "
                                            r"samples \(3,000 log-mel frames, 30 s\) this model's acoustic "
                                            r"encoder \(Whisper\) takes: cut it at pauses"):
            st.decode_features([short, beyond])
        # a prepared input of one's own segmentation: its long span was "feats[2]", an index of the decoding's group
        # of segments, no input's (31st hostile pass)
        from sate.decode.api import PreparedAudio

        mine = [PreparedAudio("a.wav", 1.0, [(0.0, 0.1), (0.1, 0.2)], [short, short]),
                PreparedAudio("b.wav", 40.0, [(0.0, 0.1), (1.0, 31.01)], [short, beyond])]
        with pytest.raises(SateError, match=r"^prepared\[1\] \(b.wav\): segment 2 \(1.00-31.01 s\): 30.0100 s "
                                            r"\(480,160 samples\), more than the 480,159 samples"):
            st.decode_prepared(mine)
        assert len(st.decode_prepared([mine[0]])[0].segments) == 2
        with pytest.raises(SateError, match=r"^feats\[0\]: 100 samples, fewer than the 1600 of 0.1 s"):
            st.decode_features([short[:100]])
        wav = json.loads((data / "tst-COMMON.jsonl").read_text().splitlines()[0])["audio"]
        result = st.translate([wav], batch_size=2)[0]
        assert result.segments and all(s.end - s.start <= 30.0 for s in result.segments)
        with pytest.raises(SateError, match="max_segment .*40 s: this model's acoustic encoder .* at most 30 s"):
            st.translate([wav], vad=VadOptions(max_segment=40.0))
        assert main(["translate", "--model", str(pack), "--max-segment", "40", wav]) == 2  # a bad option
        from sate.decode.simultaneous import live

        # live (sate stream's loop) took it and stopped 30.5 s into speech on the encoder's line (31st hostile pass)
        with pytest.raises(SateError, match="max_segment .*40 s: this model's acoustic encoder .* at most 30 s"):
            next(live(st, iter([np.zeros(8000, np.float32)]), "wait-k=3", vad=VadOptions(max_segment=40.0)))
        # chunks of 16 s (sate stream --chunk 16) carried a segment of continuous speech to 32 s before its cut at
        # max_segment (20 s), which the encoder refused mid-stream; it ends at 20 s and the rest begins the next
        noise = (0.2 * np.random.default_rng(0).standard_normal(40 * 16000)).astype(np.float32)
        chunks = (noise[i:i + 16 * 16000] for i in range(0, len(noise), 16 * 16000))
        finals = [c.t for c in live(st, chunks, "wait-k=3", vad=VadOptions(method="energy")) if c.final]
        assert finals == [32.0, 40.0]
        assert "at most 30 s" in capsys.readouterr().err
        assert main(["evaluate", "--model", str(pack), "--data", str(data), "--split", "tst-COMMON",
                     "--out", str(tmp_path / "eval")]) == 0
        assert len((tmp_path / "eval" / "hyp.txt").read_text(encoding="utf-8").splitlines()) == 5

        # the 30-s window bench: natural length is what decoding does; padding computes every window position
        bench_json = tmp_path / "window.json"
        assert bench_main(["--parts", "whisper-window", "--pack", str(pack), "--data", str(data), "--split",
                           "tst-COMMON", "--repeat", "1", "--out", str(bench_json)]) == 0
        natural, padded = json.loads(bench_json.read_text())["whisper-window"]["rows"]
        evaluated = json.loads((tmp_path / "eval" / "results.json").read_text())
        assert natural["wer"] == round(evaluated["wer"], 2)
        assert padded["positions"] == 5 * 1500 > natural["positions"]
        with pytest.raises(SystemExit):
            bench_main(["--parts", "whisper-window", "--pack", str(pack)])
        assert "needs --pack DIR (a Whisper model's pack), --data DIR and --split NAME" in capsys.readouterr().err
    finally:
        shutil.move(moved, whisper_hub_dir)
