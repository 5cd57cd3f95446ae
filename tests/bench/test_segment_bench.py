"""`python -m sate.bench --parts segment,asr-real,asr-long` end to end, on a stand-in for the Asterisk prompts.

The prompts are voiced by espeak-ng and written as 8 kHz wavs where `fetch_asterisk` caches the real
ones (``SATE_CACHE``), so nothing is downloaded. No figure is asserted: they are benchmark results.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
import torchaudio.functional as AF

from sate.bench.asterisk import CACHE_NAME, TEXTS
from sate.bench.cli import main
from sate.data.vocab import Vocabulary
from sate.decode.pack import pack
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config
from sate.synth.voices import Voice, speak

pytestmark = pytest.mark.slow  # runs a benchmark

PROMPTS = ("Thank you.", "Please enter your password.", "Goodbye.", "All circuits are busy now.",
           "Your call cannot be completed.", "Please hold.", "The person at extension.", "Is not available.",
           "Please try again later.", "Invalid extension.", "Press one.", "Welcome to the voicemail system.")


@pytest.fixture()
def fake_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache" / CACHE_NAME
    (root / "sounds").mkdir(parents=True)
    lines = []
    for k, text in enumerate(PROMPTS):
        wave = speak(text, Voice("espeak", "en-us+f3"), 1.0, 0.5, tmp_path)
        narrow = AF.resample(torch.from_numpy(wave), 16000, 8000).numpy()
        sf.write(root / "sounds" / f"p{k}.wav", np.clip(narrow, -1, 1), 8000, subtype="PCM_16")
        lines.append(f"p{k}: {text}")
    (root / TEXTS).write_text("; stand-in\n" + "\n".join(lines) + "\n")
    monkeypatch.setenv("SATE_CACHE", str(tmp_path / "cache"))
    return root


def test_segment_and_asr_real_parts(tmp_path: Path, fake_cache: Path, prepared_data: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    torch.manual_seed(0)
    model = build_model("st", tiny_config("st", 16, kernel=3), len(src), len(tgt))
    save_model_file(tmp_path / "st.pt", model, src.tokens, tgt.tokens)
    pack(tmp_path / "st.pt", prepared_data, tmp_path / "pack", {"max_len_ratio": 0.05})
    out = tmp_path / "bench.json"
    assert main(["--parts", "segment,asr-real,asr-long", "--pack", str(tmp_path / "pack"), "--segment-utterances",
                 "8", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Segmentation of 8 Asterisk prompts" in printed and "CTC WER of" in printed
    assert "Transcript WER of" in printed and "long real recording: transcript WER clean" in printed
    result = json.loads(out.read_text())
    rows = result["segment"]["rows"]
    assert len(rows) == 2 * (1 + 3 * 3) and {r["vad"] for r in rows} == {"silero", "energy"}
    assert all(0 <= r["f1"] <= 1 and 0 <= r["speech_lost"] <= 1 and r["x_real_time"] > 0 for r in rows)
    clean = [r for r in rows if r["noise"] == "clean"]
    assert all(r["f1"] >= 0.9 for r in clean)  # clean speech with long pauses is easy for both
    network = result["segment"]["network"]
    assert network["max_abs_difference"] < 1e-4 and network["ratio"] > 0 and "silero's network alone" in printed
    assert result["asr-real"]["prompts"] == len(PROMPTS) and result["asr-real"]["words"] > 0
    # asr-long reads the segment part's recording (same prompts, pauses, noises) and scores every version of it
    # against the same 8 prompts' words, joined
    long = result["asr-long"]
    assert long["duration_s"] == result["segment"]["duration_s"] and long["task"] == "st"
    assert [(r["noise"], r["snr_db"]) for r in long["rows"]] == [(r["noise"], r["snr_db"]) for r in rows[::2]]
    words = {r["words"] for r in long["rows"]}
    assert len(words) == 1 and 8 <= words.pop() <= sum(len(text.split()) for text in PROMPTS)
    assert all(r["segments"] >= 1 and r["errors"] >= 0 and r["x_real_time"] > 0 for r in long["rows"])


@pytest.mark.parametrize("part", ["asr-real", "asr-long"])
def test_asr_parts_need_a_pack(part: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--parts", part])
    assert f"--parts {part} needs --pack" in capsys.readouterr().err


def test_asr_real_with_a_whisper_directory(tmp_path: Path, fake_cache: Path, whisper_asr_dir: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """--pack may name a Whisper directory: its own decoder transcribes the prompts."""
    from sate.bench.asterisk import load_prompt, read_prompts
    from sate.models.hub.whisper_asr import WhisperRecognizer

    out = tmp_path / "bench.json"
    assert main(["--parts", "asr-real", "--pack", str(whisper_asr_dir), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Whisper's own decoder: WER of" in printed and "real speech: Whisper WER" in printed
    result = json.loads(out.read_text())["asr-real"]
    assert result["task"] == "whisper" and result["prompts"] == len(PROMPTS) and result["words"] > 0
    recognizer = WhisperRecognizer.load(whisper_asr_dir)
    first = read_prompts(fake_cache)[:2]
    assert [e["transcript"] for e in result["examples"][:2]] == [recognizer.transcribe([load_prompt(p)])[0]
                                                                 for p in first]
