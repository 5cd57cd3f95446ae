"""What `sate translate` hears in a long, noisy recording of real speech: the transcript's WER.

The recording is the segment part's (`sate.bench.segment`: the same Asterisk prompts, pauses and noises for the
same ``--segment-utterances`` and ``--segment-seed``), clean and under white noise, babble and music-like tones at
20, 10 and 5 dB SNR. Each version is given whole to a packed model exactly as `sate translate FILE --transcript`
gives a file (`SpeechTranslator.translate`: silero-vad cuts it, the segments are decoded in batches), and the
transcripts of its segments, joined, are scored against the prompts' texts joined in order
(`sate.scoring.score.word_error_rate`, normalised as `asr-real` normalises). So what segmentation costs (a prompt
cut in two, two prompts joined, speech lost or noise heard as speech) counts as the words it costs. The same
prompts decoded one by one, whole and clean (as `asr-real` decodes them), are the row to compare with: the
difference is what the long noisy recording adds.

Issue 27's target: the long recordings' transcript WER in the range of the clean prompts' (<= 20%).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from sate.bench import segment
from sate.bench.measure import stopwatch
from sate.data.audio import SAMPLE_RATE
from sate.errors import SateError
from sate.scoring.score import word_error_rate


class LongRow(TypedDict):
    """One version of the recording: its transcript WER, the segments it was cut into and the decoding speed."""

    noise: str
    snr_db: float | None  # None: clean
    wer: float  # percent
    errors: int
    words: int
    segments: int
    x_real_time: float  # audio seconds per second of reading, segmentation and decoding


class LongAsrResult(TypedDict):
    """The asr-long part's figures."""

    pack: str
    task: str  # asr or st: whose CTC transcript
    utterances: int
    seed: int
    duration_s: float
    one_by_one_wer: float  # the same prompts decoded whole one by one, clean (percent)
    rows: list[LongRow]


def run(pack: Path, utterances: int, seed: int, batch_size: int = 16) -> LongAsrResult:
    """Transcript WER of each version of the segment part's recording (see the module docstring)."""
    from sate.decode.api import SpeechTranslator  # heavy: torch

    translator = SpeechTranslator.load(pack, device="cpu")
    if translator.task == "mt":
        raise SateError(f"{pack} is an MT model; the asr-long part needs an ASR or ST pack (CTC transcripts)")
    pairs = segment.load_prompt_pairs()
    built = segment.construct([wave for _, wave in pairs], utterances, seed)
    texts = [pairs[i][0].text for i in built.chosen]
    reference = " ".join(texts)
    singles = [transcript for transcript, _ in translator.decode_features(
        [translator.features(pairs[i][1]) for i in built.chosen], batch_size=batch_size)]
    one_by_one = word_error_rate(singles, texts)
    rows = []
    for k, (noise, snr) in enumerate(segment.conditions()):
        wave = segment.version(built, k, noise, snr, seed)
        lap = stopwatch()
        (result,) = translator.translate([(wave, SAMPLE_RATE)], batch_size=batch_size)
        seconds = lap()
        wer = word_error_rate([result.transcript], [reference])
        rows.append(LongRow(noise=noise, snr_db=snr, wer=round(wer.wer, 2), errors=wer.errors, words=wer.words,
                            segments=len(result.segments),
                            x_real_time=round(built.recording.duration / seconds, 1)))
    return LongAsrResult(pack=str(pack), task=translator.task, utterances=utterances, seed=seed,
                         duration_s=round(built.recording.duration, 1), one_by_one_wer=round(one_by_one.wer, 2),
                         rows=rows)


def table(result: LongAsrResult) -> str:
    lines = [f"Transcript WER of {result['pack']} ({result['task']}) on a {result['duration_s']} s recording of "
             f"{result['utterances']} Asterisk prompts (seed {result['seed']}), cut and decoded as `sate translate` "
             f"does; the same prompts decoded one by one, clean: {result['one_by_one_wer']:.1f}%",
             "| noise | SNR (dB) | WER % | errors / words | segments | x real time |", "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        snr = "-" if r["snr_db"] is None else f"{r['snr_db']:g}"
        lines.append(f"| {r['noise']} | {snr} | {r['wer']:.1f} | {r['errors']} / {r['words']} | {r['segments']} | "
                     f"{r['x_real_time']} |")
    return "\n".join(lines)
