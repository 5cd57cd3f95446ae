"""`sate segment` and the two VADs: known pauses found, noise and music not taken for speech, JSONL, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
import torchaudio.functional as AF

from sate.bench import recordings
from sate.cli import main
from sate.data.audio import SILENCE_DB, DcFreeEnergy
from sate.decode import silero, vad
from sate.decode.vad import VadOptions, speech_segments
from sate.errors import SateError
from sate.scoring.segments import score_segments
from sate.synth.voices import Voice, speak

SR = 16000
SENTENCES = ("Please enter your password followed by the pound key.", "The number you have dialed is not in service.",
             "Thank you for calling.", "All circuits are busy now.", "Your call cannot be completed as dialed.",
             "Please hold while I try that extension.")
# Other talkers for babble: other sentences, other espeak voices.
CROWD = ("The meeting starts at nine tomorrow morning.", "She bought three apples and a loaf of bread.",
         "Turn left at the second traffic light.", "We will need a bigger boat for the trip.",
         "My brother plays the piano every evening.", "It rained all week in the mountains.")


@pytest.fixture(scope="module")
def sentences(tmp_path_factory: pytest.TempPathFactory) -> list[np.ndarray]:
    """Six sentences voiced by espeak-ng, two voices, 16 kHz."""
    work = tmp_path_factory.mktemp("voices")
    voices = (Voice("espeak", "en-us+m3"), Voice("espeak", "en+f2"))
    return [speak(text, voices[k % 2], 1.0, 0.5, work) for k, text in enumerate(SENTENCES)]


@pytest.fixture(scope="module")
def crowd(tmp_path_factory: pytest.TempPathFactory) -> list[np.ndarray]:
    """Six other sentences in three other espeak voices, to make babble from."""
    work = tmp_path_factory.mktemp("crowd")
    voices = (Voice("espeak", "en+m1"), Voice("espeak", "en+f4"), Voice("espeak", "en-us+m5"))
    return [speak(text, voices[k % 3], 1.0, 0.5, work) for k, text in enumerate(CROWD)]


@pytest.fixture(scope="module")
def recording(sentences: list[np.ndarray]) -> recordings.Recording:
    """The sentences with pauses of 0.4-1.5 s (all long enough to separate segments)."""
    return recordings.build(sentences, np.random.default_rng(0), pauses=(0.4, 1.5))


def scores(wave: np.ndarray, rec: recordings.Recording, method: str) -> dict[str, float]:
    hyp = speech_segments(wave, VadOptions(method=method))
    return score_segments(hyp, recordings.reference_segments(rec.spans, VadOptions().min_pause), rec.spans)


@pytest.mark.parametrize("method", ["silero", "energy"])
def test_both_vads_find_the_known_pauses_of_a_clean_recording(recording: recordings.Recording, method: str) -> None:
    figures = scores(recording.wave, recording, method)
    assert figures["segments"] == len(SENTENCES) and figures["f1"] == 1.0
    assert figures["speech_lost"] < 0.01 and figures["utterances_cut"] == 0


@pytest.mark.parametrize("method", ["silero", "energy"])
def test_a_dc_offset_is_no_sound(recording: recordings.Recording, method: str) -> None:
    """A constant offset of 0.1 of full scale (a cheap recorder's) was measured as sound: every pause at -20 dBFS,
    silero's foreground rule cut every window (a clear recording had no speech, "no speech found"), and the energy
    VAD lost words (twenty-eighth hostile pass). Block by block gives the decisions of the whole recording."""
    assert recording.wave.max() + 0.1 < 1.0  # an offset, nothing clipped
    for offset in (0.1, -0.3):
        figures = scores(recording.wave + np.float32(offset), recording, method)
        assert figures["segments"] == len(SENTENCES) and figures["f1"] == 1.0
        assert figures["speech_lost"] < 0.01 and figures["utterances_cut"] == 0
    shifted = recording.wave + np.float32(0.1)
    whole = vad.detect(shifted, method)
    parts = vad._detector(method)
    for start, stop in ((0, 1), (1, 1), (1, 7000), (7000, 40_001), (40_001, len(shifted))):
        parts.add(shifted[start:stop])
    cut = parts.finish()
    assert (cut.speech == whole.speech).all()
    np.testing.assert_allclose(cut.score, whole.score, atol=1e-5 if method == "silero" else 0)  # silero's batches
    steady = DcFreeEnergy(400, 160).add(np.full(1000, 0.5, dtype=np.float32)).finish()
    assert (steady == SILENCE_DB).all()  # an offset alone is silence


@pytest.mark.slow  # a long chunk's levels, traced for memory
def test_dc_free_levels_of_a_chunk_need_no_copy_of_it() -> None:
    """The running sums of a whole ENERGY_CHUNK (silero's: 10,000 windows, 5.12 M samples) were float64 arrays of
    41 MB each, and the mean's two took `sate segment`'s peak 80 MiB higher (review28s); they are computed a piece
    of the chunk at a time now (a 20 MB chunk took 164 MB of temporaries, now 5 MB)."""
    import tracemalloc

    from sate.data.audio import ENERGY_CHUNK
    wave = (0.1 * np.random.default_rng(0).standard_normal(ENERGY_CHUNK * 512 + 100)).astype(np.float32)
    tracemalloc.start()
    try:
        levels = DcFreeEnergy(512, 512).add(wave).finish()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, peak  # the chunk itself is 20 MB of float32
    assert len(levels) == ENERGY_CHUNK
    frames = wave[:ENERGY_CHUNK * 512].astype(np.float64).reshape(ENERGY_CHUNK, 512)
    np.testing.assert_allclose(levels, 10 * np.log10(frames.var(axis=1) + 1e-12), atol=1e-6)  # each frame's own mean


def test_silero_keeps_the_boundaries_under_noise(recording: recordings.Recording) -> None:
    noisy = recordings.mix(recording, "white", 5.0, [], np.random.default_rng(1))
    figures = scores(noisy, recording, "silero")
    assert figures["f1"] >= 0.9 and figures["speech_lost"] < 0.01 and figures["utterances_cut"] == 0


def test_silero_finds_the_pauses_under_babble(recording: recordings.Recording, crowd: list[np.ndarray]) -> None:
    # Five talkers 10 dB under the talk: silero alone hears speech in every pause (one segment); the
    # foreground rule cuts the pauses where the level falls back to the crowd's.
    noisy = recordings.mix(recording, "babble", 10.0, crowd, np.random.default_rng(1))
    alone = silero.hysteresis(silero.speech_probabilities(noisy))
    assert len(vad.true_runs(alone)) <= 2
    figures = scores(noisy, recording, "silero")
    assert figures["segments"] >= len(SENTENCES) - 1 and figures["f1"] >= 0.7
    assert figures["speech_lost"] < 0.01 and figures["utterances_cut"] == 0


@pytest.mark.parametrize("noise", ["music", "white"])
def test_music_and_noise_alone_are_not_speech_to_silero(noise: str) -> None:
    rng = np.random.default_rng(0)
    sound = recordings.music(8 * SR, rng) if noise == "music" else recordings.white(8 * SR, rng)
    sound = 0.3 * sound / np.abs(sound).max()
    assert speech_segments(sound, VadOptions(method="silero")) == []
    assert speech_segments(sound, VadOptions(method="energy")) != []  # a level threshold cannot tell


def test_long_speech_is_cut_where_silero_is_least_sure(sentences: list[np.ndarray]) -> None:
    # Pauses of 0.1 s are not pauses (min_pause 0.3 s): one run of speech, cut to fit max_segment 6 s.
    rec = recordings.build(sentences, np.random.default_rng(0), pauses=(0.1, 0.1))
    options = VadOptions(max_segment=6.0, method="silero")
    segments = speech_segments(rec.wave, options)
    assert len(segments) >= 3 and all(b - a <= options.max_segment for a, b in segments)
    assert all(a[1] == b[0] for a, b in zip(segments, segments[1:], strict=False))  # cut apart, they meet
    assert score_segments(segments, [], rec.spans)["utterances_cut"] == 0  # every cut fell between sentences


def test_silero_is_offline_and_leaves_torch_threads_alone(recording: recordings.Recording) -> None:
    path = silero.model_path()  # the model travels inside the wheel: nothing to download
    assert path.is_file() and path.parent.parent.name == "silero_vad"
    threads = torch.get_num_threads()
    probs = silero.speech_probabilities(recording.wave[:SR])
    assert len(probs) == -(-SR // silero.WINDOW) and ((0 <= probs) & (probs <= 1)).all()
    assert torch.get_num_threads() == threads


@pytest.mark.slow
def test_batched_network_gives_silero_s_own_probabilities(recording: recordings.Recording,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Our batched reading of silero's network equals silero-vad's TorchScript model called window by window
    (its documented use) to float rounding, on speech, silence and the zero-padded last window, whatever the
    blocks fed; two streams interleaved keep their own state."""
    wave = recording.wave[:12 * SR + 300]
    theirs = torch.jit.load(str(silero.model_path()), map_location="cpu").eval()
    padded = np.zeros(-(-len(wave) // silero.WINDOW) * silero.WINDOW, dtype=np.float32)
    padded[:len(wave)] = wave
    with torch.inference_mode():
        expected = np.array([float(theirs(torch.from_numpy(w), SR)) for w in padded.reshape(-1, silero.WINDOW)])
    assert expected.max() > silero.HIGH and expected.min() < silero.LOW  # speech and pauses
    ours = silero.speech_probabilities(wave)
    np.testing.assert_allclose(ours, expected, atol=1e-4)  # float rounding, carried through the LSTM
    assert (silero.hysteresis(ours) == silero.hysteresis(expected)).all()
    monkeypatch.setattr(silero, "MAX_WINDOWS", 7)  # the state carries across the batches of one call too
    first, second = silero.SileroStream(), silero.SileroStream()
    for start, stop in ((0, 1000), (1000, 1001), (1001, 40_000), (40_000, len(wave))):
        first.add(wave[start:stop])
        second.add(wave[::-1][start:stop])
    np.testing.assert_allclose(first.probabilities()[0], ours, atol=1e-5)
    assert not np.allclose(second.probabilities()[0], expected, atol=1e-2)


def test_without_silero_the_energy_vad_is_used_and_says_so(recording: recordings.Recording,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(silero, "available", lambda: False)
    monkeypatch.setattr(vad, "_fallback_noted", False)
    assert speech_segments(recording.wave) == speech_segments(recording.wave, VadOptions(method="energy"))
    assert "silero-vad is not installed" in capsys.readouterr().err
    with pytest.raises(SateError, match="--vad silero: the silero-vad package is not installed"):
        speech_segments(recording.wave, VadOptions(method="silero"))
    assert main(["segment", "missing.wav", "--vad", "silero"]) == 2  # refused before any file is read
    assert capsys.readouterr().err.count("silero-vad package is not installed") == 1
    with pytest.raises(SateError, match="unknown VAD 'webrtc'"):
        VadOptions(method="webrtc")


# ------------------------------------------------------------------------------------------------ the CLI


def run_segment(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = main(["segment", *map(str, args)])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_jsonl_to_stdout_a_file_and_a_directory(tmp_path: Path, recording: recordings.Recording,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    talk, other = tmp_path / "talk.wav", tmp_path / "other.flac"
    sf.write(talk, recording.wave, SR)
    sf.write(other, recording.wave[: 5 * SR], SR)
    rc, out, err = run_segment(capsys, talk)
    assert rc == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["segment"] for r in rows] == list(range(len(SENTENCES)))
    assert all(set(r) == {"file", "segment", "start", "end"} and r["file"] == str(talk) for r in rows)
    assert all(0 <= r["start"] < r["end"] <= recording.duration for r in rows)
    assert all(a["end"] <= b["start"] for a, b in zip(rows, rows[1:], strict=False))
    assert [(r["start"], r["end"]) for r in rows] == speech_segments(recording.wave)  # what translate decodes
    assert speech_segments(recording.wave) == speech_segments(recording.wave, VadOptions(method="silero"))

    assert run_segment(capsys, talk, other, "--vad", "energy", "--out", tmp_path / "all.jsonl")[0] == 0
    both = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert {r["file"] for r in both} == {str(talk), str(other)}
    assert run_segment(capsys, talk, other, "--out", tmp_path / "segs")[0] == 0
    assert (tmp_path / "segs" / "talk.jsonl").read_text() == out


def test_a_file_shorter_than_a_tenth_of_a_second_is_told_in_milliseconds(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A 0.05-s file without speech was "0.1 s of silence", a 1-ms one "0.0 s" (twenty-eighth hostile pass); in whole
    ms, as the 16 kHz signal's length is within 1/16 ms of the file's: one sample was "0.0625 ms" (review28s)."""
    for samples, told in ((800, "50 ms"), (16, "1 ms"), (1, "under 1 ms"), (1599, "100 ms"), (1600, "0.1 s"),
                          (48_000, "3.0 s")):
        sf.write(tmp_path / "short.wav", np.zeros(samples, dtype=np.float32), SR)
        rc, out, err = run_segment(capsys, tmp_path / "short.wav", "--vad", "energy")
        assert rc == 0 and out == ""
        assert err.strip() == (f"sate segment: note: {tmp_path / 'short.wav'}: no speech found ({told} of silence, or "
                               "of sounds the VAD does not take for speech: noise, music, tones); no segments")


def test_unreadable_and_silent_files(tmp_path: Path, recording: recordings.Recording,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    talk, silent, broken = tmp_path / "talk.wav", tmp_path / "silent.wav", tmp_path / "broken.wav"
    sf.write(talk, recording.wave, SR)
    sf.write(silent, np.random.default_rng(0).normal(0, 1e-4, 3 * SR).astype(np.float32), SR)
    broken.write_bytes(b"RIFF not really a wav")
    rc, out, err = run_segment(capsys, silent, "--out", tmp_path / "out")
    assert rc == 0 and out == "" and (tmp_path / "out" / "silent.jsonl").read_text() == ""
    assert f"{silent}: no speech found (3.0 s" in err
    rc, out, err = run_segment(capsys, broken, tmp_path / "missing.wav", talk)
    assert rc == 1 and len(out.splitlines()) == len(SENTENCES)
    assert f"error: {broken}: cannot read audio" in err and f"error: {tmp_path / 'missing.wav'}: no such file" in err
    rc, out, err = run_segment(capsys, talk, "--out", talk.with_suffix(".jsonl"), "--max-segment", "0.5")
    assert rc == 2 and "--max-segment" in err and err.count("\n") == 1
    for seconds in (0.0006, 0.05, 0.13):  # fewer of silero's windows than the level's smoothing spans
        short = tmp_path / f"short_{seconds}.wav"
        sf.write(short, recording.wave[int(SR * 0.5):int(SR * (0.5 + seconds))], SR)
        rc, out, err = run_segment(capsys, short, talk)
        assert rc == 0 and len(out.splitlines()) in (len(SENTENCES), len(SENTENCES) + 1), err


def test_names_that_are_not_utf8_or_hold_control_characters(tmp_path: Path, recording: recordings.Recording,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A name whose bytes are not UTF-8 could not be opened (soundfile encodes names as UTF-8) and its error was a
    UnicodeEncodeError traceback; an ESC or a newline in a name went raw into the error line (a terminal's escape
    sequence, a message over two lines)."""
    talk = tmp_path / os.fsdecode(b"talk\xff.wav")
    sf.write(tmp_path / "plain.wav", recording.wave, SR)
    (tmp_path / "plain.wav").rename(talk)
    rc, out, err = run_segment(capsys, talk, "--vad", "energy")
    assert rc == 0 and [json.loads(line)["file"] for line in out.splitlines()][0] == str(talk), err
    gone = tmp_path / os.fsdecode(b"gone\xff\x1b[2J\n.wav")
    rc, out, err = run_segment(capsys, gone, "--vad", "energy")
    assert rc == 1 and err.splitlines() == [f"sate segment: error: {tmp_path}/gone\\udcff\\x1b[2J\\n.wav: no such file",
                                           "sate segment: 1 of 1 file(s) failed"]
    assert main(["config", "--config", str(gone)]) == 2  # every command's one line (sate.cli)
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"sate config: error: {tmp_path}/gone\\udcff\\x1b[2J\\n.wav: config file not found"


def test_a_bidi_override_in_a_name_is_escaped_and_persians_joiner_kept(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """U+202E (right-to-left override) went raw into the error line, which a terminal then shows reversed: a file
    "x\u202egnp.wav" read as "xvaw.png". The zero-width non-joiner (the same Unicode class) is text, and stays."""
    gone = tmp_path / "x\u202egnp\u2066.wav"
    rc, _, err = run_segment(capsys, gone, "--vad", "energy")
    assert rc == 1 and err.splitlines()[0] == f"sate segment: error: {tmp_path}/x\\u202egnp\\u2066.wav: no such file"
    persian = tmp_path / "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.wav"  # "I want", with a ZWNJ
    rc, _, err = run_segment(capsys, persian, "--vad", "energy")
    assert rc == 1 and err.splitlines()[0] == f"sate segment: error: {persian}: no such file"


def test_stereo_44k_and_damaged_audio(tmp_path: Path, recording: recordings.Recording,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    mono, stereo, damaged = tmp_path / "talk.wav", tmp_path / "talk_stereo.flac", tmp_path / "damaged.wav"
    wave = recording.wave[:round(recording.spans[2][1] * SR) + SR // 2]  # three sentences
    sf.write(mono, wave, SR, subtype="FLOAT")
    loud = AF.resample(torch.from_numpy(wave), SR, 44100).numpy()
    sf.write(stereo, np.clip(np.stack([loud * 0.9, loud * 0.7], axis=1), -1, 1), 44100, subtype="PCM_24")
    broken = wave.copy()
    broken[SR:SR + 10] = np.nan
    sf.write(damaged, broken, SR, subtype="FLOAT")
    blaring = tmp_path / "blaring.wav"  # finite, but its fbank power is not a float32: inf features
    sf.write(blaring, wave * 1e30, SR, subtype="FLOAT")
    double = tmp_path / "double.wav"  # 1e300 is finite, but no float32: read as one it was "not finite (NaN or inf)"
    far = wave.astype(np.float64)
    far[SR] = 1e300
    sf.write(double, far, SR, subtype="DOUBLE")
    as_int = tmp_path / "as_int.wav"  # int16 PCM written as float samples (twenty-second hostile pass: read as it was)
    sf.write(as_int, np.round(wave / np.abs(wave).max() * 20000), SR, subtype="FLOAT")
    rc, out, err = run_segment(capsys, mono, stereo, damaged, blaring, double, as_int, "--vad", "energy")
    assert rc == 1 and f"error: {damaged}: 10 samples are not finite (NaN or inf)" in err
    assert f"error: {as_int}: float samples reach 20000 (the first beyond ±16 at " in err
    assert f"error: {blaring}: " in err and "samples lie beyond ±1e+10 (full scale is 1), the first at" in err
    assert f"error: {double}: 1 samples lie beyond ±1e+10 (full scale is 1), the first at 1.000 s" in err
    rows = [json.loads(line) for line in out.splitlines()]
    ours = [(r["start"], r["end"]) for r in rows if r["file"] == str(stereo)]
    ref = [(r["start"], r["end"]) for r in rows if r["file"] == str(mono)]
    assert len(ours) == len(ref) == 3  # resampled and down-mixed: the same segments, to within two frames
    assert all(abs(a - b) <= 0.021 and abs(c - d) <= 0.021 for (a, c), (b, d) in zip(ours, ref, strict=True))
    before = mono.read_bytes()
    rc, out, err = run_segment(capsys, mono, "--out", mono)
    assert rc == 2 and "is one of the inputs" in err and err.count("\n") == 1 and mono.read_bytes() == before


def test_a_run_in_which_every_file_fails_leaves_out_as_it_was(tmp_path: Path, recording: recordings.Recording,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Every input failing replaced `--out FILE.jsonl` with an empty file, exit 1 (eleventh hostile pass); a file
    without speech is no failure, and one file segmented writes --out as before."""
    broken, talk = tmp_path / "broken.wav", tmp_path / "talk.wav"
    broken.write_bytes(b"RIFF not really a wav")
    sf.write(talk, recording.wave, SR)
    kept = tmp_path / "segments.jsonl"
    kept.write_text('{"file": "mine"}\n')
    rc, out, err = run_segment(capsys, broken, tmp_path / "missing.wav", "--out", kept)
    assert rc == 1 and kept.read_text() == '{"file": "mine"}\n'
    assert err.splitlines()[-1] == f"sate segment: 2 of 2 file(s) failed; nothing written to --out {kept}"
    rc, out, err = run_segment(capsys, broken, talk, "--out", kept)
    assert rc == 1 and len(kept.read_text().splitlines()) == len(SENTENCES)


def test_segment_out_dash_is_standard_output_and_jsonl_any_case_is_a_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate segment --out -` made a folder named '-' and wrote -/talk.jsonl, exit 0, where `translate --out -` is
    standard output; `--out SEGS.JSONL` made a folder of that name (thirteenth hostile pass)."""
    talk = tmp_path / "talk.wav"
    tone = 0.3 * np.sin(np.arange(48000) * 0.05).astype(np.float32)
    sf.write(talk, np.concatenate([tone, np.zeros(16000, np.float32), tone]), 16000)
    monkeypatch.chdir(tmp_path)
    assert main(["segment", str(talk), "--vad", "energy"]) == 0
    expected = capsys.readouterr().out
    assert main(["segment", str(talk), "--vad", "energy", "--out", "-"]) == 0
    assert capsys.readouterr().out == expected and expected.count("\n") == 2
    assert main(["segment", str(talk), "--vad", "energy", "--out", "SEGS.JSONL"]) == 0
    assert (tmp_path / "SEGS.JSONL").read_text() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SEGS.JSONL", "talk.wav"]
    (tmp_path / "dj.jsonl").mkdir()  # a folder with a .jsonl name: was told to "give a file name", which it is
    assert main(["segment", str(talk), "--vad", "energy", "--out", "dj.jsonl"]) == 2
    assert capsys.readouterr().err.strip() == (
        "sate segment: error: --out dj.jsonl: is a directory, and a name ending in .jsonl names one file for every "
        "input; for one FILE_STEM.jsonl per input in that directory, end the name with a slash: dj.jsonl/")
    assert main(["segment", str(talk), "--vad", "energy", "--out", "dj.jsonl/"]) == 0  # the advice, as given
    assert (tmp_path / "dj.jsonl" / "talk.jsonl").read_text() == expected
    # a new folder named like a file: `--out segs.json` was made a folder, exit 0 (twentieth hostile pass)
    for name in ("segs.json", "segs.TXT", "segs.csv", "segs.jsonl.gz"):  # .gz: twenty-first hostile pass
        assert main(["segment", str(talk), "--vad", "energy", "--out", name]) == 2
        assert capsys.readouterr().err == (
            f"sate segment: error: --out {name}: a directory that gets one FILE_STEM.jsonl per input (an --out not "
            f"ending in .jsonl), and its name ends like a file's ({Path(name).suffix}): for one file of every input's "
            f"segments, end the name in .jsonl; for a directory of that name, end it with a slash: {name}/\n")
    assert main(["segment", str(talk), "--vad", "energy", "--out", "segs.json/"]) == 0  # the advice, as given
    assert main(["segment", str(talk), "--vad", "energy", "--out", "run.v2"]) == 0  # no file's ending: a folder
    assert (tmp_path / "segs.json" / "talk.jsonl").read_text() == (tmp_path / "run.v2" / "talk.jsonl").read_text()


def test_two_outputs_linked_to_one_file_are_refused_before_any_work(tmp_path: Path, recording: recordings.Recording,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # Eighteenth hostile pass: OUT/a.jsonl a link to OUT/b.jsonl: a.wav's segments were written through it, then
    # replaced by b.wav's, exit 0 (the two names differ, so the check for one stem twice passed).
    a, b, out = tmp_path / "a.wav", tmp_path / "b.wav", tmp_path / "seg"
    sf.write(a, recording.wave[: 5 * SR], SR)
    sf.write(b, recording.wave[: 3 * SR], SR)
    out.mkdir()
    (out / "a.jsonl").symlink_to("b.jsonl")
    rc, _, err = run_segment(capsys, a, b, "--vad", "energy", "--out", f"{out}/")
    assert rc == 2 and f"{out / 'b.jsonl'}: leads to the same file as {out / 'a.jsonl'}" in err, err
    assert not (out / "b.jsonl").exists()
    rc, _, err = run_segment(capsys, a, a, "--vad", "energy", "--out", f"{out}/")  # one input twice: one output
    assert rc == 0, err
    # and the line saying nothing was written shows a line break and a terminal escape in --out escaped
    rc, _, err = run_segment(capsys, tmp_path / "missing.wav", "--out", tmp_path / "n\n\x1b[31m.jsonl")
    assert rc == 1 and err.splitlines()[-1].endswith(f"nothing written to --out {tmp_path}/n\\n\\x1b[31m.jsonl"), err


def _a_tone_between_pauses(path: Path) -> None:
    """A second of tone between two half-second pauses: one segment."""
    wave = np.concatenate([np.zeros(SR // 2), 0.3 * np.sin(np.arange(SR) * 0.2), np.zeros(SR // 2)])
    sf.write(path, wave.astype(np.float32), SR)


@pytest.mark.parametrize(("name", "why"), [
    ("segs.wav", "ends like a file's (.wav)"), ("segs.png", "ends like a file's (.png)"),
    ("segs.tar", "ends like a file's (.tar)"), ("segs.jsonl ", "ends in a space"), ("segs.jsonl.", "ends in a dot"),
])
def test_a_new_folder_named_for_audio_an_image_or_an_archive_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str], name: str,
                                                                        why: str) -> None:
    """`--out segs.wav`, `segs.png`, `segs.tar`, `'segs.jsonl '` were made folders of that name, exit 0 (twenty-second
    hostile pass: the names of files sate knows, not only of text)."""
    monkeypatch.chdir(tmp_path)
    assert main(["segment", "talk.wav", "--vad", "energy", "--out", name]) == 2
    err = capsys.readouterr().err
    shown = f"'{name}'" if name.endswith(" ") else name
    assert err.startswith(f"sate segment: error: --out {shown}: a directory that gets one FILE_STEM.jsonl per input "
                          f"(an --out not ending in .jsonl), and its name {why}: "), err
    assert os.listdir(tmp_path) == []


def test_segment_and_translate_do_not_replace_each_others_json_lines(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`sate segment --out T.jsonl` over `sate translate`'s JSON lines replaced the translations (decoding work) with
    segment times, exit 0 (twenty-fourth hostile pass); translate over segment's likewise. Each reruns over its own
    output, and writes over other text, as before."""
    _a_tone_between_pauses(tmp_path / "a.wav")
    translated = tmp_path / "t.jsonl"
    lines = '{"file": "a.wav", "start": 0.4, "end": 1.6, "transcript": "hello", "translation": "hallo"}\n'
    translated.write_text(lines, encoding="utf-8")
    assert main(["segment", str(tmp_path / "a.wav"), "--vad", "energy", "--out", str(translated)]) == 2
    assert "it holds `sate translate`'s JSON lines" in capsys.readouterr().err
    assert translated.read_text(encoding="utf-8") == lines
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.jsonl").write_text(lines, encoding="utf-8")  # one FILE_STEM.jsonl per input
    assert main(["segment", str(tmp_path / "a.wav"), "--vad", "energy", "--out", str(tmp_path / "dir") + "/"]) == 2
    segments = tmp_path / "s.jsonl"
    for _ in range(2):  # made, then made again over its own
        assert main(["segment", str(tmp_path / "a.wav"), "--vad", "energy", "--out", str(segments)]) == 0
    from sate.decode.output import check_not_other_output  # what translate calls before any decoding

    with pytest.raises(SateError, match="it holds `sate segment`'s JSON lines"):
        check_not_other_output(segments, "translate")
    check_not_other_output(translated, "translate")
    (tmp_path / "other.jsonl").write_text('{"a": 1}\n', encoding="utf-8")
    assert main(["segment", str(tmp_path / "a.wav"), "--vad", "energy", "--out", str(tmp_path / "other.jsonl")]) == 0


def test_segment_and_translate_do_not_replace_a_streams_json_lines(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`sate stream ... > live.jsonl`, then `sate segment talk.wav --out live.jsonl` (or `translate --out
    live.jsonl`) replaced the stream's translations, exit 0: its lines (`t`, `text`, `final`) were neither
    translate's nor segment's (twenty-fourth hostile pass, review)."""
    from sate.decode.output import check_not_other_output  # what translate calls before any decoding

    _a_tone_between_pauses(tmp_path / "a.wav")
    live = tmp_path / "live.jsonl"
    lines = '{"t": 1.0, "text": "hallo", "final": false}\n{"t": 2.0, "text": "hallo welt", "final": true}\n'
    live.write_text(lines, encoding="utf-8")
    assert main(["segment", str(tmp_path / "a.wav"), "--vad", "energy", "--out", str(live)]) == 2
    assert "it holds `sate stream`'s JSON lines" in capsys.readouterr().err
    assert live.read_text(encoding="utf-8") == lines
    with pytest.raises(SateError, match="it holds `sate stream`'s JSON lines"):
        check_not_other_output(live, "translate")


def test_a_failed_inputs_jsonl_of_an_earlier_run_is_named_as_left(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Run again into the same folder with one input replaced by a damaged file: its OUT/STEM.jsonl of the earlier
    run stayed beside this run's, with no word that it was not this run's (twenty-fifth hostile pass). It is left,
    and the input's error line names it."""
    first, second = tmp_path / "a.wav", tmp_path / "b.wav"
    _a_tone_between_pauses(first)
    _a_tone_between_pauses(second)
    segs = tmp_path / "segs"
    assert run_segment(capsys, first, second, "--vad", "energy", "--out", segs)[0] == 0
    earlier = (segs / "b.jsonl").read_text()
    second.write_bytes(b"RIFF not really a wav")
    rc, out, err = run_segment(capsys, first, second, "--vad", "energy", "--out", segs)
    assert rc == 1 and (segs / "b.jsonl").read_text() == earlier
    assert f"sate segment: error: {second}: cannot read audio" in err
    assert f"; {segs / 'b.jsonl'} is left as it was (not of this run)\n" in err
    rc, out, err = run_segment(capsys, first, tmp_path / "c.wav", "--vad", "energy", "--out", segs)
    assert rc == 1 and "left as it was" not in err and not (segs / "c.jsonl").exists()


@pytest.mark.parametrize("value", ["-1", "nan", "-inf"])
def test_a_max_segment_out_of_range_is_named_with_its_range(tmp_path: Path, value: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`--max-segment -1` said "must be a finite number of seconds >= 0", and 0 given then was refused as under 1.2 s
    (twenty-fifth hostile pass): every number out of range is named with the range."""
    talk = tmp_path / "talk.wav"
    _a_tone_between_pauses(talk)
    rc, out, err = run_segment(capsys, talk, f"--max-segment={value}")
    assert rc == 2 and out == ""
    assert err == ("sate segment: error: max_segment (--max-segment) must be at least 1.2 s and at most 120 s, "
                   f"got {value}\n")


@pytest.mark.slow
def test_names_from_a_list_saved_on_windows_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`sate segment $(cat list.txt)` of a list with Windows line ends and a BOM said "\ufeffa.wav\\r: no such file"
    beside a.wav, the BOM unseen: the message says what the name carries and how to strip it; a name that is missing
    however it is stripped gets no such note."""
    monkeypatch.chdir(tmp_path)
    sf.write("a.wav", np.zeros(1600, np.float32), 16000)
    assert main(["segment", "--vad", "energy", "\ufeffa.wav\r", "b.wav\r"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("no such file (relative to the current directory, "
                           f"{tmp_path}); a.wav is there: the name given begins with a byte-order mark (U+FEFF, "
                           "invisible here) and ends in a carriage return (\\r), as names read from a list saved on "
                           "Windows do: strip them (e.g. sed -e 's/\\r$//' -e '1s/^\\xEF\\xBB\\xBF//' list.txt > "
                           "clean.txt)")
    assert err[1] == f"sate segment: error: b.wav\\r: no such file (relative to the current directory, {tmp_path})"


@pytest.mark.parametrize("max_segment", [1.2, 1.3, 2.05, 1.2345])
def test_no_segment_is_longer_than_max_segment_once_rounded_to_the_millisecond(max_segment: float) -> None:
    """A piece of exactly max_segment (padding 0) between frame times ending in half a millisecond was 1 ms longer
    once both ends were rounded: 1.201 s for max_segment 1.2 (the energy VAD's frames sit 7.5 ms in)."""
    frames = vad.Frames(np.ones(1000, dtype=bool), np.linspace(2.0, 1.0, 1000), 0.01, 0.0075, 0.015)
    options = VadOptions(max_segment=max_segment, padding=0.0, method="energy")
    segments = vad.frames_to_segments(frames, 10.0075, options)
    assert len(segments) > 3
    assert all(round(end * 1000) - round(start * 1000) <= max_segment * 1000 for start, end in segments)
    assert all(a[1] <= b[0] for a, b in zip(segments, segments[1:], strict=False))


@pytest.mark.parametrize("method", ["energy", "silero"])
def test_speech_segments_refuses_what_is_not_mono_samples(method: str) -> None:
    """(n, 2) stereo samples gave the energy VAD wrong segments, exit 0, and silero a torch error; an empty array
    silero's "a cannot be empty"."""
    rng = np.random.default_rng(0)
    wave = np.concatenate([np.zeros(8000), 0.3 * rng.standard_normal(16000), np.zeros(8000)]).astype(np.float32)
    options = VadOptions(method=method)
    for bad in (np.stack([wave, wave], 1), list(wave[:100])):
        with pytest.raises(SateError, match=r"speech_segments: expected 16 kHz mono samples, an array of shape \(n,\)"):
            speech_segments(bad, options)  # type: ignore[arg-type]
    assert speech_segments(np.zeros(0, dtype=np.float32), options) == []


def test_integer_samples_too_loud_are_called_integers() -> None:
    """int16 samples given to speech_segments as they are were called "float samples ... integer PCM stored as
    floats?" (hand30t): they are named as the integers they are; the same values as floats keep their line."""
    pcm = (np.sin(np.linspace(0, 200, 16000)) * 20000).astype(np.int16)
    with pytest.raises(SateError, match=r"^waveform: integer samples \(int16\) reach \d+ .*where full scale is 1: "
                                        r"integer PCM, not floats\. Scale them to \[-1, 1\] as float32"):
        speech_segments(pcm, VadOptions(method="energy"))
    with pytest.raises(SateError, match=r"^waveform: float samples reach .*integer PCM stored as floats\?"):
        speech_segments(pcm.astype(np.float32), VadOptions(method="energy"))


@pytest.mark.parametrize(("options", "said"), [
    ({"max_segment": 120.0001}, "at most 120 s, got 120.0001"),
    ({"max_segment": 1.19999}, "at least 1.2 s and at most 120 s, got 1.19999"),
    ({"max_segment": 1.1999999}, "got 1.1999999"),
    ({"padding": 59.500001}, "got 59.500001"),
    ({"min_speech": 20.0000001}, "min_speech (20.0000001 s) must be at most max_segment (--max-segment, 20 s)"),
    ({"max_segment": -1.0}, "got -1"),  # a value :g writes whole is written so
    # the lower bound too, 1 s + 2 x padding (fix32s: "at least 1.2 s ..., got 1.2000001")
    ({"padding": 0.1000001, "max_segment": 1.2000001}, "at least 1.2000002 s and at most 120 s, got 1.2000001"),
    ({"max_segment": np.float64(120.0001)}, "got 120.0001"),  # a NumPy value as its number
])
def test_a_value_just_past_a_bound_is_shown_as_given(options: dict, said: str) -> None:
    """Thirty-second hostile pass: values were written with 6 digits (``:g``), so `--max-segment 120.0001` was
    refused as "at most 120 s, got 120", a line that contradicts itself."""
    with pytest.raises(SateError) as err:
        VadOptions(**options)
    assert said in str(err.value)


@pytest.mark.parametrize(("wanted", "said"), [(30.00001, "30.00001 s"), (40.0, "40 s"), (40, "40 s")])
def test_a_max_segment_past_whisper_s_window_is_shown_as_given(wanted: float, said: str) -> None:
    """fix32s: `sate translate --model WHISPER_PACK --max-segment 30.00001` said "30 s: ... at most 30 s", the
    six digits of ``:g`` that hand32s had mended in the other range lines."""
    from sate.decode.api import SpeechTranslator

    whisper = type("Whisper", (), {"max_segment_seconds": lambda self: 30.0})()  # the cap of every Whisper
    with pytest.raises(SateError, match=rf"^max_segment \(--max-segment\) {said}: this model's acoustic encoder "
                                        r"\(Whisper\) takes segments of at most 30 s$"):
        SpeechTranslator._check_segment_cap(whisper, VadOptions(max_segment=wanted))
    SpeechTranslator._check_segment_cap(whisper, VadOptions(max_segment=30.0))  # the window itself is taken
