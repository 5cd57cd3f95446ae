"""Long recordings read block by block (`audio_blocks`, `file_segments`, `cut_blocks`): exactly the segments,
samples and translations of the recording in memory, while the reader holds a bounded amount."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
import torchaudio.functional as AF

from sate.cli import main
from sate.data import audio
from sate.data.audio import SAMPLE_RATE, audio_blocks, to_mono_16k, wav_info
from sate.decode.api import SpeechTranslator
from sate.decode.vad import VadOptions, cut, cut_blocks, file_segments, speech_segments
from sate.errors import SateError

RATE = 44100  # resampled, so block edges in the resampler are crossed too
SECONDS = 60  # past more than a batch of 16 segments; the energy test makes the reader's blocks smaller
ENERGY_CHUNK = 2000  # frames of 10 ms: the test crosses two chunks of frame energies ...
RESAMPLE_BLOCK_S = 10.0  # ... and five of the resampler's blocks
SILERO_SECONDS = 340  # past a chunk of silero's window energies (10,000 windows of 32 ms: 320 s)


def talk(directory: Path, utterances: list[np.ndarray], seconds: float) -> Path:
    """The fixture's utterances again and again with pauses of 0.5-1.5 s, as 44.1 kHz stereo FLAC."""
    rng = np.random.default_rng(0)
    parts, total = [], 0
    while total < seconds * SAMPLE_RATE:
        for utt in utterances:
            pause = np.zeros(round(rng.uniform(0.5, 1.5) * SAMPLE_RATE), dtype=np.float32)
            parts += [utt, pause]
            total += len(utt) + len(pause)
    wave = np.concatenate(parts)
    wave += rng.normal(0, 1e-4, len(wave)).astype(np.float32)  # a faint noise floor
    loud = AF.resample(torch.from_numpy(wave), SAMPLE_RATE, RATE).numpy()
    path = directory / f"talk_{seconds}.flac"
    sf.write(path, np.stack([loud * 0.9, loud * 0.6], axis=1), RATE, subtype="PCM_16")
    return path


@pytest.fixture(scope="module")
def long_flac(tmp_path_factory: pytest.TempPathFactory, utterances: list[np.ndarray]) -> Path:
    return talk(tmp_path_factory.mktemp("long"), utterances, SECONDS)


def in_memory(path: Path) -> np.ndarray:
    """The reference: the whole file read at once and converted by the in-memory function."""
    samples, rate = sf.read(path, dtype="float32")
    return to_mono_16k(samples, rate, str(path))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["energy", "silero"])
def test_segments_read_in_blocks_are_those_of_the_recording_in_memory(
        tmp_path: Path, utterances: list[np.ndarray], long_flac: Path, method: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    seconds = SILERO_SECONDS if method == "silero" else SECONDS
    long_flac = talk(tmp_path, utterances, seconds) if method == "silero" else long_flac
    wave = in_memory(long_flac)
    options = VadOptions(method=method)
    expected = speech_segments(wave, options)
    assert len(expected) > seconds / 7 and len(wave) / SAMPLE_RATE > seconds
    monkeypatch.setattr(audio, "READ_BLOCK", 12345)  # many reads of an odd size, across every other block edge
    if method == "energy":
        monkeypatch.setattr(audio, "ENERGY_CHUNK", ENERGY_CHUNK)
        monkeypatch.setattr(audio, "RESAMPLE_BLOCK_S", RESAMPLE_BLOCK_S)

    segments, seconds = file_segments(long_flac, options)
    assert segments == expected and seconds == len(wave) / SAMPLE_RATE
    pieces = list(cut_blocks(audio_blocks(long_flac), segments))
    assert len(pieces) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(pieces, cut(wave, expected), strict=True))
    assert main(["segment", str(long_flac), "--vad", method]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["start"], line["end"]) for line in lines] == expected


@pytest.mark.slow
def test_a_long_file_translates_as_the_same_samples_in_memory(long_flac: Path, st_pack: Path) -> None:
    translator = SpeechTranslator.load(st_pack, device="cpu")
    options = VadOptions(method="energy")
    samples, rate = sf.read(long_flac, dtype="float32")
    # batch size 2: the file's segments are decoded 16 at a time, as they are cut
    expected = translator.translate([(samples, rate)], batch_size=2, vad=options)[0]
    result = translator.translate([long_flac], batch_size=2, vad=options)[0]
    assert len(result.segments) > 16
    assert result.segments == expected.segments and result.duration == expected.duration


