"""Scaling with utterance length: decoding time and memory of a frame-level adaptor and of `shrink`.

What CTC compression buys: the `shrink` adaptor hands the textual encoder and the decoder's cross-attention
one vector per CTC segment (about one per source token) instead of one per 40 ms frame. Both models have the
same weights: `shrink` (with shrink_mode league or soft) has exactly the parameters of the league or soft
adaptor, so the benchmarked model is copied into its twin, whichever of the two it is. Only the adaptor
type differs.

Inputs of 2, 5, 10, 20 and 30 s are the split's utterances (normalised fbank) laid end to end and cut to
length. Each is decoded alone (batch 1, beam 5) with the output length fixed for both models, at the split's
target tokens per second times the duration, so that the search does the same number of steps and the
difference comes from the memory length alone (a model decoding garbage would otherwise run to its max
length). Times are the fastest of `repeat` runs; peak memory: see `sate.bench.measure`.
"""

from __future__ import annotations

from typing import TypedDict

import torch

from sate.bench.measure import Peak, fastest, stopwatch
from sate.bench.subject import Subject
from sate.bench.train import NO_DISTILLATION
from sate.decode.beam_search import DecodeOptions, decode_memory
from sate.errors import SateError
from sate.models import build_model
from sate.models.base import SateModel
from sate.models.config import AdaptorConfig

SECONDS = (2, 5, 10, 20, 30)
FRAMES_PER_SECOND = 100  # fbank shift 10 ms


class LengthFigures(TypedDict):
    """One adaptor's fastest decoding of one length."""

    memory_length: int  # positions the decoder attends to
    encode_seconds: float
    search_seconds: float
    seconds: float
    rtf: float
    peak_rss_mib: int
    rss_rise_mib: float


# One length: "seconds", "frames", "output_tokens" (int), "speedup", "compression" (float, frame-level adaptor over
# shrink), and under each adaptor's name ("league" or "soft", then "shrink") its `LengthFigures`. The adaptors'
# names are keys, so the JSON reads as the table does.
LengthRow = dict[str, int | float | LengthFigures]


class LengthResult(TypedDict):
    """The length part's figures."""

    split: str
    beam: int
    repeat: int
    target_tokens_per_second: float
    adaptors: list[str]  # the frame-level adaptor, then shrink
    peak_method: str
    lengths: list[LengthRow]  # per SECONDS


class LengthSkipped(TypedDict):
    """The length part on a model it cannot compare: why."""

    skipped: str


def _renamed(key: str, old: str, new: str) -> str:
    return new + key[len(old):] if key.startswith(old) else key


def frame_kind(model: SateModel) -> str | None:
    """The frame-level adaptor (league or soft) that has the model's weights with shrink; None if none has."""
    adaptor = model.conf.adaptor
    kind = adaptor.shrink_mode if adaptor.kind.shrinks else adaptor.type
    return kind if kind in ("league", "soft") else None


def twins(model: SateModel) -> dict[str, SateModel]:
    """The model with a frame-level adaptor (league or soft) and with shrink, same weights, eval mode."""
    adaptor = model.conf.adaptor
    kind = frame_kind(model)
    if kind is None:
        raise SateError(f"the length part compares league or soft with shrink; this model's adaptor is "
                        f"{adaptor.type!r}")
    defaults = AdaptorConfig()
    confs = {kind: {"type": kind, "shrink_mode": defaults.shrink_mode, "keep_blank": defaults.keep_blank},
             "shrink": {"type": "shrink", "shrink_mode": kind, "keep_blank": adaptor.keep_blank}}
    frame_state = {_renamed(k, "adaptor.inner.", "adaptor."): v for k, v in model.state_dict().items()}
    shrink_state = {_renamed(k, "adaptor.", "adaptor.inner."): v for k, v in frame_state.items()}
    states = {kind: frame_state, "shrink": shrink_state}
    out = {}
    for name, changes in confs.items():
        conf = model.conf.to_dict()
        conf["adaptor"].update(changes)
        conf["loss"]["kd"] = dict(NO_DISTILLATION)
        out[name] = build_model("st", conf, model.src_vocab_size, model.tgt_vocab_size)
        out[name].load_state_dict(states[name])
        out[name].eval()
    return out


