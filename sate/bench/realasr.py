"""The ASR gap on real speech: a packed model's CTC WER on the clean Asterisk prompts, or Whisper's own.

Each spoken prompt (`sate.bench.asterisk`: real human speech, 8 kHz resampled to 16 kHz) is decoded
whole, without a VAD, exactly as `sate translate --transcript` decodes a segment (fbank, the pack's
CMVN, the acoustic encoder's greedy CTC output). WER is `sate.scoring.score.word_error_rate` against
the prompt texts normalised like the training transcripts (lowercase, no punctuation; digits stay
digits, so "press 1" can only be matched by a model that writes digits). Compare it with the pack's
CTC WER on its own test set (`sate evaluate`): a model trained on synthetic voices is measured here
on a human voice it has never heard.

``--pack`` may also name a Whisper directory (`sate.models.hub.whisper_asr`): the prompts are then transcribed by
Whisper's own decoder (our port, greedy), the ASR side of the cascade a user would build.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from sate.bench.asterisk import fetch_asterisk, load_prompt, read_prompts
from sate.bench.measure import stopwatch
from sate.data.audio import SAMPLE_RATE
from sate.errors import SateError
from sate.scoring.score import word_error_rate

EXAMPLES = 5  # prompts shown with their transcripts


class Example(TypedDict):
    name: str  # the prompt's
    reference: str
    transcript: str


class RealAsrResult(TypedDict):
    """The asr-real part's figures."""

    pack: str
    task: str  # asr, st, or whisper (a Whisper directory, its own decoder)
    prompts: int
    left_out: int  # prompts longer than the acoustic encoder takes (Whisper: 30 s)
    audio_s: float
    wer: float  # percent
    errors: int
    words: int
    seconds: float
    examples: list[Example]  # the first EXAMPLES prompts


def run(pack: Path, batch_size: int = 16) -> RealAsrResult:
    from sate.data.whisper_mel import beyond_window  # heavy: torch
    from sate.decode.api import SpeechTranslator  # heavy: torch
    from sate.models.hub.whisper_asr import WhisperRecognizer, is_whisper_directory  # heavy: torch

    whisper = WhisperRecognizer.load(pack) if is_whisper_directory(pack) else None
    translator = None if whisper is not None else SpeechTranslator.load(pack, device="cpu")
    if translator is not None and translator.task == "mt":
        raise SateError(f"{pack} is an MT model; the asr-real part needs an ASR or ST pack (CTC transcripts) or a "
                        "Whisper directory")
    pairs = [(p, load_prompt(p)) for p in read_prompts(fetch_asterisk())]
    # Whisper's 30-s window: longer prompts are left out, and counted
    limit = whisper.max_seconds() if whisper is not None else translator.max_segment_seconds()
    kept = [(p, w) for p, w in pairs if limit is None or beyond_window(len(w), limit) is None]  # evaluate's bound
    prompts, waves = [p for p, _ in kept], [w for _, w in kept]
    lap = stopwatch()
    if whisper is not None:
        hyps = whisper.transcribe(waves, batch_size)
    else:
        hyps = [transcript for transcript, _ in translator.decode_features([translator.features(w) for w in waves],
                                                                          batch_size=batch_size)]
    seconds = lap()
    refs = [p.text for p in prompts]
    wer = word_error_rate(hyps, refs)
    task = "whisper" if translator is None else translator.task
    return RealAsrResult(pack=str(pack), task=task, prompts=len(prompts), left_out=len(pairs) - len(kept),
                         audio_s=round(sum(len(w) for w in waves) / SAMPLE_RATE, 1), wer=round(wer.wer, 2),
                         errors=wer.errors, words=wer.words, seconds=round(seconds, 1),
                         examples=[Example(name=p.name, reference=p.text, transcript=h)
                                   for p, h in list(zip(prompts, hyps, strict=True))[:EXAMPLES]])


def table(result: RealAsrResult) -> str:
    kind = "Whisper's own decoder: WER" if result["task"] == "whisper" else "CTC WER"
    lines = [f"{kind} of {result['pack']} ({result['task']}) on {result['prompts']} clean Asterisk prompts "
             f"({result['audio_s']} s of real speech): {result['wer']:.1f}% ({result['errors']} errors / "
             f"{result['words']} words), decoded in {result['seconds']} s"
             + (f"; {result['left_out']} longer than the encoder's window left out" if result["left_out"] else "")]
    for ex in result["examples"]:
        lines.append(f"  {ex['name']}: {ex['reference']!r} -> {ex['transcript']!r}")
    return "\n".join(lines)
