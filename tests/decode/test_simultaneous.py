"""Simultaneous translation on a trained tiny ST pack: each policy only ever adds words, decodes the whole input
like offline decoding with the same options (greedy or beam search) when it sees it at once, and `sate stream` /
`sate evaluate --stream [--talks]` say so."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from sate.cli import main
from sate.data.audio import SAMPLE_RATE, audio_blocks, read_audio, read_segment
from sate.data.manifest import read_manifest
from sate.decode import simultaneous, stream, talks
from sate.decode.api import SpeechTranslator
from sate.decode.options import StreamPolicy, parse_policy
from sate.decode.pack import pack
from sate.decode.policies import common_prefix
from sate.decode.simultaneous import live, simulate
from sate.decode.talks import TalkWords, stream_talk
from sate.decode.vad import VadOptions, cut, file_segments, speech_segments
from sate.errors import SateError
from sate.scoring.resegment import units

ROOT = Path(__file__).resolve().parents[2]
SPECS = [StreamPolicy("wait-k", 2), StreamPolicy("local-agreement", 2), StreamPolicy("alignatt", 1)]


@pytest.fixture(scope="module")
def st_pack(tmp_path_factory: pytest.TempPathFactory, trained_st_file: Path, prepared_data: Path) -> Path:
    out = tmp_path_factory.mktemp("simul") / "pack"
    pack(trained_st_file, prepared_data, out, {"beam": 1})
    return out


@pytest.fixture(scope="module")
def translator(st_pack: Path) -> SpeechTranslator:
    return SpeechTranslator.load(st_pack, device="cpu")


@pytest.fixture(scope="module")
def waves(prepared_data: Path) -> list[np.ndarray]:
    """The dev and tst-COMMON utterances (not trained on), 16 kHz samples."""
    return [read_segment(r["audio"], r["offset"], r["duration"])
            for split in ("dev", "tst-COMMON") for r in read_manifest(prepared_data / f"{split}.jsonl")]


def test_policy_specs() -> None:
    assert parse_policy("alignatt") == StreamPolicy("alignatt", 4)
    assert parse_policy("wait-k=5") == StreamPolicy("wait-k", 5)
    assert str(parse_policy("local-agreement=3")) == "local-agreement=3"
    # '٣' (an Arabic-Indic three), ' 3' and '3_0' were read by int() as 3, 3 and 30
    for bad, says in [("waitk=3", "unknown streaming policy"), ("wait-k=x", "whole number"),
                      ("local-agreement=0", "at least 1"), ("wait-k=\u0663", "whole number \\(digits 0-9\\)"),
                      ("wait-k= 3", "whole number"), ("alignatt=3_0", "whole number"),
                      ("wait-k=" + "9" * 5000, "whole number")]:
        with pytest.raises(SateError, match=says):
            parse_policy(bad)
    assert common_prefix([[1, 2, 3], [1, 2, 4], [1, 2]]) == [1, 2]


def test_the_python_api_takes_a_policy_spec_and_checks_it(translator: SpeechTranslator,
                                                         waves: list[np.ndarray]) -> None:
    """Twenty-seventh hostile pass: `simulate(st, wave, "wait-k=2", 0.5)` (the spec as the command line writes it) was
    an AttributeError traceback, so was `live`'s; a StreamPolicy made by hand went unchecked (wait-k=0 decoded, an
    unknown name was a KeyError), and a chunk of "0.5" was a TypeError. The spec is parsed now, a policy checked as
    the command line checks it, and a chunk that is no number one line naming `chunk`."""
    greedy = translator.with_options(beam=1)
    given, made = (simulate(translator, waves[0], spec, chunk, greedy)
                   for spec, chunk in (("wait-k=2", 0.5), (StreamPolicy("wait-k", 2), np.float32(0.5))))
    assert (given.translation, given.delays, given.chunks) == (made.translation, made.delays, made.chunks)
    assert [c.text for c in live(translator, [waves[0]], "wait-k=2", greedy)] == \
        [c.text for c in live(translator, [waves[0]], StreamPolicy("wait-k", 2), greedy)]
    for spec, says in [(StreamPolicy("wait-k", 0), "streaming policy 'wait-k=0': the value must be at least 1"),
                       (StreamPolicy("waitk", 2), "unknown streaming policy 'waitk'"),
                       ("alignatt=x", "streaming policy 'alignatt=x': the value must be a whole number"),
                       (4, "spec: expected a streaming policy, \"alignatt=4\" or parse_policy's StreamPolicy, got "
                           "int")]:
        with pytest.raises(SateError, match=f"^{re.escape(says)}"):
            simulate(translator, waves[0], spec, 0.5)
        with pytest.raises(SateError, match=f"^{re.escape(says)}"):
            next(live(translator, [waves[0]], spec))
    for chunk, says in [("0.5", "chunk must be a number of seconds, got '0.5'"),
                        (0, "chunk must be at least 0.05 and at most 120 seconds, got 0"),
                        # review: an int past floats was an OverflowError traceback of math.isfinite
                        (10**400, "chunk must be at least 0.05 and at most 120 seconds, got "
                                  f"1{'0' * 19}... (401 digits)")]:
        with pytest.raises(SateError, match=f"^{re.escape(says)}$"):
            simulate(translator, waves[0], "wait-k=2", chunk)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_whole_input_in_one_chunk_is_offline_greedy_decoding(translator: SpeechTranslator, waves: list[np.ndarray],
                                                             spec: StreamPolicy) -> None:
    greedy = translator.with_options(beam=1)
    offline = translator.decode_features([translator.features(w) for w in waves], greedy)
    for wave, (transcript, translation) in zip(waves, offline, strict=True):
        run = simulate(translator, wave, spec, chunk=60.0, options=greedy)
        assert run.chunks == 1
        assert run.translation == " ".join(translation.split())
        assert run.transcript == transcript
        assert run.delays == [run.duration] * len(translation.split())


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_whole_input_in_one_chunk_is_offline_beam_search(translator: SpeechTranslator, waves: list[np.ndarray],
                                                         spec: StreamPolicy) -> None:
    """The final decision is the pack's beam search (here beam 4, lenpen 1.2), so with all of the input at once
    every policy gives the offline beam search's translation, which differs from greedy decoding's somewhere."""
    beam = translator.with_options(beam=4, lenpen=1.2)
    offline = translator.decode_features([translator.features(w) for w in waves], beam)
    greedy = translator.decode_features([translator.features(w) for w in waves], translator.with_options(beam=1))
    assert [t for _, t in offline] != [t for _, t in greedy]
    for wave, (_, translation) in zip(waves, offline, strict=True):
        run = simulate(translator, wave, spec, chunk=60.0, options=beam)
        assert run.chunks == 1 and run.translation == " ".join(translation.split())


@pytest.mark.parametrize(("spec", "beam"), [(spec, 1) for spec in SPECS]
                         + [pytest.param(spec, 3, marks=pytest.mark.slow) for spec in SPECS[:2]],
                         ids=lambda x: str(x) if isinstance(x, StreamPolicy) else f"beam{x}")
def test_policies_only_add_words_and_commit_before_the_end(translator: SpeechTranslator, waves: list[np.ndarray],
                                                          spec: StreamPolicy, beam: int) -> None:
    """Whatever the policy and the beam that completes its hypotheses, a shown word stays shown: each commit's
    text starts with the one before, and the final translation with every committed word. With a beam, on the
    four dev utterances only: a beam search per chunk is the suite's slowest decoding."""
    early = 0
    options = translator.with_options(beam=beam)
    for wave in waves if beam == 1 else waves[:4]:
        run = simulate(translator, wave, spec, chunk=0.25, options=options)
        words = run.translation.split()
        assert len(run.delays) == len(run.elapsed) == len(words)
        assert run.delays == sorted(run.delays) and run.delays[-1] == pytest.approx(run.duration)
        assert all(e >= d for d, e in zip(run.delays, run.elapsed, strict=True))  # decoding takes time
        texts = [c.text.split() for c in run.commits]
        assert all(a == b[:len(a)] for a, b in zip(texts, texts[1:], strict=False))  # never taken back
        assert texts[-1] == words and run.commits[-1].final and not any(c.final for c in run.commits[:-1])
        early += sum(d < run.duration for d in run.delays)
    assert early > 0  # some words are shown while the speaker still talks


