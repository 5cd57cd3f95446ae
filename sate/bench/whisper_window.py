"""Whisper's 30-s window: a Whisper pack's CTC WER and encoder time with natural-length input against padding to 30 s.

Whisper was pre-trained on 30-s windows only; this project gives its encoder the utterance's natural length
(the position table sliced, `sate.models.hub.whisper`). The other choice pads every waveform with silence to 30 s,
as Whisper's own front-end does, and keeps the outputs of the utterance's own positions for CTC. Both are run
here on the same pack and utterances (batches of `BATCH` in manifest order, the model in eval mode): the CTC
WER of each, and the encoding time of each (the fastest of ``repeat`` passes over the split). The pack was
fine-tuned at natural length, so the padded row measures what padding at decoding costs and changes for that
model; fine-tuning with padding costs what its encoding time says, per update, on top of the frozen cache (the
cache would hold 1,500 positions per utterance).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import torch

from sate.bench.measure import stopwatch
from sate.data.audio import SAMPLE_RATE, read_segment
from sate.data.manifest import read_manifest
from sate.data.waveform import waveform_input
from sate.data.whisper_mel import beyond_window, num_frames
from sate.decode.api import SpeechTranslator
from sate.errors import SateError
from sate.models.ctc import ctc_greedy
from sate.models.hub.whisper import WhisperAcousticEncoder, output_lengths
from sate.scoring.score import word_error_rate

BATCH = 16


class WindowRow(TypedDict):
    input: str  # natural or padded
    wer: float  # percent
    encode_s: float  # fastest pass over the split
    positions: int  # encoder positions computed, summed over the split


class WindowResult(TypedDict):
    pack: str
    split: str
    utterances: int
    audio_s: float
    rows: list[WindowRow]
    time_ratio: float  # padded / natural encoding time


def run(pack: Path, data: Path, split: str, repeat: int = 1) -> WindowResult:
    translator = SpeechTranslator.load(pack, device="cpu")
    acoustic = getattr(translator.model, "acoustic", None)
    if not isinstance(acoustic, WhisperAcousticEncoder):
        raise SateError(f"{pack}: not a model with a Whisper acoustic encoder; the whisper-window part needs one")
    rows = read_manifest(data / f"{split}.jsonl")
    # padded to 0.1 s as sate evaluate reads them: a row under 201 samples was refused naming no row, and one under
    # 0.1 s was encoded shorter than evaluate encodes it (29th hostile pass)
    waves = [torch.from_numpy(waveform_input(read_segment(r["audio"], r["offset"], r["duration"]))) for r in rows]
    # the bound of training and sate evaluate; the row named (the line named none)
    longest = max(range(len(rows)), key=lambda i: len(waves[i]))
    if (beyond := beyond_window(len(waves[longest]), acoustic.max_seconds())) is not None:
        raise SateError(f"{data / f'{split}.jsonl'}: row {rows[longest]['id']} lasts {beyond} Whisper's window "
                        "holds: bench a split whose rows are 30 s at most")
    # padded as Whisper pads: to 30 s, or to a row's own length where it is longer (3,000 frames either way)
    window = max(int(acoustic.max_seconds() * SAMPLE_RATE), len(waves[longest]))
    refs = [r["src_norm"] for r in rows]
    results = [_measure(translator, waves, refs, padded, window, repeat) for padded in (False, True)]
    natural, padded = results
    return WindowResult(pack=str(pack), split=split, utterances=len(rows),
                        audio_s=round(sum(len(w) for w in waves) / SAMPLE_RATE, 1), rows=results,
                        time_ratio=round(padded["encode_s"] / natural["encode_s"], 2))


def _measure(translator: SpeechTranslator, waves: list[torch.Tensor], refs: list[str], padded: bool, window: int,
             repeat: int) -> WindowRow:
    """One row: greedy CTC transcripts of every utterance, natural-length or padded with zeros to the window."""
    model, vocab = translator.model, translator.src_vocab
    best, hyps, positions = float("inf"), [], 0
    for _ in range(repeat):
        hyps, positions, seconds = [], 0, 0.0
        for start in range(0, len(waves), BATCH):
            batch = waves[start:start + BATCH]
            natural = torch.tensor([len(w) for w in batch])
            width = window if padded else int(natural.max())
            x = torch.zeros(len(batch), width)
            for i, w in enumerate(batch):
                x[i, :len(w)] = w
            lengths = torch.full_like(natural, width) if padded else natural
            lap = stopwatch()
            with torch.inference_mode():
                enc = model.encode(x, lengths)
            seconds += lap()
            keep = output_lengths(num_frames(natural))  # the utterance's own positions
            positions += int(enc.ctc_lengths.sum())
            hyps += [vocab.decode(ids) for ids in ctc_greedy(enc.ctc_logits, torch.minimum(keep, enc.ctc_lengths))]
        best = min(best, seconds)
    return WindowRow(input="padded" if padded else "natural", wer=round(word_error_rate(hyps, refs).wer, 2),
                     encode_s=round(best, 2), positions=positions)


def table(result: WindowResult) -> str:
    lines = [f"{result['pack']} on {result['split']} ({result['utterances']} utterances, {result['audio_s']} s):",
             "  input     CTC WER   encode s   positions"]
    for row in result["rows"]:
        lines.append(f"  {row['input']:<8} {row['wer']:7.1f}%  {row['encode_s']:8.2f}   {row['positions']:>9,}")
    lines.append(f"  padded to the window takes {result['time_ratio']}x the natural-length encoding time")
    return "\n".join(lines)
