"""Simultaneous translation: audio read chunk by chunk, translation committed while the speaker talks.

```python
from sate.decode.api import SpeechTranslator
from sate.decode.simultaneous import simulate

st = SpeechTranslator.load("packs/st")
run = simulate(st, samples, "alignatt=4", chunk=0.5)   # one utterance, 16 kHz mono
print(run.translation, run.delays)                    # words and when each was committed
```

After each chunk the features and the encoder are recomputed over all audio of the utterance heard so far (the
encoders attend both ways, so their states for earlier audio change as more arrives: caching them would decode
another model; the measured split of time between encoder and decoder is in docs/inference.md), and a policy
(`sate.decode.policies`) adds tokens to the committed prefix. Output is counted in whole words: a word is shown once
a later token starts the next word, or when the input ends, so shown text is never taken back. Chinese and Japanese,
written without spaces, are counted in characters (`sate.scoring.resegment.units`, each with the punctuation after
it), as SimulEval's character unit counts them: a whole clause is one whitespace word there, and was shown only when
the utterance ended.

Two drivers: `simulate` runs one pre-cut utterance as fast as it can and records when each word would have
appeared in a live stream (`sate evaluate --stream`); `live` reads an endless stream of samples, cuts it at pauses
with the VAD of `sate translate` as it goes, and yields a `Commit` whenever the shown text changes (`sate stream`).

Time in a live stream: chunk j has arrived at a_j = j x chunk seconds (the last one at the end of the input) and is
decoded once it has arrived and chunk j - 1 is done, so it is done at f_j = max(a_j, f_(j-1)) + c_j, c_j its
measured compute time. A word committed at chunk j has the delay a_j (the audio read) and the computation-aware
delay f_j. (SimulEval's computation-aware delay adds all compute so far to a_j, as if no audio arrived while the
model worked: on a model faster than real time that grows with the utterance's length, while f_j stays near a_j.)
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from sate.data.audio import SAMPLE_RATE, HeldFiles, read_segment
from sate.decode.api import SpeechTranslator, check_ctc_scores
from sate.decode.beam_search import eval_mode
from sate.decode.options import DecodeOptions, StreamPolicy, check_chunk, parse_policy
from sate.decode.policies import Policy, start
from sate.decode.vad import VadOptions, speech_segments
from sate.errors import SateError, shown
from sate.files import json_text
from sate.layout import MODEL
from sate.models.ctc import ctc_greedy
from sate.numbers import plain
from sate.scoring.resegment import join_units, units

# Less audio than this gives the convolutional front end no output frame: such a chunk is only read.
MIN_SECONDS = 0.2
# Silence kept before speech starts in a live stream (or min_speech + padding, where longer), so the VAD sees the
# onset; older silence is dropped.
KEEP_SILENCE = 1.0
# A live stream's VAD looks at this many seconds of the latest audio after each chunk (whether speech has begun,
# whether a pause has ended it), or at the whole chunk, or min_speech + 2 x padding, where longer: silero reads 20 s
# in 0.4 s on a CPU core, too slow to redo after every chunk.
VAD_WINDOW = 5.0


@dataclass(frozen=True)
class Commit:
    """The shown translation of the current segment after a chunk: `t` seconds of the stream read (from its start),
    `text` every word committed in this segment so far, `final` when the segment is complete (the next commit starts
    a new segment)."""

    t: float
    text: str
    final: bool

    def json(self) -> str:
        return json_text({"t": round(self.t, 3), "text": self.text, "final": self.final})  # U+2028: still one line


@dataclass
class Streamed:
    """One utterance decoded in simulated real time."""

    translation: str
    transcript: str  # CTC greedy over the whole utterance
    duration: float  # seconds
    delays: list[float]  # per word (zh, ja: character) of the translation: seconds of audio read when it was shown
    elapsed: list[float]  # per word: when it was committed in a live stream, decoding time included
    chunks: int
    encoder_seconds: float = 0.0  # features + encoder, all chunks
    decoder_seconds: float = 0.0  # the policy's decoding, all chunks
    commits: list[Commit] = field(default_factory=list)


class UtteranceStream:
    """The state of one utterance being read: the policy, the committed tokens and the words shown."""

    def __init__(self, translator: SpeechTranslator, policy: Policy, options: DecodeOptions) -> None:
        if translator.task != "st":
            raise SateError(f"{translator.directory} is an {translator.task.upper()} model: streaming translation "
                            "needs an ST model")
        self.translator, self.policy, self.options = translator, policy, options
        self.tokens: list[int] = []
        self.words: list[str] = []  # the units shown: whitespace words, a Chinese or Japanese character each
        self.glued: list[bool] = []  # per unit: written without a space after the one before it
        self.chunks = 0
        self.transcript = ""
        self.encoder_seconds = self.decoder_seconds = 0.0

    def advance(self, wave: np.ndarray, final: bool) -> list[str]:
        """Read all of the utterance's samples so far (`final`: and no more will come); the units newly shown
        (whitespace words; a Chinese or Japanese character each).

        Torch runs on one thread meanwhile, as for silero: a step of the decoder is a few small matrix products,
        and on two busy cores a second thread made a chunk 20 times slower (waiting for the other thread).
        """
        self.chunks += 1
        if not final and len(wave) < MIN_SECONDS * SAMPLE_RATE:
            return []
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.inference_mode(), eval_mode(self.translator.model):  # as the offline decoding (its dropout)
                return self._advance(wave, final)
        finally:
            torch.set_num_threads(threads)

    def _advance(self, wave: np.ndarray, final: bool) -> list[str]:
        started = time.perf_counter()
        model = self.translator.model
        feats = torch.as_tensor(self.translator.features(wave), dtype=self.translator.input_dtype(),
                                device=self.translator.device)
        enc = model.encode(feats[None], torch.tensor([feats.size(0)], device=feats.device))
        memory = enc.memory[:, : int(enc.memory_lengths[0])]
        decoding = time.perf_counter()
        self.encoder_seconds += decoding - started
        if memory.size(1) == 0:
            return []
        if final:
            self.tokens += self.policy.finish(model, memory, self.tokens, self.options)
            # NaN scores were an empty transcript, as offline ones were (fix28a)
            check_ctc_scores(enc.ctc_logits, enc.ctc_lengths, self.translator.directory / MODEL)
            self.transcript = self.translator.src_vocab.decode(ctc_greedy(enc.ctc_logits, enc.ctc_lengths)[0])
        else:
            self.tokens += self.policy.step(model, memory, self.tokens, self.chunks, self.options)
        self.decoder_seconds += time.perf_counter() - decoding
        words, glued = units(self.translator.tgt_vocab.decode(self.tokens))
        shown = len(words) if final else len(words) - 1  # the last unit may go on in the next token ("你" -> "你，")
        new = words[len(self.words):shown]
        self.glued += glued[len(self.words):shown]
        self.words += new
        return new

    @property
    def text(self) -> str:
        return join_units(self.words, self.glued, range(len(self.words)))


def policy_of(spec: StreamPolicy | str) -> StreamPolicy:
    """The policy a Python caller gave, as `parse_policy` reads it ("alignatt=4") or as its result, checked as the
    command line checks it: a str was an AttributeError traceback ("'str' object has no attribute 'name'"), and a
    StreamPolicy made by hand went unchecked (wait-k=0, a name no policy has: a KeyError) (twenty-seventh hostile
    pass)."""
    if isinstance(spec, StreamPolicy):
        return parse_policy(str(spec))
    if not isinstance(spec, str):
        raise SateError(f"spec: expected a streaming policy, \"alignatt=4\" or parse_policy's StreamPolicy, got "
                        f"{type(spec).__name__}")
    return parse_policy(spec)


def simulate(translator: SpeechTranslator, wave: np.ndarray, spec: StreamPolicy | str, chunk: float,
             options: DecodeOptions | None = None) -> Streamed:
    """Translate one utterance (16 kHz mono samples) read `chunk` seconds at a time, as fast as decoding goes;
    delays as the module doc defines them. `spec`: a policy, or its spec ("alignatt=4")."""
    spec = policy_of(spec)
    chunk = plain(chunk)  # np.float32(0.5), a value of a grid
    if isinstance(chunk, bool) or not isinstance(chunk, int | float):  # "0.5" was a TypeError of math.isfinite
        raise SateError(f"chunk must be a number of seconds, got {shown(chunk)}")
    check_chunk(chunk, "chunk")
    stream = UtteranceStream(translator, start(spec), options or translator.options)
    duration = len(wave) / SAMPLE_RATE
    step = round(chunk * SAMPLE_RATE)
    count = max(1, math.ceil(len(wave) / step))
    delays: list[float] = []
    elapsed: list[float] = []
    commits: list[Commit] = []
    done = 0.0
    for j in range(1, count + 1):
        final = j == count
        arrived = duration if final else j * step / SAMPLE_RATE
        started = time.perf_counter()
        new = stream.advance(wave[: j * step], final)
        done = max(arrived, done) + time.perf_counter() - started
        delays += [arrived] * len(new)
        elapsed += [done] * len(new)
        if new or final:
            commits.append(Commit(arrived, stream.text, final))
    return Streamed(stream.text, stream.transcript, duration, delays, elapsed, count, stream.encoder_seconds,
                    stream.decoder_seconds, commits)


def live(translator: SpeechTranslator, pieces: Iterable[np.ndarray], spec: StreamPolicy | str,
         options: DecodeOptions | None = None, vad: VadOptions | None = None) -> Iterator[Commit]:
    """Commits of an endless stream given as consecutive pieces of 16 kHz mono samples (one piece = one chunk).

    The stream is cut into segments by the VAD of `sate translate`, run after each chunk on the last VAD_WINDOW
    seconds (5 s, or ``vad.min_speech`` + 2 x ``vad.padding`` where that is longer, so that a burst of speech is seen
    whole): a segment ends after a pause of ``vad.min_pause`` seconds, or is cut at ``vad.max_segment`` seconds
    wherever it stands (`sate translate`, which sees the whole file, cuts at the quietest point instead), and is then
    finished and shown as final; silence between segments is not decoded. A pause inside a chunk, with the next
    sentence already begun after it, ends the segment too: the audio up to the pause is finished as one segment
    and the rest starts the next (else, with chunks longer than the pauses, a talk's sentences would run together
    into segments of up to ``vad.max_segment`` seconds, which a model trained on sentences translates in part).
    A segment's audio starts ``vad.padding`` seconds before its speech, as `sate translate` cuts it, not with the
    silence held before it for the VAD (up to KEEP_SILENCE, 1 s, or ``vad.min_speech`` + ``vad.padding`` where that
    is longer): a model trained on tightly cut sentences may mistranslate one that starts with half a second of
    silence. (It ends with the pause that ended it: cutting at the VAD's end of speech instead would depend on the
    detector, and the energy one cuts off quiet last syllables.)
    """
    spec = policy_of(spec)
    vad = vad or VadOptions()
    translator._check_segment_cap(vad)  # a Whisper pack's max_segment of 40 s stopped 30.5 s in, on its encoder's line
    limit = translator.max_segment_seconds()

    def too_long(samples: int) -> bool:
        return limit is not None and samples / SAMPLE_RATE > limit

    options = options or translator.options
    buffer = np.zeros(0, dtype=np.float32)
    read = 0.0  # seconds of the stream so far
    stream = UtteranceStream(translator, start(spec), options)
    # What is held before speech, and the window, must show a burst of min_speech and its padding whole: with 1 s
    # (KEEP_SILENCE) held, VadOptions(min_speech=2) never found speech over 0.5-s chunks, and a whole talk gave no
    # commit, without a word (thirty-second hostile pass). The defaults hold 1 s and look at 5 s, as before.
    keep = round(max(KEEP_SILENCE, vad.min_speech + vad.padding) * SAMPLE_RATE)
    window_samples = round(max(VAD_WINDOW, vad.min_speech + 2 * vad.padding) * SAMPLE_RATE)
    begin = 0  # the current segment's first sample in the buffer (the VAD also reads the silence before it)
    for piece in pieces:
        buffer = np.concatenate([buffer, np.asarray(piece, dtype=np.float32)])
        read += len(piece) / SAMPLE_RATE
        window = buffer[-max(window_samples, len(piece)):]  # a longer chunk is seen whole: no speech in it is lost
        spans = speech_segments(window, vad)
        if not spans and stream.chunks == 0:  # no speech yet
            buffer = buffer[-keep:]
            continue
        offset = len(buffer) - len(window)  # the window's first sample in the buffer
        if stream.chunks == 0:
            begin = offset + round(spans[0][0] * SAMPLE_RATE)
        stop = None  # where a segment finished now ends in the buffer: its end (None), or its speech's end
        while True:
            while len(spans) > 1 and not too_long(offset + round(spans[0][1] * SAMPLE_RATE) - begin):
                # a pause between two stretches of speech: the segment ended at the first's end
                end = spans[0][1]
                stream.advance(buffer[begin:offset + round(end * SAMPLE_RATE)], True)
                yield Commit(read, stream.text, True)
                stream = UtteranceStream(translator, start(spec), options)
                buffer = window = window[round(end * SAMPLE_RATE):]
                spans = [(a - end, b - end) for a, b in spans[1:]]
                offset, begin = 0, round(spans[0][0] * SAMPLE_RATE)
            seconds = (len(buffer) - begin) / SAMPLE_RATE
            paused = not spans or len(window) / SAMPLE_RATE - spans[-1][1] >= vad.min_pause
            if not too_long(len(buffer) - begin):
                break
            # A bounded encoder's (Whisper's) segment is never longer than its window (31st hostile pass: --chunk 16
            # carried one to 32 s, or to 30.6 s when a pause ended it, and the encoder stopped the stream). Ended by
            # a pause, it ends at its speech's end if that fits; else it is cut at max_segment, and the rest begins
            # the next segment where it holds speech (20 s of a pause's silence were decoded as a segment of its own).
            # (with no speech in the window, the speech before it may run on into it, for less than min_speech)
            speech_end = offset + round((spans[0][1] if spans else vad.min_speech + vad.padding) * SAMPLE_RATE)
            if len(spans) <= 1 and paused and not too_long(speech_end - begin):
                stop = speech_end
                break
            cut = begin + round(vad.max_segment * SAMPLE_RATE)
            stream.advance(buffer[begin:cut], True)
            yield Commit(read, stream.text, True)
            stream = UtteranceStream(translator, start(spec), options)
            at = (cut - offset) / SAMPLE_RATE  # the cut in the window's seconds (a chunk that long is seen whole)
            spans = [(max(a, at) - at, b - at) for a, b in spans if b > at]
            buffer = window = buffer[cut:]
            offset, begin = 0, round(spans[0][0] * SAMPLE_RATE) if spans else len(buffer)
            if not spans:
                break
        if not spans and stream.chunks == 0:  # the rest of a cut held no speech: kept for the VAD, as before speech
            buffer = buffer[-keep:]
            continue
        final = paused or seconds >= vad.max_segment
        new = stream.advance(buffer[begin:stop], final)
        if new or final:
            yield Commit(read, stream.text, final)
        if final:
            # After a pause, its silence (up to `keep`: KEEP_SILENCE, or min_speech + padding where longer) is kept
            # for the VAD, as before the first segment: the buffer was emptied, so a sentence that began in the
            # chunk's last min_speech seconds (its onset not yet speech to the VAD) lost that onset and its padding to
            # the segment before (thirtieth hostile pass). A segment cut at max_segment keeps nothing: its audio is
            # all the segment's.
            after = len(window) - round(spans[-1][1] * SAMPLE_RATE) if spans else len(buffer)
            buffer = buffer[len(buffer) - min(after, keep):] if paused \
                else np.zeros(0, dtype=np.float32)
            stream = UtteranceStream(translator, start(spec), options)
    if stream.chunks:
        stream.advance(buffer[begin:], True)
        yield Commit(read, stream.text, True)
    elif len(buffer) and (spans := speech_segments(buffer, vad)):
        stream.advance(buffer[round(spans[0][0] * SAMPLE_RATE):], True)
        yield Commit(read, stream.text, True)


def stream_rows(translator: SpeechTranslator, rows: list[dict], spec: StreamPolicy, chunk: float,
                options: DecodeOptions | None = None) -> list[Streamed]:
    """`simulate` over the utterances of manifest rows (`sate evaluate --stream`), in row order."""
    from tqdm import tqdm  # slow: tqdm, only while progress shows

    with HeldFiles() as held:  # a talk that cannot seek (GSM 6.10) is read on, not from its start for every row
        return [simulate(translator, read_segment(row["audio"], row["offset"], row["duration"], held=held), spec,
                         chunk, options)
                for row in tqdm(rows, unit="utt", desc=f"stream {spec}", file=sys.stderr)]