def test_wait_k_commits_one_token_per_chunk_after_k(translator: SpeechTranslator, waves: list[np.ndarray]) -> None:
    wave = waves[0]
    never = simulate(translator, wave, StreamPolicy("wait-k", 1000), chunk=0.25)
    assert set(never.delays) == {never.duration}  # waited for the whole input: the offline translation
    assert never.translation == simulate(translator, wave, StreamPolicy("wait-k", 1), chunk=60.0).translation
    run = simulate(translator, wave, StreamPolicy("wait-k", 3), chunk=0.25)
    # A word needs at least one token, committed at chunk 3 at the earliest (0.75 s), one more per chunk.
    early = [d for d in run.delays if d < run.duration]
    assert all(d >= 0.75 - 1e-9 for d in early)
    assert all(n <= round(d / 0.25) - 2 for n, d in enumerate(early, start=1))


class _Unspaced:
    """The pack's target vocabulary written as an unspaced script: each letter a Han character, spaces dropped, so
    that the model's real token sequence reads as Chinese does."""

    def __init__(self, vocab: Any) -> None:
        self.vocab = vocab

    def decode(self, ids: Iterable[int]) -> str:
        return self.written(self.vocab.decode(ids))

    @staticmethod
    def written(text: str) -> str:
        return "".join(chr(0x4E00 + ord(c) % 500) if c.isalpha() else c for c in text if c != " ")


@pytest.mark.slow  # eleven streamed decodings
def test_chinese_output_is_shown_character_by_character(translator: SpeechTranslator,
                                                        waves: list[np.ndarray]) -> None:
    """Written without spaces, a whole output is one whitespace word: it was held back as a word that may go on, so
    nothing was shown before the utterance ended (every delay the duration; the last note's "left" item). Counted in
    characters, as SimulEval's character unit counts them: shown while the speaker talks, never taken back, one
    delay a character, and the final text the same tokens' as in a spaced script. A whole talk (`stream_talk`) gets
    the same units."""
    import copy

    chinese = copy.copy(translator)
    chinese.tgt_vocab = _Unspaced(translator.tgt_vocab)  # type: ignore[assignment]
    early = 0
    for wave in waves[:4]:
        run = simulate(chinese, wave, StreamPolicy("wait-k", 2), chunk=0.25)
        assert " " not in run.translation
        assert len(run.delays) == len(units(run.translation)[0]) > 1  # a character each, with the punctuation after it
        texts = [c.text for c in run.commits]
        assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False))  # never taken back
        spaced = simulate(translator, wave, StreamPolicy("wait-k", 2), chunk=0.25)
        assert run.translation == _Unspaced.written(spaced.translation)  # the same tokens, written unspaced
        early += sum(d < run.duration for d in run.delays)
    assert early > 0
    silence = np.zeros(SAMPLE_RATE, dtype=np.float32)
    talk = stream_talk(chinese, [np.concatenate([silence, waves[0], silence])], StreamPolicy("wait-k", 2), 0.25)
    assert len(talk.words) == len(talk.glued) == len(talk.delays) > 1 and all(units(w)[0] == [w] for w in talk.words)
    assert talk.glued[0] is False and all(talk.glued[1:]) and min(talk.delays) < talk.duration


def test_live_stream_cuts_at_pauses(translator: SpeechTranslator, waves: list[np.ndarray]) -> None:
    """Two utterances with a second of silence between them: two segments, each closed by a final commit, whose
    texts are the utterances' streamed translations."""
    silence = np.zeros(SAMPLE_RATE, dtype=np.float32)
    audio = np.concatenate([silence, waves[0], silence, waves[1], silence])
    step = SAMPLE_RATE // 4
    commits = list(live(translator, (audio[i:i + step] for i in range(0, len(audio), step)), StreamPolicy("wait-k", 2)))
    finals = [c for c in commits if c.final]
    assert len(finals) == 2
    assert all(c.text for c in finals)
    assert [c.t for c in commits] == sorted(c.t for c in commits)
    assert commits[-1].t <= len(audio) / SAMPLE_RATE