def long_inputs(subject: Subject, split: str) -> dict[int, torch.Tensor]:
    """(1, seconds x 100, 80) features per length: the split's utterances end to end, cut to length."""
    dataset = subject.dataset(split)
    need = max(SECONDS) * FRAMES_PER_SECOND
    parts, frames, i = [], 0, 0
    while frames < need:
        feats = dataset[i % len(dataset)]["feats"]
        parts.append(feats)
        frames, i = frames + feats.size(0), i + 1
    stream = torch.cat(parts)
    return {s: stream[: s * FRAMES_PER_SECOND][None] for s in SECONDS}


class Run:
    """One decoding of one utterance: encoder and search seconds, and how many positions the decoder read."""

    def __init__(self, encode: float, search: float, memory_length: int) -> None:
        self.encode, self.search, self.memory_length = encode, search, memory_length

    @property
    def seconds(self) -> float:
        return self.encode + self.search


@torch.no_grad()
def decode_fixed(model: SateModel, feats: torch.Tensor, steps: int, beam: int) -> Run:
    """Encode one utterance and beam-search exactly `steps` output tokens."""
    lap = stopwatch()
    enc = model.encode(feats, torch.tensor([feats.size(1)]))
    encoded = lap()
    length = int(enc.memory_lengths[0])
    ratio = steps / length  # min = max = steps: eos is masked before, the search stops there
    decode_memory(model.decoder, enc.memory, enc.memory_lengths, model.eos,
                  DecodeOptions(beam=beam, lenpen=0.0, min_len_ratio=ratio, max_len_ratio=ratio))
    return Run(encoded, lap() - encoded, length)


def run(subject: Subject, split: str, beam: int, repeat: int) -> LengthResult:
    models = twins(subject.model)
    inputs = long_inputs(subject, split)
    dataset = subject.dataset(split)
    rate = sum(len(t) for t in dataset.tgt) / sum(float(r["duration"]) for r in dataset.rows)
    for model in models.values():  # warm-up
        decode_fixed(model, inputs[SECONDS[0]], 2, beam)
    rows: list[LengthRow] = []
    method = ""
    for seconds, feats in inputs.items():
        steps = max(1, round(rate * seconds))
        figures: dict[str, LengthFigures] = {}
        for name, model in models.items():
            best, peak = fastest(lambda m=model, f=feats, n=steps: decode_fixed(m, f, n, beam), repeat,
                                 lambda r: r.seconds)
            method = peak.method
            figures[name] = _figures(best, peak, seconds)
        frame, shrink = figures.values()
        rows.append({"seconds": seconds, "frames": feats.size(1), "output_tokens": steps, **figures,
                     "speedup": round(frame["seconds"] / shrink["seconds"], 2),
                     "compression": round(frame["memory_length"] / shrink["memory_length"], 1)})
    return LengthResult(split=split, beam=beam, repeat=repeat, target_tokens_per_second=round(rate, 2),
                        adaptors=list(models), peak_method=method, lengths=rows)


def _figures(run: Run, peak: Peak, seconds: int) -> LengthFigures:
    return LengthFigures(memory_length=run.memory_length, encode_seconds=round(run.encode, 4),
                         search_seconds=round(run.search, 4), seconds=round(run.seconds, 4),
                         rtf=round(run.seconds / seconds, 4), peak_rss_mib=round(peak.peak_mib),
                         rss_rise_mib=round(peak.rise_mib, 1))


def table(result: LengthResult) -> str:
    frame, shrink = result["adaptors"]
    lines = [f"Length scaling: {frame} vs {shrink}, same weights, batch 1, beam {result['beam']}, output fixed at "
             f"{result['target_tokens_per_second']} tokens/s, fastest of {result['repeat']}",
             f"length  tokens  memory {frame}/{shrink}   seconds {frame}/{shrink}   encode s {frame}/{shrink}"
             f"   rise MiB {frame}/{shrink}  speedup"]
    for r in result["lengths"]:
        a, b = r[frame], r[shrink]
        lines.append(f"{r['seconds']:4d} s {r['output_tokens']:7d} {a['memory_length']:8d} / {b['memory_length']:<5d} "
                     f"{a['seconds']:9.3f} / {b['seconds']:<7.3f} {a['encode_seconds']:8.3f} / "
                     f"{b['encode_seconds']:<7.3f} {a['rss_rise_mib']:8.1f} / {b['rss_rise_mib']:<6.1f} "
                     f"{r['speedup']:6.2f}")
    return "\n".join(lines)
