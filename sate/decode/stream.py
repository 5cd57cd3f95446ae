"""Translate speech while it is spoken: `sate stream --model DIR INPUT [--policy alignatt=4] [--chunk 0.5]`.

INPUT is an audio file, read at the pace of speech (``--fast``: as fast as decoding goes; the output is the same),
or ``-``: raw 16 kHz mono signed 16-bit little-endian PCM on stdin, e.g. a microphone's:

    arecord -q -f S16_LE -r 16000 -c 1 -t raw | sate stream --model packs/st -
    ffmpeg -loglevel error -i talk.mp3 -f s16le -ac 1 -ar 16000 - | sate stream --model packs/st -

The audio is read ``--chunk`` seconds at a time, cut into segments at pauses by the VAD `sate translate` uses, and
each segment is translated under the streaming ``--policy`` (`sate.decode.policies`: wait-k, local-agreement,
alignatt) with the pack's beam search where a policy decodes a whole hypothesis (``--beam N`` changes it, ``--beam
1``: greedy, the fastest). ``--format jsonl`` prints a line whenever the shown translation changes:
``{"t": SECONDS_READ, "text": SEGMENT_SO_FAR, "final": false}``, and ``"final": true`` once the segment is done
(the next line starts the next segment); ``--format text`` prints each segment's final translation on one line
(its tabs and line breaks become spaces, as in `sate translate --format text`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from sate.data.audio import SAMPLE_RATE, audio_blocks, audio_name, rechunk
from sate.decode.options import add_stream_arguments, check_chunk, decode_options, parse_policy
from sate.decode.output import text_field
from sate.decode.vad import VadOptions, add_vad_argument, no_speech, resolve_method
from sate.errors import SateError, one_line, shell_word
from sate.numbers import whole_number
from sate.targets import read_name

FORMATS = ("jsonl", "text")


# How audio files begin: a file piped to stdin would be read as PCM, its header as noise and its samples as
# whatever their rate, channels and encoding make of them. AU (what `sox ... -t au -` pipes), CAF, W64 and NIST
# SPHERE were translated so, as noise, exit 0 (thirty-first hostile pass).
FILE_MAGIC = {b"RIFF": "WAV", b"RF64": "RF64 WAV", b"fLaC": "FLAC", b"OggS": "Ogg", b"ID3": "MP3", b"FORM": "AIFF",
              b".snd": "Sun AU", b"caff": "CAF", b"riff\x2e\x91\xcf\x11": "W64", b"NIST_1A\n": "NIST SPHERE"}
# ... and those of them a pipe can be read as by name (`/dev/stdin`: audio.PIPE_FORMATS): the advice to pipe a FLAC,
# MP3, CAF, RF64 or M4A there failed in turn (review31l)
PIPE_KINDS = ("WAV", "AIFF", "Ogg", "Sun AU", "W64", "NIST SPHERE")


def file_kind(data: bytes) -> str | None:
    """The audio file ``data`` begins, or None. An MP3 without an ID3 tag begins with a frame header (as libsndfile
    and LAME write one) and an M4A with its ``ftyp`` box: each was read as PCM, its bytes as noise, and the line
    said "no speech found" (twenty-first hostile pass). An MP3 is known by two frames, one after the other
    (`_mpeg_frame`)."""
    kind = next((kind for magic, kind in FILE_MAGIC.items() if data.startswith(magic)), None)
    if kind is None and data[4:8] == b"ftyp":
        return "MP4/M4A"
    if kind is None and _mpeg_frames(data):
        return "MP3"
    return kind


# Bit rates (kbit/s) of MPEG audio by (MPEG-1?, layer: 3 is Layer I), and sample rates by version (3: MPEG-1, 2:
# MPEG-2, 0: MPEG-2.5).
_MPEG_KBPS = {(True, 3): (32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
              (True, 2): (32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
              (True, 1): (32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
              (False, 3): (32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
              (False, 2): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160)}
_MPEG_KBPS[False, 1] = _MPEG_KBPS[False, 2]
_MPEG_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def _mpeg_frames(data: bytes) -> bool:
    """Whether ``data`` begins with two MPEG audio frames (three where they fit), each where the one before ends,
    of one version, layer and sample rate."""
    at, frames = 0, 0
    while frames < 3 and (length := _mpeg_frame(data, at)) and data[1] & 0xFE == data[at + 1] & 0xFE and \
            data[2] & 0x0C == data[at + 2] & 0x0C:
        at, frames = at + length, frames + 1
    return frames >= 2 and (frames == 3 or len(data) < at + 4)


def _mpeg_frame(data: bytes, at: int) -> int:
    """The length in bytes of the MPEG audio frame whose header is at ``at`` in ``data``, or 0 where none is (or it
    is cut off). A 16-bit sample of -1 (FF FF) followed by one whose low byte gave a valid bit rate index was taken
    for an MP3 frame by its header alone, and raw PCM refused as "a MP3 file" (review29l); a frame must now be
    followed by the next one's header, where its length says, which PCM does not do by chance."""
    if len(data) < at + 4 or data[at] != 0xFF or data[at + 1] & 0xE0 != 0xE0:
        return 0
    version, layer = data[at + 1] >> 3 & 3, data[at + 1] >> 1 & 3
    bitrate, rate, padding = data[at + 2] >> 4, data[at + 2] >> 2 & 3, data[at + 2] >> 1 & 1
    if version == 1 or layer == 0 or bitrate in (0, 15) or rate == 3:  # a field out of its range (0: free format)
        return 0
    bits, hz = _MPEG_KBPS[version == 3, layer][bitrate - 1] * 1000, _MPEG_RATES[version][rate]
    if layer == 3:
        return (12 * bits // hz + padding) * 4
    return (144 if version == 3 or layer == 2 else 72) * bits // hz + padding


def float_pcm(data: bytes) -> bool | None:
    """Whether raw PCM bytes (from a sample's start) are 32-bit floats (ffmpeg's `-f f32le`, what Whisper-style
    pipelines pipe) rather than s16le, or None while only silence has come: read as 16-bit they were noise at twice
    the length, and the note said "no speech found" (twenty-second hostile pass). As floats, sound is finite, within
    a few times full scale and none of it denormal; s16le bytes read as floats are not (random exponents: huge,
    tiny, NaN); zeros say nothing."""
    samples = np.frombuffer(data[:len(data) // 4 * 4], dtype="<f4")
    sound = samples[samples != 0]
    if len(sound) < 400:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.isfinite(sound).all() and (np.abs(sound) < 4).all() and (np.abs(sound) > 1e-7).all())


def unsigned_pcm(data: bytes) -> bool | None:
    """Whether raw PCM bytes are unsigned 8-bit samples (arecord's default format, `-f U8`: what a microphone gives
    when `-f S16_LE` is left out) rather than s16le, or None while too few have come. Unsigned bytes sit around 128,
    silence included, so read as 16-bit each sample's high byte is near 0x80: nearly every value lies near full
    scale, which no 16-bit recording does (a full-scale sine spends two thirds of its time there, speech far less). It
    was read as speech at half the rate, wrapping around full scale, and translated, exit 0 (twenty-third hostile
    pass)."""
    samples = np.frombuffer(data[:len(data) // 2 * 2], dtype="<i2")
    if len(samples) < 400:
        return None
    return bool(np.mean(np.abs(samples.astype(np.int32)) >= 16384) > 0.9)


def wide_pcm(data: bytes) -> bool | None:
    """Whether raw PCM bytes (from a sample's start) are 32-bit integer samples (`arecord -f S32_LE`, which USB
    microphones of 24 bits give, or `ffmpeg -f s32le`) rather than s16le, or None while too little sound has come:
    read as 16-bit they were two interleaved streams at twice the length, translated, exit 0 (twenty-ninth hostile
    pass). A 32-bit sample of 24 bits has a zero low byte, so read as 16-bit every other sample is a multiple of 256
    while its neighbours are not; and that sample is the low byte of the 24 bits, noise while the high half holds
    sound. 16-bit audio made from 8-bit has its multiples of 256 too (all of them, held; every other one, linearly
    interpolated: audioop.ratecv, ALSA's "linear" converter), but they are the speech (review29l). Not told: 16 bits
    in 32, whose low halves are zero, as the bytes of a stereo stream with a silent first channel are (None)."""
    samples = np.frombuffer(data[:len(data) // 4 * 4], dtype="<i2").reshape(-1, 2)
    sound = samples[(samples != 0).any(axis=1)]
    if len(sound) < 400 or not sound[:, 0].any():
        return None
    low, high = sound[:, 0].astype(np.float64) / 256, sound[:, 1].astype(np.float64)
    if not ((sound[:, 0] % 256 == 0).all() and (sound[:, 1] % 256 != 0).any()):
        return False
    if high.std() < WIDE_LEVEL:  # a quiet signal's low byte is the signal itself, no noise
        return None
    return bool(low.std() > WIDE_SPREAD and abs(np.corrcoef(low[:-1], low[1:])[0, 1]) < WIDE_NOISE)


# `wide_pcm`'s high halves are sound from this level (standard deviation, in 16-bit units: a 24-bit signal of about
# -70 dBFS, whose low byte is noise); its low halves are noise while they spread over the byte (uniform: 74; 8-bit
# audio's levels: a few units to 20) and a sample tells this little (as a correlation) of the next (the low bytes of
# 24-bit speech: under 0.1; 8-bit speech: 0.8 and more).
WIDE_LEVEL = 10.0
WIDE_SPREAD = 40.0
WIDE_NOISE = 0.3


def two_alike_channels(data: bytes) -> bool | None:
    """Whether raw s16le bytes (from a frame's start) are two interleaved channels that hold the same sound (a stereo
    file of one voice, as most are, given by `ffmpeg -f s16le` without `-ac 1`), or None while too little sound has
    come: it was read as mono speech at half its speed and pitch, and translated, exit 0 (twenty-third hostile pass).
    Every sample of sound equals its neighbour in its pair while the pairs change: no mono recording does that (a
    constant level, such as an ADC's offset in silence, tells nothing). Channels alike but for a few units (a lossy
    file's stereo, dither) passed as mono (twenty-fifth hostile pass), and so did a channel at another level (a voice
    panned to one side, a channel turned down or inverted; that pass's review). In mono, what a sample leaves of the
    next one unexplained, at the best gain, is the same at even places as at odd ones; so once the sound is loud
    enough to tell (ALIKE_LEVEL), a pair's left sample left less than a tenth as much (in power) by its right one as
    by the right one of the pair before is two channels. Not told: a channel that lags the other (two microphones
    apart; 1 sample is 2 cm), no more alike than neighbouring pairs. A mono pure tone at exactly 4 kHz (a quarter of
    the rate) has every pair in one ratio: refused when that ratio is 1 (the rule above), None otherwise."""
    samples = np.frombuffer(data[:len(data) // 4 * 4], dtype="<i2").reshape(-1, 2)
    sound = samples[(samples != 0).any(axis=1)]
    if len(sound) < 400:
        return None
    if (sound[:, 0] == sound[:, 1]).all() and np.count_nonzero(np.diff(sound[:, 0])) > len(sound) // 2:
        return True
    frames = samples.astype(np.float64)
    if frames.std() < ALIKE_LEVEL:  # quiet: a recording's noise floor differs between channels however alike
        return None
    within = _unexplained(frames[:, 0], frames[:, 1])
    across = _unexplained(frames[1:, 0], frames[:-1, 1])
    if across < 1.0:  # neighbouring pairs in one ratio to within rounding (a tone at 4 kHz): nothing to compare with
        return None
    return bool(within < 0.1 * across)


def _unexplained(these: np.ndarray, by: np.ndarray) -> float:
    """The mean power `these` keeps once the best multiple of `by` is taken from it (least squares), so that a
    channel at another level, or inverted, is as alike as an equal one."""
    power = float(by @ by)
    gain = float(these @ by) / power if power else 0.0
    return float(np.mean((these - gain * by) ** 2))


# The level (standard deviation of the 16-bit samples, about -40 dBFS) from which `two_alike_channels` compares a
# pair's samples with their neighbours': speech is louder, a noise floor quieter.
ALIKE_LEVEL = 300.0


# What raw PCM on stdin may be instead of 16 kHz mono s16le: each sniffer (None until sound tells), whether it reads
# from a frame's start (4 bytes), and the line that refuses it.
CONVERT = "give 16 kHz mono s16le (ffmpeg -i FILE -f s16le -ac 1 -ar 16000 -)"
NOT_S16LE = ((float_pcm, True, f"stdin: 32-bit float PCM (ffmpeg -f f32le), not 16-bit: {CONVERT}"),
             (unsigned_pcm, False, "stdin: looks like 8-bit unsigned PCM (arecord's default format when -f is not "
                                   "given), not 16-bit: give 16 kHz mono s16le (arecord -f S16_LE -r 16000 -c 1 "
                                   "-t raw)"),
             (wide_pcm, True, "stdin: looks like 32-bit integer PCM (arecord -f S32_LE, ffmpeg -f s32le), not "
                              "16-bit: give 16 kHz mono s16le (arecord -f S16_LE -r 16000 -c 1 -t raw; ffmpeg -i FILE "
                              "-f s16le -ac 1 -ar 16000 -)"),
             (two_alike_channels, True, f"stdin: looks like two channels alike (a stereo file given without -ac 1), "
                                        f"not mono: {CONVERT}"))


def pcm_pieces(stream: BinaryIO, chunk: float) -> Iterator[np.ndarray]:
    """Float samples of raw s16le PCM, `chunk` seconds at a time as they arrive (the last piece may be shorter);
    an audio file's header at the start is refused, and so is PCM of another kind (`NOT_S16LE`). A stream that ends
    inside a sample (a pipe cut off) loses that byte, with a note: it was refused once all else was translated, the
    last segment's translation lost and the line blaming the format (twenty-ninth hostile pass)."""
    size = 2 * round(chunk * SAMPLE_RATE)
    told: list[bool | None] = [None] * len(NOT_S16LE)  # each sniffer's verdict, once a piece of sound gave one
    first, read = True, 0
    while True:
        data = stream.read(size)
        if not data:
            return
        kind = file_kind(data) if first else None
        if kind is not None:
            piped = "(a file piped in: /dev/stdin)" if kind in PIPE_KINDS else \
                f"(a pipe, read as /dev/stdin, takes {', '.join(PIPE_KINDS[:-1])} or {PIPE_KINDS[-1]} only)"
            raise SateError(f"stdin: a {kind} file, not raw PCM: give its name instead of - {piped}, or convert it "
                            "(ffmpeg -i FILE -f s16le -ac 1 -ar 16000 -)")
        for n, (sniff, aligned, refusal) in enumerate(NOT_S16LE):
            if told[n] is None and (read % 4 == 0 or not aligned):
                told[n] = sniff(data)
                if told[n]:
                    raise SateError(refusal)
        read += len(data)
        first = False
        if len(data) % 2:  # only the last read can be short: the writer stopped inside a sample
            print(f"sate stream: note: stdin ended inside a sample ({read:,} byte{'s' * (read != 1)}, an odd number; "
                  "the writer was cut off?): its last byte is dropped", file=sys.stderr)
            data = data[:-1]
            if not data:
                return
        yield np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def file_pieces(blocks: Iterator[np.ndarray], chunk: float, paced: bool) -> Iterator[np.ndarray]:
    """A file's samples (its `audio_blocks`) `chunk` seconds at a time; `paced`: each piece only once it would have
    been spoken."""
    started, sent = time.monotonic(), 0
    for piece in rechunk(blocks, round(chunk * SAMPLE_RATE)):
        sent += len(piece)
        if paced:
            time.sleep(max(0.0, started + sent / SAMPLE_RATE - time.monotonic()))
        yield piece


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="INPUT", type=audio_name,
                        help="an audio file, or - for 16 kHz mono s16le PCM on stdin")
    parser.add_argument("--model", type=read_name, required=True, help="packed ST model directory (`sate pack`)")
    add_stream_arguments(parser, "--policy", "alignatt")
    parser.add_argument("--format", choices=FORMATS, default="jsonl",
                        help="jsonl: a line per change of the shown text; text: each segment's final translation")
    parser.add_argument("--fast", action="store_true",
                        help="read a file as fast as decoding goes instead of at the pace of speech")
    parser.add_argument("--beam", type=whole_number, default=None,
                        help="beam of the search that completes a hypothesis (local-agreement's, and every policy's "
                             "at a segment's end; when not given: the pack's; 1: greedy)")
    add_vad_argument(parser)
    parser.add_argument("--device", default=None,
                        help="torch device, e.g. cpu or cuda:1 (when not given: a GPU if present)")


def run(args: argparse.Namespace) -> int:
    from sate.decode.api import SpeechTranslator  # heavy: torch
    from sate.decode.simultaneous import live  # heavy: torch

    spec = parse_policy(args.policy)
    check_chunk(args.chunk)
    vad = VadOptions(method=resolve_method(args.vad))
    beam = {} if args.beam is None else {"beam": decode_options({"beam": args.beam}, "--beam").beam}  # before loading
    # audio_blocks checks the file now (missing, a directory, empty, unreadable), before the model loads; a FIFO
    # is opened and read as a stream
    blocks = None if str(args.input) == "-" else audio_blocks(args.input)
    if blocks is None and sys.stdin.isatty():  # (closed by the shell: named as such, now) it waited for keystrokes
        # as PCM, silently, under a user who took `-` for the microphone (twenty-fifth hostile pass)
        raise SateError(f"stdin: a terminal, not audio: `-` reads raw 16 kHz mono s16le PCM piped in, e.g. a "
                        f"microphone's: arecord -q -f S16_LE -r 16000 -c 1 -t raw | sate stream --model "
                        f"{shell_word(str(args.model))} -")
    translator = SpeechTranslator.load(args.model, device=args.device)
    options = translator.with_options(nbest=1, **beam)
    pieces = (pcm_pieces(sys.stdin.buffer, args.chunk) if blocks is None
              else file_pieces(blocks, args.chunk, paced=not args.fast))
    heard, said = 0, False

    def counted() -> Iterator[np.ndarray]:
        nonlocal heard
        for piece in pieces:
            heard += len(piece)
            yield piece

    for commit in live(translator, counted(), spec, options, vad):  # a closed pipe ends it quietly: sate.cli.main
        said = True
        if args.format == "jsonl":
            print(commit.json(), flush=True)
        elif commit.final:
            print(text_field(commit.text), flush=True)  # one line a segment, as `translate --format text`
    if not said:  # a silent or empty input ended without a line, as if nothing had been read: say why
        name = "stdin" if blocks is None else one_line(str(args.input))
        # an empty file is refused; stdin of no byte, or of one
        why = no_speech(heard / SAMPLE_RATE) if heard else "no audio arrived (not one whole sample)"
        print(f"sate stream: note: {name}: {why}; nothing to translate", file=sys.stderr)
    return 0