def test_live_stream_cuts_at_a_pause_inside_a_chunk(translator: SpeechTranslator, waves: list[np.ndarray]) -> None:
    """A half-second pause that lies inside a one-second chunk, with the next utterance begun after it in the same
    chunk, still ends the segment: the second utterance starts a segment of its own instead of running on."""
    step = SAMPLE_RATE
    lead = (round(1.2 * SAMPLE_RATE) - len(waves[0])) % step + SAMPLE_RATE  # the first ends 0.2 s into a chunk
    audio = np.concatenate([np.zeros(lead, dtype=np.float32), waves[0], np.zeros(SAMPLE_RATE // 2, dtype=np.float32),
                            waves[1], np.zeros(SAMPLE_RATE, dtype=np.float32)])
    commits = list(live(translator, (audio[i:i + step] for i in range(0, len(audio), step)),
                        StreamPolicy("local-agreement", 2)))
    finals = [c for c in commits if c.final]
    assert len(finals) == 2 and all(c.text for c in finals)
    first_end = (lead + len(waves[0])) / SAMPLE_RATE
    assert first_end + 0.5 < finals[0].t <= first_end + 0.8 + 1e-9  # at the chunk holding the pause
    assert [c.t for c in commits] == sorted(c.t for c in commits)


class Clock:
    """`time` for `sate.decode.stream`: sleeping moves the clock on at once, and says for how long."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _pcm(wave: np.ndarray) -> bytes:
    return (np.clip(wave, -1, 1) * 32767).astype("<i2").tobytes()


@pytest.mark.slow
def test_stream_command_reads_pcm_from_stdin_and_files(tmp_path: Path, st_pack: Path, waves: list[np.ndarray],
                                                       translator: SpeechTranslator,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    audio = np.concatenate([waves[0], np.zeros(SAMPLE_RATE, dtype=np.float32)])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_pcm(audio))))
    assert main(["stream", "--model", str(st_pack), "-", "--policy", "wait-k=2", "--chunk", "0.5"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines and all(set(line) == {"t", "text", "final"} for line in lines)
    assert lines[-1]["final"] and lines[-1]["text"]
    assert all(line["t"] % 0.5 == pytest.approx(0) or line["t"] == pytest.approx(len(audio) / SAMPLE_RATE)
               for line in lines)

    path = tmp_path / "talk.wav"
    sf.write(path, audio, SAMPLE_RATE)
    clock = Clock()  # the pace of speech on a clock of the test's own, so the test need not wait for it
    monkeypatch.setattr(stream, "time", clock)
    assert main(["stream", "--model", str(st_pack), str(path), "--policy", "wait-k=2", "--chunk", "0.5",
                 "--format", "text"]) == 0
    duration = len(audio) / SAMPLE_RATE
    assert clock.now == pytest.approx(duration)  # read at the pace of speech: slept until each piece was spoken
    assert len(clock.slept) == -(-len(audio) // (SAMPLE_RATE // 2)) and min(clock.slept) > 0
    assert capsys.readouterr().out.splitlines() == [lines[-1]["text"]]  # PCM or file: the same samples
    assert main(["stream", "--model", str(st_pack), str(path), "--policy", "wait-k=2", "--chunk", "0.5",
                 "--fast"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == lines
    # The level-threshold VAD finds the same one segment in this clean audio.
    assert main(["stream", "--model", str(st_pack), str(path), "--policy", "wait-k=2", "--chunk", "0.5", "--fast",
                 "--vad", "energy", "--format", "text"]) == 0
    assert capsys.readouterr().out.splitlines() == [lines[-1]["text"]]
    # --beam: the search that completes the hypotheses, here over the pack's own (1)
    assert main(["stream", "--model", str(st_pack), str(path), "--policy", "local-agreement=2", "--chunk", "0.5",
                 "--fast", "--vad", "energy", "--format", "text", "--beam", "3"]) == 0
    pieces = (audio[i:i + SAMPLE_RATE // 2] for i in range(0, len(audio), SAMPLE_RATE // 2))
    expected = [c.text for c in live(translator, pieces, StreamPolicy("local-agreement", 2),
                                     translator.with_options(beam=3), VadOptions(method="energy")) if c.final]
    assert capsys.readouterr().out.splitlines() == expected
    # A named pipe (a recorder writing into a FIFO) is read as a stream: the same samples, the same output.
    fifo = tmp_path / "live.wav"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(path.read_bytes()), daemon=True)
    writer.start()
    assert main(["stream", "--model", str(st_pack), str(fifo), "--policy", "wait-k=2", "--chunk", "0.5",
                 "--fast"]) == 0
    writer.join(timeout=60)
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == lines


def test_stream_of_a_silent_input_says_so(tmp_path: Path, st_pack: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`sate stream FILE` of silence ended with no line at all, exit 0, as if nothing had been read (`translate`
    says "no speech found", `segment` notes it): a note now says so, and so it does for empty stdin."""
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(3 * 16000, dtype=np.float32), 16000)
    assert main(["stream", "--model", str(st_pack), "--fast", str(silent)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == (f"sate stream: note: {silent}: no speech found (3.0 s of silence, or of "
                                         "sounds the VAD does not take for speech: noise, music, tones); nothing to "
                                         "translate")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bytes(32000))))
    assert main(["stream", "--model", str(st_pack), "-"]) == 0
    assert "sate stream: note: stdin: no speech found (1.0 s of silence" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))  # once no word at all, exit 0
    assert main(["stream", "--model", str(st_pack), "-"]) == 0
    assert capsys.readouterr() == ("", "sate stream: note: stdin: no audio arrived (not one whole sample); nothing to "
                                     "translate\n")


def test_a_stream_cut_inside_a_sample_is_translated_to_its_end(st_pack: Path, waves: list[np.ndarray],
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """PCM cut off one byte into a sample (`head -c`, a dropped connection) was refused once the rest had been
    translated, blaming the format, and the last segment's translation was lost: the half sample is dropped with a
    note now, and the output is that of the whole samples."""
    pcm = _pcm(waves[0])
    outs = []
    for data in (pcm, pcm + b"\x01"):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        assert main(["stream", "--model", str(st_pack), "-", "--format", "text", "--vad", "energy"]) == 0
        outs.append(capsys.readouterr())
    assert outs[1].out == outs[0].out and outs[0].out.strip()
    assert outs[1].err == (f"sate stream: note: stdin ended inside a sample ({len(pcm) + 1:,} bytes, an odd number; "
                           "the writer was cut off?): its last byte is dropped\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\x00\x01\x02")))
    assert main(["stream", "--model", str(st_pack), "-"]) == 0
    assert "stdin ended inside a sample (3 bytes" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\x01")))  # "1 bytes", then "0 bytes" arrived
    assert main(["stream", "--model", str(st_pack), "-"]) == 0
    assert capsys.readouterr().err == ("sate stream: note: stdin ended inside a sample (1 byte, an odd number; the "
                                       "writer was cut off?): its last byte is dropped\nsate stream: note: stdin: no "
                                       "audio arrived (not one whole sample); nothing to translate\n")


def test_stream_command_bad_input(tmp_path: Path, st_pack: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["stream", "--model", str(st_pack), str(tmp_path / "missing.wav")]) == 2
    assert "missing.wav: no such file" in capsys.readouterr().err
    assert main(["stream", "--model", str(st_pack), str(tmp_path)]) == 2
    assert "a directory, not an audio file" in capsys.readouterr().err
    assert main(["stream", "--model", str(st_pack), "-", "--chunk", "0"]) == 2
    assert "--chunk" in capsys.readouterr().err
    assert main(["stream", "--model", str(st_pack), "-", "--chunk", "1e12"]) == 2  # once 3.2e16 bytes read at once
    assert "--chunk must be at least 0.05 and at most 120 seconds, got 1e+12" in capsys.readouterr().err
    assert main(["stream", "--model", str(st_pack), "-", "--beam", "0"]) == 2
    assert "--beam: beam" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", None)  # `sate stream - <&-`: Python's None, once an AttributeError traceback
    assert main(["stream", "--model", str(st_pack), "-"]) == 1
    assert capsys.readouterr().err.strip() == "sate stream: error: standard input: closed (no file descriptor)"
    # A terminal (`sate stream --model P -` typed, `-` taken for the microphone) waited for keystrokes as PCM, without
    # a word (twenty-fifth hostile pass). A Ctrl-D is typed ahead, so that the old code read an end, not for ever
    # The pack's path in the advice is one shell word: `--model my pack`, copied, named two arguments (review)
    spaced = tmp_path / "my pack"
    spaced.symlink_to(st_pack)
    master, slave = os.openpty()
    os.write(master, b"\x04")
    try:
        with open(slave, "rb") as tty:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(tty))
            assert main(["stream", "--model", str(spaced), "-"]) == 2
    finally:
        os.close(master)
    assert capsys.readouterr().err.strip() == (
        "sate stream: error: stdin: a terminal, not audio: `-` reads raw 16 kHz mono s16le PCM piped in, e.g. a "
        f"microphone's: arecord -q -f S16_LE -r 16000 -c 1 -t raw | sate stream --model '{spaced}' -")