@pytest.mark.slow
def test_reading_and_cutting_hold_a_bounded_amount(long_flac: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With small blocks the reader's peak is a fraction of the recording at 16 kHz (8.3 MB; 1.6 MB measured,
    mostly the detector's per-frame values), and no read asks for more than a block."""
    largest = [0]

    class Recorded(sf.SoundFile):
        def read(self, frames: int = -1, *args: object, **kwargs: object) -> np.ndarray:
            assert frames > 0, "a read of the whole file"
            out = super().read(frames, *args, **kwargs)
            largest[0] = max(largest[0], len(out))
            return out

    monkeypatch.setattr(audio.sf, "SoundFile", Recorded)
    monkeypatch.setattr(audio, "READ_BLOCK", 4096)
    monkeypatch.setattr(audio, "RESAMPLE_BLOCK_S", 1.0)
    monkeypatch.setattr(audio, "ENERGY_CHUNK", 100)
    whole = SECONDS * SAMPLE_RATE * 4
    file_segments(long_flac, VadOptions(method="energy"))  # once untraced: the modules it imports on a first call
    largest[0] = 0  # (run alone, this test counted their import's memory: 1.5 MB, and failed)
    tracemalloc.start()
    try:
        segments, _ = file_segments(long_flac, VadOptions(method="energy"))
        _, found = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        longest = max(len(piece) for piece in cut_blocks(audio_blocks(long_flac), segments))
        _, cutting = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert largest[0] == 4096 // 2  # READ_BLOCK samples of both channels of the stereo file
    assert found < whole / 4, f"finding segments held {found / 1e6:.1f} MB"
    assert cutting < whole / 4 + 4 * longest, f"cutting held {cutting / 1e6:.1f} MB"


def feed(fifo: Path, data: bytes, refused: bool = False) -> threading.Thread:
    """Write ``data`` into a named pipe once a reader opens it; ``refused``: the reader may close it before the end."""
    def write() -> None:
        with contextlib.suppress(BrokenPipeError) if refused else contextlib.nullcontext(), open(fifo, "wb") as f:
            f.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_pipe_is_read_as_a_stream(tmp_path: Path, utterances: list[np.ndarray], st_pack: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO (or a piped /dev/stdin) was "empty (0 bytes)": `segment` reads it in one pass, `translate` once and
    holds it (a pipe cannot be read twice); both give what the file gives."""
    wav = tmp_path / "talk.wav"
    pause = np.zeros(SAMPLE_RATE, dtype=np.float32)
    sf.write(wav, np.concatenate([pause, *(x for utt in utterances[:3] for x in (utt, pause))]), SAMPLE_RATE,
             subtype="PCM_16")
    fifo = tmp_path / "pipe.wav"
    for command in (["segment", "--vad", "energy"], ["translate", "--model", str(st_pack), "--format", "jsonl"]):
        outputs = []
        for path in (wav, fifo):
            if path == fifo:
                os.mkfifo(fifo)
                writer = feed(fifo, wav.read_bytes())
            assert main([*command, str(path)]) == 0
            outputs.append([{**json.loads(line), "file": None} for line in capsys.readouterr().out.splitlines()])
        writer.join(timeout=30)
        fifo.unlink()
        assert outputs[1] == outputs[0] and len(outputs[0]) >= 3


def test_a_pipe_is_read_as_its_samples_come(tmp_path: Path) -> None:
    """libsndfile waited inside one read for a whole block (a minute of 16 kHz audio), through every signal: `sate
    stream` of a FIFO a recorder writes into showed nothing for a minute, and a writer that stalled mid-stream was
    heard by neither Ctrl-C nor `kill`. What the pipe holds is read now, waited for in Python, and the samples are
    those of the file, 24-bit stereo included."""
    rng = np.random.default_rng(0)
    for subtype, channels in (("PCM_16", 1), ("PCM_24", 2)):
        wav = tmp_path / f"talk_{subtype}.wav"
        sf.write(wav, rng.uniform(-0.5, 0.5, (5 * SAMPLE_RATE, channels)), SAMPLE_RATE, subtype=subtype)
        data = wav.read_bytes()
        fifo = tmp_path / f"live_{subtype}.wav"
        os.mkfifo(fifo)
        go_on = threading.Event()

        def write(fifo: Path = fifo, data: bytes = data, go_on: threading.Event = go_on) -> None:
            with open(fifo, "wb") as f:
                f.write(data[:SAMPLE_RATE + 1])  # its header and part of a second of audio (and of a frame)
                f.flush()
                go_on.wait(timeout=10)
                f.write(data[SAMPLE_RATE + 1:])

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        blocks = audio_blocks(fifo)
        first = next(blocks)  # before the writer goes on: once it waited here for 10 s, then read the whole
        assert not go_on.is_set() and 0 < len(first) < SAMPLE_RATE
        go_on.set()
        piped = np.concatenate([first, *blocks])
        writer.join(timeout=30)
        assert np.array_equal(piped, np.concatenate(list(audio_blocks(wav))))


def test_a_pipe_that_ends_inside_a_frame_ends_the_read(tmp_path: Path) -> None:
    """A pipe whose writer went leaving part of a frame (`head -c 100001 talk.wav | sate segment /dev/stdin`, a
    download or recorder cut off) was polled for ever, the part of a frame never growing to a whole one (review29l):
    its end ends the read, and a WAV that declared more is "cut short", as before; one whose header left the size
    unknown (0xFFFFFFFF) is read to its last whole frame. 16-bit, 24-bit and stereo, each cut inside a frame."""
    rng = np.random.default_rng(0)
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    cases = [(subtype, channels, extra, unknown) for subtype, channels, extras in
             (("PCM_16", 1, (1,)), ("PCM_16", 2, (1, 2, 3)), ("PCM_24", 1, (1, 2)), ("PCM_24", 2, (1, 5)))
             for extra in extras for unknown in (False, True)]
    for subtype, channels, extra, unknown in cases:
        wav = tmp_path / "talk.wav"
        sf.write(wav, rng.uniform(-0.5, 0.5, (2 * SAMPLE_RATE, channels)), SAMPLE_RATE, subtype=subtype)
        data = wav.read_bytes()
        at = data.find(b"data")
        if unknown:
            data = data[: at + 4] + (0xFFFFFFFF).to_bytes(4, "little") + data[at + 8:]
        frame = channels * (2 if subtype == "PCM_16" else 3)
        whole = SAMPLE_RATE // 2
        cut = data[: at + 8 + whole * frame + extra]
        result: list[object] = []

        def read(result: list[object] = result) -> None:
            try:
                result.append(len(np.concatenate(list(audio_blocks(fifo)))))
            except SateError as err:
                result.append(str(err))

        writer = feed(fifo, cut)
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout=10)
        assert result, f"{subtype} x{channels}, {extra} bytes into a frame, unknown size {unknown}: still waiting"
        if unknown:
            assert result == [whole]
        else:
            assert result == [f"{fifo}: the stream is cut short: it held 0.5 s of the 2.0 s its header declares (an "
                              "interrupted copy or download?); copy it again"]
        writer.join(timeout=10)


def test_the_memory_of_a_read_does_not_grow_with_the_channel_count(tmp_path: Path) -> None:
    """A read was 2**20 frames of every channel: a WAV of 1,024 channels (libsndfile's most) asked for 4 GB a read,
    and piped (whose length is unknown, so the read is not cut to the file's) a 6.5 MB WAV held 4.2 GB. A read is
    now READ_BLOCK samples of all channels together, whole recordings and segments alike, with the same samples."""
    rng = np.random.default_rng(0)
    data = (rng.normal(0, 0.1, (3200, 1024)) * 32767).astype(np.int16)
    wav, fifo = tmp_path / "array.wav", tmp_path / "pipe.wav"
    sf.write(wav, data, SAMPLE_RATE, subtype="PCM_16")
    expected = (data / 32768).astype(np.float32).mean(axis=1)
    os.mkfifo(fifo)
    writer = feed(fifo, wav.read_bytes())
    tracemalloc.start()
    try:
        piped = np.concatenate(list(audio_blocks(fifo)))
        segment = audio.read_segment(wav, 0.05, 0.1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    writer.join(timeout=30)
    assert peak < 64 * 2**20, f"held {peak / 2**20:.0f} MiB"
    assert np.allclose(piped, expected, atol=1e-6) and np.allclose(segment, expected[800:2400], atol=1e-6)


def test_a_pipe_cut_short_or_of_flac_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A WAV cut short is refused in a file (its size shows it); piped, where its length is known only at the end,
    it was read as whole: `sate segment`, `translate` and `stream` gave the first seconds of a talk, exit 0. A size
    a streaming writer left unknown (0xFFFFFFFF) still reads whole. Piped FLAC, which libsndfile cannot read from a
    pipe, was "flac decoder lost sync", as if the file were damaged."""
    wav = tmp_path / "talk.wav"
    sf.write(wav, (0.3 * np.sin(np.arange(3 * SAMPLE_RATE) / 9)).astype(np.float32), SAMPLE_RATE, subtype="PCM_16")
    data = wav.read_bytes()
    at = data.find(b"data")
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    for fed, expect in [(data[: len(data) // 3], "the stream is cut short: it held 1.0 s of the 3.0 s its header "
                                                 "declares (an interrupted copy or download?); copy it again"),
                        # a sample short was "it held 3.0 s of the 3.0 s" (fourteenth hostile pass)
                        (data[:-2], "the stream is cut short: it held 47,999 samples of the 48,000 samples its header "
                                    "declares (an interrupted copy or download?); copy it again"),
                        (data[: at + 4] + (0xFFFFFFFF).to_bytes(4, "little") + data[at + 8:], None),
                        # SoX 14.4's unknown size (`sox ... -t wav - | sate segment -`): "cut short" (eighteenth pass)
                        (data[: at + 4] + (0x7FFFF000).to_bytes(4, "little") + data[at + 8:], None)]:
        writer = feed(fifo, fed)
        if expect is None:
            assert len(np.concatenate(list(audio_blocks(fifo)))) == 3 * SAMPLE_RATE
        else:
            assert main(["segment", "--vad", "energy", str(fifo)]) == 1
            assert capsys.readouterr().err.splitlines()[0] == f"sate segment: error: {fifo}: {expect}"
        writer.join(timeout=30)
    flac = tmp_path / "talk.flac"
    sf.write(flac, sf.read(wav)[0], SAMPLE_RATE, format="FLAC")
    writer = feed(fifo, flac.read_bytes())
    with pytest.raises(SateError, match=r"pipe.wav: cannot read audio \(FLAC cannot be read from a pipe: give the "
                                        r"file's name, or pipe WAV\)$"):
        audio_blocks(fifo)
    writer.join(timeout=30)


@pytest.mark.parametrize(("fmt", "channels"), [("AIFF", 2), ("AU", 1), ("W64", 1), ("AVR", 1), ("MPC2K", 2),
                                               ("SVX", 1)])
def test_a_pipe_of_another_format_cut_short_is_named(tmp_path: Path, fmt: str, channels: int) -> None:
    """An AIFF, AU, W64, AVR, MPC2K or 8SVX cut short and piped in (`head -c ... talk.aiff | sate segment /dev/stdin`)
    was read as far as it went, exit 0, where a WAV is refused at the pipe's end and each by name (hand33l). Whole,
    and with the sizes SoX leaves unknown in a pipe (an AU's 0xFFFFFFFF, an AIFF's 0x7F000000 bytes of frames), they
    read as before."""
    path = tmp_path / f"talk.{fmt.lower()}"
    wave = (0.3 * np.sin(np.arange(3 * SAMPLE_RATE) / 9)).astype(np.float32)
    sf.write(path, np.stack([wave] * channels, 1), SAMPLE_RATE, format=fmt, subtype="PCM_16")
    data = path.read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    unknown = []
    if fmt == "AU":  # its data size, at byte 8
        unknown = [data[:8] + (0xFFFFFFFF).to_bytes(4, "big") + data[12:]]
    elif fmt == "AIFF":  # COMM's frames (byte 22 of the chunk) and the SSND's size, as SoX writes them to a pipe
        comm, ssnd = data.find(b"COMM"), data.find(b"SSND")
        frames = (0x7F000000 // (2 * channels)).to_bytes(4, "big")
        unknown = [data[:comm + 10] + frames + data[comm + 14:ssnd + 4] + (0x7F000000 // (2 * channels) * 2 * channels
                                                                        + 8).to_bytes(4, "big") + data[ssnd + 8:]]
    for fed in [data, *unknown]:
        writer = feed(fifo, fed)
        assert len(np.concatenate(list(audio_blocks(fifo)))) == 3 * SAMPLE_RATE
        writer.join(timeout=30)
    writer = feed(fifo, data[:len(data) // 3])
    with pytest.raises(SateError, match=rf"^{fifo}: the stream is cut short: it held 1\.0 s of the 3\.0 s its header "
                                        r"declares \(an interrupted copy or download\?\); copy it again$"):
        list(audio_blocks(fifo))
    writer.join(timeout=30)


@pytest.mark.slow  # 0.5 s: seven feeds of a FIFO, two of them segmented
def test_what_follows_a_piped_wav_is_named_as_in_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two WAVs joined with cat, or a WAV whose header declares less than a second of what follows, are refused by
    name; piped, libsndfile stopped at the declared end: the first file (or the recording's first seconds) was
    segmented and translated as if whole, exit 0 (thirty-first hostile pass). Chunks after the data (metadata), an
    ID3 tag, zeros, a short tail, an 8-bit WAV's pad byte, and a writer that keeps its end open still read whole."""
    first, second = tmp_path / "a.wav", tmp_path / "b.wav"
    sf.write(first, (0.3 * np.sin(np.arange(2 * SAMPLE_RATE) / 9)).astype(np.float32), SAMPLE_RATE, subtype="PCM_16")
    sf.write(second, (0.3 * np.sin(np.arange(SAMPLE_RATE) / 7)).astype(np.float32), 48000, subtype="PCM_24")
    data, noise = first.read_bytes(), np.random.default_rng(0).integers(0, 256, 2 * SAMPLE_RATE, np.uint8).tobytes()
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    for fed, expect in [(data + second.read_bytes(), "another WAV file begins after the 2.0 s of audio its header "
                                                     "declares (files joined with cat?)"),
                        (data + noise, "a second and more of bytes that are no chunk follow the 2.0 s of audio its "
                                       "header declares (a recording whose header was written before it ended?)")]:
        writer = feed(fifo, fed, refused=True)
        assert main(["segment", "--vad", "energy", str(fifo)]) == 1
        assert capsys.readouterr().err.splitlines()[0].startswith(f"sate segment: error: {fifo}: {expect}")
        writer.join(timeout=30)
    listed = b"LIST" + (26).to_bytes(4, "little") + b"INFOISFT" + (14).to_bytes(4, "little") + b"Lavf60.16.100\0"
    odd = tmp_path / "odd.wav"  # 8-bit mono of an odd length: its data chunk is padded
    sf.write(odd, np.zeros(SAMPLE_RATE + 1, dtype=np.float32), SAMPLE_RATE, subtype="PCM_U8")
    for fed, samples in [(data + listed, 2 * SAMPLE_RATE), (data + b"ID3" + noise, 2 * SAMPLE_RATE),
                         (data + bytes(len(noise)), 2 * SAMPLE_RATE), (data + noise[:SAMPLE_RATE], 2 * SAMPLE_RATE),
                         (odd.read_bytes() + b"\0" + listed, SAMPLE_RATE + 1)]:
        writer = feed(fifo, fed)
        assert len(np.concatenate(list(audio_blocks(fifo)))) == samples
        writer.join(timeout=30)

    def held_open() -> None:  # the file written, the pipe left open a while (a recorder between files)
        with open(fifo, "wb") as f:
            f.write(data)
            f.flush()
            threading.Event().wait(0.5)

    monkeypatch.setattr(audio, "PIPE_REST_WAIT_S", 0.1)
    writer = threading.Thread(target=held_open, daemon=True)
    writer.start()
    assert len(np.concatenate(list(audio_blocks(fifo)))) == 2 * SAMPLE_RATE
    assert writer.is_alive()  # read without waiting for the writer to end
    writer.join(timeout=30)


def test_a_pipe_that_ends_inside_the_header_is_said_so(tmp_path: Path) -> None:
    """`head -c 30 talk.wav | sate segment /dev/stdin` (a writer cut off in the header) was told that from a pipe only
    some formats can be read, "pipe PCM WAV", which it was (thirty-first hostile pass); a pipe that goes on keeps
    that advice."""
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE, subtype="PCM_16")
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    for fed, expect in [(wav.read_bytes()[:30], "the stream ended there, before any audio: was its writer cut off? "
                                                "give it whole"),
                        (wav.read_bytes()[:4], "the stream ended there, before any audio"),
                        (b"\x01\x02" * SAMPLE_RATE, "from a pipe only some formats and encodings can be read")]:
        writer = feed(fifo, fed, refused=True)
        with pytest.raises(SateError, match=re.escape(expect)):
            audio_blocks(fifo)
        writer.join(timeout=30)


def test_ogg_or_flac_files_joined_with_cat_are_refused(tmp_path: Path) -> None:
    """`cat part1.ogg part2.ogg > talk.ogg` (an Ogg chain) or two FLACs so joined were read as the first file alone,
    segmented and translated, exit 0, where two WAVs joined so are refused (thirty-first hostile pass). Each file
    alone reads whole."""
    tone = (0.3 * np.sin(np.arange(2 * SAMPLE_RATE) / 9)).astype(np.float32)
    for fmt, kind in (("OGG", "Ogg"), ("FLAC", "FLAC")):
        parts = [tmp_path / f"{name}.{fmt.lower()}" for name in ("a", "b")]
        for part, seconds in zip(parts, (2, 1), strict=True):
            sf.write(part, tone[: seconds * SAMPLE_RATE], SAMPLE_RATE, format=fmt)
        joined = tmp_path / f"talk.{fmt.lower()}"
        joined.write_bytes(parts[0].read_bytes() + parts[1].read_bytes())
        for part, seconds in zip(parts, (2, 1), strict=True):
            assert len(np.concatenate(list(audio_blocks(part)))) == seconds * SAMPLE_RATE
        first = "the 2\\.0 s of audio of the first" if kind == "FLAC" else "the first"  # an Ogg's frames: the last
        with pytest.raises(SateError, match=rf"talk\.{fmt.lower()}: another {kind} stream begins at byte "  # part's
                                            rf"{parts[0].stat().st_size:,}, after {first} "  # (review32u)
                                            r"\(files joined with cat(, or an Ogg chain)?\?\)"):
            audio_blocks(joined)


def id3v2_tag(size: int) -> bytes:
    """An ID3v2.4 tag of ``size`` bytes of frames (a title, then padding)."""
    body = b"TIT2" + (6).to_bytes(4, "big") + b"\0\0\0title"
    body += bytes(size - len(body))
    length = bytes((size >> shift) & 0x7F for shift in (21, 14, 7, 0))
    return b"ID3\x04\x00\x00" + length + body


def test_a_flac_behind_an_id3v2_tag_is_one_stream(tmp_path: Path) -> None:
    """A FLAC that begins with an ID3v2 tag (some taggers and stores write one; libsndfile skips it) was refused as
    two FLACs joined with cat, its one marker taken for a second (review31l); read as before now, and such a file
    with another FLAC cat'ed behind it is still refused."""
    flac = tmp_path / "a.flac"
    sf.write(flac, (0.3 * np.sin(np.arange(2 * SAMPLE_RATE) / 9)).astype(np.float32), SAMPLE_RATE, format="FLAC")
    plain = np.concatenate(list(audio_blocks(flac)))
    for n, tag in enumerate((id3v2_tag(100), id3v2_tag(70_000), id3v2_tag(100) + id3v2_tag(50))):
        tagged = tmp_path / f"tagged{n}.flac"
        tagged.write_bytes(tag + flac.read_bytes())
        assert np.array_equal(np.concatenate(list(audio_blocks(tagged))), plain)
        joined = tmp_path / f"joined{n}.flac"
        joined.write_bytes(tagged.read_bytes() + flac.read_bytes())
        with pytest.raises(SateError, match=rf"another FLAC stream begins at byte {tagged.stat().st_size:,}, "):
            audio_blocks(joined)


def test_a_chained_ogg_is_told_how_to_make_files_of_one_stream(tmp_path: Path) -> None:
    """An Ogg chain made as one file (a radio recording: a new stream at each title) was told to join its parts with
    sox, parts its user does not have, and sox reads a chain's first stream alone too (review31l): the line names
    where the second stream begins, says that sate reads one stream per file, and how to split the file there; the
    split, followed (shell commands), gives files of one stream each."""
    import subprocess

    tone = (0.3 * np.sin(np.arange(2 * SAMPLE_RATE) / 9)).astype(np.float32)
    link = tmp_path / "link.ogg"
    sf.write(link, tone, SAMPLE_RATE, format="OGG")
    radio = tmp_path / "radio show.ogg"
    radio.write_bytes(3 * link.read_bytes())
    for _ in range(2):
        with pytest.raises(SateError, match=rf"another Ogg stream begins at byte {link.stat().st_size:,}, after the "
                                            r"first \(files joined with cat, or an Ogg "
                                            r"chain\?\): sate reads one stream per file, .*split it there \(head -c") \
                as refused:
            audio_blocks(radio)
        split = re.search(r"split it there \((head -c .*?); a third", str(refused.value))
        assert split is not None
        subprocess.run(split.group(1), shell=True, cwd=tmp_path, check=True)  # noqa: S602  # the advice, as given
        first, radio = radio.with_name(f"{radio.stem}.1.ogg"), radio.with_name(f"{radio.stem}.2.ogg")
        assert len(np.concatenate(list(audio_blocks(first)))) == 2 * SAMPLE_RATE
    assert len(np.concatenate(list(audio_blocks(radio)))) == 2 * SAMPLE_RATE  # the third, alone


def with_chunks(wav: bytes, *chunks: bytes, data_size: int | None = None) -> bytes:
    """The WAV ``wav`` with ``chunks`` after its data (and its data chunk declared ``data_size`` bytes), its RIFF size
    set to match."""
    body = bytearray(wav + b"".join(chunks))
    if data_size is not None:
        at = body.find(b"data")
        body[at + 4:at + 8] = data_size.to_bytes(4, "little")
    body[4:8] = (len(body) - 8).to_bytes(4, "little")
    return bytes(body)


def test_the_chunks_after_a_piped_wavs_data_are_walked_whatever_their_size(tmp_path: Path) -> None:
    """Piped, what follows a WAV's data was read for a second of audio's bytes only: two WAVs joined with cat were
    read as the first alone, exit 0, where the first had a metadata chunk longer than that (an id3 chunk with cover
    art), and a 16-bit WAV whose data chunk is of odd size, followed by such a chunk, was refused as "bytes that are
    no chunk" (review31l); each is now read as by name."""
    wav, other = tmp_path / "a.wav", tmp_path / "b.wav"
    sf.write(wav, (0.3 * np.sin(np.arange(2 * SAMPLE_RATE) / 9)).astype(np.float32), SAMPLE_RATE, subtype="PCM_16")
    sf.write(other, np.zeros(SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE, subtype="PCM_16")
    tag = id3v2_tag(80_000)
    art = b"id3 " + len(tag).to_bytes(4, "little") + tag  # cover art: 2.5 s of this WAV's bytes
    noise = np.random.default_rng(0).integers(1, 256, 2 * 2 * SAMPLE_RATE, np.uint8).tobytes()
    odd = tmp_path / "odd.wav"  # a data chunk of 2 s and one byte, its pad byte, then the cover art
    odd.write_bytes(with_chunks(wav.read_bytes(), b"\x07\0", art, data_size=4 * SAMPLE_RATE + 1))
    joined, behind = tmp_path / "joined.wav", tmp_path / "behind.wav"
    joined.write_bytes(with_chunks(wav.read_bytes(), art) + other.read_bytes())
    behind.write_bytes(with_chunks(wav.read_bytes(), art, noise))
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    for path, expect in [(odd, None), (joined, "another WAV file begins after the 2.0 s of audio"),
                         (behind, "a second and more of bytes that are no chunk follow the 2.0 s of audio")]:
        if expect is None:
            writer = feed(fifo, path.read_bytes())
            assert np.array_equal(np.concatenate(list(audio_blocks(fifo))), np.concatenate(list(audio_blocks(path))))
        else:
            with pytest.raises(SateError):
                audio_blocks(path)
            writer = feed(fifo, path.read_bytes(), refused=True)
            with pytest.raises(SateError, match=f"^{re.escape(f'{fifo}: {expect}')}"):
                list(audio_blocks(fifo))
        writer.join(timeout=30)


def test_only_formats_read_right_from_a_pipe_are_read_from_one(tmp_path: Path) -> None:
    """From a pipe libsndfile read an RF64 8 bytes late (24-bit stereo became noise), SDS as noise and CAF as nothing
    (called "cut short"), each exit 0 or a misleading line; a whole W64, whose length a pipe does not tell, was
    refused as "cut short" of 288,230,376,151,711.8 s (eleventh hostile pass). W64 now reads as its file does, and a
    format not known to read right from a pipe is refused, as FLAC is."""
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    samples = (0.3 * np.stack([np.sin(2 * np.pi * 440 * t), np.sin(2 * np.pi * 660 * t)], axis=1)).astype(np.float32)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    w64 = tmp_path / "talk.w64"
    sf.write(w64, samples, SAMPLE_RATE, format="W64", subtype="PCM_24")
    writer = feed(fifo, w64.read_bytes())
    piped = np.concatenate(list(audio_blocks(fifo)))
    writer.join(timeout=30)
    assert np.array_equal(piped, np.concatenate(list(audio_blocks(w64))))
    for fmt, name in [("RF64", "RF64 (RIFF 64)"), ("SDS", "SDS (Midi Sample Dump Standard)"),
                      ("CAF", "CAF (Apple Core Audio File)")]:
        path = tmp_path / f"talk.{fmt.lower()}"
        sf.write(path, samples[:, :1] if fmt == "SDS" else samples, SAMPLE_RATE, format=fmt, subtype="PCM_24")
        assert len(np.concatenate(list(audio_blocks(path)))) == SAMPLE_RATE  # by name, each reads
        writer = feed(fifo, path.read_bytes(), refused=True)
        with pytest.raises(SateError, match=rf"^{fifo}: cannot read audio \({re.escape(name)} cannot be read from a "
                                            r"pipe: give the file's name, or pipe WAV\)$"):
            audio_blocks(fifo)
        writer.join(timeout=30)
    gsm = tmp_path / "talk_gsm.wav"  # an encoding libsndfile cannot read from a pipe: its bare "Unspecified
    sf.write(gsm, samples[:, 0], 8000, format="WAV", subtype="GSM610")  # internal error" (eleventh hostile pass)
    writer = feed(fifo, gsm.read_bytes(), refused=True)
    with pytest.raises(SateError, match=rf"^{fifo}: cannot read audio \(.*; from a pipe only some formats and "
                                        r"encodings can be read: give the file's name, or pipe PCM WAV\)$"):
        audio_blocks(fifo)
    writer.join(timeout=30)


def test_a_whole_w64_of_any_block_size_and_undecodable_encodings_from_a_pipe(tmp_path: Path) -> None:
    """A W64 from a pipe has a length libsndfile does not know, about 2**63 bytes over its block size: a stereo 24-bit
    or a double one was 'cut short' of 72,057,594,037,927.9 s, being under the 2**60 frames taken for unknown. An AU
    file of G.721 ADPCM, which libsndfile reads as nothing from a pipe, 'held no audio samples', and so did a WAV
    whose data chunk declares 0 bytes (thirteenth hostile pass)."""
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    samples = (0.3 * np.stack([np.sin(2 * np.pi * 440 * t), np.sin(2 * np.pi * 660 * t)], axis=1)).astype(np.float32)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for channels, subtype in ((2, "PCM_24"), (1, "DOUBLE"), (2, "FLOAT")):
        w64 = tmp_path / "talk.w64"
        sf.write(w64, samples[:, :channels], SAMPLE_RATE, format="W64", subtype=subtype)
        writer = feed(fifo, w64.read_bytes())
        piped = np.concatenate(list(audio_blocks(fifo)))
        writer.join(timeout=30)
        assert np.array_equal(piped, np.concatenate(list(audio_blocks(w64)))), subtype
    au = tmp_path / "talk.au"
    sf.write(au, samples[:, 0], SAMPLE_RATE, format="AU", subtype="G721_32")
    assert len(np.concatenate(list(audio_blocks(au)))) >= SAMPLE_RATE  # by name, it reads (ADPCM blocks padded)
    writer = feed(fifo, au.read_bytes(), refused=True)
    with pytest.raises(SateError, match=rf"^{fifo}: cannot read audio \(32kbs G721 ADPCM cannot be read from a pipe: "
                                        r"give the file's name, or pipe PCM WAV\)$"):
        audio_blocks(fifo)
    writer.join(timeout=30)
    wav = tmp_path / "talk.wav"
    sf.write(wav, samples[:, 0], SAMPLE_RATE, subtype="PCM_16")
    data = bytearray(wav.read_bytes())
    at = data.index(b"data")
    data[at + 4:at + 8] = bytes(4)  # the data chunk declares 0 bytes, the samples behind it
    writer = feed(fifo, bytes(data), refused=True)
    with pytest.raises(SateError, match=rf"^{fifo}: its header declares an empty data chunk, so nothing behind it is "
                                        r"read \(a recording stopped"):
        audio_blocks(fifo)
    writer.join(timeout=30)


def sox_pipe_w64(w64: bytes) -> bytes:
    """What SoX 14.4 writes for a W64 into a pipe: a header whose riff and data chunks declare nothing (the data chunk
    24 bytes, its own header), then that header again, the samples, and the header once more at the end."""
    at = w64.index(b"data") + 24
    header = bytearray(w64[:at])
    header[16:24] = bytes(8)
    header[at - 8:at] = (24).to_bytes(8, "little")
    return bytes(header) * 2 + w64[at:] + bytes(header)


def test_a_w64_as_sox_writes_it_to_a_pipe_is_refused(tmp_path: Path) -> None:
    """SoX writing W64 to a pipe writes its header again inside the stream: libsndfile read those bytes as samples,
    a click before mono 16-bit audio and noise throughout 24-bit stereo (`sox talk.wav -t w64 -b 24 -c 2 - | sate
    translate -`), exit 0, from the pipe and from a file saved from it (nineteenth hostile pass)."""
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    samples = (0.3 * np.stack([np.sin(2 * np.pi * 440 * t), np.sin(2 * np.pi * 660 * t)], axis=1)).astype(np.float32)
    w64 = tmp_path / "whole.w64"
    sf.write(w64, samples, SAMPLE_RATE, format="W64", subtype="PCM_24")
    saved, fifo = tmp_path / "saved.w64", tmp_path / "pipe"
    saved.write_bytes(sox_pipe_w64(w64.read_bytes()))
    os.mkfifo(fifo)
    why = (r": a W64 whose data chunk declares no audio \(24 bytes, its own header\), as SoX writes W64 to a pipe: "
           r"the header it writes again inside the audio would be read as samples \(noise\); make it as WAV instead")
    for read in (wav_info, audio_blocks):
        with pytest.raises(SateError, match=f"^{saved}{why}"):
            read(saved)
    writer = feed(fifo, saved.read_bytes(), refused=True)
    with pytest.raises(SateError, match=f"^{fifo}{why}"):
        audio_blocks(fifo)
    writer.join(timeout=30)
    assert len(np.concatenate(list(audio_blocks(w64)))) == SAMPLE_RATE  # a W64 whose header says its length reads


@pytest.mark.slow
def test_a_pipe_translated_is_not_held_in_memory(tmp_path: Path, st_pack: Path) -> None:
    """`translate` held a piped recording whole, as a pipe cannot be read twice: ten hours were 2.3 GB (eleventh
    hostile pass). Its 16 kHz samples now go to an unnamed temporary file while the VAD reads them, and the segments
    are cut from there: those of the same file read by name."""
    t = np.arange(4 * SAMPLE_RATE) / SAMPLE_RATE
    period = (0.3 * np.sin(2 * np.pi * 440 * t) * (t < 2)).astype(np.float32)  # 2 s of tone, 2 s of silence
    wav, fifo = tmp_path / "talk.wav", tmp_path / "pipe.wav"
    sf.write(wav, np.tile(period, 600), SAMPLE_RATE, subtype="PCM_16")  # 40 minutes: 154 MB of float32 samples
    whole = 600 * len(period) * 4  # (a read of the file by blocks alone peaks near 50 MB, whatever its length)
    translator = SpeechTranslator.load(st_pack, device="cpu")
    vad = VadOptions(method="energy")
    expected = translator.prepare(wav, vad=vad)
    os.mkfifo(fifo)
    writer = feed(fifo, wav.read_bytes())
    tracemalloc.start()
    try:
        piped = translator.prepare(fifo, vad=vad)
        same = [np.array_equal(a, b) for a, b in zip(piped.waves, expected.waves, strict=True)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    writer.join(timeout=30)
    assert peak < whole / 2, f"held {peak / 2**20:.1f} MiB of {whole / 2**20:.1f}"
    assert piped.spans == expected.spans and same == [True] * 600


def test_a_pipe_whose_writer_wrote_nothing_is_called_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO whose writer closed it unwritten (an ffmpeg that failed) was "cannot read audio (Error opening 3:
    Format not recognised.; from a pipe only some formats and encodings can be read: give the file's name, or pipe
    PCM WAV)": a descriptor number never given and advice about formats for a stream that held nothing (twenty-sixth
    hostile pass). A pipe cut inside its header is not named by libsndfile's descriptor number either."""
    fifo = tmp_path / "talk.wav"
    os.mkfifo(fifo)
    writer = feed(fifo, b"")
    assert main(["segment", "--vad", "energy", str(fifo)]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (f"sate segment: error: {fifo}: the stream is empty: its writer "
                                                      "closed it without writing anything (did the command that "
                                                      "writes it fail?)")
    writer.join(timeout=30)
    wav = tmp_path / "whole.wav"
    sf.write(wav, np.zeros(SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE, subtype="PCM_16")
    writer = feed(fifo, wav.read_bytes()[:30])
    with pytest.raises(SateError, match=rf"^{fifo}: cannot read audio \((?!Error opening \d)"):
        audio_blocks(fifo)
    writer.join(timeout=30)
