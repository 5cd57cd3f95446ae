"""The ASR gap on real speech: a packed model's CTC WER on the clean Asterisk prompts.

Each spoken prompt (`sate.bench.asterisk`: real human speech, 8 kHz resampled to 16 kHz) is decoded
whole, without a VAD, exactly as `sate translate --transcript` decodes a segment (fbank, the pack's
CMVN, the acoustic encoder's greedy CTC output). WER is `sate.scoring.score.word_error_rate` against
the prompt texts normalised like the training transcripts (lowercase, no punctuation; digits stay
digits, so "press 1" can only be matched by a model that writes digits). Compare it with the pack's
CTC WER on its own test set (`sate evaluate`): a model trained on synthetic voices is measured here
on a human voice it has never heard.
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
    task: str
    prompts: int
    left_out: int  # prompts longer than the acoustic encoder takes (Whisper: 30 s)
    audio_s: float
    wer: float  # percent
    errors: int
    words: int
    seconds: float
    examples: list[Example]  # the first EXAMPLES prompts


def run(pack: Path, batch_size: int = 16) -> RealAsrResult:
    from sate.decode.api import SpeechTranslator  # heavy: torch

    translator = SpeechTranslator.load(pack, device="cpu")
    if translator.task == "mt":
        raise SateError(f"{pack} is an MT model; the asr-real part needs an ASR or ST pack (CTC transcripts)")
    pairs = [(p, load_prompt(p)) for p in read_prompts(fetch_asterisk())]
    limit = translator.max_segment_seconds()  # Whisper's 30-s window: longer prompts are left out, and counted
    kept = [(p, w) for p, w in pairs if limit is None or len(w) <= limit * SAMPLE_RATE]
    prompts, waves = [p for p, _ in kept], [w for _, w in kept]
    lap = stopwatch()
    decoded = translator.decode_features([translator.features(w) for w in waves], batch_size=batch_size)
    seconds = lap()
    hyps = [transcript for transcript, _ in decoded]
    refs = [p.text for p in prompts]
    wer = word_error_rate(hyps, refs)
    return RealAsrResult(pack=str(pack), task=translator.task, prompts=len(prompts), left_out=len(pairs) - len(kept),
                         audio_s=round(sum(len(w) for w in waves) / SAMPLE_RATE, 1), wer=round(wer.wer, 2),
                         errors=wer.errors, words=wer.words, seconds=round(seconds, 1),
                         examples=[Example(name=p.name, reference=p.text, transcript=h)
                                   for p, h in list(zip(prompts, hyps, strict=True))[:EXAMPLES]])


def table(result: RealAsrResult) -> str:
    lines = [f"CTC WER of {result['pack']} ({result['task']}) on {result['prompts']} clean Asterisk prompts "
             f"({result['audio_s']} s of real speech): {result['wer']:.1f}% ({result['errors']} errors / "
             f"{result['words']} words), decoded in {result['seconds']} s"
             + (f"; {result['left_out']} longer than the encoder's window left out" if result["left_out"] else "")]
    for ex in result["examples"]:
        lines.append(f"  {ex['name']}: {ex['reference']!r} -> {ex['transcript']!r}")
    return "\n".join(lines)