def test_evaluate_stream_reports_quality_and_latency(tmp_path: Path, st_pack: Path, prepared_data: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "eval"
    assert main(["evaluate", "--model", str(st_pack), "--data", str(prepared_data), "--split", "dev",
                 "--out", str(out), "--stream", "alignatt=2", "--chunk", "0.4", "--beam", "3"]) == 0
    results = json.loads((out / "results.json").read_text())
    printed = capsys.readouterr().out
    assert results["stream"]["policy"] == "alignatt=2" and results["stream"]["chunk"] == 0.4
    assert results["decode"]["beam"] == 3  # the search that finishes each utterance
    latency = results["stream"]["latency"]
    assert latency["sentences"] == results["utterances"] == 5
    assert 0 < latency["laal"] <= latency["laal_ca"]
    assert "LAAL" in printed and "BLEU" in printed
    assert (out / "delays.jsonl").is_file()
    rows = [json.loads(line) for line in (out / "delays.jsonl").read_text().splitlines()]
    hyps = (out / "hyp.txt").read_text().splitlines()
    assert [len(r["delays"]) for r in rows] == [len(h.split()) for h in hyps]


def test_evaluate_whole_talks_resegments_and_reports_stream_laal(tmp_path: Path, st_pack: Path, prepared_data: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`--talks`: each talk of tst-COMMON is streamed whole; every word it shows lands in exactly one row's line, in
    order, and the delays are counted from the rows' starts."""
    rows = read_manifest(prepared_data / "tst-COMMON.jsonl")
    streamed: dict[int, TalkWords] = {}  # by the talk's length in samples

    def spy(translator: SpeechTranslator, blocks: Iterable[np.ndarray], *args: Any, **kwargs: Any) -> TalkWords:
        talk = stream_talk(translator, blocks, *args, **kwargs)
        streamed[round(talk.duration * SAMPLE_RATE)] = talk
        return talk

    monkeypatch.setattr(talks, "stream_talk", spy)
    out = tmp_path / "talks"
    assert main(["evaluate", "--model", str(st_pack), "--data", str(prepared_data), "--split", "tst-COMMON",
                 "--out", str(out), "--stream", "wait-k=2", "--chunk", "1.0", "--talks"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert "StreamLAAL" in capsys.readouterr().out
    audios = sorted({r["audio"] for r in rows})
    assert results["stream"]["talks"] == len(audios) == len(streamed) and "wer" not in results
    hyps = (out / "hyp.txt").read_text().splitlines()
    assert len(hyps) == len(rows)
    delays = [json.loads(line) for line in (out / "delays.jsonl").read_text().splitlines()]
    assert [len(d["delays"]) for d in delays] == [len(h.split()) for h in hyps]
    assert [d["duration"] for d in delays] == [r["duration"] for r in rows]
    latency = results["stream"]["latency"]
    assert latency["sentences"] == sum(bool(h) for h in hyps) > 0
    assert latency["laal"] <= latency["laal_ca"]
    for audio in audios:
        members = sorted((k for k, r in enumerate(rows) if r["audio"] == audio), key=lambda k: rows[k]["offset"])
        talk = streamed[len(read_audio(audio))]
        assert talk.words and " ".join(hyps[k] for k in members).split() == talk.words
        assert all(d <= e for d, e in zip(talk.delays, talk.elapsed, strict=True))
        assert talk.delays == sorted(talk.delays) and talk.delays[-1] <= talk.duration + 1e-9
        shifted = [d + rows[k]["offset"] for k in members for d in delays[k]["delays"]]
        assert shifted == pytest.approx(talk.delays)  # the same words: their delays, counted from the talk's start
    png = tmp_path / "tradeoff.png"
    assert main(["latency-plot", str(out), "--out", str(png)]) == 0 and png.stat().st_size > 0
    row = f"| wait-k=2, whole talks | 1 | {results['bleu']:.1f} ± {results['bleu_ci']:.1f} | "
    assert row in capsys.readouterr().out


def test_evaluate_whole_talks_offline(tmp_path: Path, st_pack: Path, translator: SpeechTranslator,
                                      prepared_data: Path) -> None:
    """`--talks` without `--stream`: each talk translated as `sate translate` does, its words re-segmented."""
    rows = read_manifest(prepared_data / "tst-COMMON.jsonl")
    out = tmp_path / "offline-talks"
    assert main(["evaluate", "--model", str(st_pack), "--data", str(prepared_data), "--split", "tst-COMMON",
                 "--out", str(out), "--talks"]) == 0
    results = json.loads((out / "results.json").read_text())
    hyps = (out / "hyp.txt").read_text().splitlines()
    audios = sorted({r["audio"] for r in rows})
    assert results["talks"] == len(audios) and "stream" not in results and len(hyps) == len(rows)
    for audio, translated in zip(audios, translator.translate(audios), strict=True):
        members = sorted((k for k, r in enumerate(rows) if r["audio"] == audio), key=lambda k: rows[k]["offset"])
        assert " ".join(hyps[k] for k in members).split() == (translated.translation or "").split()


def test_rows_naming_a_talk_through_a_link_count_as_one_talk(tmp_path: Path, st_pack: Path, prepared_data: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`evaluate --talks` decoded such rows as one talk (`group_talks`) but counted each spelling as a talk of its
    own: `results.json` and the report said 2 talks for one (twenty-fifth hostile pass)."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    rows = read_manifest(prepared_data / "tst-COMMON.jsonl")
    first = str(rows[0]["audio"])
    link = tmp_path / "link.wav"
    link.symlink_to(first)
    kept = [r for r in rows if r["audio"] == first]
    lines = [json.dumps({**r, "audio": str(link) if k % 2 else first}) for k, r in enumerate(kept)]
    (data / "tst-COMMON.jsonl").write_text("".join(line + "\n" for line in lines))
    out = tmp_path / "out"
    assert main(["evaluate", "--model", str(st_pack), "--data", str(data), "--split", "tst-COMMON", "--talks",
                 "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["talks"] == 1
    assert "1 talks translated whole" in capsys.readouterr().out


@pytest.mark.slow  # eight `sate evaluate` runs in subprocesses
def test_streaming_script_reproduces_the_table(tmp_path: Path, st_pack: Path, prepared_data: Path) -> None:
    """recipes/synth/local/streaming.sh: offline, streamed and whole-talk runs into one table and plot, each with
    the load average beside it; a second run redoes nothing."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = tmp_path / "streaming"
    argv = ["bash", str(ROOT / "recipes" / "synth" / "local" / "streaming.sh"), "--pack", str(st_pack),
            "--data", str(prepared_data), "--out", str(out), "--policies", "wait-k=1 local-agreement=2 alignatt=2",
            "--talks-policy", "wait-k=2", "--chunk", "0.4"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr
    table = (out / "table.md").read_text()
    for row in ("| offline (offline) |", "| offline (offline-greedy) |", "| wait-k=1 | 0.4 |",
                "| local-agreement=2 | 0.4 |", "| alignatt=2 | 0.4 |", "| wait-k=2, whole talks | 0.4 |"):
        assert row in table
    results = json.loads((out / "alignatt=2-0.4s" / "results.json").read_text())
    assert results["stream"]["chunk"] == 0.4
    assert results["utterances"] == len(read_manifest(prepared_data / "tst-COMMON.jsonl"))
    assert json.loads((out / "offline-greedy" / "results.json").read_text())["decode"]["beam"] == 1
    runs = ["offline-greedy", "offline", "wait-k=1-0.4s", "local-agreement=2-0.4s", "alignatt=2-0.4s",
            "talks-wait-k=2-0.4s", "talks-offline"]
    assert all((out / run / "load.txt").read_text().startswith("load average") for run in runs)
    assert (out / "tradeoff.png").stat().st_size > 0
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0 and again.stderr.count("done already") == len(runs)


@pytest.mark.slow
def test_a_streamed_talk_is_read_as_it_is_streamed(tmp_path: Path, translator: SpeechTranslator,
                                                   waves: list[np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    """`evaluate --stream --talks` read each talk whole (80 MB for a MuST-C talk): now it reads the file block by
    block as the chunks are streamed. The words and delays are those of the talk in memory; no read asks for more
    than a block, the first words are shown before most of the file is read, and the memory held is a fraction of
    the talk: that of the VAD's window (here 2.5 s) and a segment, whatever the talk's length."""
    from sate.data import audio
    from sate.decode import simultaneous

    monkeypatch.setattr(simultaneous, "VAD_WINDOW", 2.5)
    pause = np.zeros(12 * SAMPLE_RATE, dtype=np.float32)  # long pauses: a long talk, cheap to decode
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.concatenate([x for wave in waves for x in (pause, wave)]), SAMPLE_RATE, subtype="FLOAT")
    spec, vad = StreamPolicy("wait-k", 2), VadOptions(method="energy")
    expected = stream_talk(translator, [read_audio(wav)], spec, 1.0, vad=vad)
    reads: list[int] = []

    class Recorded(sf.SoundFile):
        def read(self, frames: int = -1, *args: object, **kwargs: object) -> np.ndarray:
            assert frames > 0, "a read of the whole file"
            out = super().read(frames, *args, **kwargs)
            reads.append(len(out))
            return out

    read_when_shown: list[int] = []

    def counted(*args: Any) -> Any:
        for commit in live(*args):
            read_when_shown.append(sum(reads))
            yield commit

    monkeypatch.setattr(audio.sf, "SoundFile", Recorded)
    monkeypatch.setattr(audio, "READ_BLOCK", 4096)
    monkeypatch.setattr(talks, "live", counted)
    tracemalloc.start()
    try:
        talk = stream_talk(translator, audio.audio_blocks(wav), spec, 1.0, vad=vad)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    whole = sf.info(wav).frames
    assert talk.words == expected.words and talk.delays == expected.delays and len(talk.words) > 5
    assert talk.duration == expected.duration == whole / SAMPLE_RATE and talk.chunks == expected.chunks
    assert max(reads) == 4096 and sum(reads) == whole
    assert read_when_shown[0] < whole / 4
    assert peak < whole * 4 / 4, f"streaming the talk held {peak / 1e6:.1f} MB of a {whole * 4 / 1e6:.1f} MB talk"


def test_a_chunk_longer_than_the_vad_window_loses_no_speech(translator: SpeechTranslator,
                                                            waves: list[np.ndarray]) -> None:
    """`live` ran its VAD on the last VAD_WINDOW (5) seconds only: with 10-s chunks, an utterance early in a chunk
    followed by a long pause was never seen, and dropped without a word. Now the VAD sees at least the newest chunk."""
    from sate.data.audio import rechunk
    from sate.decode.simultaneous import VAD_WINDOW

    pause = np.zeros(8 * SAMPLE_RATE, dtype=np.float32)
    wave = np.concatenate([waves[0], pause, waves[1], pause])
    chunk = 10.0
    assert chunk > VAD_WINDOW
    finals = [c for c in live(translator, rechunk([wave], round(chunk * SAMPLE_RATE)), StreamPolicy("wait-k", 2),
                              translator.with_options(beam=1), VadOptions(method="energy")) if c.final]
    assert len(finals) == 2 and all(c.text for c in finals)


def test_stream_refuses_an_audio_file_on_stdin(tmp_path: Path, st_pack: Path, waves: list[np.ndarray],
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`sate stream - < talk.wav` read the file as raw PCM, its header as noise (exit 0); a 44.1-kHz or stereo file
    became garbage translated without a word. Now a WAV, FLAC or Ogg header on stdin is one line."""
    for fmt, kind in (("WAV", "WAV"), ("FLAC", "FLAC"), ("OGG", "Ogg")):
        path = tmp_path / f"talk.{fmt.lower()}"
        sf.write(path, waves[0], SAMPLE_RATE, format=fmt)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
        assert main(["stream", "--model", str(st_pack), "-", "--vad", "energy"]) == 2
        err = capsys.readouterr().err
        assert f"stdin: a {kind} file, not raw PCM: give its name instead of -" in err and err.count("\n") == 1


def test_an_mp3_without_a_tag_or_an_m4a_on_stdin_is_named(tmp_path: Path) -> None:
    """Twenty-first hostile pass: an MP3 that begins with its first frame (no ID3 tag: libsndfile's and LAME's) or an
    M4A piped to `sate stream -` was read as PCM, and the line said "no speech found". Raw PCM is read as ever,
    silence (-1: FF FF), a tone's samples and a first sample of -1 too. AU, CAF, W64 and NIST SPHERE files too."""
    from sate.errors import SateError

    tone = (np.sin(np.arange(SAMPLE_RATE) / 5) * 0.3).astype(np.float32)
    sf.write(tmp_path / "talk.mp3", tone, SAMPLE_RATE, format="MP3")
    sf.write(tmp_path / "talk44.mp3", np.repeat(tone, 3), 44100, format="MP3")  # MPEG-1, frames of 417/418 bytes
    # an AU (what `sox ... -t au -` pipes), CAF, W64 or NIST SPHERE file was translated as noise (thirty-first pass)
    for fmt in ("AU", "CAF", "W64", "NIST"):
        sf.write(tmp_path / f"talk.{fmt}", tone, SAMPLE_RATE, format=fmt)
    for data, kind in (((tmp_path / "talk.mp3").read_bytes(), "MP3"), ((tmp_path / "talk44.mp3").read_bytes(), "MP3"),
                       (b"\x00\x00\x00\x20ftypM4A \x00\x00\x02\x00" + bytes(64), "MP4/M4A"),
                       *(((tmp_path / f"talk.{fmt}").read_bytes(), kind) for fmt, kind in
                         (("AU", "Sun AU"), ("CAF", "CAF"), ("W64", "W64"), ("NIST", "NIST SPHERE")))):
        assert data[:3] != b"ID3"
        with pytest.raises(SateError, match=f"^stdin: a {re.escape(kind)} file, not raw PCM"):
            next(stream.pcm_pieces(io.BytesIO(data), 0.5))
    # a first sample of -1 (FF FF) before one whose low byte is a valid bit rate index (0x90) made an MPEG-1 Layer I
    # frame header, and speech was refused as "a MP3 file" (review29l): a frame must be followed by the next
    speech = np.concatenate([[-1, 0x90], (tone[:798] * 32767)]).astype("<i2")
    for pcm in (np.full(800, -1, dtype="<i2"), (tone[:800] * 32767).astype("<i2"), -(tone[:800] * 32767).astype("<i2"),
                speech):
        for chunk in (0.5, 0.05):
            assert len(next(stream.pcm_pieces(io.BytesIO(pcm.tobytes()), chunk))) == 800


def test_the_dev_stdin_advice_is_given_where_a_pipe_takes_the_file(tmp_path: Path) -> None:
    """`cat talk.flac | sate stream -` was told to give the file as /dev/stdin, from where FLAC (and MP3, CAF, RF64,
    M4A) cannot be read, a second refusal (review31l): that advice is given for what a pipe takes, and the others are
    told which kinds those are."""
    def write(fifo: Path, data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as f:
            f.write(data)

    tone = (np.sin(np.arange(SAMPLE_RATE) / 5) * 0.3).astype(np.float32)
    for fmt, piped in (("WAV", True), ("AIFF", True), ("OGG", True), ("AU", True), ("W64", True), ("NIST", True),
                       ("FLAC", False), ("CAF", False), ("MP3", False), ("RF64", False)):
        path = tmp_path / f"talk.{fmt.lower()}"
        sf.write(path, tone, SAMPLE_RATE, format=fmt)
        with pytest.raises(SateError) as refused:
            next(stream.pcm_pieces(io.BytesIO(path.read_bytes()), 0.5))
        assert ("(a file piped in: /dev/stdin)" in str(refused.value)) is piped
        assert ("takes WAV, AIFF, Ogg, Sun AU, W64 or NIST SPHERE only" in str(refused.value)) is not piped
        fifo = tmp_path / f"pipe.{fmt.lower()}"  # the advice followed: a file piped in, read as /dev/stdin is
        os.mkfifo(fifo)
        writer = threading.Thread(target=write, args=(fifo, path.read_bytes()), daemon=True)
        writer.start()
        if piped:
            assert len(np.concatenate(list(audio_blocks(fifo)))) == SAMPLE_RATE
        else:
            with pytest.raises(SateError, match="cannot be read from a pipe"):
                list(audio_blocks(fifo))
        writer.join(timeout=30)


def test_whole_talks_are_checked_before_any_is_decoded(tmp_path: Path, st_pack: Path, prepared_data: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--talks` with a talk's wav cut short exited 0: the rows past its end were given the words of what was left.
    A missing or unreadable talk was found only once the talks before it had been decoded. Both are now one line
    before any decoding, with and without --stream."""
    import shutil

    rows = read_manifest(prepared_data / "dev.jsonl")
    first = rows[0]["audio"]
    cut = tmp_path / "cut.wav"
    samples, rate = sf.read(first, dtype="float32")
    sf.write(cut, samples[:len(samples) // 4], rate)
    missing = tmp_path / "missing.wav"
    for name, target, says in (("cut", cut, f"{re.escape(str(cut))}: row .* ends at .* s, past the end of the audio"),
                               ("missing", missing, f"{re.escape(str(missing))}: audio file is missing")):
        data = tmp_path / f"data-{name}"
        shutil.copytree(prepared_data, data)
        lines = [json.dumps({**r, "audio": str(target) if r["audio"] == first else r["audio"]}) for r in rows]
        (data / "dev.jsonl").write_text("".join(line + "\n" for line in lines))
        for extra in ([], ["--stream", "wait-k=2"]):
            argv = ["evaluate", "--model", str(st_pack), "--data", str(data), "--split", "dev", "--talks",
                    "--out", str(tmp_path / f"out-{name}-{len(extra)}"), *extra]
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert re.search(f"^sate evaluate: error: {says}", err, re.M) and "/talk" not in err, err


def test_evaluate_refuses_options_that_streaming_ignores(tmp_path: Path, st_pack: Path, prepared_data: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """--chunk without --stream, and --decode nbest with it, were ignored without a word (exit 0): the results then
    said nothing of the option given. Each is one line before the model loads. (--beam sets the search that
    completes the policies' hypotheses.)"""
    base = ["evaluate", "--model", str(st_pack), "--data", str(prepared_data), "--split", "dev"]
    for extra, says in ((["--chunk", "0.4"], "--chunk is the reading step of --stream"),
                        (["--talks", "--chunk", "2"], "--chunk is the reading step of --stream"),
                        (["--stream", "wait-k=2", "--decode", "nbest=2"], "--stream shows one translation: nbest"),
                        (["--stream", "wait-k=2", "--talks", "--decode", "beam=3,nbest=2"],
                         "--stream shows one translation: nbest")):
        out = tmp_path / "out"
        assert main([*base, *extra, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1 and not out.exists(), (extra, err)


def test_live_segments_are_cut_as_translate_cuts_them(translator: SpeechTranslator, waves: list[np.ndarray],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The audio a live segment is translated from starts within the VAD's padding of its speech, as `sate
    translate`'s segments do, not with the second of silence held before speech (which made the demo's Conformer
    pack mistranslate whole sentences)."""
    finished: list[np.ndarray] = []

    class Recorded(simultaneous.UtteranceStream):
        def advance(self, wave: np.ndarray, final: bool) -> list[str]:
            if final:
                finished.append(np.array(wave))
            return super().advance(wave, final)

    monkeypatch.setattr(simultaneous, "UtteranceStream", Recorded)
    silence = np.zeros(round(1.5 * SAMPLE_RATE), dtype=np.float32)
    audio = np.concatenate([silence, waves[0], silence[:SAMPLE_RATE // 2], waves[1], silence])
    step = SAMPLE_RATE // 2
    finals = [c for c in live(translator, (audio[i:i + step] for i in range(0, len(audio), step)),
                              StreamPolicy("wait-k", 2)) if c.final]
    assert len(finals) == len(finished) == 2
    offline = cut(audio, speech_segments(audio))
    assert len(offline) == 2

    for wave, segment in zip(finished, offline, strict=True):  # the seconds of silence before the first sound
        assert np.flatnonzero(wave)[0] / SAMPLE_RATE == pytest.approx(np.flatnonzero(segment)[0] / SAMPLE_RATE,
                                                                      abs=0.05)


def test_rows_naming_one_talk_through_a_link_are_one_talk(tmp_path: Path) -> None:
    """Rows were grouped into talks by their `audio` text: a talk's later rows naming it through a symlink were a
    second talk, translated again, and each group got the whole talk's words: every word twice, exit 0 (twelfth
    hostile pass). A file is its real path."""
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(4 * SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE)
    (tmp_path / "link.wav").symlink_to(wav)
    rows = [{"id": f"t_{k}", "audio": str(tmp_path / name), "offset": float(k), "duration": 1.0}
            for k, name in enumerate(["talk.wav", "talk.wav", "link.wav", "link.wav"])]
    rows.append({**rows[0], "id": "other", "audio": str(tmp_path / "other.wav"), "offset": 0.0})
    sf.write(tmp_path / "other.wav", np.zeros(SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE)
    assert talks.group_talks(rows) == {str(wav): [0, 1, 2, 3], str(tmp_path / "other.wav"): [4]}
    assert talks.count_talks(rows) == 2  # `results.json`'s "talks" said 3 (twenty-fifth hostile pass)


def test_a_streamed_talk_without_speech_is_refused_as_offline(tmp_path: Path, translator: SpeechTranslator) -> None:
    """`evaluate --talks` refuses a talk in which the VAD finds no speech ("no speech found", as `sate translate`
    does); streamed (`--stream --talks`) it gave no row a word, exit 0, and latencies of NaN, which `latency-plot`
    then called damaged (twenty-fifth hostile pass). It is refused the same way."""
    wav = tmp_path / "silent talk.wav"
    sf.write(wav, np.zeros(3 * SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE)
    rows = [{"id": f"t_{k}", "audio": str(wav), "offset": float(k), "duration": 1.0, "tgt": "Guten Tag."}
            for k in range(3)]
    for run in (lambda: talks.translate_talks(translator, rows),
                lambda: talks.stream_talks(translator, rows, StreamPolicy("wait-k", 2), 1.0)):
        with pytest.raises(SateError, match=rf"^{re.escape(str(wav))}: no speech found \(3.0 s of silence"):
            run()


def test_hand_cut_manifest_decodes_only_its_rows_stretch_of_a_talk(translator: SpeechTranslator,
                                                                    prepared_data: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`evaluate --talks` on a manifest cut by hand (`head`, `tail`: a talk's first or last rows left out) decoded the
    whole file, and the words of the rows left out went to the nearest rows kept (twenty-fourth hostile pass). The
    talk is now its rows' stretch of the file: no segment decoded, no word shown, outside it; a talk whose rows are
    as prep cuts them is decoded whole as before. A talk cut is said, naming it and the seconds left out (its
    review: on real talks a split as prep cuts it may be cut, and its figure moved without a word)."""
    rows = read_manifest(prepared_data / "tst-COMMON.jsonl")
    audio = rows[0]["audio"]
    talk = sorted((r for r in rows if r["audio"] == audio), key=lambda r: r["offset"])
    assert len(talk) >= 3
    padding = VadOptions().padding + 0.15  # the rows' own speech reaches a little past them (SPAN_SLACK)
    decoded: list[list[tuple[float, float]]] = []
    original = SpeechTranslator.decode_prepared

    def spy(self: SpeechTranslator, prepared: list, *args: Any) -> Any:
        prepared = list(prepared)
        decoded.extend(item.spans for item in prepared)
        return original(self, prepared, *args)

    monkeypatch.setattr(SpeechTranslator, "decode_prepared", spy)
    streamed: list[TalkWords] = []

    def stream_spy(*args: Any, **kwargs: Any) -> TalkWords:
        streamed.append(stream_talk(*args, **kwargs))
        return streamed[-1]

    monkeypatch.setattr(talks, "stream_talk", stream_spy)
    whole = file_segments(audio)[0]
    for kept, cut_end in ((talk[:-2], True), (talk[2:], False)):  # the talk's end cut off, then its start
        first, last = kept[0]["offset"], kept[-1]["offset"] + kept[-1]["duration"]
        decoded.clear()
        streamed.clear()
        capsys.readouterr()
        assert len(talks.translate_talks(translator, kept)) == len(kept)
        spans = decoded[-1]
        assert spans and spans != whole
        assert spans[-1][1] <= last + padding if cut_end else spans[0][0] >= first - padding
        note = capsys.readouterr().err
        assert note.count("note:") == 1 and f"note: {audio}: speech lies beyond its rows; " in note, note
        left = re.search(r"([0-9.]+) s before the first row and ([0-9.]+) s after the last are not decoded", note)
        assert left is not None and (float(left[2]) > 0 if cut_end else float(left[1]) > 0), note
        segments, _ = talks.stream_talks(translator, kept, StreamPolicy("wait-k", 2), 1.0)
        assert capsys.readouterr().err.count(f"note: {audio}: speech lies beyond its rows; ") == 1
        shown = streamed[-1]
        if cut_end:
            assert shown.duration <= last + padding and all(d <= last + padding for d in shown.delays)
        else:
            assert all(d >= first for d in shown.delays)
        assert [d + r["offset"] for s, r in zip(segments, kept, strict=True) for d in s.delays] == \
            pytest.approx(shown.delays)
    decoded.clear()
    talks.translate_talks(translator, talk)  # as prep cut it: the file whole
    assert decoded[-1] == whole
    assert "note:" not in capsys.readouterr().err


def test_a_talks_stretch_is_its_rows_where_speech_lies_beyond_them() -> None:
    """`talk_span`: the whole file where the VAD's spans end within a little of the rows (as prep cuts a split);
    else from `padding` before the first row or to `padding` after the last. A span cut at a bound to a sliver (here
    0.05 s, or no sample once rounded) is no segment: it was decoded as one and failed "holds no audio samples"."""
    rows = [{"offset": 1.0, "duration": 2.0}, {"offset": 3.5, "duration": 2.0}]
    assert talks.talk_span([(0.9, 5.64)], rows) == (0.0, None)  # the VAD's own spans end padding + a few frames past
    assert talks.talk_span([(0.9, 5.64), (5.9, 8.0)], rows) == (0.0, pytest.approx(5.6))  # a row left out after
    assert talks.talk_span([(0.2, 0.6), (0.9, 5.6)], rows) == (pytest.approx(0.9), None)  # and one before
    assert talks._clipped([(0.9, 5.64), (5.55, 8.0)], 0.0, 5.6) == [(0.9, 5.6)]
    assert talks._clipped([(0.2, 0.6), (0.85, 5.6)], 0.9, None) == [(0.9, 5.6)]


def test_a_talks_stretch_is_cut_with_the_vad_settings_that_found_its_spans() -> None:
    """`_clipped` dropped slivers shorter than the default `min_speech`, whatever VAD found the spans, and `talk_span`
    the default padding (twenty-fourth hostile pass, review): both read the settings given, as the talks' VAD does."""
    vad = VadOptions(min_speech=0.05, padding=0.3)
    assert talks._clipped([(0.9, 5.5), (5.5, 8.0)], 0.0, 5.6, vad) == [(0.9, 5.5), (5.5, 5.6)]
    assert talks._clipped([(0.9, 5.5), (5.5, 8.0)], 0.0, 5.6) == [(0.9, 5.5)]
    rows = [{"offset": 1.0, "duration": 2.0}]
    assert talks.talk_span([(0.9, 3.4), (3.6, 8.0)], rows, vad) == (0.0, pytest.approx(3.3))
    assert talks.cut_note("t.wav", 0.0, None, 9.0) is None
    assert talks.cut_note("t.wav", 0.7, 3.3, 9.0) == ("sate evaluate: note: t.wav: speech lies beyond its rows; "
                                                      "0.70 s before the first row and 5.70 s after the last are not "
                                                      "decoded (the talk is read from 0.70 to 3.30 s of 9.00 s)")


def test_stream_rows_read_a_talk_that_cannot_seek_on_from_the_row_before(tmp_path: Path, monkeypatch,
                                                                          decoded_frames: list[int]) -> None:
    """`sate evaluate --stream` read each row by reopening its talk; a GSM 6.10 talk cannot seek, so every row decoded
    the talk from its start: a long talk's rows cost its length each (twenty-seventh hostile pass). The rows of a talk
    in order are now read on, each frame about once, and give the samples each row read alone gives."""
    path = tmp_path / "phone.wav"
    sf.write(path, (0.3 * np.sin(np.arange(20 * SAMPLE_RATE) / 7)).astype(np.float32), SAMPLE_RATE, format="WAV",
             subtype="GSM610")
    rows = [{"audio": str(path), "offset": 2.0 * k, "duration": 1.5} for k in range(10)]
    alone = [read_segment(path, row["offset"], row["duration"]) for row in rows]
    seen: list[np.ndarray] = []
    monkeypatch.setattr(simultaneous, "simulate", lambda translator, wave, *args: seen.append(wave))
    decoded_frames[0] = 0  # the rows read alone not counted
    simultaneous.stream_rows(None, rows, parse_policy("wait-k=3"), 0.32)
    assert decoded_frames[0] <= 20 * SAMPLE_RATE
    for got, want in zip(seen, alone, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_sentence_begun_at_a_chunks_end_keeps_its_onset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirtieth hostile pass: a segment ended by a pause emptied the buffer, so a sentence that began in the chunk's
    last 0.1 s (a quiet onset the VAD did not call speech yet) lost that onset, and the padding before it, to the
    segment before: its audio began 0.1 s into its speech. The pause's silence is kept for the VAD now, as before the
    first segment, and the segment starts within its padding of the speech."""
    noise = np.random.default_rng(0).uniform(-0.3, 0.3, 3 * SAMPLE_RATE).astype(np.float32)
    first, second = noise[:round(1.2 * SAMPLE_RATE)], noise[round(1.2 * SAMPLE_RATE):]
    second[:SAMPLE_RATE // 5] *= 0.03  # a quiet onset (a consonant), under the VAD's threshold
    step = SAMPLE_RATE // 2
    pause = 2 * step - len(first) % step - SAMPLE_RATE // 10  # the second begins 0.1 s before a chunk ends
    audio = np.concatenate([np.zeros(SAMPLE_RATE, dtype=np.float32), first, np.zeros(pause, dtype=np.float32),
                            second, np.zeros(SAMPLE_RATE, dtype=np.float32)])
    finished = _live_segments(monkeypatch, audio, step / SAMPLE_RATE, None)  # no Whisper
    assert len(finished) == 2
    begins = int(np.flatnonzero(finished[1] == second[SAMPLE_RATE])[0]) - SAMPLE_RATE  # where the second is in it
    assert begins >= 0 and np.array_equal(finished[1][begins:begins + len(second)], second)  # all of it
    assert begins == pytest.approx(0.1 * SAMPLE_RATE, abs=0.05 * SAMPLE_RATE)  # after the padding, as translate cuts


WHISPER_WINDOW = 480_159 / SAMPLE_RATE  # the seconds of samples Whisper's 30-s window takes


def _live_segments(monkeypatch: pytest.MonkeyPatch, audio: np.ndarray, chunk: float,
                   bound: float | None, vad: VadOptions | None = None) -> list[np.ndarray]:
    """The segments `live` finishes, through stand-ins: a translator whose encoder takes at most ``bound`` seconds
    (Whisper's window, or None for fbank), and utterance streams that only record what they are given."""
    finished: list[np.ndarray] = []

    class Recorded:
        def __init__(self, *args: Any) -> None:
            self.chunks, self.text = 0, ""

        def advance(self, wave: np.ndarray, final: bool) -> list[str]:
            self.chunks += 1
            if final:
                finished.append(np.array(wave))
            return []

    monkeypatch.setattr(simultaneous, "UtteranceStream", Recorded)
    monkeypatch.setattr(simultaneous, "start", lambda spec: None)
    translator = type("Translator", (), {"options": None, "max_segment_seconds": lambda self: bound,
                                         "_check_segment_cap": lambda self, vad: None})()
    step = round(chunk * SAMPLE_RATE)
    commits = list(live(translator, (audio[i:i + step] for i in range(0, len(audio), step)), "wait-k=1", None,
                        vad or VadOptions(method="energy")))
    assert len(finished) == len([c for c in commits if c.final])
    return finished


def _noise(seconds: float, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.3, 0.3, round(seconds * SAMPLE_RATE)).astype(np.float32)


def test_a_whisper_segment_ended_by_a_pause_is_cut_to_its_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of the 31st hostile pass: with --chunk 16, 30.5 s of speech and then a pause were finished as one
    30.6-s segment, and a Whisper pack's encoder stopped the stream on it. It is cut at max_segment (20 s) as
    continuous speech is, the rest up to the pause is the next segment, and no sample of the speech is lost. An
    fbank pack segments as before."""
    speech, after = _noise(30.5), _noise(9, seed=1)
    audio = np.concatenate([speech, np.zeros(SAMPLE_RATE // 2, dtype=np.float32), after])
    got = _live_segments(monkeypatch, audio, 16.0, WHISPER_WINDOW)
    assert [round(len(s) / SAMPLE_RATE, 2) for s in got] == [20.0, 10.59, 9.09]
    np.testing.assert_array_equal(np.concatenate(got[:2])[:len(speech)], speech)
    fbank = _live_segments(monkeypatch, audio, 16.0, None)  # main's segmentation, unchanged
    assert [round(len(s) / SAMPLE_RATE, 2) for s in fbank] == [30.59, 9.09]


def test_the_silence_after_a_whisper_cut_is_not_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of the 31st hostile pass: with --chunk 40, 3 s of speech and then 40 s of silence were cut at 20 s to
    fit Whisper's window, and the 20 s of silence after the cut were decoded as a segment of their own (Whisper
    makes words of silence). The segment ends at its speech's end, and the silence is dropped as the VAD drops it."""
    speech = _noise(3)
    audio = np.concatenate([speech, np.zeros(40 * SAMPLE_RATE, dtype=np.float32)])
    (got,) = _live_segments(monkeypatch, audio, 40.0, WHISPER_WINDOW)
    assert len(got) / SAMPLE_RATE == pytest.approx(3.1, abs=0.05)  # its speech and the VAD's padding
    np.testing.assert_array_equal(got[:len(speech)], speech)
    (fbank,) = _live_segments(monkeypatch, audio, 40.0, None)  # the first chunk whole, as before
    assert len(fbank) == 40 * SAMPLE_RATE
    # speech that runs on into a silent chunk for less than the VAD's min_speech (0.1 s here) stays in its segment
    run_on = _noise(25.1, seed=2)
    audio = np.concatenate([run_on, np.zeros(25 * SAMPLE_RATE, dtype=np.float32)])
    got = _live_segments(monkeypatch, audio, 25.0, WHISPER_WINDOW)
    assert all(len(s) / SAMPLE_RATE <= WHISPER_WINDOW for s in got)
    np.testing.assert_array_equal(np.concatenate(got)[:len(run_on)], run_on)


def test_a_long_min_speech_still_finds_speech_live(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirty-second hostile pass: before speech, `live` held 1 s (KEEP_SILENCE) for the VAD, so with
    ``VadOptions(min_speech=2)`` no burst was ever long enough to be speech: 6 s of it over 0.5-s chunks gave no
    segment and no commit, without a word, where `speech_segments` finds it. What is held now shows such a burst
    whole, and the speech is one segment, as offline."""
    speech = _noise(6)
    silence = np.zeros(round(1.5 * SAMPLE_RATE), dtype=np.float32)
    audio = np.concatenate([silence, speech, silence])
    vad = VadOptions(method="energy", min_speech=2.0)
    assert len(speech_segments(audio, vad)) == 1
    (got,) = _live_segments(monkeypatch, audio, 0.5, None, vad)
    start = int(np.flatnonzero(got)[0])
    np.testing.assert_array_equal(got[start:start + len(speech)], speech)  # all of it, from its onset
    assert start / SAMPLE_RATE == pytest.approx(0.1, abs=0.02)  # the padding before it, as translate cuts
